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

package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/intree"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
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

// badDynamicFactory builds the default handler, made to ask the cache
// for a dynamic resource with an invalid name: the cache refuses it when
// it starts, a failure at run time.
func badDynamicFactory(ctx context.Context, c eventhandlers.Cache, args io.Reader, cfg *rest.Config) (eventhandlers.Interface, error) {
	h, err := defaulthandler.Factory(ctx, c, args, cfg)
	if err != nil {
		return nil, err
	}
	return badDynamic{h}, nil
}

type badDynamic struct{ eventhandlers.Interface }

func (badDynamic) DynamicResources() []schema.GroupVersionResource {
	return []schema.GroupVersionResource{{Group: "example.com", Version: "v1", Resource: "Not_A_Plural"}}
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
		{name: "list handlers", args: []string{"--list-event-handlers"}, code: 0, stdout: []string{"default\ntwo-level\n"}},
		{name: "list handlers with an out-of-tree one, sorted", args: []string{"--list-event-handlers"},
			opts: []Option{WithEventHandler("acme", failingFactory)}, code: 0, stdout: []string{"acme\ndefault\ntwo-level\n"}},
		{name: "version", args: []string{"--version"}, code: 0, stdout: []string{"batch-scheduler v"}},
		{name: "raw version", args: []string{"--version=raw"}, code: 0, stdout: []string{"GitVersion:", "GoVersion:"}},
		{name: "bad version", args: []string{"--version=maybe"}, code: 2, stderr: []string{"--version"}, oneLiner: true},
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
			stderr: []string{"line 6: default handler args: dynamicResources[0]", "widgets"}, oneLiner: true},
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
		{name: "unknown tenant queue order", args: []string{master, "--config-path", writeFile(t, header+"tenantQueueOrder: StrictWeight\n")}, code: 2,
			stderr: []string{"config.yaml: tenantQueueOrder", `unknown tenant queue order policy "StrictWeight"`, "FairShare, Unranked"}, oneLiner: true},
		{name: "duplicate tenant queue order", args: []string{master},
			opts: []Option{WithTenantQueueOrder(tenancy.FairShareOrder, tenancy.OrderPolicyFunc(tenancy.FairShare))}, code: 2,
			stderr: []string{`"FairShare"`, "already registered"}, oneLiner: true},
		{name: "bad leader election timing", args: []string{master, "--leader-elect-renew-deadline=20s"}, code: 2,
			stderr: []string{"--leader-elect-lease-duration"}, oneLiner: true},
		{name: "bad node selector", args: []string{master, "--node-selector", "a in (b"}, code: 2,
			stderr: []string{"--node-selector"}, oneLiner: true},
		{name: "zero bind concurrency", args: []string{master, "--bind-concurrency=0"}, code: 2,
			stderr: []string{"--bind-concurrency 0", "between 1 and 10000"}, oneLiner: true},
		{name: "memory limit ratio above 1", args: []string{master, "--memory-limit-ratio=1.5"}, code: 2,
			stderr: []string{"--memory-limit-ratio must be 0 (off) or a fraction above 0 and at most 1, got 1.5"}, oneLiner: true},
		{name: "huge bind concurrency", args: []string{master, "--bind-concurrency=1000000"}, code: 2,
			stderr: []string{"--bind-concurrency 1000000", "between 1 and 10000"}, oneLiner: true},
		{name: "bind concurrency not a number", args: []string{master, "--bind-concurrency=many"}, code: 2,
			stderr: []string{"--bind-concurrency", `"many"`}, oneLiner: true},
		{name: "unknown flag", args: []string{"--bogus"}, code: 2, stderr: []string{"bogus"}, oneLiner: true},
		{name: "unknown shorthand", args: []string{"-q"}, code: 2, stderr: []string{"-q"}, oneLiner: true},
		{name: "bad flag value", args: []string{"--kube-api-qps=fast"}, code: 2, stderr: []string{"--kube-api-qps", `"fast"`}, oneLiner: true},
		{name: "bad IP", args: []string{"--bind-address=localhost"}, code: 2, stderr: []string{"--bind-address"}, oneLiner: true},
		{name: "argument", args: []string{master, "extra"}, code: 2, stderr: []string{"takes no arguments", `"extra"`}, oneLiner: true},
		{name: "bad logging format", args: []string{master, "--logging-format=xml"}, code: 2,
			stderr: []string{"--logging-format", `"xml"`, "Unsupported log format"}, oneLiner: true},
		{name: "vmodule with json", args: []string{master, "--logging-format=json", "--vmodule=server=4"}, code: 2,
			stderr: []string{"vmodule", "Only supported for text log format"}, oneLiner: true},
		{name: "json off by its feature gate", args: []string{master, "--logging-format=json", "--feature-gates=LoggingBetaOptions=false"}, code: 2,
			stderr: []string{"json", "LoggingBetaOptions"}, oneLiner: true},
		{name: "unknown feature gate", args: []string{master, "--feature-gates=Teleport=true"}, code: 2,
			stderr: []string{"--feature-gates", "Teleport"}, oneLiner: true},
		{name: "bad secure port", args: []string{master, "--secure-port=70000"}, code: 2, stderr: []string{"--secure-port 70000", "between 0 and 65535"}, oneLiner: true},
		{name: "bad insecure port", args: []string{master, "--insecure-port=-1"}, code: 2, stderr: []string{"--insecure-port -1"}, oneLiner: true},
		{name: "missing serving certificate", args: []string{master, "--secure-port", port(t), "--bind-address=127.0.0.1",
			"--tls-cert-file=/does/not/exist.crt", "--tls-private-key-file=/does/not/exist.key"}, code: 2,
			stderr: []string{"/does/not/exist.crt"}, oneLiner: true},
		{name: "insecure port in use", args: []string{master, "--secure-port=0", "--insecure-port", busyPort(t)}, code: 2,
			stderr: []string{"--insecure-port", "address already in use"}, oneLiner: true},
		{name: "failure at run time", args: []string{master, "--secure-port=0", "--event-handler=bad-dynamic"},
			opts: []Option{WithEventHandler("bad-dynamic", badDynamicFactory)}, code: 1,
			stderr: []string{"starting the scheduler cache", "Not_A_Plural"}, oneLiner: true},
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

// Commands built and run at the same time in one process (the e2e tests run
// two replicas this way) share no flag state: under -race this fails if
// cobra or the --version flag writes to a process-wide pflag.Flag.
func TestCommandsRunConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := NewSchedulerCommand()
			var out strings.Builder
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs([]string{"--list-event-handlers"})
			if code := Execute(cmd); code != 0 || out.String() != "default\ntwo-level\n" {
				t.Errorf("exit code %d, output %q; want 0 and the built-in handlers", code, out.String())
			}
		}()
	}
	wg.Wait()
}

// port returns a loopback port that was free a moment ago.
func port(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return p
}

// busyPort returns a loopback port that stays in use until the test ends.
func busyPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return p
}

// Against an API server that never answers, the scheduler must stay up,
// report healthy but not ready (naming what has not synced), and stop
// cleanly when asked. On the secure port the health endpoints need no
// credentials while /metrics and /debug/cache refuse an anonymous user
// (with no API server to ask, nobody is authorized); the plain HTTP port
// serves them to anyone.
func TestServesEndpointsWhileUnsynced(t *testing.T) {
	securePort, insecurePort := port(t), port(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		code, _, stderr := execute(t, ctx, []string{"--master=http://127.0.0.1:1",
			"--bind-address=127.0.0.1", "--secure-port", securePort, "--insecure-port", insecurePort})
		if code != 0 {
			t.Errorf("exit code %d: %s", code, stderr)
		}
		done <- code
	}()

	// The certificate is self-signed: nothing to verify it against.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(base, path string) (int, string) {
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	secure, insecure := "https://127.0.0.1:"+securePort, "http://127.0.0.1:"+insecurePort
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		code, _ := get(secure, "/healthz")
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("/healthz never answered: %v", err)
	}
	for _, base := range []string{secure, insecure} {
		if code, body := get(base, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "[-]handler-sync failed: waiting for ") ||
			!strings.Contains(body, "Pod") || !strings.Contains(body, "Node") || !strings.Contains(body, "[+]shutdown ok") {
			t.Errorf("%s/readyz = %d %q, want 503 naming the unsynced Pod and Node handlers", base, code, body)
		}
		if code, body := get(base, "/livez"); code != http.StatusOK || body != "ok" {
			t.Errorf("%s/livez = %d %q", base, code, body)
		}
	}
	for _, path := range []string{"/metrics", "/debug/cache", "/demand", "/debug/pprof/", "/debug/flags/v", "/configz"} {
		if code, body := get(secure, path); code != http.StatusForbidden || !strings.Contains(body, "system:anonymous") {
			t.Errorf("anonymous %s on the secure port = %d %.200q, want 403 for system:anonymous", path, code, body)
		}
	}
	code, body := get(insecure, "/debug/cache")
	var dump map[string]any
	if code != http.StatusOK || json.Unmarshal([]byte(body), &dump) != nil || dump["nodes"] == nil && dump["handlers"] == nil {
		t.Errorf("/debug/cache = %d %q, want a JSON dump", code, body)
	}
	code, body = get(insecure, "/demand")
	var report demand.Report
	if code != http.StatusOK || json.Unmarshal([]byte(body), &report) != nil || report.Waiting != 0 || report.Time.IsZero() {
		t.Errorf("/demand = %d %q, want a JSON report with nothing waiting", code, body)
	}
	code, body = get(insecure, "/configz")
	if code != http.StatusOK || !strings.Contains(body, `"componentconfig"`) || !strings.Contains(body, `"schedulerName": "batch-scheduler"`) {
		t.Errorf("/configz = %d %.300q, want the effective configuration", code, body)
	}
	code, body = get(insecure, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d %.300q", code, body)
	}
	// Own metrics, client-go's, build info, and the process collectors of
	// the legacy registry, once.
	for _, want := range []string{"\nbatch_scheduler_", "\nrest_client_requests_total{", "\nkubernetes_build_info{", "\nkubernetes_feature_enabled{"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %q", strings.TrimSpace(want))
		}
	}
	if n := strings.Count(body, "# TYPE go_goroutines "); n != 1 {
		t.Errorf("/metrics has %d go_goroutines families, want 1", n)
	}
	// Profiling is on by default: Go's profiles, and the verbosity set
	// with a PUT of /debug/flags/v (put back afterwards: it is the
	// process's).
	if code, body := get(insecure, "/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ = %d %.200q, want the profile index", code, body)
	}
	if code, body := get(insecure, "/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Errorf("/debug/pprof/goroutine = %d %.200q", code, body)
	}
	before := verbosity()
	put := func(v string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, insecure+"/debug/flags/v", strings.NewReader(v))
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := put("7"); code != http.StatusOK || verbosity() != 7 {
		t.Errorf("PUT /debug/flags/v 7 = %d %q; verbosity now %d", code, body, verbosity())
	}
	if code, _ := put("not-a-number"); code == http.StatusOK {
		t.Error("PUT /debug/flags/v accepted a value that is not a number")
	}
	put(strconv.Itoa(before))

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
			if len(f.API.EventHandlers) == 0 {
				t.Fatal("example configures no event handler")
			}
			c, err := cache.New(cache.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, eh := range f.API.EventHandlers {
				if _, err := eventhandlers.NewEventHandler(t.Context(), intree.NewRegistry(), eh.Name, c, f.HandlerArgs(eh.Name), nil); err != nil {
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
	if len(f.Profiles()) == 0 {
		t.Fatal("the deployed config has no profile")
	}
	profiles, _, err := buildProfiles(t.Context(), []string{"batch-scheduler"}, f, plugins.NewInTreeRegistry(), testHandle())
	if err != nil || len(profiles) != 1 {
		t.Fatalf("building the deployed profiles: %v", err)
	}
}

// The command puts a logger into the context it runs with, for
// klog.FromContext downstream: here in an event handler factory.
func TestRunContextCarriesALogger(t *testing.T) {
	var ctxErr error
	called := false
	probe := func(ctx context.Context, _ eventhandlers.Cache, _ io.Reader, _ *rest.Config) (eventhandlers.Interface, error) {
		called = true
		_, ctxErr = logr.FromContext(ctx)
		return nil, errors.New("probe done")
	}
	code, _, stderr := execute(t, t.Context(), []string{"--master=http://127.0.0.1:1", "--event-handler=probe"}, WithEventHandler("probe", probe))
	if !called {
		t.Fatalf("the factory was not called (exit code %d: %s)", code, stderr)
	}
	if ctxErr != nil {
		t.Errorf("no logger in the context: %v", ctxErr)
	}
}

// verbosity returns the klog verbosity (-v) of the process.
func verbosity() int {
	for v := 10; v > 0; v-- {
		if klog.V(klog.Level(v)).Enabled() {
			return v
		}
	}
	return 0
}

// With --profiling=false nothing is served under /debug/pprof/ or at
// /debug/flags/v; --contention-profiling alone is refused.
func TestProfilingOff(t *testing.T) {
	o := NewServingOptions()
	if len(o.debugHandlers()) == 0 {
		t.Fatal("profiling is off by default")
	}
	o.EnableProfiling = false
	if h := o.debugHandlers(); h != nil {
		t.Errorf("--profiling=false serves %v", slices.Collect(maps.Keys(h)))
	}
	o.EnableContentionProfiling = true
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--contention-profiling needs --profiling") {
		t.Errorf("Validate() = %v", err)
	}
}

// The configuration the perf suite runs batch-scheduler with to follow
// PodGroups' disruption modes (PERF_SUITE_BATCH_CONFIG) loads, sets
// DefaultPreemption's arg in the profile the suite's pods name, and
// builds.
func TestPerfSuiteExampleIsValid(t *testing.T) {
	f, err := config.Load("../../../examples/perf-suite/honor-disruption-mode.yaml")
	if err != nil {
		t.Fatal(err)
	}
	profiles := f.Profiles()
	if len(profiles) != 1 || profiles[0].SchedulerName != "default-scheduler" || len(profiles[0].PluginConfig) != 1 {
		t.Fatalf("profiles %+v, want default-scheduler's with one plugin's args", profiles)
	}
	args, ok := profiles[0].PluginConfig[0].Args.(*configapi.DefaultPreemptionArgs)
	if !ok || !args.HonorPodGroupDisruptionMode || args.MinCandidateNodesAbsolute != 100 {
		t.Fatalf("DefaultPreemption args %#v, want honorPodGroupDisruptionMode with the defaults", profiles[0].PluginConfig[0].Args)
	}
	if built, _, err := buildProfiles(t.Context(), []string{"default-scheduler"}, f, plugins.NewInTreeRegistry(), testHandle()); err != nil || len(built) != 1 {
		t.Fatalf("building the profile: %v", err)
	}
}
