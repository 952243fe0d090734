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
# Environment (see benches/serve-load/serve_load.rs): VNFM_SERVE_LOAD_INSTANCES (50000),
#   VNFM_SERVE_LOAD_SECONDS (10), VNFM_SERVE_LOAD_RATE (5000), VNFM_SERVE_LOAD_CONNECTIONS (200),
#   VNFM_SERVE_LOAD_POLL_MS (10), VNFM_SERVE_LOAD_CLIENTS (1,8,32),
#   VNFM_SERVE_LOAD_PHASES (pages,cycles); CARGO_TARGET_DIR as cargo reads it;
#   VNFM_SERVE_LOAD_OTLP_ENDPOINT: when set, the server exports its traces to this OTLP/HTTP
#   collector (e.g. the VNFM_TEST_OTLP_URL of scripts/test-env/otel-collector.sh), as
#   `--otlp-endpoint` does: the cost of tracing is the difference to a run without it.
set -euo pipefail
cd "$(dirname "$0")/.."
export VNFM_SERVE_LOAD_RUNS=${1:-3}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo build --release --locked --quiet -p vnfm-cli --bin vnfm
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
echo "uptime before: $(uptime)"
VNFM_SERVE_BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/vnfm "$bench"
echo "uptime after: $(uptime)"
