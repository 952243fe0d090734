#!/usr/bin/env bash
# Runs OpenStack Tacker's own v2 functional test suites, unchanged, against `vnfm serve`:
# `tacker/tests/functional/sol_kubernetes_v2` (on a real Kubernetes control plane with one
# KWOK node, Helm, Prometheus) and `sol_v2/vnflcm` (on the real OpenStack test cloud), from
# Tacker's source distribution on the package index, with `stestr` as Tacker's
# `tox -e ft-v2-k8s` runs them. Compares every test's outcome with
# tests/tacker-functional/expected.tsv and exits non-zero when one differs.
#
#   scripts/tacker-functional.sh [--suite k8s|vm]... [--shards N] [--vm-clouds N] [--work DIR]
#                                [--filter REGEX] [--update-expected] [--table FILE]
#   scripts/tacker-functional.sh --source    # fetch the source distribution, print its path
#   scripts/tacker-functional.sh --prepare [--vm-clouds N] --work DIR
#                                # install Tacker and start the VM suite's extra clouds ahead
#
# Needs the test services of scripts/test-env started and their variables exported (what
# scripts/test.sh does): openstack.sh (Keystone, the `openstack` client; the VM suite uses the
# whole cloud), prometheus.sh, helm.sh (VNFM_HELM_C_LIB). Each suite runs in network and mount
# namespaces of its own, so the suites run side by side (Tacker's tests listen on the fixed
# port 9990 and switch failures with fixed files under /tmp), each split into --shards
# (default 2) parts that also run side by side, whole test classes each (the tests mostly
# wait on the services; classes that share resources of fixed names on one cloud stay in one
# part, see TOGETHER). With --vm-clouds N (default 1), the VM suite runs in N parts instead,
# each on a cloud of its own, the first the test services' one and the others started here
# (openstack.sh, stopped on exit), as Tacker's CI runs its VM modules each on a devstack of
# its own. `--prepare` does the slow part of that ahead (Tacker's virtualenv, the extra clouds,
# side by side) while the caller does other work; a later run with the same --work uses the
# clouds it started (and stops them on exit). Every part gets its own `vnfm serve` (the debug build of this checkout, or
# VNFM_BIN) on 127.0.0.1:9890, for the Kubernetes suite its own control plane (kubernetes.sh,
# one simulated node as in Tacker's CI), a private /tmp, and forwarders to the host's test
# services on the same loopback ports (socat through Unix sockets), so the URLs in
# Keystone's catalogs hold inside too.
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
#   and image as Tacker's devstack plugin creates them (`tacker_functional.py prepare-cloud`).
# - The VM suite's server pages lists of VNF instances and of occurrences one item at a time
#   (`--page-size-of`), as Tacker's CI configures Tacker for these tests
#   (`[v2_vnfm] vnf_instance_page_size = 1`, `lcm_op_occ_page_size = 1`): st_userdata's
#   tests check a list's `Link` header with two instances.
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
# Test classes of a suite that run in one part, one after another, because they share
# resources of fixed names on the cloud: in the VM suite, every class but the smallest (the
# Cinder volume types VDU1-multi and VDU2-multi of most of its packages, which Cinder allows
# once; the networks ft-net0 and ft-net1, some made for a whole class, which the tests look up
# by name among every project's networks, their user being an admin; the images of the max
# package, whose deletion at terminate a test checks by name). Tacker's CI gives each module
# a cloud of its own.
declare -A TOGETHER=([k8s]="" [vm]='.')

die() { echo "tacker-functional: $*" >&2; exit 1; }
need() { [[ -n "${!1:-}" ]] || die "$1 is not set: start the test services first (scripts/test.sh does)"; }

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

    # The Kubernetes suite's control plane; the VM suite needs none (its VIM is the cloud).
    local kube_server="" kube_token="" kube_ca="" vim_tools=(test-setup-default-vim.sh)
    if [[ $suite == k8s ]]; then
        echo "== tacker-functional [$suite]: a Kubernetes control plane with one node, as in Tacker's CI"
        mkdir -p "$SUITE_KUBE_DIR"
        local kube_env
        kube_env=$(VNFM_KUBE_DIR="$SUITE_KUBE_DIR" VNFM_KUBE_NODES=1 "$ROOT/scripts/test-env/kubernetes.sh" start)
        kube_server=$(sed -n 's/^export VNFM_TEST_KUBE_SERVER=//p' <<<"$kube_env")
        kube_token=$(cat "$(sed -n 's/^export VNFM_TEST_KUBE_TOKEN_FILE=//p' <<<"$kube_env")")
        kube_ca=$(sed -n 's/^export VNFM_TEST_KUBE_CA_FILE=//p' <<<"$kube_env")
        vim_tools+=(test-setup-k8s-vim.sh)
    fi

    # The VIM files, as Tacker's CI writes them (roles/setup-default-vim and the k8s roles).
    local samples="$tree/samples/tests/etc/samples" ks_base=${VNFM_TEST_KEYSTONE_URL%/v3}
    python3 - "$samples" "$ks_base" "$kube_server" "$kube_token" "$kube_ca" <<'EOF'
import sys
samples, keystone, server, token, ca_file = sys.argv[1:]
ca = open(ca_file).read().strip() if ca_file else ""
def rewrite(name, values):
    path = f"{samples}/{name}"
    kept = [l for l in open(path).read().splitlines() if l.split(":", 1)[0] not in values]
    open(path, "w").write("\n".join([f"{k}: {v}" for k, v in values.items()] + kept) + "\n")
rewrite("local-vim.yaml", {"auth_url": keystone})
for name in ("local-k8s-vim.yaml", "local-k8s-vim-helm.yaml") if server else ():
    rewrite(name, {"auth_url": f'"{server}"', "bearer_token": f'"{token}"',
                   "ssl_ca_cert": '"' + ca.replace("\n", "\\n") + '"'})
EOF

    echo "== tacker-functional [$suite]: vnfm serve on 127.0.0.1:$SERVER_PORT"
    local page_sizes=()
    [[ $suite == vm ]] && page_sizes=(--page-size-of vnf_instances=1 --page-size-of vnf_lcm_op_occs=1)
    "$VNFM" serve --data-dir "$work/vnfm-data" --listen "127.0.0.1:$SERVER_PORT" \
        --keystone-url "$VNFM_TEST_KEYSTONE_URL" --keystone-user vnfm-tacker-ft \
        --keystone-password-file "$work/../keystone-password" --keystone-project nfv \
        --helm-library "$VNFM_HELM_C_LIB" --prometheus-url "$VNFM_TEST_PROMETHEUS_URL" \
        --python "$VENV/bin/python" "${page_sizes[@]}" </dev/null >"$work/vnfm.log" 2>&1 &
    local server_pid=$!
    SUITE_PIDS+=("$server_pid")
    local _
    for _ in $(seq 150); do
        curl -sf "http://127.0.0.1:$SERVER_PORT/healthz" >/dev/null && break
        kill -0 "$server_pid" 2>/dev/null || { tail -20 "$work/vnfm.log"; die "vnfm serve exited while starting"; }
        sleep 0.2
    done

    echo "== tacker-functional [$suite]: the VIMs, registered by Tacker's tools/${vim_tools[*]}"
    # Rewritten as Tacker's CI's Ansible role (roles/setup-default-vim) rewrites them: the
    # Keystone URL and the sample directory.
    local tool
    for tool in "${vim_tools[@]}"; do
        sed -e "s|/opt/stack/tacker/|$tree/|g" -e "s|http://127.0.0.1/identity|$ks_base|g" \
            "$tree/tacker/tests/functional/tools/$tool" >"$work/$tool"
        PATH="$VENV/bin:$PATH" bash "$work/$tool" >>"$work/vim-register.log" 2>&1 || {
            cat "$work/vim-register.log"
            die "$tool failed"
        }
    done

    echo "== tacker-functional [$suite]: $(cat "$load_list" "$load_list".last 2>/dev/null | grep -c .) tests of $path"
    local started=$SECONDS
    # In the background, waited for: a signal then ends this part at once (bash runs a trap
    # only when a foreground command returns), and the exit trap stops the tests' processes.
    # The tests expected to fail of a group that shares resources (tacker_functional.py shard)
    # run after the part's others, in a second run.
    (
        cd "$tree"
        : >"$work/stestr.out"
        : >"$work/results.csv"
        for list in "$load_list" "$load_list.last"; do
            [[ -s "$list" ]] || continue
            "$VENV/bin/stestr" --test-path="./$path" run --concurrency 1 --load-list "$list" \
                >>"$work/stestr.out" 2>&1 || true
            "$VENV/bin/stestr" last --subunit | "$VENV/bin/subunit2csv" >>"$work/results.csv" || true
        done
    ) &
    SUITE_PIDS+=($!)
    wait "$!"
    echo "== tacker-functional [$suite]: done in $((SECONDS - started)) s ($(grep -c . "$work/results.csv" || true) rows; output in $work/stestr.out)"
}

# A signal ends the script through its exit trap, which stops what it started.
trap 'exit 143' TERM INT

if [[ "${1:-}" == --inside ]]; then
    VNFM=$5
    # A part on a cloud of its own: that cloud's variables.
    if [[ -n "${6:-}" ]]; then
        set -a
        # shellcheck disable=SC1090
        source "$6"
        set +a
    fi
    run_suite "$2" "$3" "$4"
    exit 0
fi

# ---- on the host ------------------------------------------------------------------------------
suites=()
shards=2
vm_clouds=1
work=""
filter=""
update=0
table=""
source_only=0
prepare_only=0
while (($#)); do
    case $1 in
    --suite) suites+=("$2"); shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --vm-clouds) vm_clouds=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --update-expected) update=1; shift ;;
    --table) table=$2; shift 2 ;;
    --source) source_only=1; shift ;;
    --prepare) prepare_only=1; shift ;;
    *) echo "usage: $0 [--suite k8s|vm]... [--shards N] [--vm-clouds N] [--work DIR] [--filter REGEX] [--update-expected] [--table FILE] | --source | --prepare [--vm-clouds N] --work DIR" >&2; exit 2 ;;
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
    ensure_socat
}

# socat, for the forwarders into the suites' namespaces.
ensure_socat() {
    command -v socat >/dev/null || apt-get install -y -qq socat >&2 || die "socat is missing and could not be installed"
}

# start_clouds WORK N: the VM suite's clouds 2..N (scripts/test-env/openstack.sh, each in
# WORK/cloud<k>, its variables in WORK/cloud<k>.env), started side by side; a cloud a
# --prepare run started already is kept. Each is recorded in CLOUDS (stopped on exit).
start_clouds() {
    local work=$1 n=$2 k starting=()
    # Their PostgreSQL runs as user postgres, which must reach their directories.
    ((n < 2)) || chmod 755 "$work"
    for ((k = 2; k <= n; k++)); do
        CLOUDS+=("$work/cloud$k")
        if [[ -s "$work/cloud$k.env" ]]; then
            echo "== tacker-functional: part $k of the VM suite on the cloud started ahead in $work/cloud$k"
            starting+=(0)
            continue
        fi
        echo "== tacker-functional: an OpenStack cloud of its own for part $k of the VM suite"
        mkdir -p "$work/cloud$k"
        VNFM_OS_DIR="$work/cloud$k" "$ROOT/scripts/test-env/openstack.sh" start >"$work/cloud$k.env.new" &&
            mv "$work/cloud$k.env.new" "$work/cloud$k.env" &
        starting+=($!)
    done
    for ((k = 2; k <= n; k++)); do
        ((starting[k - 2] == 0)) || wait "${starting[k - 2]}" ||
            die "the cloud of part $k did not start (see $work/cloud$k)"
    done
}

# --source: only fetch the source distribution and print where it is, for the cargo tests
# that read Tacker's sample files (crates/vnfm-test-env: the `tacker_source` service); and
# install socat when missing, while no other installation runs.
if ((source_only)); then
    fetch_source
    ensure_socat
    echo "export VNFM_TEST_TACKER_SOURCE=$SRC"
    exit 0
fi

CLOUDS=()
# --prepare: Tacker's virtualenv and the extra clouds, side by side, left for a later run
# with the same --work (which stops the clouds on exit; so must the caller, should that run
# never come).
if ((prepare_only)); then
    [[ -n "$work" ]] || die "--prepare needs --work DIR"
    mkdir -p "$work"
    ensure_tacker &
    installing=$!
    start_clouds "$(cd "$work" && pwd)" "$vm_clouds"
    wait "$installing" || die "installing Tacker failed"
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
    local pid dir
    for pid in "${SUITES_RUNNING[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${SUITES_RUNNING[@]}"; do wait "$pid" 2>/dev/null || true; done
    for pid in "${FORWARDERS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for dir in "${CLOUDS[@]}"; do
        VNFM_OS_DIR="$dir" "$ROOT/scripts/test-env/openstack.sh" stop >/dev/null 2>&1 || true
    done
}
trap cleanup EXIT

vm_parts=1
if [[ " ${suites[*]} " == *" vm "* ]]; then
    vm_parts=$vm_clouds
fi
# The VM suite's clouds past the first (the test services' one): each a set of services of
# its own, stopped on exit.
start_clouds "$work" "$vm_parts"
echo "== tacker-functional: Keystone (and the VM suite's networks and image) as devstack prepares them for Tacker"
echo vnfm-tacker-ft >"$work/keystone-password"
chmod 600 "$work/keystone-password"
# Every suite's server listens on the nfv-orchestration endpoint's port in its own network
# namespace (tacker_functional.py prepare-cloud says what it makes).
vm_flag=()
[[ " ${suites[*]} " != *" vm "* ]] || vm_flag=(--vm)
ports=$("$VENV/bin/python" "$ROOT/scripts/tacker_functional.py" prepare-cloud \
    "http://127.0.0.1:$SERVER_PORT" "${vm_flag[@]}") || die "preparing the test services' cloud failed"
for ((k = 2; k <= vm_parts; k++)); do
    ports+=$'\n'$( (set -a && source "$work/cloud$k.env" && "$VENV/bin/python" \
        "$ROOT/scripts/tacker_functional.py" prepare-cloud "http://127.0.0.1:$SERVER_PORT" --vm)) ||
        die "preparing the cloud of part $k failed"
done

# The host side of the forwarders: every service of the catalogs but the VNFM, and Prometheus.
mkdir -p "$work/forward"
ports=$( (echo "$ports"; sed -n 's|^https\?://127\.0\.0\.1:\([0-9]*\).*|\1|p' <<<"$VNFM_TEST_PROMETHEUS_URL") |
    grep -E '^[0-9]+$' | sort -u | grep -vx "$SERVER_PORT")
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
    if [[ $suite == vm ]] && ((vm_parts > 1)); then
        # A part per cloud: each runs its classes one after another on a cloud of its own.
        python3 "$ROOT/scripts/tacker_functional.py" shard "$work/$suite.list" "$vm_parts" "$work/$suite.part" \
            "$suite" "$EXPECTED" "" own-clouds
    else
        python3 "$ROOT/scripts/tacker_functional.py" shard "$work/$suite.list" "$shards" "$work/$suite.part" \
            "$suite" "$EXPECTED" "${TOGETHER[$suite]}"
    fi
    for ((i = 1; ; i++)); do
        [[ -s "$work/$suite.part$i" ]] || break
        parts+=("$suite $i")
    done
done
for part in "${parts[@]}"; do
    read -r suite i <<<"$part"
    mkdir -p "$work/$suite-$i"
    cloud_env=""
    [[ $suite != vm || ! -f "$work/cloud$i.env" ]] || cloud_env="$work/cloud$i.env"
    unshare --net --mount --propagation private "$0" --inside "$suite" "$work/$suite-$i" \
        "$work/$suite.part$i" "$VNFM" "$cloud_env" > >(sed -u "s/^/[$suite-$i] /") 2>&1 &
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
