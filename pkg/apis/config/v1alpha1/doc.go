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
