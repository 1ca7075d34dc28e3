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

package framework

import (
	"errors"
	"strings"
)

// Code is the outcome of a plugin call.
type Code int

const (
	// Success: the plugin is satisfied. A nil *Status also means Success.
	Success Code = iota
	// Error: something went wrong that is not the pod's fault (an API
	// error, a bug). The job is retried after backoff.
	Error
	// Unschedulable: the pod does not fit now, but may after a cluster
	// event the plugin registered for.
	Unschedulable
	// UnschedulableAndUnresolvable: the pod cannot fit on this node whatever
	// happens to other pods (e.g. its node selector does not match).
	UnschedulableAndUnresolvable
	// Skip: the plugin does not apply (a Bind plugin that leaves the pod to
	// the next binder, a PreFilter that needs no Filter call).
	Skip
)

var codeNames = []string{"Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Skip"}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Unknown"
}

// Status is the result of a plugin call: a Code, human-readable reasons
// (each one is counted separately in the message of an unschedulable pod,
// e.g. "Insufficient cpu"), and the plugin that produced it.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus returns a status with code and reasons.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps err as an Error status; nil stays nil (Success).
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code returns the status code; Success for nil.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// IsSuccess reports whether s is nil or Success.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsSkip reports whether the plugin did not apply.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsRejected reports whether the pod does not fit (Unschedulable or
// UnschedulableAndUnresolvable).
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// Reasons returns the reasons; the caller must not modify the slice.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// Message joins the reasons with ", ".
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.reasons, ", ")
}

// AsError returns the status as an error: nil for Success and Skip.
func (s *Status) AsError() error {
	if s.IsSuccess() || s.IsSkip() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}

// Plugin names the plugin that returned the status, once the framework has
// recorded it.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records the plugin's name and returns s.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil {
		s.plugin = name
	}
	return s
}

func (s *Status) String() string {
	if s == nil {
		return "Success"
	}
	if len(s.reasons) == 0 {
		return s.code.String()
	}
	return s.code.String() + ": " + s.Message()
}
