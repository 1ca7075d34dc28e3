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
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncateMessage(t *testing.T) {
	for _, tt := range []struct {
		msg   string
		limit int
	}{
		{"short", 1024},
		{strings.Repeat("x", 1025), 1024},
		{strings.Repeat("é", 3000), 1024},
		{strings.Repeat("x", 30310), MaxConditionMessage},
		{strings.Repeat("x", 100), 10},
	} {
		got := TruncateMessage(tt.msg, tt.limit)
		if len(got) > max(tt.limit, len("... (100 bytes cut)")) {
			t.Errorf("TruncateMessage(%d bytes, %d) has %d bytes", len(tt.msg), tt.limit, len(got))
		}
		if !utf8.ValidString(got) {
			t.Errorf("TruncateMessage(%d bytes, %d) is not valid UTF-8", len(tt.msg), tt.limit)
		}
		if len(tt.msg) <= tt.limit && got != tt.msg {
			t.Errorf("TruncateMessage changed a short message: %q", got)
		}
		if len(tt.msg) > tt.limit && !strings.Contains(got, "bytes cut)") {
			t.Errorf("TruncateMessage(%d bytes, %d) = %.60q..., want a cut marker", len(tt.msg), tt.limit, got)
		}
	}
}

func TestQuoteValue(t *testing.T) {
	if got := QuoteValue("train"); got != `"train"` {
		t.Errorf("QuoteValue(train) = %s", got)
	}
	got := QuoteValue(strings.Repeat("a", 10000))
	if len(got) > 2*MaxQuotedValue || !strings.HasSuffix(got, "... (10000 bytes)") {
		t.Errorf("QuoteValue of 10000 bytes = %q", got)
	}
}
