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

package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// printExpected prints the expected outcomes.
func printExpected(expect []outcome) {
	fmt.Println("expected:")
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	for _, o := range expect {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", o.Name, o.Expectation(), o.Because)
	}
	w.Flush()
}

// printNodes prints the nodes as the cache sees them (idle before the
// step as prev left it), then the external usage's keys and the queue.
func printNodes(prev, d *cache.Dump, states map[string]harness.Pod) {
	harness.WriteNodes(os.Stdout, prev, d, states)
	if note := externalNote(d); note != "" {
		fmt.Println("external usage (custom informer " + vmInformer + "): " + note)
	}
	l := d.Queue.Lengths
	fmt.Printf("queue: %d active, %d backoff, %d unschedulable\n", l.Active, l.Backoff, l.Unschedulable)
}
