package app

import (
	"strings"
	"testing"
	"time"
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
