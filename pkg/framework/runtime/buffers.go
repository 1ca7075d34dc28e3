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

package runtime

import (
	"slices"
	"sync"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// The per-node buffers of FindFeasibleNodes and RunScorePlugins are taken
// from pools rather than made for every pod: at 5,000 nodes they were
// two thirds of the bytes a scheduling cycle allocated, and the garbage
// collector's work grows with what is allocated. A buffer goes back to
// its pool when the call that took it returns; nothing it holds is
// returned to the caller.

// statusPool holds *[]*framework.Status buffers for FindFeasibleNodes.
var statusPool = sync.Pool{New: func() any { return new([]*framework.Status) }}

// getStatuses returns a buffer of n nil statuses.
func getStatuses(n int) *[]*framework.Status {
	buf := statusPool.Get().(*[]*framework.Status)
	*buf = slices.Grow((*buf)[:0], n)[:n]
	return buf
}

// putStatuses clears buf, so that the pool keeps no status alive, and
// returns it to the pool.
func putStatuses(buf *[]*framework.Status) {
	clear(*buf)
	statusPool.Put(buf)
}

// scoreBuffer holds, for RunScorePlugins, each plugin's scores of the
// nodes: scores[p][i] is plugin p's score of node i.
type scoreBuffer struct {
	scores [][]framework.NodeScore
}

// scorePool holds *scoreBuffer.
var scorePool = sync.Pool{New: func() any { return new(scoreBuffer) }}

// getScores returns a buffer of plugins × nodes zero scores.
func getScores(plugins, nodes int) *scoreBuffer {
	buf := scorePool.Get().(*scoreBuffer)
	buf.scores = slices.Grow(buf.scores[:0], plugins)[:plugins]
	for p := range buf.scores {
		// putScores cleared what an earlier use wrote.
		buf.scores[p] = slices.Grow(buf.scores[p][:0], nodes)[:nodes]
	}
	return buf
}

// putScores clears buf, so that the pool keeps no node name alive, and
// returns it to the pool.
func putScores(buf *scoreBuffer) {
	for p := range buf.scores {
		clear(buf.scores[p])
	}
	scorePool.Put(buf)
}
