// Package dialects runs batch-scheduler against a real kube-apiserver that
// serves every gang dialect: the native scheduling.k8s.io/v1beta1 PodGroup
// (feature gate GenericWorkload), and the scheduler-plugins and Volcano
// PodGroups through the CRDs in config/crds/third-party. Each test starts
// its own scheduler in-process, in its own namespace with its own nodes.
package dialects
