# Thin targets; the logic lives in hack/*.sh.
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -X github.com/batch-scheduler/batch-scheduler/pkg/version.gitVersion=$(VERSION)

.PHONY: all build test unit-test verify bench cover demo clean

all: build

## build: compile bin/batch-scheduler
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/batch-scheduler ./cmd/batch-scheduler

## test: every test, with the race detector (the CI entry point)
test: unit-test

unit-test:
	hack/test.sh

## verify: gofmt, go vet, go mod tidy check
verify:
	hack/verify.sh

## bench: benchmarks with their baselines, e.g. make bench BENCH=Dispatch
BENCH ?= .
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count 5 ./pkg/...

## cover: per-package coverage of the framework packages
cover:
	hack/cover.sh

## demo: run the event-handler framework on a small seeded cluster
demo:
	$(GO) run ./hack/demo

clean:
	rm -rf bin _output
