#!/usr/bin/env bash
# A real OpenTelemetry Collector for the tracing tests: the collector's own command
# (go.opentelemetry.io/collector/otelcol) built from otel-collector/ with the OTLP receiver
# and contrib's file exporter only, on 127.0.0.1, as a plain process. Every batch of spans it
# receives is written as one line of OTLP JSON to a file the tests read back.
#
#   eval "$(scripts/test-env/otel-collector.sh start)"   # prints `export VNFM_TEST_OTLP_...=...` lines
#   scripts/test-env/otel-collector.sh env               # prints them again
#   scripts/test-env/otel-collector.sh build             # only builds (or finds) the binary
#   scripts/test-env/otel-collector.sh stop              # stops it, removes the directory
#
# Environment:
#   VNFM_OTELCOL_DIR    working directory for the configuration, the spans file, the log and
#                       the pid file (required for start/stop; give a fresh `mktemp -d`; each
#                       directory is one independent collector on its own free ports)
#   VNFM_OTELCOL_CACHE  where the built binary is kept, one per version (default
#                       ${XDG_CACHE_HOME:-~/.cache}/vnfm/otel-collector); a second run finds it
#
# `start` prints:
#   VNFM_TEST_OTLP_URL         http://127.0.0.1:<port>, the OTLP/HTTP endpoint (POST /v1/traces)
#   VNFM_TEST_OTLP_SPANS_FILE  the file of exported spans: one OTLP JSON ExportTraceServiceRequest
#                              per line (traceId, spanId, parentSpanId as hex), flushed every
#                              100 ms; it only grows while the collector runs
#   VNFM_TEST_OTLP_DIR         the working directory (log: otelcol.log)
#
# `start` is idempotent: when the collector of VNFM_OTELCOL_DIR is up, it only prints the
# variables. The collector's version is pinned by otel-collector/go.mod; the binary is built
# once per version with the machine's Go (>= 1.26) through the Go module proxy, and the Go build
# and module caches of the build are deleted afterwards (docs/testing.md gives the figures).
# Needs Go and the Go module proxy for `build`, python3 for the readiness probe.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/test-env/common.sh
# die, log_tail, need_dir
. "$HERE/common.sh"
MODDIR="$HERE/otel-collector"
DIR="${VNFM_OTELCOL_DIR:-}"
VERSION=$(awk '$1 == "go.opentelemetry.io/collector/otelcol" { print $2; exit }' "$MODDIR/go.mod")
CACHE="${VNFM_OTELCOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vnfm/otel-collector}"
# The binary's name carries a digest of the module files: a change of a component or version
# builds again.
SOURCE_SUM=$(cat "$MODDIR/go.mod" "$MODDIR/go.sum" "$MODDIR/main.go" | sha256sum | cut -c1-12)
BINARY="$CACHE/vnfm-otelcol-$VERSION-$SOURCE_SUM"

# Builds the collector into $BINARY unless it is there.
build() {
    if [[ -x "$BINARY" ]]; then
        echo "otel-collector.sh: OpenTelemetry Collector $VERSION from $BINARY" >&2
        return
    fi
    command -v go >/dev/null || die "Go is needed to build the OpenTelemetry Collector $VERSION (install golang-go)"
    local work started caches
    mkdir -p "$CACHE"
    work=$(mktemp -d "$CACHE/build.XXXXXX")
    started=$(date +%s)
    echo "otel-collector.sh: building the OpenTelemetry Collector $VERSION into $BINARY (2 to 5 minutes on 2 cores)" >&2
    # Own Go caches, deleted afterwards: they serve no later run (the binary is kept).
    if ! (cd "$MODDIR" && env GOCACHE="$work/go-build" GOMODCACHE="$work/mod" GOTOOLCHAIN=local \
        GOFLAGS="-buildvcs=false -modcacherw" CGO_ENABLED=0 GOWORK=off \
        go build -trimpath -ldflags "-s -w" -o "$work/vnfm-otelcol" .) >"$work/build.log" 2>&1; then
        tail -n 40 "$work/build.log" >&2
        rm -rf "$work"
        die "building the OpenTelemetry Collector $VERSION failed (Go through the module proxy); the log's end is above"
    fi
    caches=$(du -sh "$work/go-build" "$work/mod" 2>/dev/null | awk '{printf "%s %s, ", $2, $1}')
    mv "$work/vnfm-otelcol" "$BINARY"
    rm -rf "$work"
    echo "otel-collector.sh: built the OpenTelemetry Collector $VERSION in $(($(date +%s) - started)) s; binary $(du -sh "$BINARY" | cut -f1), Go caches deleted (${caches%, })" >&2
}

alive() {
    [[ -f "$DIR/otelcol.pid" ]] && kill -0 "$(cat "$DIR/otelcol.pid")" 2>/dev/null
}

# Waits until the OTLP/HTTP receiver accepts an (empty) export.
wait_ready() {
    local url=$1
    for _ in $(seq 120); do
        if python3 - "$url/v1/traces" 2>/dev/null <<'EOF'; then
import sys, urllib.request
req = urllib.request.Request(sys.argv[1], data=b"{}", headers={"Content-Type": "application/json"})
sys.exit(0 if urllib.request.urlopen(req, timeout=1).status == 200 else 1)
EOF
            return 0
        fi
        alive || { log_tail otelcol.log; die "the collector exited while starting"; }
        sleep 0.25
    done
    log_tail otelcol.log
    die "the collector did not accept OTLP/HTTP at $url in time"
}

write_config() {
    # No own telemetry (its metrics server would take a fixed port); spans to the file,
    # flushed often so a test reads them soon after the export.
    cat >"$DIR/config.yaml" <<EOF
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$PORT
exporters:
  file:
    path: $DIR/spans.jsonl
    format: json
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: info
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
EOF
}

write_env() {
    cat >"$DIR/env" <<EOF
export VNFM_TEST_OTLP_URL=http://127.0.0.1:$PORT
export VNFM_TEST_OTLP_SPANS_FILE=$DIR/spans.jsonl
export VNFM_TEST_OTLP_DIR=$DIR
EOF
}

start() {
    need_dir VNFM_OTELCOL_DIR
    if [[ -f "$DIR/env" ]] && alive; then
        cat "$DIR/env"
        return
    fi
    build
    stop_process
    rm -f "$DIR/spans.jsonl" "$DIR/otelcol.log" "$DIR/env"
    PORT=$(python3 "$HERE/free_ports.py" 1)
    write_config
    # Its own session, so `stop` ends it with its whole process group.
    setsid "$BINARY" --config "$DIR/config.yaml" >>"$DIR/otelcol.log" 2>&1 </dev/null &
    echo $! >"$DIR/otelcol.pid"
    wait_ready "http://127.0.0.1:$PORT"
    write_env
    cat "$DIR/env"
}

stop_process() {
    [[ -f "$DIR/otelcol.pid" ]] || return 0
    local pid
    pid=$(cat "$DIR/otelcol.pid")
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 40); do
        kill -0 -- "-$pid" 2>/dev/null || break
        sleep 0.25
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    rm -f "$DIR/otelcol.pid"
}

stop() {
    need_dir VNFM_OTELCOL_DIR
    stop_process
    rm -rf "${DIR:?}"
}

case "${1:-}" in
    build) build ;;
    start) start ;;
    stop) stop ;;
    env)
        need_dir VNFM_OTELCOL_DIR
        cat "$DIR/env"
        ;;
    *)
        echo "usage: $0 build|start|stop|env" >&2
        exit 2
        ;;
esac
