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
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of the messages the scheduler writes to API objects. Messages
// quote what users wrote (group names, annotation values), which can be
// of any size; the API server refuses an event whose note is longer than
// 1 KiB, and a huge condition message bloats every watch of the pod.
const (
	// MaxEventNote is the longest note of an Event (events.k8s.io/v1
	// note, core/v1 message) the API server accepts, in bytes.
	MaxEventNote = 1024
	// MaxConditionMessage bounds the message of a condition the
	// scheduler writes (PodScheduled), in bytes.
	MaxConditionMessage = 4096
	// MaxQuotedValue bounds how much of a user's value (a group name, an
	// annotation value) a message quotes, in bytes.
	MaxQuotedValue = 80
)

// TruncateMessage returns msg cut to at most limit bytes, at a rune
// boundary, ending with a marker that says how much was cut.
func TruncateMessage(msg string, limit int) string {
	if len(msg) <= limit {
		return msg
	}
	marker := fmt.Sprintf("... (%d bytes cut)", len(msg))
	keep := limit - len(marker)
	if keep < 0 {
		keep = 0
	}
	for keep > 0 && !utf8.RuneStart(msg[keep]) {
		keep--
	}
	// The marker counts the whole message, so it may shrink by a few
	// bytes; it is never longer than computed.
	return msg[:keep] + fmt.Sprintf("... (%d bytes cut)", len(msg)-keep)
}

// QuoteValue quotes a value a user wrote for a message, cut to
// MaxQuotedValue bytes with its full length said, so that a 10,000
// character group name makes a short message.
func QuoteValue(s string) string {
	if len(s) <= MaxQuotedValue {
		return strconv.Quote(s)
	}
	cut := MaxQuotedValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(strings.ToValidUTF8(s[:cut], "")), len(s))
}
