#!/usr/bin/env bash
# Throwaway Prometheus + Alertmanager (Debian's packages) for the fault and performance
# management tests, on 127.0.0.1 only, as plain processes (not the packaged system services),
# with intervals short enough for tests (scrape and rule evaluation every second, alerts
# grouped and sent within a second or two).
#
#   eval "$(scripts/test-env/prometheus.sh start)"   # prints `export VNFM_TEST_...=...` lines
#   scripts/test-env/prometheus.sh env               # prints them again
#   scripts/test-env/prometheus.sh stop              # stops both, removes the directory
#
# Environment:
#   VNFM_PROM_DIR   working directory for configs, data, logs and pid files (required for
#                   start/stop; give a fresh `mktemp -d`; each directory is one independent
#                   pair of services on its own free ports)
#
# `start` prints the variables of services.tsv's service `prometheus`; VNFM_TEST_PROM_DIR,
# the working directory, is where tests change what is monitored:
#     targets/*.json    file_sd target files of the scrape job `vnfm-test` (Prometheus reads
#                       new and changed files by itself within a few seconds; no reload)
#     rules/*.yml       rule files; after writing one, POST $VNFM_TEST_PROMETHEUS_URL/-/reload
#     alertmanager.yml  one route to the receiver `vnfm` (every alert its own group,
#                       send_resolved); its webhook URL is on the only `url:` line:
#                       replace it, then POST $VNFM_TEST_ALERTMANAGER_URL/-/reload
#
# `start` is idempotent: when the services of VNFM_PROM_DIR are up, it only prints the
# variables. The packages `prometheus` and `prometheus-alertmanager` are installed with
# apt-get when missing (needs root). Logs are VNFM_PROM_DIR/{prometheus,alertmanager}.log;
# `start` prints the tail of the relevant one when something fails. Needs python3 and curl.
set -euo pipefail

DIR="${VNFM_PROM_DIR:-}"
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/test-env/common.sh
. "$HERE/common.sh"
PROMETHEUS=/usr/bin/prometheus
ALERTMANAGER=/usr/bin/prometheus-alertmanager
# Where the webhook URL points until a test sets it: a port nobody listens on.
UNSET_WEBHOOK=http://127.0.0.1:9/unset

write_configs() {
    mkdir -p "$DIR/targets" "$DIR/rules" "$DIR/prometheus-data" "$DIR/alertmanager-data"
    cat >"$DIR/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $DIR/rules/*.yml
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:$AM_PORT"]
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ["127.0.0.1:$PROM_PORT"]
  - job_name: vnfm-test
    file_sd_configs:
      - files: ["$DIR/targets/*.json"]
        refresh_interval: 1s
EOF
    cat >"$DIR/alertmanager.yml" <<EOF
route:
  receiver: vnfm
  # Every alert is a group of its own, notified a second after it arrives or changes.
  group_by: ["..."]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: vnfm
    webhook_configs:
      - send_resolved: true
        url: $UNSET_WEBHOOK
EOF
}

start() {
    need_dir VNFM_PROM_DIR
    running_env prometheus alertmanager && return
    need_program "$PROMETHEUS $ALERTMANAGER" --no-install-recommends prometheus prometheus-alertmanager
    stop_processes prometheus alertmanager
    rm -rf "${DIR:?}/prometheus-data" "${DIR:?}/alertmanager-data" "$DIR"/*.log "$DIR/env"
    read -r PROM_PORT AM_PORT <<<"$(python3 "$HERE/free_ports.py" 2 | tr '\n' ' ')"
    write_configs
    "$(dirname "$PROMETHEUS")/promtool" check config "$DIR/prometheus.yml" >"$DIR/promtool.log" 2>&1 ||
        { log_tail promtool.log; die "promtool rejects the Prometheus configuration"; }
    spawn alertmanager "$ALERTMANAGER" \
        --config.file="$DIR/alertmanager.yml" \
        --storage.path="$DIR/alertmanager-data" \
        --web.listen-address="127.0.0.1:$AM_PORT" \
        --web.external-url="http://127.0.0.1:$AM_PORT/" \
        --cluster.listen-address=
    spawn prometheus "$PROMETHEUS" \
        --config.file="$DIR/prometheus.yml" \
        --storage.tsdb.path="$DIR/prometheus-data" \
        --web.listen-address="127.0.0.1:$PROM_PORT" \
        --web.external-url="http://127.0.0.1:$PROM_PORT/" \
        --web.enable-lifecycle \
        --rules.alert.resend-delay=1s
    wait_for "Alertmanager ready at http://127.0.0.1:$AM_PORT" 30 alertmanager http_ok "http://127.0.0.1:$AM_PORT/-/ready"
    wait_for "Prometheus ready at http://127.0.0.1:$PROM_PORT" 30 prometheus http_ok "http://127.0.0.1:$PROM_PORT/-/ready"
    write_env prometheus \
        VNFM_TEST_PROMETHEUS_URL="http://127.0.0.1:$PROM_PORT" \
        VNFM_TEST_ALERTMANAGER_URL="http://127.0.0.1:$AM_PORT" \
        VNFM_TEST_PROM_DIR="$DIR"
    cat "$DIR/env"
}

stop() {
    need_dir VNFM_PROM_DIR
    stop_processes prometheus alertmanager
    rm -rf "${DIR:?}"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    env)
        need_dir VNFM_PROM_DIR
        cat "$DIR/env"
        ;;
    *)
        echo "usage: $0 start|stop|env" >&2
        exit 2
        ;;
esac
