# Cellar's entry points. README.md documents the two that matter:
#   make run    build and start the server (embedded SQLite in ./data)
#   make test   everything CI checks: formatting, vet, race-enabled tests
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/cellar-db/cellar.Version=$(VERSION)

.PHONY: all build run test test-long deps vet fmt-check lint fuzz bench bench-quick commands crash-long restart-2g client-suites clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/cellar ./cmd/cellar

run: build
	./bin/cellar $(ARGS)

# Tools the tests talk to (redis-server to compare against, redis-cli and
# redis-benchmark as real clients) come from Debian's packages.
deps:
	@scripts/deps.sh

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

lint: fmt-check vet

# -parallel 4: the black-box tests (tests/, each t.Parallel with its own
# server) spend most of their time waiting on sockets, processes and
# fsyncs, so four at a time keep two cores busy.
#
# RACE: the race detector instruments Cellar's packages and Go's standard
# library, not modernc.org's SQLite and libc (C translated to Go, where
# Cellar's goroutines share nothing: each connection is one goroutine's at a
# time, handed over through Go's channels and mutexes, which stay
# instrumented). Instrumented, every SQLite statement ran 5-10x slower and
# the suite took 26 minutes; a race in Cellar's code still fails the test
# that runs it.
RACE := -race -gcflags='modernc.org/...=-race=false'

# scripts/test.sh keeps go test's whole output in a log and, on failure,
# ends with a summary of what failed (a timeout's running tests too).
test: deps lint
	GO=$(GO) scripts/test.sh $(RACE) -count=1 -timeout 60m -parallel 4 ./...

fuzz:
	$(GO) test ./proto -run '^$$' -fuzz FuzzParseSplit -fuzztime 60s

# The suites at their full sizes: the black-box differential tests send
# twice as many random commands per seed as make test's (tests/harness_test.go,
# steps), the search top-list model runs 60 steps instead of 15.
test-long: deps
	TEST_LONG=1 $(GO) test $(RACE) -count=1 -timeout 90m ./actor ./tests

# The long crash test: 20 kill -9 cycles per durability mode under load,
# checking every acknowledged write after each restart (make test runs 3).
crash-long:
	TEST_CRASH_KILLS=20 $(GO) test ./tests -run TestCrashLosesNothingAcknowledged -count=1 -v -timeout 60m

# Time from start to first reply on a 2 GB database (built once, kept in
# the temporary directory), and after a kill with a full redo log to replay.
restart-2g:
	$(GO) test ./tests -run '^$$' -bench 'BenchmarkRestart(LargeDatabase|ReplayFullLog)' -benchtime 1x -timeout 60m -v

# Regenerates actor/commands.json from Redis's command metadata: the JSON
# files of src/commands/ in a Redis 7.0 source tree, named by
# REDIS_COMMANDS (make commands REDIS_COMMANDS=~/redis-7.0/src/commands).
commands:
	@test -n "$(REDIS_COMMANDS)" || { echo "make commands: set REDIS_COMMANDS to the src/commands directory of a Redis 7.0 source tree"; exit 2; }
	$(GO) run ./actor/cmdgen -src $(REDIS_COMMANDS)

# Client libraries' own test suites (go-redis's Ginkgo specs) against a
# throw-away redis-server and against Cellar; writes
# tests/results/client-suites.md. Needs the Go module proxy.
client-suites: deps
	$(GO) run ./scripts/clientsuites

bench: build deps
	$(GO) run ./bench $(BENCH_ARGS)

bench-quick: build deps
	$(GO) run ./bench -quick $(BENCH_ARGS)

clean:
	rm -rf bin data bench/work
