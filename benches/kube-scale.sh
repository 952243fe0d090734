#!/usr/bin/env bash
# Many CNF instances on one real Kubernetes control plane: starts a control plane of its own
# (scripts/test-env/kubernetes.sh, KWOK nodes, in a fresh directory, stopped on exit), then runs
# the `scale` benchmark of vnfm-infra-kubernetes against it: N instances of a 2-replica
# Deployment instantiated 50 at a time, each instance observed once, all terminated 50 at a
# time; it checks every operation COMPLETED and no instantiate before its pods were Ready, and
# prints the API requests per operation (audit log), the watches the server holds
# (apiserver_longrunning_requests, apiserver_registered_watchers) and the driver's streams.
#
# The benchmark runs VNFM_BENCH_RUNS times on the same control plane (each run's instances its
# own); each run's output is kept in a directory the script names, and the median over the runs
# of every phase's time, requests per operation and per-operation median and p95 is printed.
#
# Usage: benches/kube-scale.sh [N] [CONCURRENCY]     (defaults 1000 and 50)
#   VNFM_BENCH_RUNS         how many runs (default 3)
#   VNFM_KUBE_READY_DELAY   the simulated pods' readiness delay (default 2s)
#   VNFM_KUBE_CACHE         where the control plane's binaries are kept (see kubernetes.sh)
#   VNFM_BENCH_PROFILE      cargo profile of the benchmark (default bench; `dev` reuses the test
#                           build's dependencies, and the control plane, not the driver, is
#                           what the run spends its CPU on)
set -euo pipefail
cd "$(dirname "$0")/.."
export VNFM_BENCH_INSTANCES=${1:-1000}
export VNFM_BENCH_CONCURRENCY=${2:-50}
profile=${VNFM_BENCH_PROFILE:-bench}

VNFM_KUBE_DIR=$(mktemp -d)
export VNFM_KUBE_DIR
trap 'scripts/test-env/kubernetes.sh stop || true' EXIT
eval "$(scripts/test-env/kubernetes.sh start)"
runs=${VNFM_BENCH_RUNS:-3}
out=$(mktemp -d /tmp/vnfm-kube-scale.XXXXXX)
cargo bench --locked --profile "$profile" -p vnfm-infra-kubernetes --bench scale --no-run
for run in $(seq "$runs"); do
    echo "== run $run of $runs"
    cargo bench --locked --profile "$profile" -p vnfm-infra-kubernetes --bench scale | tee "$out/run-$run.txt"
done

# The median of the numbers on stdin, one a line.
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "== medians of $runs runs ($VNFM_BENCH_INSTANCES instances, $VNFM_BENCH_CONCURRENCY at a time; runs in $out)"
for phase in instantiate observe terminate; do
    # `<phase>: <n> in <t> s; <total> requests, <r> per operation (...)`
    took=$(grep -h "^$phase: [0-9]* in " "$out"/run-*.txt | awk '{print $4}' | median)
    per=$(grep -h "^$phase: [0-9]* in " "$out"/run-*.txt | sed 's/.*requests, \([0-9.]*\) per operation.*/\1/' | median)
    line="$phase: $took s, $per requests per operation"
    if [ "$phase" != observe ]; then
        # `<phase>: median <m> s, p95 <p> s per operation`
        med=$(grep -h "^$phase: median " "$out"/run-*.txt | awk '{print $3}' | median)
        p95=$(grep -h "^$phase: median " "$out"/run-*.txt | awk '{print $6}' | median)
        line="$line; per operation median $med s, p95 $p95 s"
    fi
    echo "$line"
done
