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
# `start` prints the variables of services.tsv's service `otel-collector`; in the spans file,
# traceId, spanId and parentSpanId are hex, and it only grows while the collector runs.
#
# `start` is idempotent: when the collector of VNFM_OTELCOL_DIR is up, it only prints the
# variables. The collector's version is pinned by otel-collector/go.mod; the binary is built
# once per version with the machine's Go (>= 1.26) through the Go module proxy, and the Go build
# and module caches of the build are deleted afterwards (docs/testing.md gives the figures).
# Needs Go and the Go module proxy for `build`, python3 and curl.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/test-env/common.sh
. "$HERE/common.sh"
MODDIR="$HERE/otel-collector"
DIR="${VNFM_OTELCOL_DIR:-}"
VERSION=$(awk '$1 == "go.opentelemetry.io/collector/otelcol" { print $2; exit }' "$MODDIR/go.mod")
CACHE="${VNFM_OTELCOL_CACHE:-$VNFM_CACHE/otel-collector}"
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
    go_work "$CACHE" "the OpenTelemetry Collector $VERSION"
    echo "otel-collector.sh: building the OpenTelemetry Collector $VERSION into $BINARY (2 to 5 minutes on 2 cores)" >&2
    work_run build.log "building the OpenTelemetry Collector $VERSION failed (Go through the module proxy)" \
        "${GO_ENV[@]}" GOTOOLCHAIN=local go -C "$MODDIR" build -trimpath -ldflags "-s -w" -o "$WORK/vnfm-otelcol" .
    mv "$WORK/vnfm-otelcol" "$BINARY"
    work_done
    echo "otel-collector.sh: built the OpenTelemetry Collector $VERSION in $WORK_SECONDS s; binary $(du -sh "$BINARY" | cut -f1), Go caches deleted ($WORK_CACHES)" >&2
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

start() {
    need_dir VNFM_OTELCOL_DIR
    running_env otelcol && return
    build
    stop_processes otelcol
    rm -f "$DIR/spans.jsonl" "$DIR/otelcol.log" "$DIR/env"
    PORT=$(python3 "$HERE/free_ports.py" 1)
    write_config
    spawn otelcol "$BINARY" --config "$DIR/config.yaml"
    # Ready when the OTLP/HTTP receiver accepts an (empty) export.
    wait_for "the collector accepting OTLP/HTTP at http://127.0.0.1:$PORT" 30 otelcol \
        http_ok "http://127.0.0.1:$PORT/v1/traces" -H 'Content-Type: application/json' --data-binary '{}'
    write_env otel-collector \
        VNFM_TEST_OTLP_URL="http://127.0.0.1:$PORT" \
        VNFM_TEST_OTLP_SPANS_FILE="$DIR/spans.jsonl" \
        VNFM_TEST_OTLP_DIR="$DIR"
    cat "$DIR/env"
}

stop() {
    need_dir VNFM_OTELCOL_DIR
    stop_processes otelcol
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
