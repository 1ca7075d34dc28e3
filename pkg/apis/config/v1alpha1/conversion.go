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

package v1alpha1

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// Convert_config_Plugin_To_v1alpha1_Plugin leaves a weight of 0 (the
// plugin's default) out, rather than writing "weight: 0", which the file
// refuses.
func Convert_config_Plugin_To_v1alpha1_Plugin(in *config.Plugin, out *Plugin, s conversion.Scope) error { //nolint:revive // the name conversion-gen looks for
	out.Name = in.Name
	out.Weight = nil
	if in.Weight != 0 {
		w := in.Weight
		out.Weight = &w
	}
	return nil
}

// rawArgs reads settings the API has no type for as RawArgs; nil or
// null are none. pkg/config replaces them with the file's own text, at
// its lines.
func rawArgs(in *runtime.RawExtension) *config.RawArgs {
	if in == nil || len(in.Raw) == 0 || string(in.Raw) == "null" {
		return nil
	}
	return config.NewRawArgs("", append([]byte(nil), in.Raw...))
}

// rawExtension writes RawArgs back; their YAML is converted to JSON.
func rawExtension(in *config.RawArgs, out *runtime.RawExtension) error {
	*out = runtime.RawExtension{}
	if in == nil {
		return nil
	}
	data, err := yaml.YAMLToJSON(in.YAML)
	if err != nil {
		return fmt.Errorf("args from %q: %w", in.Source, err)
	}
	out.Raw = data
	return nil
}

// Convert_v1alpha1_EventHandler_To_config_EventHandler keeps the
// handler's args raw, for its factory to decode.
func Convert_v1alpha1_EventHandler_To_config_EventHandler(in *EventHandler, out *config.EventHandler, _ conversion.Scope) error { //nolint:revive // the name conversion-gen looks for
	out.Name = in.Name
	out.Args = nil
	if raw := rawArgs(&in.Args); raw != nil {
		// pkg/config decodes a built-in handler's args into their type.
		out.Args = raw
	}
	return nil
}

// Convert_config_EventHandler_To_v1alpha1_EventHandler writes the
// handler's args back.
func Convert_config_EventHandler_To_v1alpha1_EventHandler(in *config.EventHandler, out *EventHandler, s conversion.Scope) error { //nolint:revive // the name conversion-gen looks for
	out.Name = in.Name
	if err := objectExtension(in.Args, &out.Args, s); err != nil {
		return fmt.Errorf("event handler %s args: %w", in.Name, err)
	}
	return nil
}

// Convert_v1alpha1_CustomInformer_To_config_CustomInformer splits source,
// a mapping of one key, into the source type and its raw settings. A
// source of another size converts to an empty type, which validation
// refuses.
func Convert_v1alpha1_CustomInformer_To_config_CustomInformer(in *CustomInformer, out *config.CustomInformer, _ conversion.Scope) error { //nolint:revive // the name conversion-gen looks for
	out.Name = in.Name
	out.Resource = in.Resource
	out.ResyncPeriod = in.ResyncPeriod
	out.SourceType, out.SourceArgs = "", nil
	if len(in.Source) == 1 {
		for typ, args := range in.Source {
			out.SourceType = typ
			if raw := rawArgs(&args); raw != nil {
				// pkg/config decodes a built-in source's settings into
				// their type.
				out.SourceArgs = raw
			}
		}
	}
	return nil
}

// Convert_config_CustomInformer_To_v1alpha1_CustomInformer joins the
// source type and its settings into source.
func Convert_config_CustomInformer_To_v1alpha1_CustomInformer(in *config.CustomInformer, out *CustomInformer, s conversion.Scope) error { //nolint:revive // the name conversion-gen looks for
	out.Name = in.Name
	out.Resource = in.Resource
	out.ResyncPeriod = in.ResyncPeriod
	out.Source = nil
	if in.SourceType != "" {
		var args runtime.RawExtension
		if err := objectExtension(in.SourceArgs, &args, s); err != nil {
			return fmt.Errorf("source %s: %w", in.SourceType, err)
		}
		out.Source = map[string]runtime.RawExtension{in.SourceType: args}
	}
	return nil
}

// objectExtension writes settings that are RawArgs or one of the API's
// typed objects (a built-in source's or handler's) back as JSON, in the file's
// version.
func objectExtension(in runtime.Object, out *runtime.RawExtension, s conversion.Scope) error {
	*out = runtime.RawExtension{}
	var versioned any
	switch a := in.(type) {
	case nil:
		return nil
	case *config.RawArgs:
		return rawExtension(a, out)
	case *config.HTTPSourceArgs:
		v := &HTTPSourceArgs{}
		if err := Convert_config_HTTPSourceArgs_To_v1alpha1_HTTPSourceArgs(a, v, s); err != nil {
			return err
		}
		versioned = v
	case *config.FileSourceArgs:
		v := &FileSourceArgs{}
		if err := Convert_config_FileSourceArgs_To_v1alpha1_FileSourceArgs(a, v, s); err != nil {
			return err
		}
		versioned = v
	case *config.DefaultHandlerArgs:
		v := &DefaultHandlerArgs{}
		if err := Convert_config_DefaultHandlerArgs_To_v1alpha1_DefaultHandlerArgs(a, v, s); err != nil {
			return err
		}
		versioned = v
	case *config.TwoLevelHandlerArgs:
		v := &TwoLevelHandlerArgs{}
		if err := Convert_config_TwoLevelHandlerArgs_To_v1alpha1_TwoLevelHandlerArgs(a, v, s); err != nil {
			return err
		}
		versioned = v
	default:
		return fmt.Errorf("settings of type %T have no version to write", in)
	}
	data, err := json.Marshal(versioned)
	if err != nil {
		return err
	}
	out.Raw = data
	return nil
}

// Convert_v1alpha1_NodeResourcesFitArgs_To_config_NodeResourcesFitArgs
// reads either form of scoringStrategy. kube-scheduler's
// RequestedToCapacityRatio, and resources given both beside the strategy
// and in it, are refused with the field at fault (a *field.Error).
func Convert_v1alpha1_NodeResourcesFitArgs_To_config_NodeResourcesFitArgs(in *NodeResourcesFitArgs, out *config.NodeResourcesFitArgs, _ conversion.Scope) error { //nolint:revive // the name conversion-gen looks for
	out.ScoringStrategy = ""
	out.Resources = convertResources(in.Resources)
	if ss := in.ScoringStrategy; ss != nil {
		if ss.RequestedToCapacityRatio != nil {
			return field.Forbidden(field.NewPath("scoringStrategy", "requestedToCapacityRatio"),
				fmt.Sprintf("is not supported (types: %s, %s)", config.LeastAllocated, config.MostAllocated))
		}
		if len(in.Resources) > 0 && len(ss.Resources) > 0 {
			return field.Forbidden(field.NewPath("resources"), "are given twice, beside scoringStrategy and in it; keep one")
		}
		out.ScoringStrategy = config.ScoringStrategyType(ss.Type)
		if len(ss.Resources) > 0 {
			out.Resources = convertResources(ss.Resources)
		}
	}
	return nil
}

func convertResources(in []ResourceSpec) []config.ResourceSpec {
	if in == nil {
		return nil
	}
	out := make([]config.ResourceSpec, len(in))
	for i, r := range in {
		out[i] = config.ResourceSpec{Name: r.Name, Weight: r.Weight}
	}
	return out
}

// Convert_config_NodeResourcesFitArgs_To_v1alpha1_NodeResourcesFitArgs
// writes the strategy's name, with the resources beside it.
func Convert_config_NodeResourcesFitArgs_To_v1alpha1_NodeResourcesFitArgs(in *config.NodeResourcesFitArgs, out *NodeResourcesFitArgs, _ conversion.Scope) error { //nolint:revive // the name conversion-gen looks for
	out.ScoringStrategy = nil
	if in.ScoringStrategy != "" {
		out.ScoringStrategy = &ScoringStrategy{Type: ScoringStrategyType(in.ScoringStrategy)}
	}
	out.Resources = nil
	if in.Resources != nil {
		out.Resources = make([]ResourceSpec, len(in.Resources))
		for i, r := range in.Resources {
			out.Resources[i] = ResourceSpec{Name: r.Name, Weight: r.Weight}
		}
	}
	return nil
}
