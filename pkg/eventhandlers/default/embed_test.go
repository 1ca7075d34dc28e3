package defaulthandler_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
)

// acme is a vendor handler: it embeds the default handler and only changes
// AddNode, admitting nodes of its own pool and nothing else.
type acme struct {
	*defaulthandler.Handler
	rejected []string
}

func (h *acme) AddNode(obj any) {
	node, ok := eventhandlers.ObjectAs[*v1.Node](obj)
	if !ok {
		return
	}
	if node.Labels["pool"] != "acme" {
		h.rejected = append(h.rejected, node.Name)
		return
	}
	h.Handler.AddNode(obj)
}

func newAcme(ctx context.Context, c eventhandlers.Cache, cfg io.Reader, rc *rest.Config) (eventhandlers.Interface, error) {
	base, err := defaulthandler.New(ctx, c, cfg, rc)
	if err != nil {
		return nil, err
	}
	return &acme{Handler: base}, nil
}

func TestEmbedding(t *testing.T) {
	reg := eventhandlers.NewRegistry()
	if err := reg.Register("acme", newAcme); err != nil {
		t.Fatal(err)
	}
	fc := newFakeCache(t)
	cfg := strings.NewReader("dynamicResources: [widgets.v1alpha1.example.com]\n")
	i, err := eventhandlers.NewEventHandler(t.Context(), reg, "acme", fc, cfg, nil)
	if err != nil {
		t.Fatalf("NewEventHandler: %v", err)
	}
	h, ok := i.(*acme)
	if !ok {
		t.Fatalf("NewEventHandler returned %T, want *acme", i)
	}

	t.Run("override runs", func(t *testing.T) {
		fc.Reset()
		i.AddNode(node1("1").Obj())
		if calls := fc.Calls(); len(calls) > 0 {
			t.Errorf("a node outside the pool reached the cache: %q", calls)
		}
		if !slices.Equal(h.rejected, []string{"n1"}) {
			t.Errorf("rejected = %q, want [n1]", h.rejected)
		}
	})
	t.Run("override can fall back to the default", func(t *testing.T) {
		fc.Reset()
		i.AddNode(node1("1").Label("pool", "acme").Obj())
		if d := diffCalls(fc.Effects(), []string{"AddOrUpdateNode n1", "MoveAll NodeAdd"}); d != "" {
			t.Error(d)
		}
	})
	t.Run("other methods behave as default", func(t *testing.T) {
		fc.Reset()
		i.UpdateNode(node1("1").Obj(), node1("2").Label("gpu", "true").Obj())
		i.DeleteNode(node1("2").Obj())
		i.AddPod(pendingPod("1").Obj())
		i.UpdatePod(pendingPod("1").Obj(), runningPod("2").Obj())
		i.DeletePod(tombstone(runningPod("2").Obj()))
		i.AddPersistentVolumeClaim(kinds["PersistentVolumeClaim"].obj("1"))
		i.AddDynamic(widgets, widget("1"))
		want := []string{
			"AddOrUpdateNode n1", "MoveAll NodeLabelChange",
			"RemoveNode n1",
			"AddPendingPod default/p",
			"RemovePendingPod default/p", "AddPod default/p",
			"RemovePod default/p", moveAssignedPodDelete,
			"MoveAll PersistentVolumeClaimAdd",
			"MoveAll widgets.v1alpha1.example.com/Add",
		}
		if d := diffCalls(fc.Effects(), want); d != "" {
			t.Error(d)
		}
	})
	t.Run("dynamic resources and cache are reachable", func(t *testing.T) {
		r, ok := i.(eventhandlers.DynamicResourceRequester)
		if !ok {
			t.Fatal("embedding handler is not a DynamicResourceRequester")
		}
		if got := r.DynamicResources(); !slices.Equal(got, []schema.GroupVersionResource{widgets}) {
			t.Errorf("DynamicResources() = %v", got)
		}
		if h.Cache() != fc {
			t.Error("Cache() is not the cache given to the factory")
		}
	})
	t.Run("not in the global registry", func(t *testing.T) {
		if slices.Contains(eventhandlers.Names(), "acme") {
			t.Error("a private registry leaked into the global one")
		}
	})
}

// A vendor with settings of its own inlines Args and calls NewWithArgs.
func TestEmbeddingWithOwnConfig(t *testing.T) {
	type acmeArgs struct {
		defaulthandler.Args `yaml:",inline"`
		Pool                string `yaml:"pool"`
	}
	var args acmeArgs
	cfg := strings.NewReader("pool: acme\ndynamicResources: [widgets.v1alpha1.example.com]\n")
	if err := config.DecodeStrict(cfg, &args); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	h, err := defaulthandler.NewWithArgs(newFakeCache(t), args.Args)
	if err != nil {
		t.Fatalf("NewWithArgs: %v", err)
	}
	if args.Pool != "acme" || !slices.Equal(h.DynamicResources(), []schema.GroupVersionResource{widgets}) {
		t.Errorf("args = %+v, DynamicResources() = %v", args, h.DynamicResources())
	}
	t.Run("bad args", func(t *testing.T) {
		_, err := defaulthandler.NewWithArgs(newFakeCache(t), defaulthandler.Args{DynamicResources: []string{"x"}})
		if err == nil || !strings.Contains(err.Error(), "dynamicResources[0]") {
			t.Errorf("error = %v, want one naming dynamicResources[0]", err)
		}
	})
}
