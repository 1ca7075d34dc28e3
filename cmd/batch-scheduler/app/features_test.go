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
	"testing"

	"github.com/spf13/pflag"
)

// TestOpportunisticBatchingGate checks that kube-scheduler's switch for
// reusing a ranking of nodes across alike pods is ours too: on by
// default, off with --feature-gates=OpportunisticBatching=false.
func TestOpportunisticBatchingGate(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--feature-gates=OpportunisticBatching=false"}, false},
		{[]string{"--feature-gates=OpportunisticBatching=true"}, true},
	} {
		o := NewOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		addAll(fs, o.Flags(nil))
		if err := fs.Parse(tt.args); err != nil {
			t.Fatalf("parsing %v: %v", tt.args, err)
		}
		if got := o.FeatureGate.Enabled(OpportunisticBatching); got != tt.want {
			t.Errorf("%v: OpportunisticBatching %v, want %v", tt.args, got, tt.want)
		}
	}
}
