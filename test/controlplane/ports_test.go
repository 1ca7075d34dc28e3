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

package controlplane

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	low, err := ephemeralLow()
	if err != nil {
		t.Fatalf("reading the ephemeral range: %v", err)
	}
	seen := map[int]bool{}
	for range 20 {
		port, err := FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if low > lowestPort+1000 && (port < lowestPort || port >= low) {
			t.Errorf("FreePort = %d, want one in [%d, %d), below the ephemeral range", port, lowestPort, low)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("listening on the port FreePort returned: %v", err)
		}
		_ = ln.Close()
		seen[port] = true
	}
	if len(seen) < 10 {
		t.Errorf("20 calls returned %d distinct ports; want them drawn at random", len(seen))
	}
}
