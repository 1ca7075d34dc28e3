package v1alpha1

import "k8s.io/utils/ptr"

// Defaults of the scheduler-wide settings; they match those of the
// framework and the scheduling queue when no file is given.
const (
	DefaultParallelism              int32 = 16
	DefaultPodInitialBackoffSeconds int64 = 1
	DefaultPodMaxBackoffSeconds     int64 = 10
)

// SetDefaults_SchedulerConfiguration fills in the scheduler-wide settings
// a file leaves out.
func SetDefaults_SchedulerConfiguration(obj *SchedulerConfiguration) { //nolint:revive // the name defaulter-gen looks for
	if obj.Parallelism == nil {
		obj.Parallelism = ptr.To(DefaultParallelism)
	}
	if obj.PodInitialBackoffSeconds == nil {
		obj.PodInitialBackoffSeconds = ptr.To(DefaultPodInitialBackoffSeconds)
	}
	if obj.PodMaxBackoffSeconds == nil {
		obj.PodMaxBackoffSeconds = ptr.To(DefaultPodMaxBackoffSeconds)
	}
}
