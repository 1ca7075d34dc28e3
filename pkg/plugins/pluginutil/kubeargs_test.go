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

package pluginutil

import (
	"strings"
	"testing"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

func TestDecodeKubeDefaultArgs(t *testing.T) {
	defaults := KubeDefaults{"hardPodAffinityWeight": {"1"}, "mode": {`"System"`}, "extra": {"[]", "null"}}
	section := func(yaml string) *configapi.RawArgs {
		// Two blank lines: the section starts on line 3 of the file.
		return configapi.NewRawArgs("sched.yaml", []byte("\n\n"+yaml))
	}
	for _, tt := range []struct {
		name, args, want string
	}{
		{"none", "", ""},
		{"empty", "{}", ""},
		{"the defaults", "hardPodAffinityWeight: 1\nmode: System\nextra: []\n", ""},
		{"null list", "extra: null\n", ""},
		{"with kube-scheduler's type meta", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: XArgs\nhardPodAffinityWeight: 1\n", ""},
		{"another value", "mode: System\nhardPodAffinityWeight: 5\n", "X args: sched.yaml: line 4: hardPodAffinityWeight 5 is not supported: this scheduler's X behaves as kube-scheduler's with hardPodAffinityWeight 1"},
		{"a string for a number", "hardPodAffinityWeight: '1'\n", `hardPodAffinityWeight "1" is not supported`},
		{"an unknown field", "mode: System\nweight: 2\n", "X args: sched.yaml: line 4: field weight not found: of kube-scheduler's XArgs, only extra, hardPodAffinityWeight, mode are accepted"},
		{"not a mapping", "[1]\n", "X args: the plugin takes no args"},
		{"wrong kind", "kind: YArgs\n", `kind is "YArgs", want "XArgs"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var args = section(tt.args)
			err := DecodeKubeDefaultArgs("X", args, defaults)
			if tt.args == "" {
				err = DecodeKubeDefaultArgs("X", nil, defaults)
			}
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
