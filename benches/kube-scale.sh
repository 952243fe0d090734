#!/usr/bin/env bash
# Many CNF instances on one real Kubernetes control plane: starts a control plane of its own
# (scripts/test-env/kubernetes.sh, KWOK nodes, in a fresh directory, stopped on exit), then runs
# the `scale` benchmark of vnfm-infra-kubernetes against it: N instances of a 2-replica
# Deployment instantiated 50 at a time, each instance observed once, all terminated 50 at a
# time; it checks every operation COMPLETED and no instantiate before its pods were Ready, and
# prints the API requests per operation (audit log), the watches the server holds
# (apiserver_longrunning_requests, apiserver_registered_watchers) and the driver's streams.
#
# Usage: benches/kube-scale.sh [N] [CONCURRENCY]     (defaults 1000 and 50)
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
cargo bench --locked --profile "$profile" -p vnfm-infra-kubernetes --bench scale
