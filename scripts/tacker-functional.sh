#!/usr/bin/env bash
# Runs OpenStack Tacker's own v2 functional test suites, unchanged, against `vnfm serve`:
# `tacker/tests/functional/sol_kubernetes_v2` (on a real Kubernetes control plane with one
# KWOK node, Helm, Prometheus and Alertmanager) and `sol_v2/vnflcm` (on the real OpenStack
# test cloud), from Tacker's source distribution on the package index, with `stestr` as
# Tacker's `tox -e ft-v2-k8s` runs them. Compares every test's outcome with
# tests/tacker-functional/expected.tsv and exits non-zero when one differs.
#
#   scripts/tacker-functional.sh [--suite k8s|vm]... [--work DIR] [--filter REGEX]
#                                [--update-expected] [--table FILE]
#
# Needs the test services of scripts/test-env started and their variables exported (what
# scripts/test.sh does): openstack.sh (Keystone, the `openstack` client; the VM suite uses the
# whole cloud), prometheus.sh, helm.sh (VNFM_HELM_C_LIB). It starts its own Kubernetes control
# plane (kubernetes.sh, one simulated node as in Tacker's CI) and its own `vnfm serve` (the
# debug build of this checkout, or VNFM_BIN), and stops both on exit.
#
# Environment: VNFM_TACKER_CACHE (default ~/.cache/vnfm/tacker-16.0.0: the source
# distribution, unpacked, and the virtualenv with its requirements and test requirements),
# PYTHON (default python3.11, else python3).
#
# What is shimmed, and why (nothing of Tacker's test code or assertions is changed):
# - /etc/tacker/tacker.conf: the tests' base class reads this fixed path; an empty file is
#   mounted there in a private mount namespace (the v2 suites read no option from it).
# - samples/tests/etc/samples/local-vim.yaml, local-k8s-vim.yaml, local-k8s-vim-helm.yaml:
#   rewritten as Tacker's CI rewrites them (Keystone URL, API server, bearer token, CA).
# - tools/test-setup-k8s-vim.sh (Tacker's own VIM registration) is run with its sample
#   directory and Keystone URL rewritten, as Tacker's CI's Ansible role does.
# - Keystone holds what devstack creates for Tacker: project `nfv`, user `nfv_user` /
#   `devstack` with role `admin`, and the `nfv-orchestration` service whose endpoint is
#   `vnfm serve` (the tests find the server through the catalog).
# - Management scripts run with the virtualenv's Python, where `tacker` is importable, as
#   Tacker's conductor runs them (one test's script imports `tacker.*`).
# - The tests' fake notification server listens on 127.0.0.1:9990 and their failure switch
#   files are /tmp/<OPERATION>: the suites run one after the other.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TACKER_VERSION=16.0.0
CACHE="${VNFM_TACKER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vnfm/tacker-$TACKER_VERSION}"
SRC="$CACHE/tacker-$TACKER_VERSION"
VENV="$CACHE/venv"
EXPECTED="$ROOT/tests/tacker-functional/expected.tsv"

suites=()
work=""
filter=""
update=0
table=""
while (($#)); do
    case $1 in
    --suite) suites+=("$2"); shift 2 ;;
    --work) work=$2; shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --update-expected) update=1; shift ;;
    --table) table=$2; shift 2 ;;
    *) echo "usage: $0 [--suite k8s|vm]... [--work DIR] [--filter REGEX] [--update-expected] [--table FILE]" >&2; exit 2 ;;
    esac
done
((${#suites[@]})) || suites=(k8s vm)

die() { echo "tacker-functional: $*" >&2; exit 1; }
need() { [[ -n "${!1:-}" ]] || die "$1 is not set: start the test services first (scripts/test.sh does)"; }

# Re-run inside a private mount namespace, where /etc/tacker is ours.
if [[ -z "${VNFM_TACKER_NS:-}" ]]; then
    [[ -d /etc/tacker ]] || mkdir -p /etc/tacker
    exec env VNFM_TACKER_NS=1 unshare --mount --propagation private "$0" \
        $(printf -- '--suite %s ' "${suites[@]}") ${work:+--work "$work"} ${filter:+--filter "$filter"} \
        $( ((update)) && echo --update-expected) ${table:+--table "$table"}
fi

ensure_tacker() {
    local python=${PYTHON:-}
    [[ -n "$python" ]] || python=$(command -v python3.11 || command -v python3)
    if [[ ! -f "$SRC/tox.ini" ]]; then
        mkdir -p "$CACHE"
        echo "== tacker-functional: fetching Tacker $TACKER_VERSION's source distribution"
        "$python" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
            "tacker==$TACKER_VERSION" -d "$CACHE"
        tar -xzf "$CACHE/tacker-$TACKER_VERSION.tar.gz" -C "$CACHE"
    fi
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
}

ensure_tacker
need VNFM_TEST_KEYSTONE_URL
need VNFM_TEST_OS_ADMIN_PASSWORD
need VNFM_HELM_C_LIB
need VNFM_TEST_PROMETHEUS_URL

[[ -n "$work" ]] || work=$(mktemp -d /tmp/vnfm-tacker-ft.XXXXXX)
mkdir -p "$work"
work=$(cd "$work" && pwd)
STARTED_KUBE=""
SERVER_PID=""
cleanup() {
    [[ -z "$SERVER_PID" ]] || kill "$SERVER_PID" 2>/dev/null || true
    [[ -z "$STARTED_KUBE" ]] || VNFM_KUBE_DIR="$STARTED_KUBE" "$ROOT/scripts/test-env/kubernetes.sh" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

# A copy of the source tree: the VIM files are rewritten in it, and stestr keeps its
# repository there.
tree="$work/tacker"
rm -rf "$tree"
cp -a "$SRC" "$tree"
mkdir -p "$work/etc-tacker"
: >"$work/etc-tacker/tacker.conf"
mount --bind "$work/etc-tacker" /etc/tacker

ks_base=${VNFM_TEST_KEYSTONE_URL%/v3}
openstack_admin() {
    "$VENV/bin/openstack" --os-auth-url "$VNFM_TEST_KEYSTONE_URL" --os-identity-api-version 3 \
        --os-username "${VNFM_TEST_OS_ADMIN_USERNAME:-admin}" --os-password "$VNFM_TEST_OS_ADMIN_PASSWORD" \
        --os-project-name "${VNFM_TEST_OS_ADMIN_PROJECT:-admin}" --os-user-domain-name Default \
        --os-project-domain-name Default "$@"
}

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

port=$(python3 "$ROOT/scripts/test-env/free_ports.py" 1)
# One nfv-orchestration endpoint in the catalog, this server's: an earlier run's is replaced.
for id in $(openstack_admin endpoint list --service nfv-orchestration -f value -c ID 2>/dev/null); do
    openstack_admin endpoint delete "$id"
done
openstack_admin service show nfv-orchestration >/dev/null 2>&1 ||
    openstack_admin service create --name tacker nfv-orchestration >/dev/null
for iface in public internal admin; do
    openstack_admin endpoint create --region RegionOne nfv-orchestration "$iface" "http://127.0.0.1:$port" >/dev/null
done

echo "== tacker-functional: a Kubernetes control plane with one node, as in Tacker's CI"
STARTED_KUBE="$work/kube"
mkdir -p "$STARTED_KUBE"
kube_env=$(VNFM_KUBE_DIR="$STARTED_KUBE" VNFM_KUBE_NODES=1 "$ROOT/scripts/test-env/kubernetes.sh" start)
kube_server=$(echo "$kube_env" | sed -n 's/^export VNFM_TEST_KUBE_SERVER=//p')
kube_token=$(cat "$(echo "$kube_env" | sed -n 's/^export VNFM_TEST_KUBE_TOKEN_FILE=//p')")
kube_ca=$(echo "$kube_env" | sed -n 's/^export VNFM_TEST_KUBE_CA_FILE=//p')

# The VIM files, as Tacker's CI writes them (roles/setup-default-vim and the k8s roles).
samples="$tree/samples/tests/etc/samples"
python3 - "$samples" "$ks_base" "$kube_server" "$kube_token" "$kube_ca" <<'EOF'
import sys
samples, keystone, server, token, ca_file = sys.argv[1:]
ca = open(ca_file).read().strip()
def rewrite(name, values):
    path = f"{samples}/{name}"
    out = []
    for line in open(path).read().splitlines():
        key = line.split(":", 1)[0]
        if key in values:
            continue
        out.append(line)
    head = [f"{k}: {v}" for k, v in values.items()]
    open(path, "w").write("\n".join(head + out) + "\n")
rewrite("local-vim.yaml", {"auth_url": keystone})
ca_block = '"' + ca.replace("\n", "\\n") + '"'
for name in ("local-k8s-vim.yaml", "local-k8s-vim-helm.yaml"):
    rewrite(name, {"auth_url": f'"{server}"', "bearer_token": f'"{token}"', "ssl_ca_cert": ca_block})
EOF

echo "== tacker-functional: vnfm serve on 127.0.0.1:$port"
vnfm=${VNFM_BIN:-}
if [[ -z "$vnfm" ]]; then
    (cd "$ROOT" && cargo build --quiet --locked -p vnfm-cli)
    vnfm="$ROOT/target/debug/vnfm"
fi
"$vnfm" serve --data-dir "$work/vnfm-data" --listen "127.0.0.1:$port" \
    --keystone-url "$VNFM_TEST_KEYSTONE_URL" --keystone-user vnfm-tacker-ft \
    --keystone-password-file "$work/keystone-password" --keystone-project nfv \
    --helm-library "$VNFM_HELM_C_LIB" --prometheus-url "$VNFM_TEST_PROMETHEUS_URL" \
    --python "$VENV/bin/python" >"$work/vnfm.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || { tail -20 "$work/vnfm.log"; die "vnfm serve exited while starting"; }
    sleep 0.2
done

echo "== tacker-functional: the VIMs, registered by Tacker's tools/test-setup-k8s-vim.sh"
sed -e "s|^conf_dir=.*|conf_dir=$samples|" -e "s|--os-auth-url [^ ]*|--os-auth-url $ks_base|" \
    -e "s|^\s*openstack vim register|    \"$VENV/bin/openstack\" vim register|" \
    "$tree/tacker/tests/functional/tools/test-setup-k8s-vim.sh" >"$work/test-setup-k8s-vim.sh"
bash "$work/test-setup-k8s-vim.sh" >"$work/vim-register.log" 2>&1 || {
    cat "$work/vim-register.log"
    die "VIM registration failed"
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

declare -A paths=([k8s]=tacker/tests/functional/sol_kubernetes_v2 [vm]=tacker/tests/functional/sol_v2/vnflcm)
results="$work/results.tsv"
: >"$results"
for suite in "${suites[@]}"; do
    path=${paths[$suite]:-}
    [[ -n "$path" ]] || die "unknown suite $suite (k8s, vm)"
    echo "== tacker-functional: $path"
    [[ $suite != vm ]] || prepare_cloud
    (
        cd "$tree"
        export OS_AUTH_URL="$VNFM_TEST_KEYSTONE_URL"
        "$VENV/bin/stestr" --test-path="./$path" run --concurrency 1 ${filter:+"$filter"} \
            >"$work/$suite.out" 2>&1 || true
        "$VENV/bin/stestr" last --subunit | "$VENV/bin/subunit2csv" >"$work/$suite.csv" || true
    )
    python3 "$ROOT/scripts/tacker_functional.py" collect "$suite" "$work/$suite.csv" >>"$results"
    tail -5 "$work/$suite.out"
    rm -rf "$tree/.stestr"
done

args=(compare "$results" "$EXPECTED")
((update)) && args+=(--update)
[[ -n "$table" ]] && args+=(--table "$table")
python3 "$ROOT/scripts/tacker_functional.py" "${args[@]}"
