// Package plugindiff is a differential test, in a module of its own
// because it imports k8s.io/kubernetes (whose replace directives must not
// reach the main module): it runs kube-scheduler's InterPodAffinity and
// PodTopologySpread plugins and this project's on the same random
// scenarios and requires the same Filter verdict and reason on every
// node.
//
//	cd test/plugindiff && go test .
package plugindiff
