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
	"testing"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// benchFile is a configuration of the size a deployment has: a handler,
// a custom informer and two profiles with typed and raw plugin args.
const benchFile = good + `profiles:
- schedulerName: batch-scheduler
  plugins:
    score:
      enabled:
      - name: NodeResourcesFit
        weight: 3
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy: MostAllocated
      resources: [{name: cpu}, {name: memory}, {name: nvidia.com/gpu, weight: 5}]
  - name: TopologyAware
    args:
      levels: [topology.kubernetes.io/block, topology.kubernetes.io/rack, kubernetes.io/hostname]
- schedulerName: gpu-scheduler
  pluginConfig:
  - name: DefaultPreemption
    args: {minCandidateNodesPercentage: 20}
  - name: AcmeZone
    args: {zone: eu-1}
`

// BenchmarkLoad measures reading a configuration file: the shape check,
// the scheme's decoding (defaults, conversion, typed plugin args), the
// validation and the raw args cut at the file's lines. It runs in CI with
// -benchtime=1x.
func BenchmarkLoad(b *testing.B) {
	data := []byte(benchFile)
	for b.Loop() {
		f, err := Parse("bench.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := f.Profiles()[0].PluginConfig[0].Args.(*configapi.NodeResourcesFitArgs); !ok {
			b.Fatalf("NodeResourcesFit args are %T", f.Profiles()[0].PluginConfig[0].Args)
		}
	}
}
