# respool — see `make help`.
SHELL := /bin/bash
GO ?= go
# Every module: the root and the nested ones with their own go.mod (heavy or test-only dependencies).
MODULES := $(shell git ls-files go.mod '*/go.mod' | xargs -n1 dirname)
STATICCHECK_VERSION := v0.7.0
BENCH_COUNT ?= 10
BENCH_TIME ?= 200ms
# The fault suite's report, and extra go test flags for it (FAULTS_FLAGS=-race).
FAULTS_REPORT ?= $(or $(TMPDIR),/tmp)/respool-faults.md
FAULTS_FLAGS ?=
FAILOVER_REPORT ?= $(or $(TMPDIR),/tmp)/respool-failover.md

.PHONY: help test test-race test-unit test-integration faults failover lint bench demo check tidy api

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-17s %s\n", $$1, $$2}'

test: test-unit test-integration ## every test of every module, with -race (installs MariaDB and Redis if missing)

test-race: test ## same as test: every test runs with -race

test-unit: ## unit tests of the library and of every other module but integration (bench, examples: each example is run by a test, the Prometheus collector), with -race
	@for m in $(filter-out integration,$(MODULES)); do \
		echo "cd $$m && $(GO) test -race -count=1 ./..."; \
		(cd $$m && $(GO) test -race -count=1 ./...) || exit 1; \
	done

test-integration: ## tests against real PostgreSQL, MariaDB, Redis and PgBouncer servers started on loopback (installs MariaDB, Redis and PgBouncer if missing)
	bash scripts/ensure-mariadb.sh
	bash scripts/ensure-redis.sh
	bash scripts/ensure-pgbouncer.sh
	cd integration && $(GO) test -race -count=1 ./...

faults: ## the fault suite alone (issue 9; ~3 min): every pool under kill, limit, slow, frozen (eager and polite callers) and leak, printed as a table; RESPOOL_FAULT_TARGETS=1 asserts respool's targets
	bash scripts/ensure-mariadb.sh
	rm -f $(FAULTS_REPORT)
	cd integration && RESPOOL_FAULT_REPORT=$(FAULTS_REPORT) $(GO) test -count=1 -timeout 8m $(FAULTS_FLAGS) -run '^TestFaults$$' ./faults/; \
		status=$$?; echo; cat $(FAULTS_REPORT) 2>/dev/null; exit $$status

failover: ## the failover suite alone (issue 16; ~1 min): demoted primary, promoted standby, MariaDB read_only, password rotation, every client side by side, printed as a table; RESPOOL_FAILOVER_TARGETS=1 asserts respool's targets
	bash scripts/ensure-mariadb.sh
	rm -f $(FAILOVER_REPORT)
	cd integration && RESPOOL_FAILOVER_REPORT=$(FAILOVER_REPORT) $(GO) test -count=1 -timeout 5m $(FAULTS_FLAGS) -run '^TestFailover$$' ./failover/; \
		status=$$?; echo; cat $(FAILOVER_REPORT) 2>/dev/null; exit $$status

lint: ## a gofmt check, the API's size (at most 415 exported identifiers: make api), then go vet, staticcheck and go mod tidy -diff in every module (each directory with a go.mod)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@$(GO) run ./internal/apicount -max 427 . >/dev/null
	@for m in $(MODULES); do \
		echo "lint: $$m"; \
		(cd $$m && $(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./... && \
			$(GO) mod tidy -diff) || exit 1; \
	done

bench: ## pool benchmarks (ratios to puddle), then resilience benchmarks (ratios to gobreaker, x/time/rate, failsafe-go)
	cd bench && $(GO) test -run '^$$' -bench . -count $(BENCH_COUNT) -benchtime $(BENCH_TIME) ./ | tee bench.out | $(GO) run ./cmd/ratios
	cd bench && $(GO) test -run '^$$' -bench . -count $(BENCH_COUNT) -benchtime $(BENCH_TIME) ./resilience | tee resilience.out | $(GO) run ./cmd/ratios -baseline gobreaker,rate,failsafe

# DEMO_DSN reaches the demo through the environment (make exports command-line variables) and the
# command is echoed without it, so that make never prints the DSN's password.
demo: ## ~15s on embedded SQLite: stats, queue full, a leak reclaimed, faults handled; DEMO_DSN=… runs it on PostgreSQL or MySQL
	@echo 'cd examples && $(GO) run ./demo "$$DEMO_DSN"'
	@cd examples && $(GO) run ./demo "$$DEMO_DSN"

api: ## count the exported identifiers of every public package (the surface a user reads)
	@$(GO) run ./internal/apicount .

check: lint test ## lint and every test

tidy: ## go mod tidy in every module
	@for m in $(MODULES); do (cd $$m && $(GO) mod tidy) || exit 1; done
