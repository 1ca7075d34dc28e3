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

package eventhandlers

import (
	"fmt"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/registry"
)

// ObjectAs returns obj as a T. A cache.DeletedFinalStateUnknown tombstone is
// unwrapped first, so every Delete method can use it. When obj is not a T
// (or a tombstone of one), or is a nil pointer, it logs an error naming both types and returns
// ok=false; it never panics.
func ObjectAs[T any](obj any) (t T, ok bool) {
	if tomb, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
		obj = podOfRecord[T](tomb.Obj)
		if t, ok = obj.(T); ok && !registry.IsNil(t) {
			return t, true
		}
		klog.ErrorS(nil, "Ignoring tombstone holding an object of the wrong type",
			"key", tomb.Key, "want", fmt.Sprintf("%T", t), "got", fmt.Sprintf("%T", obj))
		return t, false
	}
	obj = podOfRecord[T](obj)
	if t, ok = obj.(T); ok && !registry.IsNil(t) {
		return t, true
	}
	klog.ErrorS(nil, "Ignoring object of the wrong type or nil", "want", fmt.Sprintf("%T", t), "got", fmt.Sprintf("%T", obj))
	return t, false
}

// podOfRecord returns, when a *v1.Pod is wanted and obj is the
// framework.PodRecord the informers keep of a bound pod, a pod made from
// that record (see PodRecord.Pod); obj otherwise.
func podOfRecord[T any](obj any) any {
	if r, ok := obj.(*framework.PodRecord); ok && r != nil {
		var t T
		if _, wantPod := any(t).(*v1.Pod); wantPod {
			return r.Pod()
		}
	}
	return obj
}

var (
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	apiVersion = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)
)

// ParseDynamicResource parses a resource name of the form
// "<plural>.<version>.<group>", e.g. "widgets.v1alpha1.example.com". Core
// resources ("pods.v1") are not accepted: the cache watches those with
// native informers.
func ParseDynamicResource(name string) (schema.GroupVersionResource, error) {
	parts := strings.SplitN(name, ".", 3)
	if len(parts) != 3 {
		return schema.GroupVersionResource{}, fmt.Errorf("dynamic resource %q: want <plural>.<version>.<group>, e.g. widgets.v1.example.com", name)
	}
	gvr := schema.GroupVersionResource{Resource: parts[0], Version: parts[1], Group: parts[2]}
	if !dnsLabel.MatchString(gvr.Resource) {
		return schema.GroupVersionResource{}, fmt.Errorf("dynamic resource %q: resource %q must be a lower-case plural name", name, gvr.Resource)
	}
	if !apiVersion.MatchString(gvr.Version) {
		return schema.GroupVersionResource{}, fmt.Errorf("dynamic resource %q: version %q must look like v1, v1beta1 or v2alpha3", name, gvr.Version)
	}
	for _, label := range strings.Split(gvr.Group, ".") {
		if !dnsLabel.MatchString(label) {
			return schema.GroupVersionResource{}, fmt.Errorf("dynamic resource %q: group %q must be a DNS subdomain", name, gvr.Group)
		}
	}
	return gvr, nil
}

// DynamicResourceName renders gvr as "<plural>.<version>.<group>", the
// Resource of the cluster events raised for it.
func DynamicResourceName(gvr schema.GroupVersionResource) framework.EventResource {
	return framework.EventResource(gvr.Resource + "." + gvr.Version + "." + gvr.Group)
}
