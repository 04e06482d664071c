# thatch — run `make help` for the targets.
GO        ?= go
# Every package but the Ginkgo e2e suite itself; the e2e helpers (the fake
# model and Bot API servers) are unit-tested with the rest.
PKGS      := $(shell $(GO) list ./... | grep -v -e '/e2e$$')
STATICCHECK_VERSION := v0.8.2
GOBIN     ?= $(shell $(GO) env GOPATH)/bin
# Where test runs leave their logs and reports (the unit log, the e2e
# JSON report, the stages' times).
REPORTS   ?= .reports
# The e2e suite's parallel processes. Its specs mostly wait on other
# processes (opencode, tmux, the agents), so more processes than cores
# pay; every spec keeps to a world of its own (e2e/isolation.go).
E2E_PROCS ?= 4
# The Ginkgo CLI, at the version go.mod pins (tools.go keeps it there).
GINKGO    := $(GO) run github.com/onsi/ginkgo/v2/ginkgo
TESTTIMES := $(GO) run ./internal/testtimes
# The recipes use pipes whose first command's status counts.
SHELL     := /bin/bash
.SHELLFLAGS := -o pipefail -c

.PHONY: help build run test check vet lint tools unit fuzz fuzz-short e2e flake chaos bench bench-quick crash clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/thatch
	$(GO) build -o bin/thatch ./cmd/thatch

run: build ## build and run the daemon on its embedded defaults
	./bin/thatch serve

# stage NAME,BUDGET,TARGETS: make TARGETS and add a line to the stages
# file: the name, its wall seconds, its budget and its exit status.
define stage
t0=$$(date +%s%N); $(MAKE) --no-print-directory $(3); rc=$$?; \
	ms=$$(( ($$(date +%s%N) - t0) / 1000000 )); \
	printf '%s\t%d.%03d\t%s\t%s\n' '$(1)' $$((ms / 1000)) $$((ms % 1000)) '$(2)' $$rc >> $(REPORTS)/stages.tsv; \
	[ $$rc = 0 ]
endef

test: ## everything CI runs: vet, gofmt, go mod tidy, staticcheck, unit tests with -race, a short run of every fuzz target, the Ginkgo e2e suite; then a table of the stages' times
	@mkdir -p $(REPORTS); : > $(REPORTS)/stages.tsv
	@$(call stage,vet+lint,180,vet lint) && \
	$(call stage,unit,300,unit) && \
	$(call stage,fuzz,180,fuzz-short) && \
	$(call stage,e2e,480,e2e); rc=$$?; \
	$(TESTTIMES) -stages $(REPORTS)/stages.tsv; exit $$rc

check: vet lint unit ## vet, gofmt, staticcheck and unit tests with -race (no e2e)

vet: ## go vet
	$(GO) vet ./...

lint: ## gofmt (every file formatted), go mod tidy -diff (go.mod and go.sum as tidy leaves them) and staticcheck (installed on first use)
	@unformatted=$$($$($(GO) env GOROOT)/bin/gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')); \
		[ -z "$$unformatted" ] || { echo "gofmt -l: these files are not formatted (run gofmt -w):"; echo "$$unformatted"; exit 1; }
	@out=$$($(GO) mod tidy -diff 2>&1) || { echo "go mod tidy -diff: go.mod or go.sum is not as go mod tidy leaves them (run it):"; echo "$$out" | grep -v '^go: downloading'; exit 1; }
	@$(MAKE) --no-print-directory tools
	$(GOBIN)/staticcheck ./...

tools: ## install what lint runs (staticcheck at STATICCHECK_VERSION) unless it is there
	@test -x $(GOBIN)/staticcheck || GOFLAGS= $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# Every fuzz target, as package:Target; each has its seed corpus in the
# package's testdata/fuzz (plain `go test` runs the seeds).
FUZZ_TARGETS := ./config:FuzzLoadTOML ./config:FuzzLoadYAML ./messages:FuzzDecode ./messages:FuzzEncode \
	./hosts/opencode:FuzzDecoder ./hosts/opencode:FuzzSSEReader ./hosts/opencode/front:FuzzToolBody \
	./im/agents:FuzzReplies ./im/telegram:FuzzRenderHTML ./im/telegram:FuzzSplit ./im/screenshot:FuzzRender
FUZZTIME ?= 2m

# A target that fails is run once more only when it wrote no failing input
# (the fuzzing engine itself stumbled on a loaded machine); a failing input
# it wrote fails the run.
fuzz: ## run every fuzz target for FUZZTIME each (default 2m)
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; dir=$$pkg/testdata/fuzz/$$fn; \
		echo "--- fuzz $$fn ($$pkg, $(FUZZTIME))"; \
		before=$$(ls $$dir 2>/dev/null | wc -l); \
		$(GO) test -run='^$$' -fuzz="^$$fn$$" -fuzztime=$(FUZZTIME) $$pkg && continue; \
		[ "$$(ls $$dir 2>/dev/null | wc -l)" = "$$before" ] || { echo "fuzz $$fn found a failing input in $$dir"; exit 1; }; \
		echo "--- fuzz $$fn stopped without a failing input; once more"; \
		$(GO) test -run='^$$' -fuzz="^$$fn$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; done

fuzz-short: ## run every fuzz target for 10s (part of make test)
	@$(MAKE) --no-print-directory fuzz FUZZTIME=10s

unit: ## unit, property and crash tests with -race; then the 10 slowest packages
	@mkdir -p $(REPORTS)
	@$(GO) test -race -count=1 -timeout 20m $(PKGS) 2>&1 | tee $(REPORTS)/unit.log; rc=$$?; \
	$(TESTTIMES) -gotest $(REPORTS)/unit.log -n 10; exit $$rc

e2e: ## Ginkgo end-to-end suite in E2E_PROCS parallel processes against the built binary (real Pebble, opencode, tmux, claude, codex, Chromium, NATS); then the 10 slowest specs
	@mkdir -p $(REPORTS); rm -f $(REPORTS)/e2e.json
	@$(GINKGO) --procs=$(E2E_PROCS) --timeout=40m --poll-progress-after=5m --poll-progress-interval=5m \
		--json-report=e2e.json --output-dir=$(REPORTS) $(E2E_FLAGS) ./e2e; rc=$$?; \
	$(TESTTIMES) -ginkgo $(REPORTS)/e2e.json -n 10; exit $$rc

# The packages whose code waits on time, processes or other goroutines.
FLAKE_PKGS  := ./im/... ./supervisor/... ./persistence/... ./hosts/...
FLAKE_RUNS  ?= 5
FLAKE_COUNT ?= 20
# Ginkgo suites refuse go test -count > 1: those packages run FLAKE_COUNT
# times one after another, the others with -count (expanded only when
# make flake runs).
FLAKE_SUITES = $(shell $(GO) list -f '{{if .TestGoFiles}}{{.Dir}}{{end}}' $(FLAKE_PKGS) | xargs -r grep -l --include='*_test.go' -r -m1 'RunSpecs' | xargs -r -n1 dirname | sort -u | xargs -r $(GO) list)
FLAKE_PLAIN  = $(filter-out $(FLAKE_SUITES),$(shell $(GO) list $(FLAKE_PKGS)))

flake: ## the e2e suite FLAKE_RUNS times (5) and the timing-sensitive packages' unit tests with -race -count=FLAKE_COUNT (20); prints what failed, fails on any failure
	@mkdir -p $(REPORTS)/flake; fails=0; \
	for i in $$(seq 1 $(FLAKE_RUNS)); do \
		echo "--- flake: e2e run $$i of $(FLAKE_RUNS)"; \
		if $(MAKE) --no-print-directory e2e REPORTS=$(REPORTS)/flake/e2e-$$i E2E_FLAGS="$(E2E_FLAGS) --no-color" >$(REPORTS)/flake/e2e-$$i.log 2>&1; then echo "e2e run $$i: passed"; \
		else fails=$$((fails + 1)); echo "e2e run $$i: FAILED (log: $(REPORTS)/flake/e2e-$$i.log)"; grep -E '^\s*\[FAIL\]' $(REPORTS)/flake/e2e-$$i.log | sort -u; fi; \
	done; \
	echo "--- flake: unit tests of $(FLAKE_PKGS), -race -count=$(FLAKE_COUNT)"; \
	if $(GO) test -race -count=$(FLAKE_COUNT) -timeout 120m $(FLAKE_PLAIN) >$(REPORTS)/flake/unit.log 2>&1; then echo "unit: passed"; \
	else fails=$$((fails + 1)); echo "unit: FAILED (log: $(REPORTS)/flake/unit.log)"; grep -E '^(--- FAIL|FAIL)' $(REPORTS)/flake/unit.log | sort | uniq -c; fi; \
	for i in $$(seq 1 $(FLAKE_COUNT)); do \
		$(GO) test -race -count=1 $(FLAKE_SUITES) >$(REPORTS)/flake/suites-$$i.log 2>&1 && continue; \
		fails=$$((fails + 1)); echo "Ginkgo suites, run $$i: FAILED (log: $(REPORTS)/flake/suites-$$i.log)"; \
	done; echo "Ginkgo suites ($(FLAKE_SUITES)): $(FLAKE_COUNT) runs done"; \
	echo "--- flake: $$fails failing run(s)"; [ $$fails = 0 ]

chaos: ## the e2e chaos specs at full length: 1000 SIGKILLs of the daemon under plugin writes, and 60 SIGKILLs of cluster nodes; prints acknowledged, recovered and lost
	THATCH_CHAOS_KILLS=1000 THATCH_CLUSTER_KILLS=60 $(GO) test -v -count=1 -timeout 180m -run TestE2E ./e2e/ -ginkgo.label-filter=chaos -ginkgo.v

bench: ## benchmarks with ratios against baselines measured in the same run; writes bench.json
	$(GO) run ./bench -out bench.json

bench-quick: ## a fast smoke run of the benchmarks
	$(GO) run ./bench -quick -out bench.json

crash: ## the long SIGKILL crash test (200 trials)
	THATCH_CRASH_TRIALS=200 $(GO) test -count=1 -timeout 60m -run 'Crash|Kill' ./persistence/

clean: ## remove build output and test reports
	rm -rf bin bench.json $(REPORTS)
