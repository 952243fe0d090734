#!/usr/bin/env bash
# The project's test command: lints, then every test of the workspace.
# Run from anywhere; CI (.ci/run) calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

# Property tests: bounded so a run stays within minutes on 2 cores; raise locally with
# PROPTEST_CASES=10000 for a longer fuzzing session.
export PROPTEST_CASES="${PROPTEST_CASES:-256}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# A single cold build gains nothing from incremental state, which would roughly double the
# workspace crates' share of target/ (disk is the scarce resource on CI machines).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# A cold run needs about 8 GB of disk (measured on 2026-11-29: target/ 5.0 GB, the test
# services' cache 2.3 GB (virtualenvs, Keycloak, the Kubernetes control plane's binaries), crates
# 0.4 GB; the control plane's build needs 5.5 GB for a while before anything else is built).
# With less, a link can fail with "ld terminated with signal 7 [Bus error]" rather than a
# clear message, so say so first.
free_kib=$(df -k --output=avail . | tail -1 | tr -d ' ')
echo "disk free: $((free_kib / 1048576)) GB"
if ((free_kib < 8 * 1048576)); then
    echo "warning: less than 8 GB of disk free; a cold run may run out (a link then fails with a bus error)" >&2
fi

echo "== Kubernetes control plane (built once per version)"
# kube-apiserver, kube-controller-manager and kube-scheduler from the Go module
# k8s.io/kubernetes, and KWOK, cached outside the checkout; a cold build prints its time. First,
# while target/ is empty: the build needs about 5.5 GB of Go caches for a while, deleted after.
scripts/test-env/kubernetes.sh build
# The OpenTelemetry Collector the trace tests export to (the collector's command with the OTLP
# receiver and the file exporter, from its Go modules), cached likewise: a cold build takes
# about 130 s of CPU and 0.85 GB of Go caches for a while, deleted after (docs/rest-api.md#traces).
scripts/test-env/otel-collector.sh build

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== layer rules (docs/architecture.md)"
scripts/check-layers.py

echo "== the Tacker suites' part splitting"
python3 scripts/tacker_functional_test.py

echo "== test services"
# Every service is started, and its variables exported, before `cargo test`: the tests that
# need one are built ignored when its variables are not set at build time (vnfm-test-env,
# `#[needs(...)]`; with `CI` set they are built to run, and fail without their service).
# Real PostgreSQL for the store's second backend (the SQLite backend needs nothing). Each run
# gets its own data directory and a free port, so concurrent runs never share or stop each
# other's server.
# Each service started is recorded, and every one of them is stopped on exit, whatever fails.
STARTED=()
stop_services() {
    local s
    [[ -z "${TACKER_FT_PID:-}" ]] || { kill "$TACKER_FT_PID" 2>/dev/null; wait "$TACKER_FT_PID" 2>/dev/null; } || true
    [[ -z "${TACKER_PREP_PID:-}" ]] || { kill "$TACKER_PREP_PID" 2>/dev/null; wait "$TACKER_PREP_PID" 2>/dev/null; } || true
    [[ -z "${TACKER_VM_PID:-}" ]] || { kill "$TACKER_VM_PID" 2>/dev/null; wait "$TACKER_VM_PID" 2>/dev/null; } || true
    # Any cloud of Tacker's VM suite started ahead (--prepare --vm-clouds; its run stops them too).
    for s in "${TACKER_FT_WORK:-/nonexistent}"/cloud*/; do
        [[ -d "$s" ]] && VNFM_OS_DIR="$s" scripts/test-env/openstack.sh stop >/dev/null 2>&1 || true
    done
    for s in "${STARTED[@]}"; do
        scripts/test-env/"$s".sh stop >/dev/null 2>&1 || true
    done
}
trap stop_services EXIT
VNFM_PG_DIR=$(mktemp -d /tmp/vnfm-test-pg.XXXXXX)
VNFM_PG_PORT=$(scripts/test-env/free_ports.py 1)
export VNFM_PG_DIR VNFM_PG_PORT VNFM_TEST_POSTGRES_URL
STARTED+=(postgres)
VNFM_TEST_POSTGRES_URL=$(scripts/test-env/postgres.sh start)
echo "PostgreSQL: $VNFM_TEST_POSTGRES_URL"
# The Helm SDK C library (PyPI helm-python-sdk) for the Kubernetes driver's Helm tests; the
# virtual environment is cached between runs.
VNFM_HELM_C_LIB=$(scripts/test-env/helm.sh)
export VNFM_HELM_C_LIB
echo "Helm SDK library: $VNFM_HELM_C_LIB"
# A real OpenStack cloud (Keystone, Heat, Nova with the fake virt driver, Placement, Neutron,
# Glance, Cinder on a backend that stores no data; PyPI, a cached virtualenv; RabbitMQ and MariaDB from Debian) for the OpenStack
# driver: its own directory, free ports and PostgreSQL; prints the VNFM_TEST_KEYSTONE_URL,
# VNFM_TEST_OS_* variables the tests read (and the services' versions, on stderr).
VNFM_OS_DIR=$(mktemp -d /tmp/vnfm-test-os.XXXXXX)
export VNFM_OS_DIR
# A second attempt (from scratch, on other ports) when a component fails to start: a port
# can still be taken by another program between being chosen and being bound.
STARTED+=(openstack)
VNFM_OS_ENV=$(scripts/test-env/openstack.sh start) ||
    VNFM_OS_ENV=$(scripts/test-env/openstack.sh start)
eval "$VNFM_OS_ENV"
echo "Keystone: $VNFM_TEST_KEYSTONE_URL, Heat: $VNFM_TEST_HEAT_URL, Nova: $VNFM_TEST_NOVA_URL, Neutron: $VNFM_TEST_NEUTRON_URL, Glance: $VNFM_TEST_GLANCE_URL, Cinder: $VNFM_TEST_CINDER_URL"
# OpenStack Tacker's source distribution: sample files some cargo tests read, and Tacker's
# Kubernetes functional suite (below). Its slow preparation, Tacker's virtualenv (about 10
# minutes cold), goes on in the background from here (once this cloud's start has installed
# Python's development files), beside the other services and the build.
echo "== OpenStack Tacker's source distribution; its functional suite's preparation started"
eval "$(scripts/tacker-functional.sh --source)"
TACKER_FT_WORK=$(mktemp -d /var/tmp/vnfm-tacker-ft.XXXXXX)
scripts/tacker-functional.sh --prepare --work "$TACKER_FT_WORK" >"$TACKER_FT_WORK/prepare.log" 2>&1 &
TACKER_PREP_PID=$!
# OpenSSH servers standing in for the VMs a management driver configures: one sshd per
# loopback address, in a private state directory, stopped (with PostgreSQL) on exit.
VNFM_SSHD_DIR=$(mktemp -d /tmp/vnfm-test-sshd.XXXXXX)
export VNFM_SSHD_DIR VNFM_TEST_SSHD
STARTED+=(sshd)
VNFM_TEST_SSHD=$(scripts/test-env/sshd.sh start 4)
echo "SSH test hosts: $VNFM_TEST_SSHD"
# Prometheus and Alertmanager (Debian packages) for fault and performance management: their
# own directory and free ports; prints VNFM_TEST_PROMETHEUS_URL, VNFM_TEST_ALERTMANAGER_URL and
# VNFM_TEST_PROM_DIR.
VNFM_PROM_DIR=$(mktemp -d /tmp/vnfm-test-prom.XXXXXX)
export VNFM_PROM_DIR
STARTED+=(prometheus)
VNFM_PROM_ENV=$(scripts/test-env/prometheus.sh start) ||
    VNFM_PROM_ENV=$(scripts/test-env/prometheus.sh start)
eval "$VNFM_PROM_ENV"
echo "Prometheus: $VNFM_TEST_PROMETHEUS_URL, Alertmanager: $VNFM_TEST_ALERTMANAGER_URL"
# A real Kubernetes control plane for the Kubernetes driver (built at the start, see above),
# etcd from Debian, nodes and pods simulated by KWOK; prints KUBECONFIG and the
# VNFM_TEST_KUBE_* variables. The tests that need it are built ignored when these are not set
# (#[vnfm_test_env::needs(kubeconfig | kwok | kubernetes)]), so it is started before `cargo test`.
VNFM_KUBE_DIR=$(mktemp -d /tmp/vnfm-test-kube.XXXXXX)
export VNFM_KUBE_DIR
STARTED+=(kubernetes)
VNFM_KUBE_ENV=$(scripts/test-env/kubernetes.sh start) ||
    VNFM_KUBE_ENV=$(scripts/test-env/kubernetes.sh start)
eval "$VNFM_KUBE_ENV"
echo "Kubernetes: $VNFM_TEST_KUBE_VERSION at $VNFM_TEST_KUBE_SERVER (KUBECONFIG=$KUBECONFIG)"
# The OpenTelemetry Collector (built at the start, see above): its own directory and a free
# port; prints VNFM_TEST_OTLP_URL and VNFM_TEST_OTLP_SPANS_FILE (#[needs(otel_collector)]).
VNFM_OTELCOL_DIR=$(mktemp -d /tmp/vnfm-test-otelcol.XXXXXX)
export VNFM_OTELCOL_DIR
STARTED+=(otel-collector)
VNFM_OTELCOL_ENV=$(scripts/test-env/otel-collector.sh start) ||
    VNFM_OTELCOL_ENV=$(scripts/test-env/otel-collector.sh start)
eval "$VNFM_OTELCOL_ENV"
echo "OpenTelemetry Collector: $VNFM_TEST_OTLP_URL (spans in $VNFM_TEST_OTLP_SPANS_FILE)"
# Keycloak, an external OAuth 2.0 authorization server (its distribution from Maven Central,
# cached outside the checkout; development mode on 127.0.0.1, H2 in its own directory, a
# realm with the tests' clients, roles, mappers and keys): about 25 s to start, 0.5 GiB of
# memory; prints the VNFM_TEST_KEYCLOAK_* variables (#[needs(keycloak)]).
VNFM_KEYCLOAK_DIR=$(mktemp -d /tmp/vnfm-test-keycloak.XXXXXX)
export VNFM_KEYCLOAK_DIR
STARTED+=(keycloak)
VNFM_KEYCLOAK_ENV=$(scripts/test-env/keycloak.sh start) ||
    VNFM_KEYCLOAK_ENV=$(scripts/test-env/keycloak.sh start)
eval "$VNFM_KEYCLOAK_ENV"
echo "Keycloak: $VNFM_TEST_KEYCLOAK_ISSUER"

echo "== OpenStack Tacker's Kubernetes functional suite (beside the lints and the cargo tests)"
# Tacker 16.0.0's own sol_kubernetes_v2 tests (24), unchanged, against `vnfm serve`
# (scripts/tacker-functional.sh): in network and mount namespaces of their own, with their
# own server and control plane, on this run's Keystone, Prometheus and Helm library; one
# part, in the order of the recorded outcomes (a failed Tacker test leaves its resources to
# the tests after it). They mostly wait on the services, so they start before the lints and
# run beside everything after; their outcome is checked at the end. Of Tacker's VM suite
# (sol_v2/vnflcm, 31 tests) a part runs after the cargo tests (below); the whole suite is about
# 75 minutes of Heat operations on one cloud, and three clouds beside the cargo tests overload
# 2 cores (Keystone stops answering in time): `scripts/tacker-functional.sh --suite vm
# --vm-clouds 3` runs it (docs/conformance.md). The server is built here, as the cargo tests'
# build below would build it.
cargo build --quiet --locked -p vnfm-cli
wait "$TACKER_PREP_PID" || { cat "$TACKER_FT_WORK/prepare.log" >&2; echo "preparing Tacker's functional suites failed" >&2; exit 1; }
TACKER_PREP_PID=""
# Bounded (its parts are stopped, and the run fails) should a service hang; the bound is
# above what the rest of the run takes, so it never lengthens a run that does not hang.
VNFM_BIN="$PWD/target/debug/vnfm" timeout 3600 scripts/tacker-functional.sh --suite k8s --shards 1 \
    --work "$TACKER_FT_WORK" >"$TACKER_FT_WORK/run.log" 2>&1 &
TACKER_FT_PID=$!
echo "Tacker's functional suites started (log: $TACKER_FT_WORK/run.log)"

echo "== cargo clippy (deny warnings)"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo doc (deny warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet

echo "== cargo test"
# Free disk before and after the largest build step: a link that runs out of it fails with a
# bus error rather than a clear message.
echo "disk free: $(df -h --output=avail . | tail -1 | tr -d ' ')"
# The OpenStack driver's program is the longest (about 18 minutes) and spends most of it
# waiting for the test cloud to build servers and stacks, so it runs beside the other programs
# rather than after them; every program of `cargo test --workspace --no-fail-fast` runs, from
# one build, and the run fails when any of them fails (scripts/test-programs.py).
scripts/test-programs.py --locked --beside vnfm-infra-openstack:integration
echo "disk free: $(df -h --output=avail . | tail -1 | tr -d ' '), target/: $(du -sh target | cut -f1)"

echo "== OpenStack Tacker's VM functional tests, a part (beside the conformance suites)"
# On this run's test cloud once the cargo tests are done with it (the suite's classes make
# cloud-wide resources under fixed names, and Heat operations beside the cargo tests overload
# 2 cores): the classes of both user data styles that fit in about 25 minutes, a package's
# life (basic_min), package changes and their failures, error handling (retry, rollback and
# fail) in both styles, the modification of an instance's information with the heals and
# scales after it (update) and StandardUserData's package changes. The other VM tests run with
# `scripts/tacker-functional.sh --suite vm --vm-clouds 3`.
TACKER_VM_PART='df_userdata\.(basic_min|change_vnfpkg|err_handling|update)\.|st_userdata\.(change_vnfpkg|err_handling)\.'
VNFM_BIN="$PWD/target/debug/vnfm" timeout 2400 scripts/tacker-functional.sh --suite vm \
    --filter "$TACKER_VM_PART" --work "$TACKER_FT_WORK/vm" >"$TACKER_FT_WORK/vm.log" 2>&1 &
TACKER_VM_PID=$!

echo "== ETSI SOL002 and SOL003 conformance suites"
# Robot Framework suites against `vnfm serve`; fails when any test's outcome differs from
# tests/conformance/expected.tsv (see docs/conformance.md).
tests/conformance/run.sh

echo "== OpenStack Tacker's functional suites"
# Fails when any test's outcome differs from tests/tacker-functional/expected.tsv (see
# docs/conformance.md).
tacker_rc=0
wait "$TACKER_FT_PID" || tacker_rc=$?
TACKER_FT_PID=""
grep -v "socat\[" "$TACKER_FT_WORK/run.log" | tail -n 60
wait "$TACKER_VM_PID" || tacker_rc=$?
TACKER_VM_PID=""
grep -v "socat\[" "$TACKER_FT_WORK/vm.log" | tail -n 40
exit "$tacker_rc"
