package config

import (
	"strings"
	"testing"
	"time"
)

func TestTuning(t *testing.T) {
	header := "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\n"
	f, err := Parse("x.yaml", []byte(header+"parallelism: 8\npodInitialBackoffSeconds: 2\npodMaxBackoffSeconds: 30\npercentageOfNodesToScore: 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Tuning{Parallelism: 8, InitialBackoff: 2 * time.Second, MaxBackoff: 30 * time.Second}); f.Tuning != want {
		t.Errorf("Tuning = %+v, want %+v", f.Tuning, want)
	}
	f, err = Parse("x.yaml", []byte(header))
	if err != nil || f.Tuning != (Tuning{}) {
		t.Errorf("no tuning: %+v, %v", f.Tuning, err)
	}

	for _, tt := range []struct{ in, want string }{
		{"parallelism: 0\n", "line 3: parallelism must be between 1 and 1024, got 0"},
		{"parallelism: 5000\n", "line 3: parallelism must be between 1 and 1024, got 5000"},
		{"parallelism: many\n", "line 3"},
		{"podInitialBackoffSeconds: 0\n", "line 3: podInitialBackoffSeconds must be between 1 and 86400, got 0"},
		{"podMaxBackoffSeconds: -1\n", "line 3: podMaxBackoffSeconds must be between 1 and 86400, got -1"},
		{"podInitialBackoffSeconds: 20\npodMaxBackoffSeconds: 10\n", "line 4: podMaxBackoffSeconds (10) must not be below podInitialBackoffSeconds (20)"},
		{"percentageOfNodesToScore: 50\n", "line 3: percentageOfNodesToScore 50 is not supported: this scheduler filters and scores every node"},
		{"clientConnection: {qps: 50}\n", "field clientConnection not found"},
	} {
		_, err := Parse("x.yaml", []byte(header+tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "x.yaml: ") {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
}
