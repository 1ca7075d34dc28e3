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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The typed settings of the built-in custom informer sources: the value
// under a customInformers entry's source.http or source.file is read as
// HTTPSourceArgs or FileSourceArgs, strictly. Other sources' settings are
// kept raw for their factory.

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// HTTPSourceArgs are the settings of the http source.
type HTTPSourceArgs struct {
	metav1.TypeMeta `json:",inline"`

	// URL is the base URL of the manager (http or https). Required.
	URL string `json:"url,omitempty"`
	// Path overrides the resource path, which is otherwise derived from
	// the resource like an apiserver's: /api/v1/nodes,
	// /apis/batch-scheduler.io/v1alpha1/grants. It is joined to URL's
	// path and must start with /.
	Path string `json:"path,omitempty"`
	// CAFile is a PEM bundle of the CAs that sign the manager's
	// certificate; without it the system roots are used.
	CAFile string `json:"caFile,omitempty"`
	// CertFile and KeyFile are the client certificate and key, both or
	// neither.
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
	// BearerTokenFile holds a token sent as "Authorization: Bearer". The
	// file is re-read when it changes and after a 401.
	BearerTokenFile string `json:"bearerTokenFile,omitempty"`
	// InsecureSkipTLSVerify disables server certificate checks.
	// Discouraged; not with caFile.
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`
	// Timeout bounds one list request, as a duration ("30s"). Default 1m
	// (also for 0). Watches are bounded by the reflector's timeoutSeconds
	// instead.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// QPS and Burst rate-limit requests (client-go's defaults if 0); a
	// QPS needs a Burst.
	QPS   float32 `json:"qps,omitempty"`
	Burst int32   `json:"burst,omitempty"`
	// MaxObjectBytes is the largest watch event accepted (default 4 MiB,
	// also for 0). A larger one ends the watch and the informer lists
	// again.
	MaxObjectBytes int64 `json:"maxObjectBytes,omitempty"`
	// MaxListBytes is the largest list response accepted (default 256
	// MiB, also for 0).
	MaxListBytes int64 `json:"maxListBytes,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FileSourceArgs are the settings of the file source.
type FileSourceArgs struct {
	metav1.TypeMeta `json:",inline"`

	// Directory holds the manifests. Required; it must exist and be a
	// directory when the informer is built.
	Directory string `json:"directory,omitempty"`
	// PollInterval is how often the directory is re-scanned while the
	// informer watches, besides re-scans on change notifications.
	// Default 5s (also for 0); at least 100ms.
	PollInterval *metav1.Duration `json:"pollInterval,omitempty"`
}
