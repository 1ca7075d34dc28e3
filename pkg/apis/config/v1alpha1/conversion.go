package v1alpha1

import (
	"k8s.io/apimachinery/pkg/conversion"

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
