#!/usr/bin/env bash
# Runs OpenStack Tacker's own v2 functional test suites, unchanged, against `vnfm serve`:
# `tacker/tests/functional/sol_kubernetes_v2` (on a real Kubernetes control plane with one
# KWOK node, Helm, Prometheus) and `sol_v2/vnflcm` (on the real OpenStack test cloud), from
# Tacker's source distribution on the package index, with `stestr` as Tacker's
# `tox -e ft-v2-k8s` runs them. Compares every test's outcome with
# tests/tacker-functional/expected.tsv and exits non-zero when one differs.
#
#   scripts/tacker-functional.sh [--suite k8s|vm]... [--shards N] [--work DIR]
#                                [--filter REGEX] [--update-expected] [--table FILE]
#   scripts/tacker-functional.sh --source    # fetch the source distribution, print its path
#
# Needs the test services of scripts/test-env started and their variables exported (what
# scripts/test.sh does): openstack.sh (Keystone, the `openstack` client; the VM suite uses the
# whole cloud), prometheus.sh, helm.sh (VNFM_HELM_C_LIB). Each suite runs in network and mount
# namespaces of its own, so the suites run side by side (Tacker's tests listen on the fixed
# port 9990 and switch failures with fixed files under /tmp), each split into --shards
# (default 2) parts that also run side by side, whole test classes each (the tests mostly
# wait on the services): every part gets its own `vnfm serve` (the debug build of this checkout, or VNFM_BIN) on 127.0.0.1:9890, its own Kubernetes
# control plane (kubernetes.sh, one simulated node as in Tacker's CI), a private /tmp, and
# forwarders to the host's test services on the same loopback ports (socat through Unix
# sockets), so the URLs in Keystone's catalog hold inside too.
#
# Environment: VNFM_TACKER_CACHE (default ~/.cache/vnfm/tacker-16.0.0: the source
# distribution, unpacked, and the virtualenv with its requirements and test requirements),
# PYTHON (default python3.11, else python3).
#
# What is shimmed, and why (nothing of Tacker's test code or assertions is changed):
# - /etc/tacker/tacker.conf: the tests' base class reads this fixed path; an empty file is
#   mounted there (the v2 suites read no option from it).
# - samples/tests/etc/samples/local-vim.yaml, local-k8s-vim.yaml, local-k8s-vim-helm.yaml:
#   rewritten as Tacker's CI rewrites them (Keystone URL, API server, bearer token, CA).
# - tools/test-setup-default-vim.sh and test-setup-k8s-vim.sh (Tacker's own VIM registration)
#   are run with their sample directory and Keystone URL rewritten, as Tacker's CI's Ansible
#   role (roles/setup-default-vim) does.
# - Keystone holds what devstack creates for Tacker: project `nfv`, user `nfv_user` /
#   `devstack` with role `admin`, and the `nfv-orchestration` service whose endpoint is
#   `vnfm serve` (the tests find the server through the catalog); the VM suite's networks
#   and image as Tacker's devstack plugin creates them (prepare_cloud below).
# - Management scripts run with the virtualenv's Python, where `tacker` is importable, as
#   Tacker's conductor runs them (one test's script imports `tacker.*`).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TACKER_VERSION=16.0.0
CACHE="${VNFM_TACKER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vnfm/tacker-$TACKER_VERSION}"
SRC="$CACHE/tacker-$TACKER_VERSION"
VENV="$CACHE/venv"
EXPECTED="$ROOT/tests/tacker-functional/expected.tsv"
SERVER_PORT=9890
declare -A PATHS=([k8s]=tacker/tests/functional/sol_kubernetes_v2 [vm]=tacker/tests/functional/sol_v2/vnflcm)

die() { echo "tacker-functional: $*" >&2; exit 1; }
need() { [[ -n "${!1:-}" ]] || die "$1 is not set: start the test services first (scripts/test.sh does)"; }

openstack_admin() {
    "$VENV/bin/openstack" --os-auth-url "$VNFM_TEST_KEYSTONE_URL" --os-identity-api-version 3 \
        --os-username "${VNFM_TEST_OS_ADMIN_USERNAME:-admin}" --os-password "$VNFM_TEST_OS_ADMIN_PASSWORD" \
        --os-project-name "${VNFM_TEST_OS_ADMIN_PROJECT:-admin}" --os-user-domain-name Default \
        --os-project-domain-name Default "$@"
}

# openstack_nfv ARGS: the `openstack` client as Tacker's tests' user, in project nfv.
openstack_nfv() {
    "$VENV/bin/openstack" --os-auth-url "$VNFM_TEST_KEYSTONE_URL" --os-identity-api-version 3 \
        --os-username nfv_user --os-password devstack --os-project-name nfv \
        --os-user-domain-name Default --os-project-domain-name Default "$@"
}

# kill_tree PID: stops PID and every process under it (the tests' runner starts its own).
kill_tree() {
    local child
    for child in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$child"; done
    kill "$1" 2>/dev/null || true
}

# ---- inside a suite's namespaces -------------------------------------------------------------
# run_suite SUITE WORK LOAD_LIST: the tests of LOAD_LIST (test ids of SUITE), in network and
# mount namespaces of their own.
run_suite() {
    local suite=$1 work=$2 load_list=$3
    local path=${PATHS[$suite]} tree="$work/tacker"
    # Globals: the exit trap runs after this function has returned.
    SUITE_KUBE_DIR="$work/kube"
    SUITE_PIDS=()
    cleanup_suite() {
        local pid
        for pid in "${SUITE_PIDS[@]}"; do kill_tree "$pid"; done
        VNFM_KUBE_DIR="$SUITE_KUBE_DIR" "$ROOT/scripts/test-env/kubernetes.sh" stop >/dev/null 2>&1 || true
    }
    trap cleanup_suite EXIT
    ip link set lo up
    # The host's test services, on the same ports (their Unix sockets are made by the host side).
    local sock port
    for sock in "$work/../forward"/*.sock; do
        port=$(basename "$sock" .sock)
        socat "TCP-LISTEN:$port,bind=127.0.0.1,fork,reuseaddr" "UNIX-CONNECT:$sock" </dev/null >/dev/null 2>&1 &
        SUITE_PIDS+=($!)
    done
    mkdir -p "$work/tmp" "$work/etc-tacker"
    chmod 1777 "$work/tmp"
    mount --bind "$work/tmp" /tmp
    : >"$work/etc-tacker/tacker.conf"
    mount --bind "$work/etc-tacker" /etc/tacker

    # A copy of the source tree: the VIM files are rewritten in it, stestr keeps its repository there.
    mkdir -p "$tree"
    cp -a "$SRC/." "$tree"

    echo "== tacker-functional [$suite]: a Kubernetes control plane with one node, as in Tacker's CI"
    mkdir -p "$SUITE_KUBE_DIR"
    local kube_env kube_server kube_token kube_ca
    kube_env=$(VNFM_KUBE_DIR="$SUITE_KUBE_DIR" VNFM_KUBE_NODES=1 "$ROOT/scripts/test-env/kubernetes.sh" start)
    kube_server=$(sed -n 's/^export VNFM_TEST_KUBE_SERVER=//p' <<<"$kube_env")
    kube_token=$(cat "$(sed -n 's/^export VNFM_TEST_KUBE_TOKEN_FILE=//p' <<<"$kube_env")")
    kube_ca=$(sed -n 's/^export VNFM_TEST_KUBE_CA_FILE=//p' <<<"$kube_env")

    # The VIM files, as Tacker's CI writes them (roles/setup-default-vim and the k8s roles).
    local samples="$tree/samples/tests/etc/samples" ks_base=${VNFM_TEST_KEYSTONE_URL%/v3}
    python3 - "$samples" "$ks_base" "$kube_server" "$kube_token" "$kube_ca" <<'EOF'
import sys
samples, keystone, server, token, ca_file = sys.argv[1:]
ca = open(ca_file).read().strip()
def rewrite(name, values):
    path = f"{samples}/{name}"
    kept = [l for l in open(path).read().splitlines() if l.split(":", 1)[0] not in values]
    open(path, "w").write("\n".join([f"{k}: {v}" for k, v in values.items()] + kept) + "\n")
rewrite("local-vim.yaml", {"auth_url": keystone})
for name in ("local-k8s-vim.yaml", "local-k8s-vim-helm.yaml"):
    rewrite(name, {"auth_url": f'"{server}"', "bearer_token": f'"{token}"',
                   "ssl_ca_cert": '"' + ca.replace("\n", "\\n") + '"'})
EOF

    echo "== tacker-functional [$suite]: vnfm serve on 127.0.0.1:$SERVER_PORT"
    "$VNFM" serve --data-dir "$work/vnfm-data" --listen "127.0.0.1:$SERVER_PORT" \
        --keystone-url "$VNFM_TEST_KEYSTONE_URL" --keystone-user vnfm-tacker-ft \
        --keystone-password-file "$work/../keystone-password" --keystone-project nfv \
        --helm-library "$VNFM_HELM_C_LIB" --prometheus-url "$VNFM_TEST_PROMETHEUS_URL" \
        --python "$VENV/bin/python" </dev/null >"$work/vnfm.log" 2>&1 &
    local server_pid=$!
    SUITE_PIDS+=("$server_pid")
    local _
    for _ in $(seq 150); do
        curl -sf "http://127.0.0.1:$SERVER_PORT/healthz" >/dev/null && break
        kill -0 "$server_pid" 2>/dev/null || { tail -20 "$work/vnfm.log"; die "vnfm serve exited while starting"; }
        sleep 0.2
    done

    echo "== tacker-functional [$suite]: the VIMs, registered by Tacker's tools/test-setup-default-vim.sh and test-setup-k8s-vim.sh"
    # Rewritten as Tacker's CI's Ansible role (roles/setup-default-vim) rewrites them: the
    # Keystone URL and the sample directory.
    local tool
    for tool in test-setup-default-vim.sh test-setup-k8s-vim.sh; do
        sed -e "s|/opt/stack/tacker/|$tree/|g" -e "s|http://127.0.0.1/identity|$ks_base|g" \
            "$tree/tacker/tests/functional/tools/$tool" >"$work/$tool"
        PATH="$VENV/bin:$PATH" bash "$work/$tool" >>"$work/vim-register.log" 2>&1 || {
            cat "$work/vim-register.log"
            die "$tool failed"
        }
    done

    echo "== tacker-functional [$suite]: $(grep -c . "$load_list") tests of $path"
    local started=$SECONDS
    # In the background, waited for: a signal then ends this part at once (bash runs a trap
    # only when a foreground command returns), and the exit trap stops the tests' processes.
    (
        cd "$tree"
        "$VENV/bin/stestr" --test-path="./$path" run --concurrency 1 --load-list "$load_list" \
            >"$work/stestr.out" 2>&1 || true
        "$VENV/bin/stestr" last --subunit | "$VENV/bin/subunit2csv" >"$work/results.csv" || true
    ) &
    SUITE_PIDS+=($!)
    wait "$!"
    echo "== tacker-functional [$suite]: done in $((SECONDS - started)) s ($(grep -c . "$work/results.csv" || true) rows; output in $work/stestr.out)"
}

# A signal ends the script through its exit trap, which stops what it started.
trap 'exit 143' TERM INT

if [[ "${1:-}" == --inside ]]; then
    VNFM=$5
    run_suite "$2" "$3" "$4"
    exit 0
fi

# ---- on the host ------------------------------------------------------------------------------
suites=()
shards=2
work=""
filter=""
update=0
table=""
source_only=0
while (($#)); do
    case $1 in
    --suite) suites+=("$2"); shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --update-expected) update=1; shift ;;
    --table) table=$2; shift 2 ;;
    --source) source_only=1; shift ;;
    *) echo "usage: $0 [--suite k8s|vm]... [--shards N] [--work DIR] [--filter REGEX] [--update-expected] [--table FILE] | --source" >&2; exit 2 ;;
    esac
done
((${#suites[@]})) || suites=(k8s vm)
for suite in "${suites[@]}"; do [[ -n "${PATHS[$suite]:-}" ]] || die "unknown suite $suite (k8s, vm)"; done

# fetch_source: Tacker's source distribution, unpacked in the cache (its tests, samples and
# sample configuration are not in the wheel).
fetch_source() {
    if [[ ! -f "$SRC/tox.ini" ]]; then
        mkdir -p "$CACHE"
        echo "== tacker-functional: fetching Tacker $TACKER_VERSION's source distribution" >&2
        "${python:-python3}" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
            "tacker==$TACKER_VERSION" -d "$CACHE" >&2
        tar -xzf "$CACHE/tacker-$TACKER_VERSION.tar.gz" -C "$CACHE"
    fi
}

ensure_tacker() {
    local python=${PYTHON:-}
    [[ -n "$python" ]] || python=$(command -v python3.11 || command -v python3)
    fetch_source
    if [[ ! -x "$VENV/bin/stestr" ]]; then
        echo "== tacker-functional: installing Tacker $TACKER_VERSION and its test requirements into $VENV"
        rm -rf "$VENV"
        "$python" -m venv "$VENV"
        # Tacker's test-requirements.txt, less its linters and coverage.
        "$VENV/bin/pip" install --quiet --disable-pip-version-check "$CACHE/tacker-$TACKER_VERSION.tar.gz" \
            ddt fixtures python-subunit python-tackerclient python-cinderclient oslotest stestr tempest \
            testtools WebTest python-barbicanclient requests-mock PyMySQL freezegun PyJWT \
            python-openstackclient
    fi
    command -v socat >/dev/null || apt-get install -y -qq socat >&2 || die "socat is missing and could not be installed"
}

# What Tacker's devstack plugin creates for the VM suite (devstack/lib/tacker,
# devstack/settings): the networks net_mgmt, net0 and net1 with their subnets in the `nfv`
# project, and the public image cirros-0.5.2-x86_64-disk (a few bytes here: the test cloud's
# Nova runs the fake virt driver, which boots anything).
prepare_cloud() {
    local net sub range
    openstack_admin image show cirros-0.5.2-x86_64-disk >/dev/null 2>&1 ||
        openstack_admin image create --public --disk-format raw --container-format bare \
            --file "$ROOT/scripts/tacker-functional.sh" cirros-0.5.2-x86_64-disk >/dev/null
    for net in "net_mgmt subnet_mgmt 192.168.120.0/24" "net0 subnet0 10.10.0.0/24" "net1 subnet1 10.10.1.0/24"; do
        read -r net sub range <<<"$net"
        openstack_admin network show "$net" >/dev/null 2>&1 ||
            openstack_admin network create --project nfv "$net" >/dev/null
        openstack_admin subnet show "$sub" >/dev/null 2>&1 ||
            openstack_admin subnet create --project nfv --network "$net" --subnet-range "$range" \
                --ip-version 4 "$sub" >/dev/null
    done
}

# What a stopped earlier run left in project nfv: Tacker's tests remove their stacks, their
# ft-net networks and their named ports (VDU2_CP1-1, ...) in clean-ups that a stopped run
# skips, and the next tests, which create them anew and find them by name, would meet them
# (a fresh cloud, as in CI, has none).
remove_leftovers() {
    local project ids
    project=$(openstack_admin project show nfv -f value -c id)
    ids=$(openstack_nfv stack list -f value -c ID -c Project | awk -v p="$project" '$2 == p {print $1}')
    if [[ -n "$ids" ]]; then
        echo "== tacker-functional: removing the stacks an earlier run left in project nfv"
        # shellcheck disable=SC2086
        openstack_nfv stack delete -y --wait $ids >/dev/null 2>&1 || true
    fi
    ids=$(openstack_admin port list --project "$project" -f value -c ID -c Name | awk '$2 ~ /^VDU[0-9]+_CP[0-9-]+$/ {print $1}')
    # shellcheck disable=SC2086
    [[ -z "$ids" ]] || openstack_admin port delete $ids >/dev/null 2>&1 || true
    ids=$(openstack_admin network list --project "$project" -f value -c ID -c Name | awk '$2 ~ /^ft-net/ {print $1}')
    # shellcheck disable=SC2086
    [[ -z "$ids" ]] || openstack_admin network delete $ids >/dev/null 2>&1 || true
}

# --source: only fetch the source distribution and print where it is, for the cargo tests
# that read Tacker's sample files (crates/vnfm-test-env: the `tacker_source` service).
if ((source_only)); then
    fetch_source
    echo "export VNFM_TEST_TACKER_SOURCE=$SRC"
    exit 0
fi

ensure_tacker
need VNFM_TEST_KEYSTONE_URL
need VNFM_TEST_OS_ADMIN_PASSWORD
need VNFM_HELM_C_LIB
need VNFM_TEST_PROMETHEUS_URL

[[ -n "$work" ]] || work=$(mktemp -d /var/tmp/vnfm-tacker-ft.XXXXXX)
mkdir -p "$work"
work=$(cd "$work" && pwd)
[[ "$work" != /tmp/* ]] || die "--work must not be under /tmp (each suite mounts a /tmp of its own)"
FORWARDERS=()
SUITES_RUNNING=()
cleanup() {
    local pid
    for pid in "${SUITES_RUNNING[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${SUITES_RUNNING[@]}"; do wait "$pid" 2>/dev/null || true; done
    for pid in "${FORWARDERS[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

echo "== tacker-functional: Keystone as devstack prepares it for Tacker"
openstack_admin project show nfv >/dev/null 2>&1 || openstack_admin project create nfv >/dev/null
openstack_admin user show nfv_user >/dev/null 2>&1 ||
    openstack_admin user create --project nfv --password devstack nfv_user >/dev/null
openstack_admin role add --project nfv --user nfv_user admin
# The server's own identity, which validates the callers' tokens.
openstack_admin user show vnfm-tacker-ft >/dev/null 2>&1 ||
    openstack_admin user create --project nfv --password vnfm-tacker-ft vnfm-tacker-ft >/dev/null
openstack_admin role add --project nfv --user vnfm-tacker-ft admin
echo vnfm-tacker-ft >"$work/keystone-password"
chmod 600 "$work/keystone-password"
# One nfv-orchestration endpoint, in the region the suites' clients find first: every suite's
# server listens on that port in its own network namespace.
openstack_admin service show nfv-orchestration >/dev/null 2>&1 ||
    openstack_admin service create --name tacker nfv-orchestration >/dev/null
# Kept when already right, so a run beside another one does not take the catalog's endpoint
# away from it.
endpoints=$(openstack_admin endpoint list --service nfv-orchestration --region RegionOne -f value -c ID -c Interface -c URL)
while read -r id iface url; do
    [[ -z "$id" || "$url" == "http://127.0.0.1:$SERVER_PORT" ]] || openstack_admin endpoint delete "$id"
done <<<"$endpoints"
for iface in public internal admin; do
    grep -q " $iface http://127.0.0.1:$SERVER_PORT\$" <<<"$endpoints" ||
        openstack_admin endpoint create --region RegionOne nfv-orchestration "$iface" "http://127.0.0.1:$SERVER_PORT" >/dev/null
done
if [[ " ${suites[*]} " == *" vm "* ]]; then
    prepare_cloud
    remove_leftovers
fi

# The host side of the forwarders: every service of the catalog but the VNFM, and Prometheus.
mkdir -p "$work/forward"
ports=$( (openstack_admin endpoint list -f value -c URL; echo "$VNFM_TEST_PROMETHEUS_URL") |
    sed -n 's|^https\?://127\.0\.0\.1:\([0-9]*\).*|\1|p' | sort -u | grep -vx "$SERVER_PORT")
for port in $ports; do
    socat "UNIX-LISTEN:$work/forward/$port.sock,fork,mode=600" "TCP:127.0.0.1:$port" </dev/null >/dev/null 2>&1 &
    FORWARDERS+=($!)
done

VNFM=${VNFM_BIN:-}
if [[ -z "$VNFM" ]]; then
    (cd "$ROOT" && cargo build --quiet --locked -p vnfm-cli)
    VNFM="$ROOT/target/debug/vnfm"
fi

[[ -d /etc/tacker ]] || mkdir -p /etc/tacker
# Each suite's tests, split into parts of whole classes.
parts=()
for suite in "${suites[@]}"; do
    mkdir -p "$work/list"
    (cd "$work/list" && { [[ -d .stestr ]] || "$VENV/bin/stestr" init >/dev/null; } &&
        "$VENV/bin/stestr" --test-path="$SRC/${PATHS[$suite]}" --top-dir="$SRC" list ${filter:+"$filter"} 2>/dev/null) \
        >"$work/$suite.list" || true
    grep -q '^tacker\.' "$work/$suite.list" || { echo "tacker-functional: no $suite test matches" >&2; continue; }
    python3 "$ROOT/scripts/tacker_functional.py" shard "$work/$suite.list" "$shards" "$work/$suite.part" \
        "$suite" "$EXPECTED"
    for ((i = 1; ; i++)); do
        [[ -s "$work/$suite.part$i" ]] || break
        parts+=("$suite $i")
    done
done
for part in "${parts[@]}"; do
    read -r suite i <<<"$part"
    mkdir -p "$work/$suite-$i"
    unshare --net --mount --propagation private "$0" --inside "$suite" "$work/$suite-$i" \
        "$work/$suite.part$i" "$VNFM" > >(sed -u "s/^/[$suite-$i] /") 2>&1 &
    SUITES_RUNNING+=($!)
done
for pid in "${SUITES_RUNNING[@]}"; do wait "$pid" || true; done
SUITES_RUNNING=()

results="$work/results.tsv"
: >"$results"
for part in "${parts[@]}"; do
    read -r suite i <<<"$part"
    [[ -f "$work/$suite-$i/results.csv" ]] || die "part $i of the $suite suite made no results (see $work/$suite-$i)"
    python3 "$ROOT/scripts/tacker_functional.py" collect "$suite" "$work/$suite-$i/results.csv" >>"$results"
done
args=(compare "$results" "$EXPECTED")
((update)) && args+=(--update)
[[ -n "$table" ]] && args+=(--table "$table")
python3 "$ROOT/scripts/tacker_functional.py" "${args[@]}"
