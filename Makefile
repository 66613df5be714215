# mailroom — see README.md. `make run` starts API + worker, `make test` runs the suite.
GO       ?= go
SQLC     ?= $(GO) run github.com/sqlc-dev/sqlc/cmd/sqlc@v1.31.1
BIN      := bin

.PHONY: screenshots run build test bench bench-load bench-send bench-automation generate assets lint clean

build:
	$(GO) build -o $(BIN)/api ./cmd/api
	$(GO) build -o $(BIN)/worker ./cmd/worker

# Runs the API and one worker in the foreground against the local PostgreSQL
# and Redis (DATABASE_URL, REDIS_URL, HTTP_ADDR… override the defaults).
# Ctrl-C stops both.
# A development start also serves asynqmon at /monitoring, behind a
# password made for this run (unless MONITORING_USER is set already), and
# seals the sending domains' DKIM keys with var/dkim_key_secret (made once;
# unless DKIM_KEY_SECRET is set already).
run: build
	@$(BIN)/api migrate
	@bash -c 'set -e; \
	  login="the MONITORING_USER and MONITORING_PASSWORD you set"; \
	  if [ -z "$$MONITORING_USER" ]; then \
	    export MONITORING_USER=admin MONITORING_PASSWORD=$$(head -c 18 /dev/urandom | base64 | tr -d "/+="); \
	    login="user admin, password $$MONITORING_PASSWORD"; \
	  fi; \
	  if [ -z "$$DKIM_KEY_SECRET" ]; then \
	    mkdir -p var; [ -s var/dkim_key_secret ] || (umask 077; head -c 32 /dev/urandom | base64 > var/dkim_key_secret); \
	    export DKIM_KEY_SECRET=$$(cat var/dkim_key_secret); \
	  fi; \
	  url=$${PUBLIC_URL:-http://localhost:8080}; \
	  echo "mailroom: API on $$url/api, worker running. Ctrl-C stops both."; \
	  echo "mailroom: queues at $$url/monitoring ($$login)"; \
	  echo "mailroom: console on $$url/ ; make an account and its owner with:"; \
	  echo "  $(BIN)/api accounts create --name NAME --owner-email YOU@EXAMPLE.COM   (prints the owner'"'"'s one-time sign-in link)"; \
	  trap "kill \$$(jobs -p) 2>/dev/null; wait" EXIT; $(BIN)/worker & $(BIN)/api & wait -n'


# The whole suite against the local PostgreSQL and Redis; each test package
# gets its own database cloned from a migrated template. Every test runs
# under the race detector, but for the heavy single-goroutine ones listed
# in internal/racetest/heavy.txt, which skip there and run in the second
# step without it (tenfold faster).
HEAVY_PKGS  = $(shell awk 'substr($$1, 1, 2) == "./" && NF == 2 {print $$1}' internal/racetest/heavy.txt | sort -u)
HEAVY_TESTS = $(shell awk 'substr($$1, 1, 2) == "./" && NF == 2 {print $$2}' internal/racetest/heavy.txt | paste -sd'|' -)
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run '^($(HEAVY_TESTS))$$' $(HEAVY_PKGS)

# Takes the console's screenshots again into docs/console (the browser
# tests of internal/e2e with UPDATE_SCREENSHOTS=1; needs chromium).
screenshots:
	UPDATE_SCREENSHOTS=1 $(GO) test -count=1 -run 'InBrowser' ./internal/e2e/

bench: bench-load
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The mixed load with segment churn through the real api and worker, on
# spare ports with a fresh database (mailroom_bench_load) and Redis db 14:
# 64 clients for 30 s of contact writes, reads and lists while 90 segments
# are saved and 45 changed on one type of 1,000 contacts; fails unless every
# answer is 200 and the counts and members are exact afterwards
# (cmd/load -mix segments). ARGS="-d 60s" and the like override.
bench-load: build
	$(GO) run ./cmd/load -start -url http://127.0.0.1:18098 -mix segments -c 64 -d 30s $(ARGS)

# A whole single send through the real api and worker processes into
# Postfix's smtp-sink, a real MTA in its own process (installed when
# missing; ARGS="-sink inproc" for the project's sink in the benchmark's
# process), beside a bare pipelining client into the same sink
# (cmd/bench-send): ARGS="-n 1000000 -workers 2".
bench-send: build
	$(GO) run ./cmd/bench-send $(ARGS)

# N contacts imported into a live welcome automation with an instant mail:
# the import with and without it, time to first mail, mails/s.
bench-automation: build
	$(GO) run ./cmd/bench-send -automation $(ARGS)

# Regenerates internal/postgres/db from queries/*.sql (needs cgo; slow the
# first time while sqlc builds).
generate:
	cd internal/postgres && $(SQLC) generate

# Refreshes the console's browser libraries in internal/console/static/vendor
# (committed, so building needs no Node): npm ci installs the versions in
# web/package-lock.json, web/build.mjs copies htmx, uPlot and Sortable,
# bundles web/codemirror.js with esbuild and writes LICENSES.txt. The same
# lock file gives the same bytes.
assets:
	cd web && npm ci --ignore-scripts --no-audit --no-fund
	cd web && node build.mjs ../internal/console/static/vendor

lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l .; exit 1)
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.6.1 ./...

clean:
	rm -rf $(BIN) var
