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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the configuration file.
const GroupName = "batch-scheduler.io"

// SchemeGroupVersion is the group and version of this package's types.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// KubeSchedulerGroupVersion and KubeSchedulerKind are kube-scheduler's
// configuration header, which decodes into SchedulerConfiguration too.
var KubeSchedulerGroupVersion = schema.GroupVersion{Group: "kubescheduler.config.k8s.io", Version: "v1"}

// KubeSchedulerKind is the kind of kube-scheduler's configuration file.
const KubeSchedulerKind = "KubeSchedulerConfiguration"

var (
	localSchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes, addDefaultingFuncs)
	// AddToScheme adds the types, their defaults and their conversions to
	// a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// The generated conversions register themselves here
	// (zz_generated.conversion.go).
	localSchemeBuilder.Register(RegisterConversions)
}

// pluginArgs are the typed args of the in-tree plugins, each registered
// as kind <plugin>Args.
func pluginArgs() []runtime.Object {
	return []runtime.Object{
		&NodeResourcesFitArgs{},
		&NodeLedgerArgs{},
		&TopologyAwareArgs{},
		&DefaultPreemptionArgs{},
		&CapacityArgs{},
		&ReclaimArgs{},
		&ReservationArgs{},
	}
}

// sourceArgs are the typed settings of the built-in custom informer
// sources (kind <Type>SourceArgs) and event handlers.
func sourceArgs() []runtime.Object {
	return []runtime.Object{
		&HTTPSourceArgs{},
		&FileSourceArgs{},
		&DefaultHandlerArgs{},
		&TwoLevelHandlerArgs{},
	}
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &SchedulerConfiguration{})
	scheme.AddKnownTypes(SchemeGroupVersion, pluginArgs()...)
	scheme.AddKnownTypes(SchemeGroupVersion, sourceArgs()...)
	scheme.AddKnownTypeWithName(KubeSchedulerGroupVersion.WithKind(KubeSchedulerKind), &SchedulerConfiguration{})
	return nil
}

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}
