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

package eviction

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ErrGone is wrapped by Evict's error when the pod no longer exists, or
// was replaced by another pod of the same name: there is nothing left to
// evict.
var ErrGone = errors.New("pod is gone")

// Evict asks the API server to evict pod, the instance with pod's UID, and
// returns nil once the eviction is accepted (the pod is deleted, possibly
// gracefully). The error wraps ErrGone when the pod is gone; IsRefused
// reports a refusal by a PodDisruptionBudget (or an API server too busy);
// anything else is a failure. Every error names the pod.
func Evict(ctx context.Context, client kubernetes.Interface, pod *v1.Pod) error {
	uid := pod.UID
	err := client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return fmt.Errorf("evicting pod %s/%s: %w (%w)", pod.Namespace, pod.Name, ErrGone, err)
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("evicting pod %s/%s: refused, a PodDisruptionBudget allows no disruption now: %w", pod.Namespace, pod.Name, err)
	default:
		return fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
}

// IsRefused reports whether err is Evict's refusal (HTTP 429): a
// PodDisruptionBudget allows no disruption now, or the API server asks to
// retry later.
func IsRefused(err error) bool { return apierrors.IsTooManyRequests(err) }
