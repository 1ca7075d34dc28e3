package config

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the configuration file.
const GroupName = "batch-scheduler.io"

// SchemeGroupVersion is the internal version of the group.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

var (
	// SchemeBuilder collects the functions that add this package's types
	// to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the internal types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&SchedulerConfiguration{},
		&NodeResourcesFitArgs{},
		&NodeLedgerArgs{},
		&TopologyAwareArgs{},
		&DefaultPreemptionArgs{},
		&CapacityArgs{},
		&ReclaimArgs{},
		&HTTPSourceArgs{},
		&FileSourceArgs{},
		&DefaultHandlerArgs{},
		&TwoLevelHandlerArgs{},
		&ReservationArgs{},
	)
	return nil
}
