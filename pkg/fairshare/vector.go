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

package fairshare

import (
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Vector is an amount per resource in integer base units: cpu in
// millicores, memory and storage in bytes, everything else as a count. An
// absent resource is 0, so a nil Vector is the zero vector for reading.
// Add and Sub saturate at the int64 range instead of wrapping, so that
// amounts near math.MaxInt64 (a way to say "unbounded") can be summed.
type Vector map[v1.ResourceName]int64

// Add adds o to v in place. Sums saturate at the int64 range, and an
// amount that becomes 0 is removed. v must not be nil unless o holds only
// zeros, as for any map.
func (v Vector) Add(o Vector) {
	for name, a := range o {
		if a != 0 {
			v.set(name, addSat(v[name], a))
		}
	}
}

// Sub subtracts o from v in place. Differences saturate at the int64
// range and may be negative; an amount that becomes 0 is removed. v must
// not be nil unless o holds only zeros.
func (v Vector) Sub(o Vector) {
	for name, a := range o {
		if a != 0 {
			v.set(name, subSat(v[name], a))
		}
	}
}

// Clone returns a copy of v that shares no memory with it; the copy of a
// nil Vector is nil.
func (v Vector) Clone() Vector {
	if v == nil {
		return nil
	}
	c := make(Vector, len(v))
	for name, a := range v {
		c[name] = a
	}
	return c
}

// LessEqual reports whether every amount of v is at most the same
// resource's amount in o, an absent resource counting as 0 on either side.
func (v Vector) LessEqual(o Vector) bool {
	for name, a := range v {
		if a > o[name] {
			return false
		}
	}
	for name, b := range o {
		if _, ok := v[name]; !ok && b < 0 {
			return false
		}
	}
	return true
}

// String renders v as "name=value" pairs sorted by resource name, cpu in
// millicores with an "m" suffix, leaving out zero amounts; the zero
// vector is "0". The output is stable, for logs and test failures.
func (v Vector) String() string {
	names := make([]string, 0, len(v))
	for name, a := range v {
		if a != 0 {
			names = append(names, string(name))
		}
	}
	if len(names) == 0 {
		return "0"
	}
	sort.Strings(names)
	var b strings.Builder
	for i, name := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(v[v1.ResourceName(name)], 10))
		if name == string(v1.ResourceCPU) {
			b.WriteByte('m')
		}
	}
	return b.String()
}

// DominantShare returns the largest fraction v[r]/of[r] over v's
// resources: how much of "of" v takes on the resource it needs most, the
// measure that Dominant Resource Fairness equalises. A resource that v
// needs and "of" lacks (of[r] <= 0) gives +Inf. Amounts of v that are not
// positive take nothing, so the share of an empty v is 0.
func DominantShare(v, of Vector) float64 {
	share := 0.0
	for name, a := range v {
		if a <= 0 {
			continue
		}
		b := of[name]
		if b <= 0 {
			return math.Inf(1)
		}
		if s := float64(a) / float64(b); s > share {
			share = s
		}
	}
	return share
}

func (v Vector) set(name v1.ResourceName, a int64) {
	if a == 0 {
		delete(v, name)
		return
	}
	v[name] = a
}

// addSat returns a+b, saturated to the int64 range.
func addSat(a, b int64) int64 {
	s := a + b
	if (s > a) != (b > 0) {
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s
}

// subSat returns a-b, saturated to the int64 range.
func subSat(a, b int64) int64 {
	s := a - b
	if (s < a) != (b > 0) {
		if b > 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return s
}

// mulDiv returns floor(a*b/c) for c > 0 and a <= c, computed exactly in
// 128 bits. a <= c keeps the quotient within b, so it never overflows.
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	q, _ := bits.Div64(hi, lo, c)
	return q
}

// proportional stores in out[i] the share floor(vals[i]*total/sum(vals))
// of total, for non-negative vals and total. The shares never sum to more
// than total; a zero sum gives zero shares. Several amounts near
// math.MaxInt64 do not sum within 64 bits: the values are then shifted
// right until they do, which changes the proportions by a negligible
// fraction and keeps the bound on the sum.
func proportional(vals []int64, total int64, out []int64) {
	var shift uint
	var sum uint64
	for {
		var carry uint64
		sum = 0
		for _, v := range vals {
			var c uint64
			sum, c = bits.Add64(sum, uint64(v)>>shift, 0)
			carry |= c
		}
		if carry == 0 {
			break
		}
		shift++
	}
	for i, v := range vals {
		if sum == 0 || total <= 0 {
			out[i] = 0
			continue
		}
		out[i] = int64(mulDiv(uint64(v)>>shift, uint64(total), sum))
	}
}
