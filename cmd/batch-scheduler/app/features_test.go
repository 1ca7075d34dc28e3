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
