package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
)

// execute runs the command with args and returns its exit code, stdout and
// stderr.
func execute(t *testing.T, ctx context.Context, args []string, opts ...Option) (int, string, string) {
	t.Helper()
	cmd := NewSchedulerCommand(opts...)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	cmd.SetContext(ctx)
	code := Execute(cmd)
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func failingFactory(context.Context, eventhandlers.Cache, io.Reader, *rest.Config) (eventhandlers.Interface, error) {
	return nil, errors.New("license key missing")
}

const header = "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\n"

func TestCommandExitCodes(t *testing.T) {
	// A dead API server address keeps every case away from in-cluster
	// configuration; none of these cases may reach it.
	master := "--master=http://127.0.0.1:1"
	tests := []struct {
		name     string
		args     []string
		opts     []Option
		code     int
		stdout   []string
		stderr   []string
		oneLiner bool
	}{
		{name: "list handlers", args: []string{"--list-event-handlers"}, code: 0, stdout: []string{"default\n"}},
		{name: "list handlers with an out-of-tree one, sorted", args: []string{"--list-event-handlers"},
			opts: []Option{WithEventHandler("acme", failingFactory)}, code: 0, stdout: []string{"acme\ndefault\n"}},
		{name: "version", args: []string{"--version"}, code: 0, stdout: []string{"batch-scheduler "}},
		{name: "unknown handler", args: []string{"--event-handler", "nope"}, code: 2,
			stderr: []string{`"nope"`, "registered: default"}, oneLiner: true},
		{name: "duplicate out-of-tree handler", args: []string{master},
			opts: []Option{WithEventHandler(defaulthandler.Name, failingFactory)}, code: 2,
			stderr: []string{`"default"`, "already registered"}, oneLiner: true},
		{name: "unreadable config", args: []string{master, "--config-path", "/does/not/exist.yaml"}, code: 2,
			stderr: []string{"--config-path", "/does/not/exist.yaml"}, oneLiner: true},
		{name: "invalid config", args: []string{master, "--config-path", writeFile(t, header+"eventHandler: []\n")}, code: 2,
			stderr: []string{"config.yaml", "line 3", "eventHandler"}, oneLiner: true},
		{name: "handler rejects its args", args: []string{master, "--config-path",
			writeFile(t, header+"eventHandlers:\n- name: default\n  args:\n    dynamicResources: [widgets]\n")}, code: 2,
			stderr: []string{`initializing event handler "default"`, "widgets"}, oneLiner: true},
		{name: "failing factory", args: []string{master, "--event-handler", "acme"},
			opts: []Option{WithEventHandler("acme", failingFactory)}, code: 2,
			stderr: []string{`initializing event handler "acme"`, "license key missing"}, oneLiner: true},
		{name: "custom informer with an unknown source", args: []string{master, "--config-path",
			writeFile(t, header+"customInformers:\n- name: vms\n  resource: Node\n  source: {carrier-pigeon: {}}\n")}, code: 2,
			stderr: []string{"line 4", `"vms"`, `"carrier-pigeon"`}, oneLiner: true},
		{name: "profile for another scheduler name", args: []string{master, "--config-path",
			writeFile(t, header+"profiles:\n- schedulerName: other\n")}, code: 2,
			stderr: []string{"line 4", `profile "other" is not one of --scheduler-name`}, oneLiner: true},
		{name: "unknown plugin in a profile", args: []string{master, "--config-path",
			writeFile(t, header+"profiles:\n- schedulerName: batch-scheduler\n  plugins:\n    filter: [{name: Nope}]\n")}, code: 2,
			stderr: []string{`"Nope"`}, oneLiner: true},
		{name: "bad leader election timing", args: []string{master, "--leader-elect-renew-deadline=20s"}, code: 2,
			stderr: []string{"--leader-elect-lease-duration"}, oneLiner: true},
		{name: "bad node selector", args: []string{master, "--node-selector", "a in (b"}, code: 2,
			stderr: []string{"--node-selector"}, oneLiner: true},
		{name: "unknown flag", args: []string{"--bogus"}, code: 2, stderr: []string{"bogus"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			code, stdout, stderr := execute(t, ctx, tt.args, tt.opts...)
			if code != tt.code {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout %q does not contain %q", stdout, w)
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
			if tt.oneLiner && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("stderr is not one line: %q", stderr)
			}
		})
	}
}

func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Against an API server that never answers, the scheduler must stay up,
// report healthy but not ready (naming what has not synced), serve its
// cache dump, and stop cleanly when asked.
func TestServesEndpointsWhileUnsynced(t *testing.T) {
	addr := freeAddress(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		code, _, stderr := execute(t, ctx, []string{"--master=http://127.0.0.1:1", "--listen-address", addr})
		if code != 0 {
			t.Errorf("exit code %d: %s", code, stderr)
		}
		done <- code
	}()

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		code, _ := get("/healthz")
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("/healthz never answered: %v", err)
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "Pod") || !strings.Contains(body, "Node") {
		t.Errorf("/readyz = %d %q, want 503 naming the unsynced Pod and Node handlers", code, body)
	}
	if code, _ := get("/livez"); code != http.StatusOK {
		t.Errorf("/livez = %d", code)
	}
	code, body := get("/debug/cache")
	var dump map[string]any
	if code != http.StatusOK || json.Unmarshal([]byte(body), &dump) != nil || dump["nodes"] == nil && dump["handlers"] == nil {
		t.Errorf("/debug/cache = %d %q, want a JSON dump", code, body)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "batch_scheduler_") {
		t.Errorf("/metrics = %d, want batch_scheduler_ metrics; got %.200q", code, body)
	}

	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the command did not stop after its context was cancelled")
	}
}

// Every shipped example must load and be accepted by its handler.
func TestExamplesAreValid(t *testing.T) {
	paths, err := filepath.Glob("../../../examples/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			f, err := config.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.EventHandlers) == 0 {
				t.Fatal("example configures no event handler")
			}
			c, err := cache.New(cache.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, eh := range f.EventHandlers {
				if _, err := eventhandlers.GetEventHandler(t.Context(), eh.Name, c, f.HandlerArgs(eh.Name), nil); err != nil {
					t.Errorf("handler %q rejects the example: %v", eh.Name, err)
				}
			}
		})
	}
}

// The configuration shipped in deploy/configmap.yaml loads, and its
// profiles build with the in-tree plugins.
func TestDeployConfigIsValid(t *testing.T) {
	data, err := os.ReadFile("../../../deploy/configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(cm.Data["config.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Profiles) == 0 {
		t.Fatal("the deployed config has no profile")
	}
	profiles, _, err := buildProfiles(t.Context(), []string{"batch-scheduler"}, f, plugins.NewInTreeRegistry(), &handle{})
	if err != nil || len(profiles) != 1 {
		t.Fatalf("building the deployed profiles: %v", err)
	}
}
