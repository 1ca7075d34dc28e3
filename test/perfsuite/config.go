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

package perfsuite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// KubernetesVersion is the release whose scheduler_perf suite is read.
const KubernetesVersion = "v1.37.1"

// SuiteDir returns test/integration/scheduler_perf of k8s.io/kubernetes at
// KubernetesVersion in the Go module cache, where make control-plane puts
// it (it builds kube-scheduler from that module). $PERF_SUITE_DIR
// overrides it.
func SuiteDir() (string, error) {
	if d := os.Getenv("PERF_SUITE_DIR"); d != "" {
		return d, nil
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("finding the Go module cache (go env GOMODCACHE): %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "k8s.io", "kubernetes@"+KubernetesVersion, "test", "integration", "scheduler_perf")
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("kube-scheduler's benchmark suite is not in the module cache (run 'make control-plane', which downloads k8s.io/kubernetes@%s): %w", KubernetesVersion, err)
	}
	return dir, nil
}

// TestCase is one entry of a scheduler_perf performance-config.yaml: a
// template of operations and the workloads that fill in its parameters.
type TestCase struct {
	Name                   string
	FeatureGates           map[string]bool
	SchedulerConfigPath    string
	DefaultPodTemplatePath string
	WorkloadTemplate       []Op
	Workloads              []Workload
	// DefaultThresholdMetricSelector names the metric thresholds apply
	// to when a workload names none (SchedulingThroughput otherwise).
	DefaultThresholdMetricSelector json.RawMessage
	// MetricsCollectorConfig selects upstream's extra metrics; the runner
	// always collects its own fixed set, so it is read and ignored.
	MetricsCollectorConfig json.RawMessage

	// File is the performance-config.yaml the case came from, relative
	// to the suite's directory; paths in the case are relative to its
	// directory.
	File string `json:"-"`
}

// Workload is one parameterization of a TestCase.
type Workload struct {
	Name         string
	Labels       []string
	Params       map[string]any
	FeatureGates map[string]bool
	// Threshold is the minimum upstream's CI expects of kube-scheduler
	// on this workload (pods/s unless ThresholdMetricSelector names
	// another metric).
	Threshold               Threshold
	ThresholdMetricSelector json.RawMessage
}

// Threshold is a number, or a number per topic (e.g. {dra: 56}).
type Threshold struct {
	Value   float64
	ByTopic map[string]float64
}

// UnmarshalJSON takes either form.
func (t *Threshold) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &t.Value); err == nil {
		return nil
	}
	if err := json.Unmarshal(data, &t.ByTopic); err != nil {
		return fmt.Errorf("threshold: want a number or a map of topic to number: %w", err)
	}
	return nil
}

// String renders the threshold for the report; "–" when there is none.
func (t Threshold) String() string {
	if len(t.ByTopic) > 0 {
		keys := make([]string, 0, len(t.ByTopic))
		for k := range t.ByTopic {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s: %g", k, t.ByTopic[k]))
		}
		return strings.Join(parts, ", ")
	}
	if t.Value == 0 {
		return "–"
	}
	return fmt.Sprintf("%g", t.Value)
}

// Op is one operation of a workload template. Every opcode's fields are
// in this one struct; which ones an opcode reads is in ops.go. Upstream
// decodes the same YAML with encoding/json, so field names match
// case-insensitively, as here.
type Op struct {
	Opcode string

	Count                *int
	CountParam           string
	CountMultiplierParam string

	// createNodes
	NodeTemplatePath         *string
	NodeAllocatableStrategy  json.RawMessage
	LabelNodePrepareStrategy *struct {
		LabelKey    string
		LabelValues []string
	}
	UniqueNodeLabelStrategy *struct{ LabelKey string }

	// createNamespaces, createPodSets
	Prefix                string
	NamespaceTemplatePath *string
	NamespacePrefix       string
	CreatePodsOp          *Op

	// createPods
	PodTemplatePath                   *string
	PersistentVolumeTemplatePath      *string
	PersistentVolumeClaimTemplatePath *string
	SteadyState                       bool
	SteadyStateParam                  string
	Duration                          string
	DurationParam                     string
	CollectMetrics                    bool
	SkipWaitToCompletion              bool
	SignatureBatchSize                int
	SignatureBatchSizeParam           string

	// createAny, updateAny, createPodGroups, churn, deletePods, barrier,
	// start/stopCollectingMetrics
	Namespace            json.RawMessage // a string; createPods allows it to be absent
	Namespaces           []string
	TemplatePath         string
	TemplatePaths        []string
	TemplateParams       map[string]any
	UpdatePerSecond      int
	Subresources         []string
	Mode                 string
	Number               int
	IntervalMilliseconds int64
	LabelSelector        map[string]string
	StageRequirement     string
	DeletePodsPerSecond  int
	Name                 string
	Type                 string
	FilePath             string
}

// namespace returns the op's namespace field, or "" when it has none.
func (op *Op) namespace() (string, error) {
	if len(op.Namespace) == 0 || string(op.Namespace) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(op.Namespace, &s); err != nil {
		return "", fmt.Errorf("namespace: %w", err)
	}
	return s, nil
}

// LoadSuite reads every performance-config.yaml under dir, sorted by
// path. A file that does not decode is an error naming it: upstream
// changed a field the runner does not know.
func LoadSuite(dir string) ([]TestCase, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "performance-config.yaml" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no performance-config.yaml under %s", dir)
	}
	sort.Strings(files)
	var all []TestCase
	for _, path := range files {
		cases, err := loadFile(path)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(dir, path)
		for i := range cases {
			cases[i].File = rel
		}
		all = append(all, cases...)
	}
	return all, nil
}

func loadFile(path string) ([]TestCase, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var cases []TestCase
	if err := dec.Decode(&cases); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, tc := range cases {
		if tc.Name == "" {
			return nil, fmt.Errorf("%s: a test case without a name", path)
		}
		for _, w := range tc.Workloads {
			if w.Name == "" {
				return nil, fmt.Errorf("%s: %s: a workload without a name", path, tc.Name)
			}
		}
	}
	return cases, nil
}

// Gates returns the feature gates of the workload: the test case's,
// overridden by the workload's.
func (tc *TestCase) Gates(w *Workload) map[string]bool {
	gates := map[string]bool{}
	for k, v := range tc.FeatureGates {
		gates[k] = v
	}
	for k, v := range w.FeatureGates {
		gates[k] = v
	}
	return gates
}

// GateFlag renders gates as a --feature-gates value, sorted; "" when
// empty.
func GateFlag(gates map[string]bool) string {
	names := make([]string, 0, len(gates))
	for k := range gates {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s=%t", k, gates[k]))
	}
	return strings.Join(parts, ",")
}

// HasLabel reports whether the workload carries label.
func (w *Workload) HasLabel(label string) bool {
	for _, l := range w.Labels {
		if l == label {
			return true
		}
	}
	return false
}

// errParam is returned for a $param the workload does not set.
var errParam = errors.New("parameter not set by the workload")

// intParam resolves a "$name" parameter to an int.
func (w *Workload) intParam(ref string) (int, error) {
	v, err := w.param(ref)
	if err != nil {
		return 0, err
	}
	switch n := v.(type) {
	case float64:
		return int(n), nil
	case int:
		return n, nil
	}
	return 0, fmt.Errorf("parameter %s is %T, not a number", ref, v)
}

func (w *Workload) param(ref string) (any, error) {
	name, ok := strings.CutPrefix(ref, "$")
	if !ok {
		return nil, fmt.Errorf("parameter reference %q does not start with $", ref)
	}
	// "$name|default": the default, a YAML scalar (possibly empty), when
	// the workload does not set name.
	name, def, hasDefault := strings.Cut(name, "|")
	v, ok := w.Params[name]
	switch {
	case ok:
		return v, nil
	case !hasDefault:
		return nil, fmt.Errorf("%s: %w", ref, errParam)
	case def == "":
		return "", nil
	}
	var d any
	if err := yaml.Unmarshal([]byte(def), &d); err != nil {
		return nil, fmt.Errorf("%s: default %q: %w", ref, def, err)
	}
	return d, nil
}

// count resolves an op's Count or CountParam, times its
// CountMultiplierParam.
func (w *Workload) count(op *Op) (int, error) {
	n := 0
	switch {
	case op.CountParam != "":
		v, err := w.intParam(op.CountParam)
		if err != nil {
			return 0, err
		}
		n = v
	case op.Count != nil:
		n = *op.Count
	}
	if op.CountMultiplierParam != "" {
		m, err := w.intParam(op.CountMultiplierParam)
		if err != nil {
			return 0, err
		}
		n *= m
	}
	return n, nil
}

// templateParams resolves "$name" values of an op's templateParams.
func (w *Workload) templateParams(in map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(in))
	for k, v := range in {
		if s, ok := v.(string); ok && strings.HasPrefix(s, "$") {
			pv, err := w.param(s)
			if err != nil {
				return nil, fmt.Errorf("templateParams.%s: %w", k, err)
			}
			v = pv
		}
		out[k] = v
	}
	return out, nil
}

// Nodes is the number of nodes the workload creates up front (every
// createNodes op), which sizes it.
func (tc *TestCase) Nodes(w *Workload) int {
	total := 0
	for i := range tc.WorkloadTemplate {
		op := &tc.WorkloadTemplate[i]
		if op.Opcode != "createNodes" {
			continue
		}
		if n, err := w.count(op); err == nil {
			total += n
		}
	}
	return total
}

// MeasuredPods is the number of pods created by ops that collect
// metrics: the pods the throughput is measured on.
func (tc *TestCase) MeasuredPods(w *Workload) int {
	total := 0
	for i := range tc.WorkloadTemplate {
		op := &tc.WorkloadTemplate[i]
		if op.Opcode == "createPods" && op.CollectMetrics {
			if n, err := w.count(op); err == nil {
				total += n
			}
		}
	}
	return total
}
