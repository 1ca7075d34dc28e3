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

package pluginutil_test

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// zoneArgs are the args of an out-of-tree plugin that keeps pods in one
// zone.
type zoneArgs struct {
	Zone string `yaml:"zone"`
}

// An out-of-tree plugin decodes its args strictly and gives its Filter's
// rule to NodeRuleHint, so that only node changes that can admit one of a
// waiting job's pods retry it.
func Example() {
	args := zoneArgs{Zone: "any"}
	if err := pluginutil.DecodeArgs("AcmeZone", configapi.NewRawArgs("", []byte("zone: eu-1\n")), &args); err != nil {
		fmt.Println(err)
		return
	}
	admits := func(_ *v1.Pod, node *v1.Node) bool {
		return node.Labels["topology.kubernetes.io/zone"] == args.Zone
	}
	hint := pluginutil.NodeRuleHint(admits)

	job := &framework.QueuedJob{Pods: []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "trainer-0"}}}}
	before := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"topology.kubernetes.io/zone": "us-1"}}}
	after := before.DeepCopy()
	after.Labels["topology.kubernetes.io/zone"] = "eu-1"
	moved, _ := hint(klog.Background(), job, before, after)
	back, _ := hint(klog.Background(), job, after, before)
	fmt.Println("node moved into the zone:", moved)
	fmt.Println("node moved out of it:", back)

	err := pluginutil.DecodeArgs("AcmeZone", configapi.NewRawArgs("", []byte("zones: [eu-1]\n")), &args)
	fmt.Println("misspelt field rejected:", err != nil && strings.Contains(err.Error(), "AcmeZone args"))
	// Output:
	// node moved into the zone: Queue
	// node moved out of it: QueueSkip
	// misspelt field rejected: true
}
