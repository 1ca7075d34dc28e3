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

package standing

import (
	"fmt"
	"time"
)

// Path is where the scheduler serves its Report.
const Path = "/debug/standing"

// Bases of an estimate.
const (
	// BasisReservation: the job holds a reservation; the estimate is its
	// expected start.
	BasisReservation = "reservation"
	// BasisCapacity: the estimate is Timeline.Start for the job and the
	// jobs ahead of it.
	BasisCapacity = "capacity"
)

// Report is every pending job's standing, as /debug/standing serves it.
type Report struct {
	Now time.Time `json:"now"`
	// PlacesAt is when the places were computed (at most a second or so
	// before a failed attempt; see the scheduler).
	PlacesAt time.Time `json:"placesAt"`
	Jobs     []Job     `json:"jobs"`
}

// Job is one pending job's standing.
type Job struct {
	// Job is the job's ID (framework.JobID.String).
	Job   string `json:"job"`
	Gang  bool   `json:"gang"`
	Queue string `json:"queue"`
	// Position counts from 1 within Queue, whose jobs waiting number
	// QueueLength.
	Position    int   `json:"position"`
	QueueLength int   `json:"queueLength"`
	Priority    int32 `json:"priority"`
	PendingPods int   `json:"pendingPods"`
	// EstimatedStart is the estimate of the job's last failed attempt
	// (EstimatedAt), by EstimateBasis; absent when none was made or
	// none could be (see StartUnknown).
	EstimatedStart *time.Time `json:"estimatedStart,omitempty"`
	EstimateBasis  string     `json:"estimateBasis,omitempty"`
	EstimatedAt    *time.Time `json:"estimatedAt,omitempty"`
	// StartUnknown says why an estimate made could not give a time.
	StartUnknown string `json:"startUnknown,omitempty"`
	// Reservation is the room the job holds, if it holds some.
	Reservation *Reservation `json:"reservation,omitempty"`
}

// Reservation is the room a job holds.
type Reservation struct {
	Nodes   []string `json:"nodes"`
	WaitFor int      `json:"waitFor"`
	// Start is when the last pod it waits for is expected to end; absent
	// when one of them gives no runtime.
	Start *time.Time `json:"start,omitempty"`
	// HeldSince is, per node, since when the reservation has held it
	// without a break.
	HeldSince map[string]time.Time `json:"heldSince,omitempty"`
	// Made is when the scheduler took this reservation, and its Start,
	// in place of the job's last one: a backfill decided after it was
	// judged against its Start.
	Made time.Time `json:"made"`
}

// Estimate is a start estimate for one job.
type Estimate struct {
	Basis string
	// Start is the expected start when Known.
	Start time.Time
	Known bool
	// Made is when the estimate was made.
	Made time.Time
	// Why says why the start is not known.
	Why string
}

// Place words a job's place in its queue, e.g. "2nd of 5 jobs waiting
// in queue team-a"; position 0 (not known yet) names only the queue.
func Place(queue string, position, length int) string {
	if queue == "" {
		queue = "default"
	}
	switch {
	case position == 0:
		return "queue " + queue
	case length == 1:
		return "the only job waiting in queue " + queue
	}
	return fmt.Sprintf("%s of %d jobs waiting in queue %s", ordinal(position), length, queue)
}

// Clause words the standing of a job for its pods' condition: its place
// (may be empty) and its estimate when it gives a time, e.g. "2nd of 5
// jobs waiting in queue team-a; expected to start at
// 2026-12-02T14:03:20Z (capacity estimate)". An estimate without a time
// says nothing there (/debug/standing says why); "" when nothing is
// said.
func Clause(place string, e Estimate) string {
	if !e.Known || e.Basis == "" {
		return place
	}
	est := fmt.Sprintf("expected to start at %s (%s estimate)", e.Start.UTC().Format(time.RFC3339), e.Basis)
	if !e.Start.After(e.Made) {
		est = "expected to start as soon as room is found (" + e.Basis + " estimate)"
	}
	if place == "" {
		return est
	}
	return place + "; " + est
}

// ordinal writes n as 1st, 2nd, 3rd, 4th, ...
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}
