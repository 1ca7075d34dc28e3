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

package informerhost

import (
	"testing"
	"time"
)

func TestEventTrackerState(t *testing.T) {
	tests := []struct {
		name        string
		arrive      int   // events arriving, one per nanosecond of the tracker's time from 1
		handle      int64 // events handled
		now         int64
		wantPending int64
		wantOldest  time.Duration
	}{
		{name: "nothing", now: 5},
		{name: "all handled", arrive: 3, handle: 3, now: 10},
		{name: "handler ahead of the probe", arrive: 2, handle: 3, now: 10},
		{name: "two pending", arrive: 5, handle: 3, now: 10, wantPending: 2, wantOldest: 10 - 4},
		{name: "none handled", arrive: 5, now: 10, wantPending: 5, wantOldest: 10 - 1},
		// Beyond the fine ring the block's first event stands for it.
		{name: "in the coarse ring", arrive: 3 * fineSize, handle: 2*blockSize + 10, now: 1 << 20,
			wantPending: 3*fineSize - 2*blockSize - 10, wantOldest: 1<<20 - (2*blockSize + 1)},
		// Beyond the coarse ring: the oldest block it holds, a lower bound.
		{name: "beyond the coarse ring", arrive: (coarseSize + 3) * blockSize, handle: 0, now: 1 << 30,
			wantPending: (coarseSize + 3) * blockSize, wantOldest: 1<<30 - (3*blockSize + 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var clock int64
			tr := NewEventTracker("test", func() int64 { return clock })
			for range tt.arrive {
				clock++
				tr.arrive()
			}
			tr.handled.Store(tt.handle)
			pending, oldest := tr.State(tt.now)
			if pending != tt.wantPending || oldest != tt.wantOldest {
				t.Errorf("state = %d pending, oldest %v; want %d, %v", pending, oldest, tt.wantPending, tt.wantOldest)
			}
		})
	}
}
