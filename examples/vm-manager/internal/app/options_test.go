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

package app

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Options)
		// want is a substring of the error; empty means valid.
		want string
	}{
		{"defaults", func(*Options) {}, ""},
		{"two-level", func(o *Options) { o.Framework, o.GrantsURL = "vms", "http://127.0.0.1:8090" }, ""},
		{"framework alone", func(o *Options) { o.Framework = "vms" }, "--framework and --grants-url"},
		{"grants URL alone", func(o *Options) { o.GrantsURL = "http://127.0.0.1:8090" }, "--framework and --grants-url"},
		{"grants URL not http", func(o *Options) { o.Framework, o.GrantsURL = "vms", "ftp://a" }, "--grants-url"},
		{"grants URL with a query", func(o *Options) { o.Framework, o.GrantsURL = "vms", "http://a/?x=1" }, "--grants-url"},
		{"no listen", func(o *Options) { o.Listen = "" }, "--listen"},
		{"no owner", func(o *Options) { o.Owner = "" }, "--owner"},
		{"zero retry", func(o *Options) { o.RetryInterval = 0 }, "--retry-interval"},
		{"negative sync timeout", func(o *Options) { o.SyncTimeout = -time.Second }, "--sync-timeout"},
		{"ledger", func(o *Options) { o.Ledger = true }, ""},
		{"ledger with its own names", func(o *Options) {
			o.Ledger, o.LedgerPlacer, o.LedgerRequire = true, "vms-east", []string{"batch-scheduler", "other"}
		}, ""},
		{"ledger requiring nobody", func(o *Options) { o.Ledger, o.LedgerRequire = true, nil }, ""},
		{"host selector", func(o *Options) { o.HostSelector = "vms=true,zone in (a,b)" }, ""},
		{"host selector with ledger", func(o *Options) { o.Ledger, o.HostSelector = true, "vms" }, ""},
		{"bad host selector", func(o *Options) { o.HostSelector = "vms in (a" }, "--host-selector"},
		{"ledger in two-level mode", func(o *Options) { o.Framework, o.GrantsURL, o.Ledger = "vms", "http://a", true }, "--ledger: hybrid mode only"},
		{"host selector in two-level mode", func(o *Options) { o.Framework, o.GrantsURL, o.HostSelector = "vms", "http://a", "x=y" }, "--host-selector: hybrid mode only"},
		{"placer without ledger", func(o *Options) { o.LedgerPlacer = "other" }, "--ledger-placer: only with --ledger"},
		{"require without ledger", func(o *Options) { o.LedgerRequire = []string{"x"} }, "--ledger-require: only with --ledger"},
		{"empty placer", func(o *Options) { o.Ledger, o.LedgerPlacer = true, "" }, "--ledger-placer"},
		{"empty required placer", func(o *Options) { o.Ledger, o.LedgerRequire = true, []string{"batch-scheduler", ""} }, "--ledger-require"},
		{"required placer twice", func(o *Options) { o.Ledger, o.LedgerRequire = true, []string{"a", "a"} }, `--ledger-require: "a" is listed twice`},
		{"placer too long", func(o *Options) { o.Ledger, o.LedgerPlacer = true, strings.Repeat("p", 254) }, "--ledger-placer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.change(o)
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// The ledger flags parse as documented: --ledger-require is a
// comma-separated list, empty for none.
func TestLedgerFlags(t *testing.T) {
	tests := []struct {
		args        []string
		wantRequire []string
	}{
		{[]string{"--ledger"}, []string{"batch-scheduler"}},
		{[]string{"--ledger", "--ledger-require", "a,b"}, []string{"a", "b"}},
		{[]string{"--ledger", "--ledger-require="}, []string{}},
	}
	for _, tc := range tests {
		o := NewOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if !o.Ledger || !slices.Equal(o.LedgerRequire, tc.wantRequire) {
			t.Errorf("%v: ledger %v, require %q; want true, %q", tc.args, o.Ledger, o.LedgerRequire, tc.wantRequire)
		}
		if err := o.Validate(); err != nil {
			t.Errorf("%v: %v", tc.args, err)
		}
	}
}
