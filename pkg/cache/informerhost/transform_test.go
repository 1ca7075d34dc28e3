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

package informerhost

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

type res = map[v1.ResourceName]string

const (
	// coreV1 is the import path of the API types stripPod changes.
	coreV1 = "k8s.io/api/core/v1"
	// modulePath is this module's.
	modulePath = "github.com/batch-scheduler/batch-scheduler"
	// resourceHelpers computes a pod's requests (pkg/resources).
	resourceHelpers = "k8s.io/component-helpers/resource"
)

// droppedReads lists, per type of k8s.io/api/core/v1, the fields stripPod
// drops (or empties) that no code may read; "*" is every field. The
// fields of v1.Container other than keptContainerFields are added by
// strippedFields. The times of pod conditions are not here: stripPod keeps
// them on the one condition whose time is read (TestStripPod).
var droppedReads = map[string][]string{
	"NodeStatus":              {"Images", "NodeInfo", "Addresses", "DaemonEndpoints", "VolumesInUse", "VolumesAttached", "Config"},
	"NodeSystemInfo":          {"*"},
	"NodeAddress":             {"*"},
	"ContainerImage":          {"*"},
	"AttachedVolume":          {"*"},
	"NodeConfigStatus":        {"*"},
	"NodeDaemonEndpoints":     {"*"},
	"PodStatus":               {"ContainerStatuses", "InitContainerStatuses", "EphemeralContainerStatuses", "PodIP", "PodIPs", "HostIP", "HostIPs"},
	"ContainerStatus":         {"*"},
	"PodIP":                   {"*"},
	"HostIP":                  {"*"},
	"PodSpec":                 {"SecurityContext"},
	"PodSecurityContext":      {"*"},
	"VolumeSource":            {"Projected", "Secret", "ConfigMap", "DownwardAPI", "EmptyDir"},
	"ProjectedVolumeSource":   {"*"},
	"SecretVolumeSource":      {"*"},
	"ConfigMapVolumeSource":   {"*"},
	"DownwardAPIVolumeSource": {"*"},
	"EmptyDirVolumeSource":    {"*"},
	"VolumeProjection":        {"*"},
}

// strippedFields returns droppedReads plus the dropped fields of
// v1.Container and v1.EphemeralContainerCommon, by type.
func strippedFields(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	for typ, fields := range droppedReads {
		out[typ] = map[string]bool{}
		for _, f := range fields {
			out[typ][f] = true
		}
	}
	for _, typ := range []string{"Container", "EphemeralContainerCommon"} {
		out[typ] = map[string]bool{}
		for _, f := range reflectFields(typ) {
			if !slices.Contains(keptContainerFields, f) {
				out[typ][f] = true
			}
		}
	}
	return out
}

// reflectFields lists the fields of a container type by name.
func reflectFields(typ string) []string {
	var rt reflect.Type
	switch typ {
	case "Container":
		rt = reflect.TypeFor[v1.Container]()
	case "EphemeralContainerCommon":
		rt = reflect.TypeFor[v1.EphemeralContainerCommon]()
	}
	names := make([]string, rt.NumField())
	for i := range names {
		names[i] = rt.Field(i).Name
	}
	return names
}

// raceEnabled is set when the test binary is built with -race (race_test.go).
var raceEnabled bool

// goPackage is the part of `go list -json` the proof needs.
type goPackage struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
	Standard   bool
	Module     *struct{ Path string }
}

// loadPackages lists the packages matching patterns (and their
// dependencies) from the module root, with their export data.
func loadPackages(t *testing.T, patterns ...string) map[string]*goPackage {
	t.Helper()
	args := []string{"list", "-deps", "-export", "-json=ImportPath,Dir,Export,GoFiles,Standard,Module"}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("..", "..", "..")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	pkgs := map[string]*goPackage{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs[p.ImportPath] = &p
	}
	return pkgs
}

// fieldReads type-checks the non-test files of pkg and returns every
// read of a field of a named struct type of k8s.io/api/core/v1, as
// "Type.Field" → positions. Fields set in composite literals are writes
// and not counted.
func fieldReads(t *testing.T, fset *token.FileSet, imp types.Importer, path string, files []*ast.File) map[string][]string {
	t.Helper()
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: imp, Error: func(error) {}}
	if _, err := conf.Check(path, fset, files, info); err != nil {
		t.Fatalf("type-checking %s: %v", path, err)
	}
	// The selectors assigned to (x.F = v) are writes; the strip functions
	// themselves read what they drop, to drop it once.
	written := map[*ast.SelectorExpr]bool{}
	var stripFuncs []ast.Node
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if fd, ok := n.(*ast.FuncDecl); ok && path == modulePath+"/pkg/cache/informerhost" && (fd.Name.Name == "stripPod" || fd.Name.Name == "slimContainer" || fd.Name.Name == "placementFree") {
				stripFuncs = append(stripFuncs, fd)
			}
			if as, ok := n.(*ast.AssignStmt); ok && (as.Tok == token.ASSIGN || as.Tok == token.DEFINE) {
				for _, lhs := range as.Lhs {
					if sel, ok := lhs.(*ast.SelectorExpr); ok {
						written[sel] = true
					}
				}
			}
			return true
		})
	}
	out := map[string][]string{}
	for sel, s := range info.Selections {
		if s.Kind() != types.FieldVal || written[sel] {
			continue
		}
		if slices.ContainsFunc(stripFuncs, func(fd ast.Node) bool { return fd.Pos() <= sel.Pos() && sel.Pos() < fd.End() }) {
			continue
		}
		// The struct that declares the field, through embedding.
		field, ok := s.Obj().(*types.Var)
		if !ok || field.Pkg() == nil || field.Pkg().Path() != coreV1 {
			continue
		}
		recv := s.Recv()
		if p, ok := recv.(*types.Pointer); ok {
			recv = p.Elem()
		}
		owner := ownerOf(recv, field)
		if owner == "" {
			continue
		}
		key := owner + "." + field.Name()
		out[key] = append(out[key], fset.Position(sel.Sel.Pos()).String())
	}
	return out
}

// ownerOf names the type of k8s.io/api/core/v1 that declares field, found
// from recv through embedded fields.
func ownerOf(recv types.Type, field *types.Var) string {
	named, ok := recv.(*types.Named)
	if !ok {
		return ""
	}
	st, ok := named.Underlying().(*types.Struct)
	if !ok {
		return ""
	}
	for i := range st.NumFields() {
		f := st.Field(i)
		if f == field {
			if named.Obj().Pkg() != nil && named.Obj().Pkg().Path() == coreV1 {
				return named.Obj().Name()
			}
			return ""
		}
		if f.Embedded() {
			if o := ownerOf(f.Type(), field); o != "" {
				return o
			}
		}
	}
	return ""
}

// scanned are the packages whose reads count: every package of this
// module but the test helpers, and the helpers of k8s.io/component-helpers
// the plugins and the cache call with pods (requests, affinity,
// tolerations, ephemeral volumes).
func scanned(p *goPackage) bool {
	switch {
	case p.Module != nil && p.Module.Path == modulePath:
		return !strings.HasSuffix(p.ImportPath, "/pkg/testing")
	case strings.HasPrefix(p.ImportPath, "k8s.io/component-helpers/"):
		return true
	}
	return false
}

// TestStrippedFieldsUnread proves that what stripPod drops is never read:
// it type-checks every package of this module (but the test helpers of
// pkg/testing) and the component-helpers packages it depends on, and fails
// on any read of a dropped field, except in stripPod, slimContainer and
// placementFree, which read what they drop to drop it only once.
func TestStrippedFieldsUnread(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the module")
	}
	dropped := strippedFields(t)
	if len(dropped["Container"]) < 10 {
		t.Fatalf("only %d dropped fields of v1.Container: the field list is wrong: %v", len(dropped["Container"]), dropped["Container"])
	}
	pkgs := loadPackages(t, "./...")
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		p := pkgs[path]
		if p == nil || p.Export == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(p.Export)
	})
	var paths []string
	for path, p := range pkgs {
		if scanned(p) && len(p.GoFiles) > 0 {
			paths = append(paths, path)
		}
	}
	sort.Strings(paths)
	if len(paths) < 20 {
		t.Fatalf("only %d packages to scan: %v", len(paths), paths)
	}
	// k8s.io/component-helpers/resource reads the container statuses only
	// with PodResourcesOptions.UseStatusResources, which this module never
	// sets (pkg/resources.PodRequests passes the zero options).
	statusOptionSet := false
	var statusReads []string
	var violations []string
	for _, path := range paths {
		p := pkgs[path]
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
			if pkgs[path].Module != nil && pkgs[path].Module.Path == modulePath {
				ast.Inspect(f, func(n ast.Node) bool {
					if id, ok := n.(*ast.Ident); ok && id.Name == "UseStatusResources" {
						statusOptionSet = true
					}
					return true
				})
			}
		}
		for key, at := range fieldReads(t, fset, imp, path, files) {
			typ, field, _ := strings.Cut(key, ".")
			if f := dropped[typ]; !f["*"] && !f[field] {
				continue
			}
			if path == resourceHelpers && (typ == "ContainerStatus" || typ == "PodStatus") {
				statusReads = append(statusReads, fmt.Sprintf("%s read at %s", key, strings.Join(at, ", ")))
				continue
			}
			violations = append(violations, fmt.Sprintf("%s read at %s", key, strings.Join(at, ", ")))
		}
	}
	if statusOptionSet {
		violations = append(violations, statusReads...)
	}
	sort.Strings(violations)
	for _, v := range violations {
		t.Errorf("the transform drops v1.%s: keep it in stripPod or stripNode (pkg/cache/informerhost/transform.go) and in this test's lists", v)
	}
	t.Logf("scanned %d packages; dropped: %v", len(paths), dropped)
}

// TestFieldReadsFindsReads checks the detector of TestStrippedFieldsUnread
// on a package that reads a dropped field, so that a silent detector
// cannot pass it.
func TestFieldReadsFindsReads(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks against export data")
	}
	pkgs := loadPackages(t, coreV1)
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		p := pkgs[path]
		if p == nil || p.Export == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(p.Export)
	})
	src := `package probe
import v1 "k8s.io/api/core/v1"
func reads(p *v1.Pod, e v1.EphemeralContainer) (int, string, bool) {
	c := v1.Container{Env: nil} // a write: not counted
	_ = c
	p.Status.InitContainerStatuses = nil // a write: not counted
	return len(p.Spec.Containers[0].Env), e.WorkingDir, p.Status.ContainerStatuses[0].Ready
}`
	f, err := parser.ParseFile(fset, "probe.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := fieldReads(t, fset, imp, "example.com/probe", []*ast.File{f})
	dropped := strippedFields(t)
	var hits []string
	for key := range got {
		typ, field, _ := strings.Cut(key, ".")
		if d := dropped[typ]; d["*"] || d[field] {
			hits = append(hits, key)
		}
	}
	sort.Strings(hits)
	want := []string{"Container.Env", "ContainerStatus.Ready", "EphemeralContainerCommon.WorkingDir", "PodStatus.ContainerStatuses"}
	if !slices.Equal(hits, want) {
		t.Errorf("dropped fields read by the probe = %v, want %v", hits, want)
	}
}

// TestStripPod checks what stripPod keeps and drops on a pod as a kubelet
// reports it.
func TestStripPod(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC))
	full := func() *v1.Pod {
		c := func(name string) v1.Container {
			return v1.Container{
				Name: name, Image: "registry.example.com/" + name + ":1",
				Command: []string{"/bin/app"}, Args: []string{"--port=8080"}, WorkingDir: "/app",
				Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080, HostPort: 80}},
				Env:   []v1.EnvVar{{Name: "A", Value: "b"}},
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
					Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
				},
				ResizePolicy:           []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired}},
				VolumeMounts:           []v1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets"}},
				ReadinessProbe:         &v1.Probe{PeriodSeconds: 10},
				Lifecycle:              &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sleep"}}}},
				TerminationMessagePath: "/dev/termination-log", ImagePullPolicy: v1.PullAlways,
				SecurityContext: &v1.SecurityContext{RunAsNonRoot: ptr.To(true)},
			}
		}
		sidecar := c("sidecar")
		sidecar.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
		return &v1.Pod{
			Spec: v1.PodSpec{
				NodeName:            "n1",
				InitContainers:      []v1.Container{sidecar},
				Containers:          []v1.Container{c("app")},
				EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox", Command: []string{"sh"}}}},
				Volumes: []v1.Volume{
					{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}},
					{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
					{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}},
					{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{{Path: "ns"}}}}},
					{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
					{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
					{Name: "eph", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}},
				},
				SecurityContext: &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			},
			Status: v1.PodStatus{
				Phase: v1.PodRunning,
				Conditions: []v1.PodCondition{
					{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: started, LastProbeTime: started},
					// The condition the scheduler rewrites keeps its time
					// while the pod is not scheduled.
					{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable", LastTransitionTime: started},
				},
				PodIP: "10.0.0.1", PodIPs: []v1.PodIP{{IP: "10.0.0.1"}}, HostIP: "192.168.0.1", HostIPs: []v1.HostIP{{IP: "192.168.0.1"}},
				StartTime:             ptr.To(started),
				ContainerStatuses:     []v1.ContainerStatus{{Name: "app", Ready: true}},
				InitContainerStatuses: []v1.ContainerStatus{{Name: "sidecar", Ready: true}},
			},
		}
	}
	got := full()
	stripPod(got)
	want := full()
	slim := func(c v1.Container) v1.Container {
		return v1.Container{Name: c.Name, Image: c.Image, Ports: c.Ports, Resources: c.Resources, ResizePolicy: c.ResizePolicy,
			RestartPolicy: c.RestartPolicy, RestartPolicyRules: c.RestartPolicyRules}
	}
	want.Spec.InitContainers[0] = slim(want.Spec.InitContainers[0])
	want.Spec.Containers[0] = slim(want.Spec.Containers[0])
	want.Spec.EphemeralContainers[0].EphemeralContainerCommon = v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}
	want.Spec.Volumes = []v1.Volume{want.Spec.Volumes[4], want.Spec.Volumes[6]}
	want.Spec.SecurityContext = nil
	want.Status.ContainerStatuses, want.Status.InitContainerStatuses = nil, nil
	want.Status.PodIP, want.Status.PodIPs, want.Status.HostIP, want.Status.HostIPs = "", nil, "", nil
	want.Status.Conditions[0].LastTransitionTime, want.Status.Conditions[0].LastProbeTime = metav1.Time{}, metav1.Time{}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("stripPod (-want +got):\n%s", diff.Diff(want, got))
	}

	// Once scheduled, no condition keeps a time, and a pod with only
	// placement-free volumes keeps none.
	bound := full()
	bound.Status.Conditions[1].Status = v1.ConditionTrue
	bound.Spec.Volumes = bound.Spec.Volumes[:4]
	stripPod(bound)
	for _, c := range bound.Status.Conditions {
		if !c.LastTransitionTime.IsZero() || !c.LastProbeTime.IsZero() {
			t.Errorf("condition %s of a scheduled pod kept its times: %v, %v", c.Type, c.LastTransitionTime, c.LastProbeTime)
		}
	}
	if bound.Spec.Volumes != nil {
		t.Errorf("placement-free volumes kept: %v", bound.Spec.Volumes)
	}
	if got.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 100 || *got.Spec.InitContainers[0].RestartPolicy != v1.ContainerRestartPolicyAlways {
		t.Errorf("stripPod lost the requests or the sidecar's restart policy: %#v", got.Spec)
	}
}

func TestStripForScheduler(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	pod := st.MakePod().Name("p").Node("n1").
		Annotation(LastAppliedConfigAnnotation, `{"big":"json"}`).
		Group("g").MinAvailable("2").Label("app", "x").
		Req(res{v1.ResourceCPU: "1"}).Obj()
	pod.ManagedFields = managed
	want := pod.DeepCopy()
	want.ManagedFields = nil
	delete(want.Annotations, LastAppliedConfigAnnotation)

	node := st.MakeNode().Name("n1").Capacity(res{v1.ResourceCPU: "4"}).Label("zone", "a").
		Taint("gpu", "true", v1.TaintEffectNoSchedule).Obj()
	node.ManagedFields = managed
	node.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	wantNode := node.DeepCopy()
	wantNode.ManagedFields = nil
	ns := &node.Status
	ns.Images = []v1.ContainerImage{{Names: []string{"busybox"}, SizeBytes: 1 << 20}}
	ns.NodeInfo = v1.NodeSystemInfo{KernelVersion: "6.1", KubeletVersion: "v1.37.1", Architecture: "amd64"}
	ns.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}}
	ns.DaemonEndpoints.KubeletEndpoint.Port = 10250
	ns.VolumesInUse = []v1.UniqueVolumeName{"kubernetes.io/csi/vol"}
	ns.VolumesAttached = []v1.AttachedVolume{{Name: "kubernetes.io/csi/vol", DevicePath: "/dev/x"}}
	ns.Config = &v1.NodeConfigStatus{}

	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{
			"name": "w", "namespace": "default",
			"annotations":   map[string]any{LastAppliedConfigAnnotation: "{}", "keep": "me"},
			"managedFields": []any{map[string]any{"manager": "kubectl"}},
		},
		"spec": map[string]any{"size": int64(3)},
	}}
	wantU := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{
			"name": "w", "namespace": "default",
			"annotations": map[string]any{"keep": "me"},
		},
		"spec": map[string]any{"size": int64(3)},
	}}

	tests := []struct {
		name string
		in   any
		want any
	}{
		// A bound pod is kept as its record; a record (the second pass
		// over a watch-list's objects) stays as it is.
		{"bound pod", pod, framework.NewPodRecord(want)},
		{"record", framework.NewPodRecord(want.DeepCopy()), framework.NewPodRecord(want)},
		{"node", node, wantNode},
		{"tombstone of a bound pod", toolscache.DeletedFinalStateUnknown{Key: "default/p", Obj: pod.DeepCopy()},
			toolscache.DeletedFinalStateUnknown{Key: "default/p", Obj: framework.NewPodRecord(want)}},
		{"unstructured", u, wantU},
		{"pod without annotations", st.MakePod().Name("bare").Obj(), st.MakePod().Name("bare").Obj()},
		{"not an object", "just a string", "just a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			if o, ok := in.(runtime.Object); ok {
				in = o.DeepCopyObject()
			}
			got, err := StripForScheduler(in)
			if err != nil {
				t.Fatalf("StripForScheduler: %v", err)
			}
			if !equalObjects(got, tt.want) {
				t.Errorf("StripForScheduler(%T):\n got %#v\nwant %#v", tt.in, got, tt.want)
			}
		})
	}
}

func equalObjects(a, b any) bool {
	if ta, ok := a.(toolscache.DeletedFinalStateUnknown); ok {
		tb, ok := b.(toolscache.DeletedFinalStateUnknown)
		return ok && ta.Key == tb.Key && equalObjects(ta.Obj, tb.Obj)
	}
	if ra, ok := a.(*framework.PodRecord); ok {
		// A record's fields are unexported: compare the pods made of them.
		rb, ok := b.(*framework.PodRecord)
		return ok && equalObjects(ra.Pod(), rb.Pod())
	}
	ra, okA := a.(runtime.Object)
	rb, okB := b.(runtime.Object)
	if !okA || !okB {
		return a == b
	}
	ua, errA := runtime.DefaultUnstructuredConverter.ToUnstructured(ra)
	ub, errB := runtime.DefaultUnstructuredConverter.ToUnstructured(rb)
	return errA == nil && errB == nil && equalUnstructured(ua, ub)
}

func equalUnstructured(a, b map[string]any) bool {
	return (&unstructured.Unstructured{Object: a}).GetName() == (&unstructured.Unstructured{Object: b}).GetName() &&
		toString(a) == toString(b)
}

func toString(m map[string]any) string {
	data, err := (&unstructured.Unstructured{Object: m}).MarshalJSON()
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(data)
}

// The factory's pod informer keeps no namespace index (a set entry per
// pod that nothing reads), and still runs the transform: a bound pod is
// stored as its record.
func TestInformerFactoryPodInformer(t *testing.T) {
	bound := st.MakePod().Namespace("ns").Name("p").UID("u").Node("n1").Obj()
	f := NewInformerFactory(fake.NewClientset(bound), 0)
	inf := f.Core().V1().Pods().Informer()
	if idx := inf.GetIndexer().GetIndexers(); len(idx) != 0 {
		t.Errorf("the pod informer has indexers %v, want none", slices.Collect(maps.Keys(idx)))
	}
	if again := f.Core().V1().Pods().Informer(); len(again.GetIndexer().GetIndexers()) != 0 {
		t.Error("a second call got the factory's default pod informer")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer f.Shutdown()
	defer cancel()
	f.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the pod informer did not sync")
	}
	obj, ok, err := inf.GetStore().GetByKey("ns/p")
	if err != nil || !ok {
		t.Fatalf("the store has no ns/p: %v", err)
	}
	if _, isRecord := obj.(*framework.PodRecord); !isRecord {
		t.Errorf("the store holds a %T for a bound pod, want a *framework.PodRecord", obj)
	}
}
