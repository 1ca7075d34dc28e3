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

package framework

import (
	"testing"
)

func TestOwnerJobID(t *testing.T) {
	id := JobID{Namespace: "ml", Name: "train", Gang: true, Owner: GroupKindRayCluster}
	if got := id.String(); got != "ml/RayCluster.ray.io:train" {
		t.Errorf("String() = %q", got)
	}
	explicit := JobID{Namespace: "ml", Name: "train", Gang: true}
	if id == explicit || id.String() == explicit.String() {
		t.Error("an inferred gang and an explicit one of the same name are the same job")
	}
	if got := (JobID{Namespace: "ml", Name: "Bad Name", Gang: true, Owner: GroupKindJob}).String(); got != `ml/Job.batch:"Bad Name"` {
		t.Errorf("String() of an invalid name = %q", got)
	}
}

func TestOwnerKinds(t *testing.T) {
	all := AllOwnerKinds()
	if len(all.Kinds()) != 6 {
		t.Fatalf("AllOwnerKinds = %v", all)
	}
	s := OwnerKinds(0).With(GroupKindRayCluster).With(GroupKindNative)
	if !s.Has(GroupKindRayCluster) || s.Has(GroupKindNative) || s.Has(GroupKindJob) || s.String() != "RayCluster.ray.io" {
		t.Errorf("set %v: With ignores kinds that are not owner kinds, Has reports only members", s)
	}
	if all.Without(GroupKindJob).Has(GroupKindJob) || !IsOwnerKind(GroupKindJob) || IsOwnerKind(GroupKindVolcano) {
		t.Error("Without/IsOwnerKind")
	}
}
