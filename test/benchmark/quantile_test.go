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

package benchmark

import (
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// attemptHistogram is the scheduler's histogram of scheduling-attempt
// durations (pkg/scheduler: AttemptDuration).
const attemptHistogram = "batch_scheduler_scheduling_attempt_duration_seconds"

// leLabel finds the upper bound of a histogram bucket in its labels.
var leLabel = regexp.MustCompile(`[{,]le="([^"]+)"`)

// histogramQuantile returns the q-quantile (0 < q < 1) of the histogram
// name in samples (as scrapeMetrics returns them: "name_bucket{labels}" →
// cumulative count), summed over all its other labels, interpolating
// linearly inside the bucket that holds it, as Prometheus's
// histogram_quantile does. It returns 0 without observations, and the
// largest finite bound when the quantile falls in the +Inf bucket.
func histogramQuantile(samples map[string]float64, name string, q float64) float64 {
	counts := map[float64]float64{}
	for k, v := range samples {
		if !strings.HasPrefix(k, name+"_bucket{") {
			continue
		}
		m := leLabel.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		le, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			continue
		}
		counts[le] += v
	}
	bounds := make([]float64, 0, len(counts))
	for le := range counts {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return 0
	}
	total := counts[bounds[len(bounds)-1]]
	if total == 0 {
		return 0
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, le := range bounds {
		c := counts[le]
		if c >= rank {
			if math.IsInf(le, 1) {
				return lower
			}
			if c == below {
				return le
			}
			return lower + (le-lower)*(rank-below)/(c-below)
		}
		lower, below = le, c
	}
	return lower
}

// attemptP99 is the 99th percentile of the scheduler's attempt durations.
func attemptP99(samples map[string]float64) time.Duration {
	return time.Duration(histogramQuantile(samples, attemptHistogram, 0.99) * float64(time.Second)).Round(10 * time.Microsecond)
}

func TestHistogramQuantile(t *testing.T) {
	const n = "h"
	bucket := func(labels string, le string) string { return n + `_bucket{` + labels + `le="` + le + `"}` }
	tests := []struct {
		name    string
		samples map[string]float64
		q       float64
		want    float64
	}{
		{name: "no samples", samples: map[string]float64{}, q: 0.99, want: 0},
		{name: "no observations", samples: map[string]float64{bucket("", "1"): 0, bucket("", "+Inf"): 0}, q: 0.99, want: 0},
		{
			name:    "inside the first bucket",
			samples: map[string]float64{bucket("", "1"): 100, bucket("", "2"): 100, bucket("", "+Inf"): 100},
			q:       0.5, want: 0.5,
		},
		{
			name:    "interpolated in the second bucket",
			samples: map[string]float64{bucket("", "1"): 50, bucket("", "3"): 150, bucket("", "+Inf"): 150},
			q:       0.5, want: 1.5,
		},
		{
			name: "summed over other labels",
			samples: map[string]float64{
				bucket(`result="a",`, "1"): 25, bucket(`result="a",`, "3"): 75, bucket(`result="a",`, "+Inf"): 75,
				bucket(`result="b",`, "1"): 25, bucket(`result="b",`, "3"): 75, bucket(`result="b",`, "+Inf"): 75,
			},
			q: 0.5, want: 1.5,
		},
		{
			name:    "in the +Inf bucket: the largest finite bound",
			samples: map[string]float64{bucket("", "1"): 10, bucket("", "2"): 10, bucket("", "+Inf"): 100},
			q:       0.99, want: 2,
		},
		{
			name:    "other metrics ignored",
			samples: map[string]float64{bucket("", "1"): 100, bucket("", "+Inf"): 100, "other_bucket{le=\"5\"}": 1000, n + "_count": 100},
			q:       0.99, want: 0.99,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := histogramQuantile(tt.samples, n, tt.q); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("histogramQuantile(q=%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}
