# Thin targets; the logic lives in hack/*.sh.
GO ?= go

# Version stamped into k8s.io/component-base/version (--version, the
# kubernetes_build_info metric) and client-go's (its User-Agent). A tag
# vX.Y.Z gives vX.Y.Z[-N-gSHA][-dirty]; without one, v0.0.0-dev+SHA[-dirty].
# Override any of them, e.g. BUILD_DATE for a reproducible build.
GIT_COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
GIT_TREE_STATE ?= $(shell git diff --quiet HEAD -- 2>/dev/null && echo clean || echo dirty)
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || \
	echo "v0.0.0-dev+$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD -- 2>/dev/null || echo -dirty)")
GIT_MAJOR ?= $(shell echo '$(VERSION)' | sed -nE 's/^v([0-9]+)\..*/\1/p')
GIT_MINOR ?= $(shell echo '$(VERSION)' | sed -nE 's/^v[0-9]+\.([0-9]+).*/\1/p')
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
# Expanded once here: as a recursive variable each use ran date again, so LDFLAGS's two buildDate
# values and make image's created label could fall in different seconds.
BUILD_DATE := $(BUILD_DATE)
version_vars = gitVersion=$(VERSION) gitMajor=$(GIT_MAJOR) gitMinor=$(GIT_MINOR) gitCommit=$(GIT_COMMIT) gitTreeState=$(GIT_TREE_STATE) buildDate=$(BUILD_DATE)
LDFLAGS := $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version,$(foreach v,$(version_vars),-X $(pkg).$(v)))

.PHONY: all build cluster control-plane generate test unit-test e2e-test test-chaos verify bench bench-go bench-inproc bench-scheduling bench-scheduling-scale bench-custominformer bench-grantinformer bench-scheduling-two-level bench-scheduling-hybrid bench-gang bench-coldstart bench-queues bench-perf-suite cover demo demo-scenario clean

all: build

## build: compile bin/batch-scheduler
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/batch-scheduler ./cmd/batch-scheduler

## image: OCI image of a static batch-scheduler for linux/amd64 and linux/arm64, without a container engine, into
##        _output/image/oci, with an SPDX SBOM per platform (hack/build-image.sh, docs/image.md; one platform:
##        make image IMAGE_PLATFORMS=linux/amd64)
.PHONY: image
image:
	VERSION='$(VERSION)' GIT_COMMIT='$(GIT_COMMIT)' BUILD_DATE='$(BUILD_DATE)' LDFLAGS='$(LDFLAGS)' GO='$(GO)' hack/build-image.sh

## cluster: build the local cluster into bin/: kube-apiserver, etcd, kube-controller-manager and KWOK (skipped when up to date)
CLUSTER_BINARIES := kube-apiserver etcd kube-controller-manager kwok
cluster:
	hack/build-control-plane.sh $(CLUSTER_BINARIES)

## control-plane: the cluster and what the tests run beside it: kube-scheduler, KubeRay's operator, Kueue (skipped when up to date)
control-plane:
	hack/build-control-plane.sh

## generate: regenerate deepcopy, CRDs (deploy/crds), clientset, listers, informers from pkg/apis
generate:
	hack/update-codegen.sh

## test: every test (unit and e2e), with the race detector (the CI entry point)
test: control-plane
	hack/test.sh

## unit-test: tests that need no control plane
unit-test:
	hack/test.sh unit

## e2e-test: tests against a real kube-apiserver and etcd
e2e-test: control-plane
	hack/test.sh e2e

## test-chaos: the long runs: the chaos suite in full (faults under load against a real control plane; the
##             short version runs in make test), then the two churn tests (two placers on the same hosts, each
##             component killed once) for 2 minutes per seed (CHURN_SEEDS, three random ones by default); the
##             chaos summary table goes to _output/chaos-report.md
test-chaos: control-plane
	hack/test-chaos.sh

## verify: gofmt, go vet, go mod tidy, generated files up to date
verify:
	hack/verify.sh

## bench: every scale figure of docs/performance.md, each with its baseline (about 1.5 hours on 2 cores)
bench: bench-inproc bench-scheduling bench-scheduling-scale bench-coldstart

## bench-go: the micro-benchmarks of ./pkg/... with their baselines, e.g. make bench-go BENCH=Dispatch
BENCH ?= .
bench-go:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count 5 ./pkg/...

## bench-inproc: in-process scale benchmarks (dispatch, snapshot, initial sync of 5,000 nodes + 150,000 pods), ratios to their baselines
bench-inproc:
	hack/bench-inproc.sh

## cover: per-package coverage of the framework packages
cover:
	hack/cover.sh

## demo: start a local control plane, seed a small cluster, run batch-scheduler on it
##       (SCENARIO=hybrid, the default: pods beside a VM manager; SCENARIO=two-level:
##       batch-scheduler and the VM manager as frameworks under the allocator;
##       SCENARIO=queues: two teams' gang Jobs share the cluster through tenant queues,
##       then a big gang reserves room and short Jobs backfill around it)
SCENARIO ?= hybrid
DEMO_SCENARIOS := hybrid two-level queues# keep in step with the case below
demo: demo-scenario cluster
	mkdir -p _output/tmp
	TMPDIR=$(CURDIR)/_output/tmp GO=$(GO) $(GO) run -ldflags "$(LDFLAGS)" ./hack/demo --scenario $(SCENARIO)

# demo-scenario checks SCENARIO before anything is built.
demo-scenario:
	@case '$(SCENARIO)' in hybrid|two-level|queues) ;; \
	*) echo "make demo: unknown SCENARIO '$(SCENARIO)'; use one of: $(DEMO_SCENARIOS)" >&2; exit 2;; esac

## bench-scheduling: pods/s of the scheduler vs the API server's raw binding ceiling
bench-scheduling: control-plane
	hack/bench-scheduling.sh

## bench-scheduling-scale: scheduling at scale: 5,000 nodes with 150,000 pods bound, then 10,000 pending, vs the raw binding ceiling
bench-scheduling-scale: control-plane
	hack/bench-scheduling.sh scale

## bench-custominformer: ExternalWorkload events/s through the http custom informer vs a native informer
bench-custominformer:
	hack/bench-custominformer.sh

## bench-grantinformer: Grant events/s through the http custom informer and the two-level handler vs a native informer
bench-grantinformer:
	BENCH_CI_KIND=grants hack/bench-custominformer.sh

## bench-scheduling-two-level: pods/s under the two-level handler vs default in the same run (3 runs)
bench-scheduling-two-level: control-plane
	BENCH_COUNT=3 hack/bench-scheduling.sh two-level

## bench-scheduling-hybrid: pods/s and Bind p99 on a hybrid cluster with the NodeLedger vs without, in the same run (2 runs)
bench-scheduling-hybrid: control-plane
	BENCH_COUNT=2 hack/bench-scheduling.sh hybrid

## bench-gang: gangs of 8, pods/s of batch-scheduler vs kube-scheduler 1.37 (native PodGroups) vs the raw binding ceiling
##             (BENCH_GANG_DIALECT=native|annotation: batch-scheduler's gangs; annotation by default)
bench-gang: control-plane
	hack/bench-scheduling.sh gang

## bench-coldstart: time to the first pending pod bound and peak RSS of batch-scheduler vs kube-scheduler 1.37,
##                  started cold on 5000 nodes and 150000 bound pods (hack/bench-coldstart.sh; quick: make bench-coldstart ARGS=quick)
bench-coldstart: control-plane
	hack/bench-coldstart.sh $(ARGS)

## bench-queues: tenant queues on simulated kubelets: fair shares of weighted queues vs pkg/fairshare, utilization, reclaim
##               latency of a guaranteed queue, pods/s with 10 queues vs none (hack/bench-queues.sh; quick: make bench-queues ARGS=quick)
bench-queues: cluster
	hack/bench-queues.sh $(ARGS)

## bench-trace: a seeded trace of batch Jobs (gangs of 1-256, Philly's size classes) run to completion on simulated kubelets by
##              batch-scheduler and kube-scheduler 1.37 with and without gangs (hack/bench-trace.sh; quick: make bench-trace ARGS=quick)
.PHONY: bench-trace
bench-trace: control-plane
	hack/bench-trace.sh $(ARGS)

## bench-perf-suite: kube-scheduler's own scheduler_perf workloads (k8s.io/kubernetes v1.37.1, read from the module cache),
##                   pods/s and attempt latency of kube-scheduler vs batch-scheduler on the same control plane build
##                   (hack/bench-perf-suite.sh; the 5,000-node set: make bench-perf-suite ARGS=full)
bench-perf-suite: control-plane
	hack/bench-perf-suite.sh $(ARGS)

clean:
	rm -rf bin _output
