// Package dialects runs batch-scheduler against a real kube-apiserver that
// serves every gang dialect: the native scheduling.k8s.io/v1beta1 PodGroup
// (feature gate GenericWorkload), and the scheduler-plugins and Volcano
// PodGroups through the CRDs in config/crds/third-party. It also serves,
// through the minimal CRDs there, the owners gangs are inferred from
// (RayCluster, JobSet, LeaderWorkerSet, MPIJob; the PyTorchJob CRD is
// installed by a test while the scheduler runs, to exercise rediscovery).
// No operator runs, nor the Job controller or the garbage collector (the
// other controllers of test/controlplane do): tests create the owner
// objects and the pods with the owner references and labels the operators
// would set; test/workloads and test/operators run the real ones. Each
// test starts its own scheduler in-process, in its own namespace with its
// own nodes.
package dialects
