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

package harness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// PollInterval is how often Poll checks.
const PollInterval = 50 * time.Millisecond

// finalError is an error of a check that waiting cannot mend (a pod bound
// to the wrong node, a gang evicted in part): it ends Poll at once.
type finalError struct{ error }

func (e finalError) Unwrap() error { return e.error }

// Final marks err as one that waiting cannot mend: Poll returns it at
// once. Final(nil) is nil.
func Final(err error) error {
	if err == nil {
		return nil
	}
	return finalError{err}
}

// IsFinal reports whether err, or an error it wraps, was marked Final.
func IsFinal(err error) bool {
	var fe finalError
	return errors.As(err, &fe)
}

// Poll calls check every PollInterval until it reports true, ctx is done,
// timeout passes, or alive (if not nil) returns an error (the program
// under test exited). An error from check does not end the wait unless it
// is Final; the last one is reported if the wait times out. what names
// the awaited outcome in the error.
func Poll(ctx context.Context, timeout time.Duration, what string, alive func() error, check func() (bool, error)) error {
	var last, dead error
	err := wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, func(context.Context) (bool, error) {
		if alive != nil {
			if dead = alive(); dead != nil {
				return false, dead
			}
		}
		ok, err := check()
		last = err
		if IsFinal(err) {
			return false, err
		}
		return ok, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case IsFinal(err):
		return fmt.Errorf("while waiting for %s: %w", what, errors.Unwrap(err))
	case dead != nil:
		return fmt.Errorf("while waiting for %s: %w", what, dead)
	case last != nil:
		return fmt.Errorf("timed out after %s waiting for %s (last: %w)", timeout, what, last)
	default:
		return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
	}
}
