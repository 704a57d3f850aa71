# kmigrate. `make help` lists the targets.
GO      ?= go
PKGS    ?= ./...
BIN     ?= bin

comma := ,

.PHONY: help build test test-short seed cluster-up cluster-down it it-prod it-containers images lint bench bench-quick bench-startup demo demo-real docs-transcripts nightly fetch-kafka clean validate-deploy

help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z_-]+:.*## /{printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# --version prints VERSION (release builds); without it, what go build records (module version, vcs.revision).
VERSION ?= $(shell git describe --always --dirty 2>/dev/null)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
LDFLAGS ?= $(if $(VERSION),-X github.com/kmigrate/kmigrate/cmd/internal/clikit.Version=$(VERSION)) $(if $(COMMIT),-X github.com/kmigrate/kmigrate/cmd/internal/clikit.Commit=$(COMMIT))

build: ## build kverify, kreconcile and kmirror into bin/ (--version: git describe --always --dirty)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

# go test -json through scripts/testtimes, which prints go test's usual lines and keeps the events
# in reports/test.json (the container suite's in reports/it-containers.json); whatever happened,
# the run ends with the slowest tests and each package's time. The exit status is go test's,
# else the container suite's, else the oracle tests'.
# The container suite (its faults are held for seconds, so its cores are mostly idle) starts
# with the other tests, beside the real-broker package's serial tests, which mostly wait; its
# lines begin with "it-containers: ". The oracle tests of reconcile (100,000 group positions,
# CPU-bound on every core) run beside them all at the lowest CPU priority (nice 19): they take
# the CPU the others leave idle and give way at once to the tests' timed faults. Once the
# other tests are over, whatever of the oracle is left runs at normal priority (renice, every
# thread: where that is allowed, as root in CI): at nice 19 a machine busy with other work at
# normal priority would leave it almost no CPU, and its go test timeout would end it.
ORACLE := ^TestOracle(Content|GroupSync|VerifyCounts|VerifyMap)$$

test: SHELL := bash
test: ## every test this machine can run (real-broker tests skip, saying why, without Java 17/Maven; the container suite without a Docker engine), then the slowest tests
	@mkdir -p reports $(BIN) && rm -f reports/oracle.json reports/test.json reports/it-containers.json
	$(GO) build -o $(BIN)/testtimes ./scripts/testtimes
	@set -o pipefail; set -x; \
	{ nice -n 19 $(GO) test -count=1 -timeout 40m -json -run '$(ORACLE)' ./reconcile | $(BIN)/testtimes -summary=false -json reports/oracle.json; } & oracle=$$!; \
	scripts/it-containers.sh & containers=$$!; \
	$(GO) test -count=1 -timeout 40m -json -skip '$(ORACLE)' $(PKGS) | $(BIN)/testtimes -summary=false -json reports/test.json; status=$$?; \
	wait $$containers; s=$$?; [ $$status != 0 ] || status=$$s; \
	{ set +x; } 2>/dev/null; for p in $$(pgrep -f 'TestOracle\(Content'); do renice -n 0 -p $$(ls /proc/$$p/task 2>/dev/null) >/dev/null 2>&1; done; \
	wait $$oracle; s=$$?; [ $$status != 0 ] || status=$$s; \
	$(BIN)/testtimes reports/oracle.json $$(ls reports/test.json reports/it-containers.json 2>/dev/null) || [ $$status != 0 ] || status=2; \
	exit $$status

it: fetch-kafka ## real-broker tests only (Kafka 2.3.0, 3.7.1, MirrorMaker 2 as JVM processes)
	KMIGRATE_REQUIRE_REAL=1 $(GO) test -count=1 -timeout 40m -v ./integration/...

it-prod: fetch-kafka ## faults during mirroring on 3+3 brokers through loopback proxies: kmirror, MM2, MM2 EOS side by side (about 31 min at 1M records each; TOOLS=kmirror: kmirror's lane alone, as .ci/run runs it)
	scripts/it-prod.sh $(subst $(comma), ,$(TOOLS))

it-containers: ## the container suite alone: seed, verify, reconcile, kmigrate's image and faults on containers (needs a Docker engine)
	scripts/it-containers.sh

images: fetch-kafka ## build the local images (Java 17 base, Kafka 2.3.0, 3.7.1, MirrorMaker 2, kmigrate) when their inputs changed
	scripts/images.sh build

test-short: ## the fast tests only: kfake and pure code, no JVM
	$(GO) test -short -count=1 $(PKGS)

seed: fetch-kafka ## the seed scenario on real brokers: prints source lag, target lag and re-read count
	$(GO) test -count=1 -v -run 'TestSeedScenario$$' ./integration/

cluster-up: fetch-kafka ## start Kafka 2.3.0 and 3.7.1 by hand and print their bootstrap addresses
	scripts/cluster.sh up 2.3.0 3.7.1

cluster-down: ## stop exactly what cluster-up started
	scripts/cluster.sh down

fetch-kafka: ## resolve the Kafka 2.3.0 and 3.7.1 jars into ~/.cache/kmigrate (once)
	scripts/fetch-kafka.sh

lint: ## gofmt, go vet, staticcheck (pinned in go.mod as a tool: no separate install)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

demo: build ## the seed case on in-process clusters (no Java): the 30-vs-38 gap, its fix, and kmirror exact on its own
	$(GO) run ./scripts/demo -bin $(BIN)

demo-real: fetch-kafka ## the same story on real Kafka 2.3.0 -> 3.7.1 with the real MirrorMaker 2 (Java 17, Maven)
	KMIGRATE_DEMO_REAL=1 KMIGRATE_REQUIRE_REAL=1 $(GO) test -count=1 -v -timeout 15m -run '^TestDemoReal$$' ./integration/

docs-transcripts: build ## regenerate the transcripts of docs/verify.md (kverify on kfake, no Java; scripts/docs-verify)
	$(GO) run ./scripts/docs-verify -bin $(BIN) -write docs/verify.md

bench: ## benchmarks against peers in the same run, full size (real brokers; see docs/benchmarks.md)
	scripts/bench.sh

bench-quick: ## a small version of every benchmark, same code (results in reports/quick/)
	scripts/bench.sh --quick

bench-startup: fetch-kafka ## kmirror start-up on real brokers: time to first record, fresh and resumed (1,000 partitions of map)
	scripts/bench-startup.sh

nightly: ## the nightly end-to-end run locally: reports/ gets the HTML and JUnit files
	scripts/nightly.sh

validate-deploy: ## render deploy/ with kustomize and validate it against the Kubernetes schemas (needs go, python3-venv; installs kubernetes-validate from PyPI once)
	scripts/validate-deploy.sh

clean: ## remove build outputs
	rm -rf $(BIN) reports
