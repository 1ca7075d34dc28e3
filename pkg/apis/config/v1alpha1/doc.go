// Package v1alpha1 is the batch-scheduler.io/v1alpha1 version of the
// scheduler's configuration file (kind SchedulerConfiguration), the form
// --config-path reads. kube-scheduler's header
// (kubescheduler.config.k8s.io/v1, KubeSchedulerConfiguration) decodes
// into the same types, so that a kube-scheduler file's profiles and
// tuning carry over.
//
// Defaults are set by SetObjectDefaults_SchedulerConfiguration; conversion
// to and from the internal version (pkg/apis/config) is generated, so that
// a later version converts through the same hub.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/batch-scheduler/batch-scheduler/pkg/apis/config
// +k8s:defaulter-gen=TypeMeta
// +groupName=batch-scheduler.io
package v1alpha1
