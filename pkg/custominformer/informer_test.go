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
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/client-go/util/watchlist"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestBuildRunsInformerFromRegisteredSource(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	src.Add(st.MakeNode().Name("vm-host-1").Obj())

	reg := NewSourceRegistry()
	var gotArgs string
	if err := reg.Register("fake", func(_ context.Context, ci configapi.CustomInformer, example runtime.Object) (cache.ListerWatcher, error) {
		if _, ok := example.(*v1.Node); !ok {
			t.Errorf("example object is %T, want *v1.Node", example)
		}
		var args struct {
			Token string `yaml:"token"`
		}
		if err := config.DecodeStrict(configapi.ReaderOf(ci.SourceArgs), &args); err != nil {
			return nil, err
		}
		gotArgs = args.Token
		return src, nil
	}); err != nil {
		t.Fatal(err)
	}
	ci := configapi.CustomInformer{Name: "hosts", Resource: "Node", SourceType: "fake",
		SourceArgs: configapi.NewRawArgs("c.yaml", []byte("token: abc\n"))}
	b, err := Build(context.Background(), reg, "c.yaml", 3, ci)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if gotArgs != "abc" || b.Name != "hosts" || b.Resource != "Node" {
		t.Fatalf("Build = %+v, args %q", b, gotArgs)
	}
	if b.Informer.HasSynced() {
		t.Fatal("informer reports synced before it was started")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.Informer.RunWithContext(ctx)
	src.Add(st.MakeNode().Name("vm-host-2").Obj())
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(b.Informer.GetStore().ListKeys()) == 2, nil
	})
	if err != nil {
		t.Fatalf("store keys = %v, want both hosts", b.Informer.GetStore().ListKeys())
	}
}

func TestBuildErrors(t *testing.T) {
	reg := NewSourceRegistry()
	boom := errors.New("boom")
	_ = reg.Register("broken", func(context.Context, configapi.CustomInformer, runtime.Object) (cache.ListerWatcher, error) {
		return nil, boom
	})
	tests := []struct {
		name string
		ci   configapi.CustomInformer
		line int
		want []string
		is   error
	}{
		{"unsupported resource", configapi.CustomInformer{Name: "a", Resource: "Secret", SourceType: "broken"}, 4,
			[]string{"c.yaml: line 4", `"a"`, `resource "Secret"`, "ExternalWorkload, Grant, Node, Pod"}, nil},
		{"unknown source", configapi.CustomInformer{Name: "b", Resource: "Node", SourceType: "http"}, 9,
			[]string{"line 9", `"http"`, "registered: broken"}, nil},
		{"factory error", configapi.CustomInformer{Name: "c", Resource: "Pod", SourceType: "broken"}, 2,
			[]string{"line 2", "source broken", "boom"}, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(context.Background(), reg, "c.yaml", tt.line, tt.ci)
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
		})
	}
}

func TestNewOptsOutOfWatchList(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	if watchlist.DoesClientNotSupportWatchListSemantics(src) {
		t.Fatal("precondition: the fake source itself does not opt out")
	}
	_, lw := newInformer(src, &v1.Node{}, Options{Name: "hosts"})
	if !watchlist.DoesClientNotSupportWatchListSemantics(lw) {
		t.Fatal("custom sources must opt out of watch-list semantics")
	}
}

func TestRegisterSourcePanics(t *testing.T) {
	for _, name := range []string{"", "dup"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterSource(%q) did not panic", name)
				}
			}()
			f := func(context.Context, configapi.CustomInformer, runtime.Object) (cache.ListerWatcher, error) {
				return nil, nil
			}
			if name == "dup" {
				RegisterSource("dup-"+t.Name(), f)
				name = "dup-" + t.Name()
			}
			RegisterSource(name, f)
		}()
	}
	if !GlobalSourceRegistry().Has("dup-" + t.Name()) {
		t.Error("first registration was lost")
	}
}

// pkg/config types the settings of the built-in sources under the names
// they register, and the sources take what Parse typed.
func TestSourceSettingsFromTheFile(t *testing.T) {
	for _, s := range []string{HTTPSource, FileSource} {
		if !config.HasTypedSourceArgs(s) {
			t.Errorf("pkg/config has no typed settings for source %q", s)
		}
	}
	if config.HasTypedSourceArgs(KubeconfigSource) {
		t.Errorf("source %q is typed; its factory reads raw settings", KubeconfigSource)
	}
	dir := t.TempDir()
	f, err := config.Parse("c.yaml", []byte("apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\ncustomInformers:\n- name: inv\n  resource: Node\n  source:\n    file: {directory: "+dir+", pollInterval: 300ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ci := f.CustomInformers()[0]
	if _, ok := ci.SourceArgs.(*configapi.FileSourceArgs); !ok {
		t.Fatalf("settings = %T, want typed", ci.SourceArgs)
	}
	b, err := Build(t.Context(), NewInTreeSourceRegistry(), "c.yaml", 4, ci)
	if err != nil {
		t.Fatal(err)
	}
	if inv, ok := b.ListerWatcher.(*inventory); !ok || inv.poll != 300*time.Millisecond || inv.dir != dir {
		t.Errorf("file source = %#v", b.ListerWatcher)
	}
	// A directory that is gone is the source's to find, when it is built.
	ci.SourceArgs = &configapi.FileSourceArgs{Directory: dir + "/gone"}
	if _, err := Build(t.Context(), NewInTreeSourceRegistry(), "c.yaml", 4, ci); err == nil || !strings.Contains(err.Error(), "directory: "+dir+"/gone") {
		t.Errorf("Build with a missing directory: %v", err)
	}
}
