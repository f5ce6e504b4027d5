SHELL := /bin/bash
# caddy-robots: build and test.
#
#   make test    everything CI runs: tools check, vet, staticcheck, unit + integration tests
#   make run     the demo (Caddyfile.example on :8080), built with progress shown
#   make bench   the Go benchmarks, summarised by benchstat (BASE=<ref> compares)
#   make fuzz    a short fuzzing pass over the parser, the matcher, case folding and target forms
#   make wrk     the end-to-end throughput comparison (bench/wrk.sh)
#   make wrk-https  the same over HTTPS, with and without the robots_fingerprint wrapper
#   make mixed   a mixed 60 s load with and without the directive (bench/mixed.sh)

GO        ?= go
STATICCHECK_VERSION ?= v0.8.2
export GOFLAGS := $(filter-out -trimpath,$(GOFLAGS))

.PHONY: test deps vet staticcheck unit bench fuzz wrk wrk-https mixed build run

test: deps vet staticcheck unit

# deps installs what the tests run for real: redis-server (state and
# integration tests, on loopback), wget, wget2 and httrack (real crawlers
# against a real Caddy) and chromium (the HTML report and the status page,
# rendered headless); need-browsers.sh what the undeclared-crawler tests
# run: headed Chromium and Firefox under Xvfb, lynx, python requests, Scrapy;
# promtool checks and unit-tests the Prometheus alert rules in examples/.
deps:
	@./scripts/need-promtool.sh
	@./scripts/need-redis.sh
	@./scripts/need-crawlers.sh
	@./scripts/need-chromium.sh
	@./scripts/need-browsers.sh

# vet, staticcheck: a cold run compiles or loads every package for minutes
# without a word; scripts/heartbeat.sh says what runs every 20 s.
vet:
	@./scripts/heartbeat.sh "vet: checking $$($(GO) list ./... | grep -c .) packages" $(GO) vet ./...
	@test -z "$$(gofmt -l . | grep -v '^bench/' )" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

staticcheck:
	@./scripts/heartbeat.sh "staticcheck $(STATICCHECK_VERSION) (built the first time): checking $$($(GO) list ./... | grep -c .) packages" \
		$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# unit: every test under the race detector, but for the engine's
# single-goroutine matcher checks (see scripts/unit.sh for why).
unit:
	GO=$(GO) ./scripts/unit.sh

# bench: the benchmarks of the root package, the engine and its state
# stores, agents and the decision (internal/policy), summarised by benchstat
# (scripts/bench.sh). With BASE, the same benchmarks of that git ref too,
# built in a temporary git worktree and run in turns with the working tree,
# and benchstat's comparison:
#   make bench BASE=main BENCH='ServeHTTP(Browser|BotAllowed)' COUNT=10
# COUNT is the runs per side (default 10), BENCH a go test -bench pattern
# (default all), BENCHTIME go test's -benchtime (1s), PKGS the packages;
# OUT keeps the raw results in a directory.
bench:
	GO='$(GO)' BASE='$(BASE)' COUNT='$(COUNT)' BENCH='$(BENCH)' BENCHTIME='$(BENCHTIME)' PKGS='$(PKGS)' OUT='$(OUT)' ./scripts/bench.sh

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./enforce
	$(GO) test -run '^$$' -fuzz FuzzMatch -fuzztime 30s ./enforce
	$(GO) test -run '^$$' -fuzz FuzzOnePass -fuzztime 30s ./enforce
	$(GO) test -run '^$$' -fuzz FuzzPreferences -fuzztime 30s ./enforce
	$(GO) test -run '^$$' -fuzz FuzzFoldCase -fuzztime 30s ./enforce
	$(GO) test -run '^$$' -fuzz FuzzParseClientHello -fuzztime 30s ./agents/ja4
	$(GO) test -run '^$$' -fuzz FuzzParseTarget -fuzztime 30s ./internal/policy

wrk:
	@./scripts/need-wrk.sh
	./bench/wrk.sh

wrk-https:
	@./scripts/need-wrk.sh
	./bench/wrk.sh --https

# benchmarks-doc writes docs/benchmarks.md (key Go benchmarks and bench/wrk.sh,
# over HTTP and over HTTPS, with the machine).
benchmarks-doc: ; ./bench/report.sh

mixed:
	@./scripts/need-wrk.sh
	./bench/mixed.sh

build:
	$(GO) build -o caddy ./cmd/caddy

# run: go run compiles Caddy for minutes the first time without a word;
# go build -v names each package as it compiles (nothing once cached).
run:
	@echo "building Caddy with the plugin (a few minutes the first time)…"
	$(GO) build -v -o caddy ./cmd/caddy
	./caddy run --config Caddyfile.example
