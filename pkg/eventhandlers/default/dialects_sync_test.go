package defaulthandler_test

import (
	"testing"

	"k8s.io/client-go/rest"

	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// groupCache is a fake cache that records gang groups.
type groupCache struct {
	*fakeCache
	policies map[string]*framework.GroupPolicy
}

func (c *groupCache) SetGroupPolicy(kind framework.GroupKind, ns, name string, p *framework.GroupPolicy) {
	c.policies[string(kind)+" "+ns+"/"+name] = p
}

func TestGangDialectsSyncState(t *testing.T) {
	c := &groupCache{fakeCache: newFakeCache(t), policies: map[string]*framework.GroupPolicy{}}
	plain, err := defaulthandler.NewWithArgs(c, defaulthandler.Args{})
	if err != nil {
		t.Fatal(err)
	}
	if !plain.HasSynced() {
		t.Error("a handler without gang dialects is not synced")
	}
	// Nothing answers at this address: discovery never succeeds.
	withDialects, err := defaulthandler.NewWithArgs(c, defaulthandler.Args{}, defaulthandler.WithGangDialects(&rest.Config{Host: "https://127.0.0.1:1"}))
	if err != nil {
		t.Fatal(err)
	}
	if withDialects.HasSynced() {
		t.Error("a handler whose gang dialects were never discovered claims to be synced")
	}
	if withDialects.SyncName() != "gang-dialects" {
		t.Errorf("SyncName = %q", withDialects.SyncName())
	}
	// A cache that cannot record groups gets no dialects, and is synced.
	noGroups, err := defaulthandler.NewWithArgs(newFakeCache(t), defaulthandler.Args{}, defaulthandler.WithGangDialects(&rest.Config{Host: "https://127.0.0.1:1"}))
	if err != nil {
		t.Fatal(err)
	}
	if !noGroups.HasSynced() {
		t.Error("a handler without a group cache waits for gang dialects")
	}
}
