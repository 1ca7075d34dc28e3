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
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowestPort is the lowest port FreePort hands out: below it are the
// well-known and registered ports other software on a machine may use.
const lowestPort = 10000

// FreePort returns a TCP port on host that nothing listens on now, for a
// program the test starts and that listens on it later.
//
// The port is drawn at random below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), from which every outgoing
// connection of every process takes its local port. A port from that
// range, which is what listening on port 0 returns, can be taken by such
// a connection between this call and the program's bind; on a busy
// machine running several test packages at once that made programs fail
// to start with "address already in use". Where the range leaves no room
// below it, FreePort falls back to port 0's answer.
func FreePort(host string) (int, error) {
	if low, err := ephemeralLow(); err == nil && low > lowestPort+1000 {
		for range 100 {
			port := lowestPort + rand.IntN(low-lowestPort)
			ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				continue
			}
			_ = ln.Close()
			return port, nil
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", host, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralLow returns the first port of the kernel's ephemeral range.
func ephemeralLow() (int, error) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 0, errors.New("ip_local_port_range: want two ports")
	}
	return strconv.Atoi(fields[0])
}
