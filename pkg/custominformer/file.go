/*
Copyright The batch-scheduler Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package custominformer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// FileSource is the source type that reads a static inventory: a directory
// of YAML or JSON manifests, each document one object of the informer's
// resource type. The directory is re-read when it changes.
//
// Files. The top level of the directory is read; files named *.yaml,
// *.yml or *.json (any case) are manifests. Names starting with "." and
// subdirectories are ignored, so a Kubernetes ConfigMap or Secret volume
// works: its "..data" and "..<timestamp>" entries are skipped and its
// top-level symlinks (a.yaml -> ..data/a.yaml) are followed. A symlink that
// points nowhere is skipped (the kubelet leaves one briefly while it
// removes a key). Write files atomically (a temporary hidden file renamed
// into place): a half-written file is read as it is.
//
// Documents. A file may hold at most FileMaxBytes (more is an error,
// wrapping ErrTooLarge). A YAML file may hold several documents separated
// by "---";
// empty documents are skipped. A JSON file holds one document. Each
// document must be a mapping whose apiVersion and kind are exactly the
// informer's type (batch-scheduler.io/v1alpha1 ExternalWorkload, v1 Node,
// ...), with no field unknown to that type, and a metadata.name that is a
// DNS-1123 subdomain. Grants and ExternalWorkloads must also pass
// v1alpha1.ValidateGrant and v1alpha1.ValidateExternalWorkload. Scalars
// are read as YAML 1.2 would: yes/no/on/off are strings, and so are dates.
//
// Namespaces. Node, Grant and ExternalWorkload are cluster-scoped: a
// document of those kinds must not set metadata.namespace. A Pod without a
// namespace is put in "default", as kubectl would. (A type this list does
// not know keeps whatever namespace the file gives.) An object is
// identified by namespace and name, which must be unique across the
// directory.
//
// Metadata the source manages. metadata.resourceVersion in a file is
// ignored: the source keeps the objects in a resourcemanager.Store, which
// numbers every change, so that watches resume and 410 Expired behave as
// with an apiserver (see resourcemanager.Store.ListerWatcher). An object
// without metadata.uid or metadata.creationTimestamp gets them when it
// first appears and keeps them while it exists (a UID is generated; Pods,
// for one, are told apart by UID).
//
// Changes. A re-scan reads the whole directory and compares each object
// with what the store has (semantically: "1000m" equals "1"); only real
// changes are written to the store and become ADDED, MODIFIED or DELETED
// events, in namespace/name order. If anything is wrong (a file that does
// not parse, a document of another kind, a missing name, a name defined
// twice, an unreadable or missing directory), the whole re-scan is
// rejected and the last good state stays: the error, naming each bad file
// with its document number and line, is logged (klog, with the informer's
// name) and returned by List, so an informer whose directory is bad from
// the start reports it and does not sync.
//
// When it re-scans. List re-scans before answering, and Watch before
// starting the store's watch. While a watch is open, the directory is
// watched with inotify (fsnotify) and re-scanned 100ms after a change
// notification about a manifest or a ".."-prefixed entry (a ConfigMap
// update), and in any case every pollInterval: notifications are not
// delivered on every filesystem, nor for a change behind a symlink that
// points out of the directory. Each re-scan reads and parses every
// manifest. Nothing runs between watches: the goroutine, the notification
// watcher and the poll timer belong to one watch and end with it.
const FileSource = "file"

// Defaults and limits of the file source's settings.
const (
	// DefaultFilePollInterval is how often the file source re-scans its
	// directory when pollInterval is not set.
	DefaultFilePollInterval = configapi.DefaultFileSourcePollInterval
	// MinFilePollInterval is the shortest pollInterval accepted.
	MinFilePollInterval = configapi.MinFileSourcePollInterval
)

// FileMaxBytes is the largest manifest file the file source reads.
const FileMaxBytes = 16 << 20

// FileArgs are the settings of the file source: the configuration API's
// type (pkg/apis/config), decoded, defaulted and validated by
// pkg/config.
type FileArgs = configapi.FileSourceArgs

// checkDirectory checks what the settings name on this machine: a
// directory. It returns the directory's clean path. Errors name the
// field.
func checkDirectory(a *FileArgs) (string, error) {
	fi, err := os.Stat(a.Directory)
	if err != nil {
		return "", fmt.Errorf("directory: %s: %w", a.Directory, unwrapPathError(err))
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("directory: %s: not a directory", a.Directory)
	}
	return filepath.Clean(a.Directory), nil
}

// fileScopes says, for the types a custom informer can produce, whether
// their objects live in a namespace.
var fileScopes = map[schema.GroupKind]bool{
	{Kind: "Node"}: false,
	{Kind: "Pod"}:  true,
	v1alpha1.SchemeGroupVersion.WithKind("Grant").GroupKind():            false,
	v1alpha1.SchemeGroupVersion.WithKind("ExternalWorkload").GroupKind(): false,
}

func newFileSource(_ context.Context, ci configapi.CustomInformer, example runtime.Object) (cache.ListerWatcher, error) {
	args, err := typedSourceArgs[*FileArgs](FileSource, ci)
	if err != nil {
		return nil, err
	}
	dir, err := checkDirectory(args)
	if err != nil {
		return nil, err
	}
	gvks, _, err := scheme.ObjectKinds(example)
	if err != nil {
		return nil, err
	}
	inv, err := newInventory(ci.Name, dir, args.PollInterval.Duration, gvks[0], example)
	if err != nil {
		return nil, err
	}
	return inv, nil
}
