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
