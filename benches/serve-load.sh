#!/usr/bin/env bash
# Performance as users get it: the release `vnfm serve` started as its own process on its
# defaults (SQLite in a fresh data directory, the test VIM), loaded over loopback by a separate
# process (benches/serve-load/serve_load.rs): 50,000 instances created over REST,
# distinct-filter list pages at a fixed offered rate (open loop) and closed loop, then
# instantiate + terminate cycles polled every 10 ms at 1, 8 and 32 instances. Prints every run
# and the medians of the runs: rates, p50/p99 latencies, the server's own CPU per operation
# (from /proc/<pid>/stat) and the generator's (from /proc/self/stat).
#
# Usage: benches/serve-load.sh [RUNS]
#   RUNS   runs, each on a fresh server and data directory (default 3)
#
# On PostgreSQL: VNFM_SERVE_LOAD_STORE=postgres starts a PostgreSQL server of the script's own
# through scripts/test-env/postgres.sh (VNFM_PG_DIR, default /var/tmp/vnfm-serve-load-postgres;
# VNFM_PG_PORT, default a free port; the test server's settings: fsync=off), stopped and removed at
# the end; or VNFM_SERVE_LOAD_STORE_URL=postgres://.../db names a running server (a fresh
# database is created on it for each run and dropped after it; VNFM_SERVE_LOAD_PG_PID, the
# postmaster's pid, adds its CPU per operation). VNFM_SERVE_LOAD_REPLICAS=2 runs two
# `vnfm serve` replicas on the one database, the client sending its requests to each in turn.
#   VNFM_SERVE_LOAD_STORE=postgres VNFM_SERVE_LOAD_REPLICAS=2 benches/serve-load.sh
# Environment (see benches/serve-load/serve_load.rs): VNFM_SERVE_LOAD_INSTANCES (50000),
#   VNFM_SERVE_LOAD_SECONDS (10), VNFM_SERVE_LOAD_RATE (5000), VNFM_SERVE_LOAD_CONNECTIONS (200),
#   VNFM_SERVE_LOAD_POLL_MS (10), VNFM_SERVE_LOAD_CLIENTS (1,8,32),
#   VNFM_SERVE_LOAD_PHASES (pages,cycles); CARGO_TARGET_DIR as cargo reads it;
#   VNFM_SERVE_LOAD_OTLP_ENDPOINT: when set, the server exports its traces to this OTLP/HTTP
#   collector (e.g. the VNFM_TEST_OTLP_URL of scripts/test-env/otel-collector.sh), as
#   `--otlp-endpoint` does: the cost of tracing is the difference to a run without it;
#   VNFM_SERVE_BIN: a `vnfm` binary to load instead of building this tree's (to compare builds).
set -euo pipefail
cd "$(dirname "$0")/.."
export VNFM_SERVE_LOAD_RUNS=${1:-3}
log=$(mktemp)
pg_started=
cleanup() {
    rm -f "$log"
    if [[ -n "$pg_started" ]]; then
        scripts/test-env/postgres.sh stop || true
    fi
}
trap cleanup EXIT
if [[ -z "${VNFM_SERVE_BIN:-}" ]]; then
    cargo build --release --locked --quiet -p vnfm-cli --bin vnfm
    VNFM_SERVE_BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/vnfm
fi
export VNFM_SERVE_BIN
cargo build --release --locked -p vnfm-serve-load --bench serve_load \
    --message-format=json-render-diagnostics >"$log"
bench=$(grep -o '"executable":"[^"]*serve_load-[^"]*"' "$log" | tail -n 1 | cut -d'"' -f4)
[[ -x "$bench" ]] || { echo "serve_load was not built" >&2; exit 1; }
# The server reads the standard variable as it reads `--otlp-endpoint`; unset, nothing is
# exported (the server's own OTEL_* variables are cleared so that "off" is off).
unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
if [[ -n "${VNFM_SERVE_LOAD_OTLP_ENDPOINT:-}" ]]; then
    export OTEL_EXPORTER_OTLP_ENDPOINT=$VNFM_SERVE_LOAD_OTLP_ENDPOINT
    echo "traces exported to $OTEL_EXPORTER_OTLP_ENDPOINT"
else
    echo "traces not exported"
fi
case "${VNFM_SERVE_LOAD_STORE:-sqlite}" in
    sqlite) ;;
    postgres)
        export VNFM_PG_DIR=${VNFM_PG_DIR:-/var/tmp/vnfm-serve-load-postgres}
        # A free port: a fixed one can be held by another program's ephemeral port.
        export VNFM_PG_PORT=${VNFM_PG_PORT:-$(scripts/test-env/free_ports.py 1)}
        pg_started=1
        VNFM_SERVE_LOAD_STORE_URL=$(scripts/test-env/postgres.sh start)
        VNFM_SERVE_LOAD_PG_PID=$(head -n 1 "$VNFM_PG_DIR/data/postmaster.pid")
        export VNFM_SERVE_LOAD_STORE_URL VNFM_SERVE_LOAD_PG_PID
        echo "PostgreSQL of scripts/test-env/postgres.sh at $VNFM_SERVE_LOAD_STORE_URL (fsync=off), pid $VNFM_SERVE_LOAD_PG_PID"
        ;;
    *)
        echo "VNFM_SERVE_LOAD_STORE is sqlite or postgres" >&2
        exit 2
        ;;
esac
echo "uptime before: $(uptime)"
"$bench"
echo "uptime after: $(uptime)"
