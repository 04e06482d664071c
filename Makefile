# thatch — run `make help` for the targets.
GO        ?= go
# Every package but the Ginkgo e2e suite itself; the e2e helpers (the fake
# model and Bot API servers) are unit-tested with the rest.
PKGS      := $(shell $(GO) list ./... | grep -v -e '/e2e$$')
STATICCHECK_VERSION := v0.8.2
GOBIN     ?= $(shell $(GO) env GOPATH)/bin

.PHONY: help build run test check vet lint unit fuzz fuzz-short e2e chaos bench bench-quick crash clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/thatch
	$(GO) build -o bin/thatch ./cmd/thatch

run: build ## build and run the daemon on its embedded defaults
	./bin/thatch serve

test: vet lint unit fuzz-short e2e ## everything CI runs: vet, gofmt, staticcheck, unit tests with -race, a short run of every fuzz target, the Ginkgo e2e suite

check: vet lint unit ## vet, gofmt, staticcheck and unit tests with -race (no e2e)

vet: ## go vet
	$(GO) vet ./...

lint: ## gofmt (every file formatted) and staticcheck (installed on first use)
	@unformatted=$$($$($(GO) env GOROOT)/bin/gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')); \
		[ -z "$$unformatted" ] || { echo "gofmt -l: these files are not formatted (run gofmt -w):"; echo "$$unformatted"; exit 1; }
	@test -x $(GOBIN)/staticcheck || GOFLAGS= $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(GOBIN)/staticcheck ./...

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

unit: ## unit, property and crash tests with -race
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

e2e: ## Ginkgo end-to-end suite against the built binary (real Pebble, real opencode)
	$(GO) test -count=1 -timeout 40m ./e2e/ -ginkgo.v

chaos: ## the e2e chaos spec with 1000 SIGKILLs of the daemon under plugin writes; prints acknowledged, recovered and lost
	THATCH_CHAOS_KILLS=1000 $(GO) test -v -count=1 -timeout 120m -run TestE2E ./e2e/ -ginkgo.label-filter=chaos -ginkgo.v

bench: ## benchmarks with ratios against baselines measured in the same run; writes bench.json
	$(GO) run ./bench -out bench.json

bench-quick: ## a fast smoke run of the benchmarks
	$(GO) run ./bench -quick -out bench.json

crash: ## the long SIGKILL crash test (200 trials)
	THATCH_CRASH_TRIALS=200 $(GO) test -count=1 -timeout 60m -run 'Crash|Kill' ./persistence/

clean: ## remove build output
	rm -rf bin bench.json
