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

package config

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The typed settings of the built-in custom informer sources that take
// settings from the file. A customInformers entry whose source is one of
// these types decodes its settings into the type's kind
// (<Type>SourceArgs: HTTPSourceArgs, FileSourceArgs), defaulted and
// validated with the rest of the file; the source's factory receives it
// as CustomInformer.SourceArgs. The settings of other sources (kubeconfig,
// vendors') stay RawArgs.

// Defaults and limits of the built-in sources' settings.
const (
	// DefaultHTTPSourceTimeout bounds one list request of the http source.
	DefaultHTTPSourceTimeout = time.Minute
	// DefaultHTTPSourceMaxObjectBytes is the largest watch event the http
	// source accepts.
	DefaultHTTPSourceMaxObjectBytes int64 = 4 << 20
	// DefaultHTTPSourceMaxListBytes is the largest list response the http
	// source accepts.
	DefaultHTTPSourceMaxListBytes int64 = 256 << 20

	// DefaultFileSourcePollInterval is how often the file source re-scans
	// its directory while it watches.
	DefaultFileSourcePollInterval = 5 * time.Second
	// MinFileSourcePollInterval is the shortest poll interval accepted.
	MinFileSourcePollInterval = 100 * time.Millisecond
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// HTTPSourceArgs are the settings of the http source: a resource manager
// that speaks the Kubernetes list/watch JSON protocol over HTTP(S).
type HTTPSourceArgs struct {
	metav1.TypeMeta

	// URL is the manager's base URL, http or https.
	URL string
	// Path, when set, replaces the apiserver-style resource path; it is
	// joined to URL's path.
	Path string
	// CAFile, CertFile and KeyFile are the CA bundle and the client
	// certificate and key (https only).
	CAFile   string
	CertFile string
	KeyFile  string
	// BearerTokenFile holds a token sent as "Authorization: Bearer",
	// re-read when it changes.
	BearerTokenFile string
	// InsecureSkipTLSVerify disables server certificate checks.
	InsecureSkipTLSVerify bool
	// Timeout bounds one list request.
	Timeout metav1.Duration
	// QPS and Burst rate-limit requests; 0 keeps client-go's defaults.
	QPS   float32
	Burst int32
	// MaxObjectBytes bounds one watch event, MaxListBytes one list
	// response.
	MaxObjectBytes int64
	MaxListBytes   int64
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FileSourceArgs are the settings of the file source: a directory of
// manifests.
type FileSourceArgs struct {
	metav1.TypeMeta

	// Directory holds the manifests.
	Directory string
	// PollInterval is how often the directory is re-scanned while the
	// informer watches, besides the re-scans on change notifications.
	PollInterval metav1.Duration
}
