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
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
)

// KubeDefaults are the args kube-scheduler gives a plugin that this
// scheduler's plugin of the same name behaves as if given, by field, with
// the values that mean that behaviour (as JSON). A kube-scheduler file
// may carry them: kube-scheduler writes every plugin's defaults into
// pluginConfig (--write-config-to), and such a file should work
// unchanged.
type KubeDefaults map[string][]string

// DecodeKubeDefaultArgs is DecodeNoArgs for a plugin that shares its name
// with one of kube-scheduler's: it also accepts that plugin's fields in
// defaults, with one of the values listed there. Any other value is an
// error naming the field, its line, what was given and what is
// supported; any other field is an error as in DecodeNoArgs.
func DecodeKubeDefaultArgs(plugin string, raw runtime.Object, defaults KubeDefaults) error {
	args, err := ArgsReader(plugin, raw)
	if err != nil {
		return err
	}
	args, err = config.WithoutTypeMeta(args, plugin+"Args")
	if err != nil {
		return fmt.Errorf("%s args: %w", plugin, err)
	}
	if args == nil {
		return nil
	}
	data, err := io.ReadAll(args)
	if err != nil {
		return fmt.Errorf("%s args: reading: %w", plugin, err)
	}
	src := config.SourceOf(args)
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		// Empty, null, not a mapping or not YAML: DecodeNoArgs says.
		return decodeNoArgs(plugin, config.NewSection(src, data))
	}
	m := doc.Content[0]
	where := func(line int) string {
		if src == "" {
			return fmt.Sprintf("line %d", line)
		}
		return fmt.Sprintf("%s: line %d", src, line)
	}
	var rest []*yaml.Node // keys of fields that are not kube-scheduler's defaults
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		allowed, ok := defaults[k.Value]
		if !ok {
			rest = append(rest, k)
			continue
		}
		var val any
		if err := v.Decode(&val); err != nil {
			return fmt.Errorf("%s args: %s: %s: %w", plugin, where(k.Line), k.Value, err)
		}
		got, err := json.Marshal(val)
		if err != nil || !slices.Contains(allowed, string(got)) {
			return fmt.Errorf("%s args: %s: %s %s is not supported: this scheduler's %s behaves as kube-scheduler's with %s %s; leave the field out or give that value",
				plugin, where(k.Line), k.Value, got, plugin, k.Value, allowed[0])
		}
	}
	if len(rest) == 0 {
		return nil
	}
	known := slices.Sorted(maps.Keys(defaults))
	return fmt.Errorf("%s args: %s: field %s not found: of kube-scheduler's %sArgs, only %s are accepted, with their default values",
		plugin, where(rest[0].Line), rest[0].Value, plugin, strings.Join(known, ", "))
}
