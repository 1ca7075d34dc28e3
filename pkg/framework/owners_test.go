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
