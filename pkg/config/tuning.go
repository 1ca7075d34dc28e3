package config

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Tuning holds the scheduler-wide settings a kube-scheduler
// configuration has at its top level, under the same names, so that they
// carry over unchanged. Zero values mean the defaults.
type Tuning struct {
	// Parallelism is how many goroutines filter and score nodes
	// (parallelism).
	Parallelism int
	// InitialBackoff and MaxBackoff bound a job's backoff after a failed
	// attempt (podInitialBackoffSeconds, podMaxBackoffSeconds).
	InitialBackoff, MaxBackoff time.Duration
}

// rawTuning is Tuning as written, plus kube-scheduler settings that are
// read only to be judged.
type rawTuning struct {
	Parallelism              *int64 `yaml:"parallelism"`
	PodInitialBackoffSeconds *int64 `yaml:"podInitialBackoffSeconds"`
	PodMaxBackoffSeconds     *int64 `yaml:"podMaxBackoffSeconds"`
	// PercentageOfNodesToScore: this scheduler filters and scores every
	// node; 0 (kube-scheduler's adaptive default) and 100 are accepted.
	PercentageOfNodesToScore *int64 `yaml:"percentageOfNodesToScore"`
}

// maxParallelism bounds parallelism: more goroutines than this only
// contend.
const maxParallelism = 1024

// tuning validates t, reporting each problem at its key's line.
func (t rawTuning) tuning(root *yaml.Node, bad func(line int, format string, args ...any)) Tuning {
	var out Tuning
	if p := t.Parallelism; p != nil {
		if *p < 1 || *p > maxParallelism {
			bad(lineOf(root, "parallelism"), "parallelism must be between 1 and %d, got %d", maxParallelism, *p)
		} else {
			out.Parallelism = int(*p)
		}
	}
	// A day: longer backoffs are a mistake, and seconds beyond it would
	// overflow a Duration long before they made sense.
	const maxBackoffSeconds = 24 * 60 * 60
	if b := t.PodInitialBackoffSeconds; b != nil {
		if *b < 1 || *b > maxBackoffSeconds {
			bad(lineOf(root, "podInitialBackoffSeconds"), "podInitialBackoffSeconds must be between 1 and %d, got %d", maxBackoffSeconds, *b)
		} else {
			out.InitialBackoff = time.Duration(*b) * time.Second
		}
	}
	if b := t.PodMaxBackoffSeconds; b != nil {
		if *b < 1 || *b > maxBackoffSeconds {
			bad(lineOf(root, "podMaxBackoffSeconds"), "podMaxBackoffSeconds must be between 1 and %d, got %d", maxBackoffSeconds, *b)
		} else {
			out.MaxBackoff = time.Duration(*b) * time.Second
		}
	}
	if out.InitialBackoff > 0 && out.MaxBackoff > 0 && out.MaxBackoff < out.InitialBackoff {
		bad(lineOf(root, "podMaxBackoffSeconds"), "podMaxBackoffSeconds (%d) must not be below podInitialBackoffSeconds (%d)", *t.PodMaxBackoffSeconds, *t.PodInitialBackoffSeconds)
	}
	if p := t.PercentageOfNodesToScore; p != nil && *p != 0 && *p != 100 {
		bad(lineOf(root, "percentageOfNodesToScore"), "percentageOfNodesToScore %d is not supported: this scheduler filters and scores every node (write 100, or leave it out)", *p)
	}
	return out
}

// KubeSchedulerKind is the kind of kube-scheduler's configuration file,
// which --config-path accepts with KubeSchedulerAPIVersion.
const KubeSchedulerKind = "KubeSchedulerConfiguration"

// kubeSchedulerOnly are top-level settings of a kube-scheduler
// configuration that this file does not take, with where they went.
var kubeSchedulerOnly = map[string]string{
	"leaderElection":                    "use the --leader-elect* flags",
	"clientConnection":                  "use --kubeconfig, --kube-api-qps and --kube-api-burst",
	"extenders":                         "scheduler extenders are not supported",
	"enableProfiling":                   "use --profiling",
	"enableContentionProfiling":         "use --contention-profiling",
	"healthzBindAddress":                "use --secure-port and --bind-address",
	"metricsBindAddress":                "use --secure-port and --bind-address",
	"podMaxInUnschedulablePodsDuration": "not supported: a parked job is retried after 5 minutes",
	"delayCacheUntilActive":             "not supported: every replica keeps its cache warm",
	"featureGates":                      "use --feature-gates",
}

// kubeSchedulerOnlyFields reports every top-level key of root that is a
// kube-scheduler setting this file does not take, at its line.
func kubeSchedulerOnlyFields(root *yaml.Node) error {
	if root.Kind != yaml.MappingNode {
		return nil
	}
	var problems []string
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if why, ok := kubeSchedulerOnly[k.Value]; ok {
			problems = append(problems, fmt.Sprintf("line %d: %s is a kube-scheduler setting this file does not take: %s", k.Line, k.Value, why))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(problems, "; "))
}
