#!/usr/bin/env bash
# Resident memory of an idle `vnfm serve` on the embedded defaults (SQLite, no external
# service), as README.md starts it: the release build, a fresh data directory, the
# background tasks running (recovery, notification delivery, infrastructure watch).
#
# Usage: benches/server-rss.sh [SECONDS]
#   SECONDS   how long to watch the idle server (default 60); VmRSS is printed at start-up
#             and every tenth of that, then VmHWM (the peak).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
cargo build --release --quiet -p vnfm-cli --bin vnfm

data=$(mktemp -d)
out=$(mktemp)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$data" "$out"' EXIT
target/release/vnfm serve --listen 127.0.0.1:0 --data-dir "$data" --log-level warn >"$out" 2>&1 &
pid=$!
for _ in $(seq 100); do
  grep -q "vnfm listening on" "$out" && break
  sleep 0.1
done
grep -q "vnfm listening on" "$out" || { cat "$out"; echo "vnfm serve did not start" >&2; exit 1; }

status() { awk -v k="$1:" '$1 == k { printf "%.1f MiB", $2 / 1024 }' "/proc/$pid/status"; }
echo "started: VmRSS $(status VmRSS)"
step=$(( seconds / 10 > 0 ? seconds / 10 : 1 ))
for t in $(seq "$step" "$step" "$seconds"); do
  sleep "$step"
  echo "after ${t} s: VmRSS $(status VmRSS)"
done
echo "peak: VmHWM $(status VmHWM)"
