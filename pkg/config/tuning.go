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

package config

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
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
	// PercentageOfNodesToScore is the share of the nodes a pod's Filter
	// and Score look at (percentageOfNodesToScore; 0: adapted to the
	// cluster's size), and ProfilePercentageOfNodesToScore the profiles
	// that set their own.
	PercentageOfNodesToScore        int
	ProfilePercentageOfNodesToScore map[string]int
	// TenantQueueOrder names the policy that orders jobs across tenant
	// queues (tenantQueueOrder; empty: the default).
	TenantQueueOrder string
}

// rawTuning is Tuning as written, for the structural pass of Parse (the
// values are judged by the API's validation).
type rawTuning struct {
	Parallelism              *int64 `yaml:"parallelism"`
	PodInitialBackoffSeconds *int64 `yaml:"podInitialBackoffSeconds"`
	PodMaxBackoffSeconds     *int64 `yaml:"podMaxBackoffSeconds"`
	// PercentageOfNodesToScore: the share of the nodes (0 to 100) a
	// pod's Filter and Score look at in clusters of more than 100 nodes;
	// 0 adapts it to the cluster's size, 100 looks at every node.
	PercentageOfNodesToScore *int64 `yaml:"percentageOfNodesToScore"`
	// TenantQueueOrder: the policy that orders jobs across tenant queues.
	TenantQueueOrder *string `yaml:"tenantQueueOrder"`
}

// tuningOf reads the scheduler-wide settings of the decoded, defaulted
// file.
func tuningOf(cfg *configapi.SchedulerConfiguration) Tuning {
	if cfg == nil {
		return Tuning{}
	}
	t := Tuning{
		Parallelism:    int(cfg.Parallelism),
		InitialBackoff: time.Duration(cfg.PodInitialBackoffSeconds) * time.Second,
		MaxBackoff:     time.Duration(cfg.PodMaxBackoffSeconds) * time.Second,
		// The policy's name is checked against the registry when the
		// cache is built.
		TenantQueueOrder: cfg.TenantQueueOrder,
	}
	if p := cfg.PercentageOfNodesToScore; p != nil {
		t.PercentageOfNodesToScore = int(*p)
	}
	for _, prof := range cfg.Profiles {
		if p := prof.PercentageOfNodesToScore; p != nil {
			if t.ProfilePercentageOfNodesToScore == nil {
				t.ProfilePercentageOfNodesToScore = map[string]int{}
			}
			t.ProfilePercentageOfNodesToScore[prof.SchedulerName] = int(*p)
		}
	}
	return t
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
