#!/usr/bin/env bash
# A real Kubernetes control plane for the Kubernetes driver's tests: kube-apiserver,
# kube-controller-manager and kube-scheduler built from the Go module k8s.io/kubernetes,
# etcd from Debian (etcd-server), and nodes and pods simulated by KWOK (sigs.k8s.io/kwok),
# all on 127.0.0.1, as plain processes.
#
#   eval "$(scripts/test-env/kubernetes.sh start)"   # prints `export VNFM_TEST_KUBE_...=...` lines
#   scripts/test-env/kubernetes.sh env               # prints them again
#   scripts/test-env/kubernetes.sh build             # only builds (or finds) the binaries
#   scripts/test-env/kubernetes.sh stop              # stops everything, removes the directory
#
# Environment:
#   VNFM_KUBE_DIR          working directory for certificates, tokens, etcd data, logs and pid
#                          files (required for start/stop; give a fresh `mktemp -d`; each
#                          directory is one independent control plane on its own free ports)
#   VNFM_KUBE_CACHE        where built binaries are kept, one directory per version (default
#                          ${XDG_CACHE_HOME:-~/.cache}/vnfm/kubernetes); a second run finds them
#   VNFM_KUBE_NODES        how many simulated nodes to create (default 2; Tacker's functional
#                          tests expect one, as Tacker's CI has)
#   VNFM_KUBE_READY_DELAY  how long a simulated pod takes from being scheduled to Ready
#                          (default 2s): a lifecycle operation that completes before its pods are
#                          Ready is then visible to the tests
#
# `start` prints the variables of services.tsv's service `kubernetes` (KUBECONFIG and
# VNFM_TEST_KUBE_*).
#
# Simulated pods (KWOK stages, kubernetes/kwok-stages.yaml): every pod becomes Running and,
# after VNFM_KUBE_READY_DELAY, Ready; a pod of a Job (restartPolicy Never or OnFailure)
# succeeds after the same delay; a pod labelled `vnfm.test/never-ready: "true"` runs but never
# becomes Ready; a pod labelled `vnfm.test/crash-loop: "true"` stays in CrashLoopBackOff with a
# growing restart count; a pod with an image whose name ends in `:does-not-exist` stays in
# ImagePullBackOff. A deleted pod is gone 100 ms later, or, labelled
# `vnfm.test/exit-at-grace-end: "true"`, at the end of its grace period (containers that
# ignore SIGTERM).
#
# The control plane's version is pinned by kubernetes/go.mod (its `require k8s.io/kubernetes`
# and the staging modules' `replace` lines), KWOK's by KWOK_VERSION below. Binaries are built
# with the Go the Kubernetes release's .go-version names (GOTOOLCHAIN fetches it from the
# module proxy when the machine's Go differs), once per version; the Go build and module caches
# the build used are deleted afterwards (several GB), only the binaries (~300 MB) are kept.
# Needs Go (>= 1.21, for GOTOOLCHAIN), the Go module proxy, openssl, curl and python3; etcd-server
# is installed with apt-get when missing (needs root).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/test-env/common.sh
. "$HERE/common.sh"
MODDIR="$HERE/kubernetes"
DIR="${VNFM_KUBE_DIR:-}"
KUBE_VERSION=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$MODDIR/go.mod")
GO_TOOLCHAIN=$(awk '$1 == "toolchain" { print $2; exit }' "$MODDIR/go.mod")
KWOK_VERSION=v0.8.0
CACHE="${VNFM_KUBE_CACHE:-$VNFM_CACHE/kubernetes}"
BIN="$CACHE/$KUBE_VERSION-kwok-$KWOK_VERSION"
ETCD=/usr/bin/etcd
READY_DELAY="${VNFM_KUBE_READY_DELAY:-2s}"
NODE_STAGES_OK=complete

# Builds the control plane's and KWOK's commands into $BIN unless they are there.
build() {
    local cmds=(kube-apiserver kube-controller-manager kube-scheduler kwok) c missing=0
    for c in "${cmds[@]}"; do
        [[ -x "$BIN/$c" ]] || missing=1
    done
    [[ -f "$BIN/stages/$NODE_STAGES_OK" ]] || missing=1
    if ((missing == 0)); then
        echo "kubernetes.sh: Kubernetes $KUBE_VERSION and KWOK $KWOK_VERSION from $BIN" >&2
        return
    fi
    go_work "$CACHE" "Kubernetes $KUBE_VERSION"
    local minor
    minor=${KUBE_VERSION#v1.}
    minor=${minor%%.*}
    echo "kubernetes.sh: building Kubernetes $KUBE_VERSION and KWOK $KWOK_VERSION with $GO_TOOLCHAIN into $BIN (5 to 30 minutes on 2 cores)" >&2
    local goenv=("${GO_ENV[@]}" GOTOOLCHAIN="$GO_TOOLCHAIN")
    local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION
        -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor
        -X k8s.io/component-base/version.gitTreeState=clean"
    local failed="building Kubernetes $KUBE_VERSION or KWOK $KWOK_VERSION failed (Go $GO_TOOLCHAIN through the module proxy)"
    work_run build.log "$failed" "${goenv[@]}" go -C "$MODDIR" build -trimpath -ldflags "$ldflags" -o "$WORK/bin/" \
        k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler
    work_run build.log "$failed" "${goenv[@]}" GOBIN="$WORK/bin" go install -trimpath -ldflags "-s -w" \
        "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
    # KWOK's own stages of simulated nodes (Ready at once, status and lease kept fresh as a
    # kubelet does), from its module; the pods' stages are ours (kubernetes/kwok-pod-stages.yaml).
    local stages="$WORK/mod/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage/node"
    mkdir -p "$WORK/bin/stages"
    work_run build.log "KWOK $KWOK_VERSION has no node stages at $stages" \
        cp "$stages/fast/node-initialize.yaml" "$stages/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
        "$WORK/bin/stages/"
    chmod u+w "$WORK/bin/stages/"*
    touch "$WORK/bin/stages/$NODE_STAGES_OK"
    rm -rf "$BIN"
    mv "$WORK/bin" "$BIN"
    work_done
    echo "kubernetes.sh: built Kubernetes $KUBE_VERSION and KWOK $KWOK_VERSION in $WORK_SECONDS s; binaries $(du -sh "$BIN" | cut -f1), Go caches deleted ($WORK_CACHES)" >&2
}

# curl against the API server as the administrator.
api() {
    curl -sS --max-time 10 --cacert "$DIR/pki/ca.crt" -H "Authorization: Bearer $(cat "$DIR/admin.token")" "$@"
}

etcd_healthy() {
    [[ $(curl -sS --max-time 2 "http://127.0.0.1:$ETCD_PORT/health") == *'"health":"true"'* ]]
}

# /readyz answers exactly `ok` when every check passed (a failing answer lists the checks,
# most of them "ok").
api_ready() {
    [[ $(api "https://127.0.0.1:$API_PORT/readyz") == ok ]]
}

nodes_ready() {
    api "https://127.0.0.1:$API_PORT/api/v1/nodes" | python3 -c '
import json, sys
nodes = json.load(sys.stdin)["items"]
ready = [n for n in nodes if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))]
sys.exit(0 if nodes and len(ready) == len(nodes) else 1)'
}

default_service_account() {
    api -f "https://127.0.0.1:$API_PORT/api/v1/namespaces/default/serviceaccounts/default"
}

write_pki() {
    local pki="$DIR/pki"
    mkdir -p "$pki"
    (
        cd "$pki"
        openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=vnfm-test-kubernetes-ca" \
            -keyout ca.key -out ca.crt
        openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout apiserver.key -out apiserver.csr
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.96.0.1\n' >san.ext
        openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
            -extfile san.ext -out apiserver.crt
        openssl genrsa -out sa.key 2048
        openssl rsa -in sa.key -pubout -out sa.pub
    ) >"$DIR/pki.log" 2>&1 || { log_tail pki.log; die "openssl could not make the certificates"; }
    chmod 600 "$pki"/*.key
}

# The static token file: an administrator, the controller-manager, the scheduler, KWOK and
# the namespace-scoped user. Tokens are random per directory.
write_tokens() {
    local who
    for who in admin controller-manager scheduler kwok namespaced; do
        openssl rand -hex 24 >"$DIR/$who.token"
        chmod 600 "$DIR/$who.token"
    done
    {
        echo "$(cat "$DIR/admin.token"),vnfm-test-admin,vnfm-test-admin,\"system:masters\""
        echo "$(cat "$DIR/controller-manager.token"),system:kube-controller-manager,system:kube-controller-manager"
        echo "$(cat "$DIR/scheduler.token"),system:kube-scheduler,system:kube-scheduler"
        echo "$(cat "$DIR/kwok.token"),vnfm-test-kwok,vnfm-test-kwok,\"system:masters\""
        echo "$(cat "$DIR/namespaced.token"),vnfm-test-namespaced,vnfm-test-namespaced"
    } >"$DIR/tokens.csv"
    chmod 600 "$DIR/tokens.csv"
}

# A kubeconfig for `who` (its token) at $DIR/<who>.kubeconfig.
write_kubeconfig() {
    local who=$1 ns=${2:-default}
    cat >"$DIR/$who.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: vnfm-test
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $DIR/pki/ca.crt
users:
- name: $who
  user:
    token: $(cat "$DIR/$who.token")
contexts:
- name: $who
  context: {cluster: vnfm-test, user: $who, namespace: $ns}
current-context: $who
EOF
    chmod 600 "$DIR/$who.kubeconfig"
}

# Milliseconds of a duration like 2s, 1500ms or 0.5s.
millis() {
    python3 -c '
import re, sys
m = re.fullmatch(r"([0-9.]+)(ms|s)?", sys.argv[1])
if not m: sys.exit("kubernetes.sh: VNFM_KUBE_READY_DELAY must look like 2s or 1500ms")
print(int(float(m[1]) * (1 if m[2] == "ms" else 1000)))' "$1"
}

# Simulated nodes: KWOK manages the nodes with the annotation kwok.x-k8s.io/node=fake. They
# report this machine's kernel, as a kubelet here would (KWOK keeps what a node says).
create_nodes() {
    local i kernel
    kernel=$(uname -r)
    for ((i = 0; i < ${VNFM_KUBE_NODES:-2}; i++)); do
        api -f -X POST -H 'Content-Type: application/json' "https://127.0.0.1:$API_PORT/api/v1/nodes" -d '{
          "apiVersion": "v1", "kind": "Node",
          "metadata": {"name": "kwok-node-'"$i"'",
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {"kubernetes.io/hostname": "kwok-node-'"$i"'", "kubernetes.io/os": "linux",
              "kubernetes.io/arch": "amd64", "type": "kwok"}},
          "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "2000"},
            "capacity": {"cpu": "64", "memory": "256Gi", "pods": "2000"},
            "nodeInfo": {"kernelVersion": "'"$kernel"'", "osImage": "KWOK simulated node",
              "operatingSystem": "linux", "architecture": "amd64"}}}' >/dev/null ||
            die "could not create the simulated node kwok-node-$i"
    done
}

# The namespace of the namespace-scoped user, who is `admin` (the bootstrap ClusterRole) there.
create_scoped_namespace() {
    local url="https://127.0.0.1:$API_PORT"
    api -f -X POST -H 'Content-Type: application/json' "$url/api/v1/namespaces" \
        -d '{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "'"$SCOPED_NS"'"}}' >/dev/null ||
        die "could not create the namespace $SCOPED_NS"
    api -f -X POST -H 'Content-Type: application/json' \
        "$url/apis/rbac.authorization.k8s.io/v1/namespaces/$SCOPED_NS/rolebindings" -d '{
          "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
          "metadata": {"name": "vnfm-test-namespaced-admin"},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "vnfm-test-namespaced"}]}' >/dev/null ||
        die "could not bind the namespace-scoped user to admin of $SCOPED_NS"
}

SCOPED_NS=vnfm-test-scoped
# Pods with this image stay in ImagePullBackOff.
FAILING_IMAGE=registry.invalid/vnfm-test/image:does-not-exist

start() {
    need_dir VNFM_KUBE_DIR
    running_env etcd kube-apiserver kube-controller-manager kube-scheduler kwok && return
    build
    need_program "$ETCD" --no-install-recommends etcd-server
    stop_processes kwok kube-scheduler kube-controller-manager kube-apiserver etcd
    rm -rf "${DIR:?}/etcd-data" "$DIR"/*.log "$DIR/env"
    local started
    started=$(date +%s.%N)
    read -r API_PORT ETCD_PORT PEER_PORT <<<"$(python3 "$HERE/free_ports.py" 3 | tr '\n' ' ')"
    READY_MS=$(millis "$READY_DELAY")
    write_pki
    write_tokens
    local who
    for who in admin controller-manager scheduler kwok; do
        write_kubeconfig "$who"
    done
    write_kubeconfig namespaced "$SCOPED_NS"
    {
        sed -e "s/@READY_DELAY_MS@/$READY_MS/g" -e "s|@FAILING_IMAGE@|$FAILING_IMAGE|g" "$MODDIR/kwok-pod-stages.yaml"
        for f in "$BIN"/stages/*.yaml; do
            echo "---"
            cat "$f"
        done
    } >"$DIR/kwok-stages.yaml"

    # The requests of clients other than the control plane's own and KWOK, one JSON line each:
    # what a test asks the cluster, in the order the server answered it.
    cat >"$DIR/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: [system:kube-controller-manager, system:kube-scheduler, vnfm-test-kwok, system:apiserver]
- level: None
  userGroups: [system:serviceaccounts, system:nodes]
- level: None
  nonResourceURLs: ["*"]
- level: Metadata
EOF
    spawn etcd "$ETCD" --name=vnfm-test --data-dir="$DIR/etcd-data" \
        --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls="http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$PEER_PORT" \
        --initial-cluster="vnfm-test=http://127.0.0.1:$PEER_PORT" --listen-metrics-urls= \
        --quota-backend-bytes=2147483648 --snapshot-count=10000
    wait_for "etcd answering /health on port $ETCD_PORT" 30 etcd etcd_healthy

    # Debian's etcd 3.4 cannot report watch progress, so the API server cannot serve the
    # streaming lists (WatchList) client-go asks for first, and answered them with a watch that
    # ends in an error: KWOK's watches restarted every second or two and it saw new pods many
    # seconds late. With WatchList off, client-go's clients list and watch at once, as kube-rs
    # (the driver's client) does; KUBE_FEATURE_WatchListClient=false on the clients says the same.
    spawn kube-apiserver "$BIN/kube-apiserver" \
        --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
        --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
        --tls-cert-file="$DIR/pki/apiserver.crt" --tls-private-key-file="$DIR/pki/apiserver.key" \
        --client-ca-file="$DIR/pki/ca.crt" \
        --token-auth-file="$DIR/tokens.csv" \
        --authorization-mode=Node,RBAC \
        --service-account-key-file="$DIR/pki/sa.pub" \
        --service-account-signing-key-file="$DIR/pki/sa.key" \
        --service-account-issuer=https://kubernetes.default.svc \
        --service-cluster-ip-range=10.96.0.0/16 \
        --endpoint-reconciler-type=none \
        --allow-privileged=true \
        --feature-gates=WatchList=false \
        --audit-policy-file="$DIR/audit-policy.yaml" --audit-log-path="$DIR/audit.log" \
        --audit-log-format=json --audit-log-mode=blocking --audit-log-maxsize=500 --audit-log-maxbackup=1 \
        --profiling=false
    wait_for "kube-apiserver answering /readyz with ok on port $API_PORT" 120 kube-apiserver api_ready

    spawn kube-controller-manager env KUBE_FEATURE_WatchListClient=false "$BIN/kube-controller-manager" \
        --kubeconfig="$DIR/controller-manager.kubeconfig" \
        --secure-port=0 --leader-elect=false \
        --use-service-account-credentials=true \
        --service-account-private-key-file="$DIR/pki/sa.key" \
        --root-ca-file="$DIR/pki/ca.crt" \
        --cluster-signing-cert-file="$DIR/pki/ca.crt" --cluster-signing-key-file="$DIR/pki/ca.key" \
        --profiling=false
    spawn kube-scheduler env KUBE_FEATURE_WatchListClient=false "$BIN/kube-scheduler" \
        --kubeconfig="$DIR/scheduler.kubeconfig" \
        --secure-port=0 --leader-elect=false --profiling=false
    spawn kwok env KUBE_FEATURE_WatchListClient=false "$BIN/kwok" \
        --kubeconfig="$DIR/kwok.kubeconfig" \
        --config="$DIR/kwok-stages.yaml" \
        --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
        --node-lease-duration-seconds=40 \
        --cidr=10.0.0.0/12 --node-ip=127.0.0.1
    create_nodes
    create_scoped_namespace
    wait_for "the simulated nodes becoming Ready" 60 kwok nodes_ready
    # Pods are refused until their namespace's default ServiceAccount exists, which the
    # controller-manager creates.
    wait_for "the controller-manager creating the default ServiceAccount" 120 kube-controller-manager default_service_account
    check_alive kube-scheduler
    write_env kubernetes \
        KUBECONFIG="$DIR/admin.kubeconfig" \
        VNFM_TEST_KUBE_SERVER="https://127.0.0.1:$API_PORT" \
        VNFM_TEST_KUBE_CA_FILE="$DIR/pki/ca.crt" \
        VNFM_TEST_KUBE_TOKEN_FILE="$DIR/admin.token" \
        VNFM_TEST_KUBE_NS_TOKEN_FILE="$DIR/namespaced.token" \
        VNFM_TEST_KUBE_NS="$SCOPED_NS" \
        VNFM_TEST_KUBE_READY_DELAY_MS="$READY_MS" \
        VNFM_TEST_KUBE_FAILING_IMAGE="$FAILING_IMAGE" \
        VNFM_TEST_KUBE_VERSION="$KUBE_VERSION" \
        VNFM_TEST_KUBE_DIR="$DIR" \
        VNFM_TEST_KUBE_AUDIT_LOG="$DIR/audit.log"
    local version
    version=$(api "https://127.0.0.1:$API_PORT/version" | python3 -c 'import json, sys; print(json.load(sys.stdin)["gitVersion"])')
    echo "kubernetes.sh: Kubernetes $version (kube-apiserver, kube-controller-manager, kube-scheduler; etcd $("$ETCD" --version | awk '/etcd Version/ {print $3}'); KWOK $KWOK_VERSION, pods Ready ${READY_MS} ms after they run) at https://127.0.0.1:$API_PORT, up in $(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$started" "$(date +%s.%N)") s; logs in $DIR" >&2
    cat "$DIR/env"
}

stop() {
    need_dir VNFM_KUBE_DIR
    # Clients first, etcd last.
    stop_processes kwok kube-scheduler kube-controller-manager kube-apiserver etcd
    rm -rf "${DIR:?}"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    build) build ;;
    env)
        need_dir VNFM_KUBE_DIR
        cat "$DIR/env"
        ;;
    *)
        echo "usage: $0 start|stop|env|build" >&2
        exit 2
        ;;
esac
