#!/bin/bash
# install_k8s_cluster.sh: builds a Kubernetes cluster with kubeadm on Debian/Ubuntu VMs.
#
# Run by the VNFM's k8s-cluster management driver over SSH, once per node and step, as a user
# that is root or may use sudo without a password. Every step is idempotent: running it again
# on a node where it already succeeded changes nothing and prints the same report.
#
# Usage:
#   install_k8s_cluster.sh init-master  --node-name N --node-ip IP --control-plane-endpoint HOST:PORT
#                                       [--pod-cidr CIDR] [--service-cidr CIDR] [COMMON...]
#   install_k8s_cluster.sh join-master  --node-name N --node-ip IP --control-plane-endpoint HOST:PORT
#                                       --token T --ca-cert-hash sha256:H --certificate-key K [COMMON...]
#   install_k8s_cluster.sh join-worker  --node-name N --node-ip IP --control-plane-endpoint HOST:PORT
#                                       --token T --ca-cert-hash sha256:H [COMMON...]
#   install_k8s_cluster.sh join-info    (on a master) prints a fresh join token, the CA hash
#                                       and a fresh certificate key
#   install_k8s_cluster.sh remove-node  --node-name N   (on a master) drains and deletes a node
#   install_k8s_cluster.sh reset        (on a node leaving the cluster) kubeadm reset
#
#   COMMON: [--kubernetes-version 1.33] [--http-proxy URL] [--https-proxy URL] [--no-proxy LIST]
#
# Output: progress goes to stderr and stdout; results are reported on stdout as lines
#
#   K8S_CLUSTER_INFO <key>=<value>
#
# init-master reports: server (API server URL), token (bootstrap token, 24 h), ssl_ca_cert_hash
# (sha256:<hex> of the CA public key), certificate_key (control-plane certificates, 2 h),
# bearer_token (token of the vnfm-admin service account, cluster-admin), ssl_ca_cert (the CA
# certificate, PEM, base64 on one line). join-info reports token, ssl_ca_cert_hash and
# certificate_key. The other steps report nothing. Exit status 0 means success.
set -euo pipefail

K8S_VERSION="1.33"
NODE_NAME=""
NODE_IP=""
ENDPOINT=""
POD_CIDR="192.168.0.0/16"
SERVICE_CIDR="10.96.0.0/12"
TOKEN=""
CA_HASH=""
CERT_KEY=""
HTTP_PROXY_URL=""
HTTPS_PROXY_URL=""
NO_PROXY_LIST=""
ADMIN_SA="vnfm-admin"

log() { echo "[install_k8s_cluster] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
report() { echo "K8S_CLUSTER_INFO $1=$2"; }

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || die "not root and no sudo"
    SUDO="sudo -n"
fi

[[ $# -ge 1 ]] || die "missing step (init-master, join-master, join-worker, join-info, remove-node, reset)"
STEP="$1"
shift
while [[ $# -gt 0 ]]; do
    case "$1" in
        --node-name) NODE_NAME="$2"; shift 2 ;;
        --node-ip) NODE_IP="$2"; shift 2 ;;
        --control-plane-endpoint) ENDPOINT="$2"; shift 2 ;;
        --pod-cidr) POD_CIDR="$2"; shift 2 ;;
        --service-cidr) SERVICE_CIDR="$2"; shift 2 ;;
        --token) TOKEN="$2"; shift 2 ;;
        --ca-cert-hash) CA_HASH="$2"; shift 2 ;;
        --certificate-key) CERT_KEY="$2"; shift 2 ;;
        --kubernetes-version) K8S_VERSION="$2"; shift 2 ;;
        --http-proxy) HTTP_PROXY_URL="$2"; shift 2 ;;
        --https-proxy) HTTPS_PROXY_URL="$2"; shift 2 ;;
        --no-proxy) NO_PROXY_LIST="$2"; shift 2 ;;
        *) die "unknown argument: $1" ;;
    esac
done

need() { [[ -n "$2" ]] || die "$STEP needs $1"; }
kubectl_admin() { $SUDO kubectl --kubeconfig /etc/kubernetes/admin.conf "$@"; }

set_proxy() {
    [[ -z "$HTTP_PROXY_URL$HTTPS_PROXY_URL" ]] && return 0
    local no_proxy="127.0.0.1,localhost,$SERVICE_CIDR,$POD_CIDR${NO_PROXY_LIST:+,$NO_PROXY_LIST}"
    export http_proxy="$HTTP_PROXY_URL" https_proxy="$HTTPS_PROXY_URL" no_proxy="$no_proxy"
    export HTTP_PROXY="$HTTP_PROXY_URL" HTTPS_PROXY="$HTTPS_PROXY_URL" NO_PROXY="$no_proxy"
    $SUDO tee /etc/apt/apt.conf.d/95vnfm-proxy >/dev/null <<CONF
Acquire::http::Proxy "$HTTP_PROXY_URL";
Acquire::https::Proxy "$HTTPS_PROXY_URL";
CONF
    $SUDO mkdir -p /etc/systemd/system/containerd.service.d
    $SUDO tee /etc/systemd/system/containerd.service.d/http-proxy.conf >/dev/null <<CONF
[Service]
Environment="HTTP_PROXY=$HTTP_PROXY_URL" "HTTPS_PROXY=$HTTPS_PROXY_URL" "NO_PROXY=$no_proxy"
CONF
}

prepare_node() {
    [[ -n "$NODE_NAME" ]] && $SUDO hostnamectl set-hostname "$NODE_NAME"
    # kubelet refuses to run with swap on.
    $SUDO swapoff -a
    $SUDO sed -i -e '/\sswap\s/s/^#*/#/' /etc/fstab
    $SUDO tee /etc/modules-load.d/k8s.conf >/dev/null <<CONF
overlay
br_netfilter
CONF
    $SUDO modprobe overlay
    $SUDO modprobe br_netfilter
    $SUDO tee /etc/sysctl.d/k8s.conf >/dev/null <<CONF
net.bridge.bridge-nf-call-iptables  = 1
net.bridge.bridge-nf-call-ip6tables = 1
net.ipv4.ip_forward                 = 1
CONF
    $SUDO sysctl --system >/dev/null
}

install_packages() {
    if command -v kubeadm >/dev/null && command -v containerd >/dev/null; then
        log "containerd and kubeadm already installed"
        return 0
    fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO -E apt-get update -q
    $SUDO -E apt-get install -y -q containerd apt-transport-https ca-certificates curl gpg
    $SUDO mkdir -p /etc/containerd
    containerd config default | sed -e 's/SystemdCgroup = false/SystemdCgroup = true/' \
        | $SUDO tee /etc/containerd/config.toml >/dev/null
    $SUDO systemctl daemon-reload
    $SUDO systemctl restart containerd
    $SUDO systemctl enable containerd
    $SUDO mkdir -p -m 755 /etc/apt/keyrings
    curl -fsSL "https://pkgs.k8s.io/core:/stable:/v${K8S_VERSION}/deb/Release.key" \
        | $SUDO gpg --dearmor --yes -o /etc/apt/keyrings/kubernetes-apt-keyring.gpg
    echo "deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/v${K8S_VERSION}/deb/ /" \
        | $SUDO tee /etc/apt/sources.list.d/kubernetes.list >/dev/null
    $SUDO -E apt-get update -q
    $SUDO -E apt-get install -y -q kubelet kubeadm kubectl
    $SUDO apt-mark hold kubelet kubeadm kubectl
    $SUDO systemctl enable --now kubelet
}

ca_hash() {
    $SUDO openssl x509 -pubkey -in /etc/kubernetes/pki/ca.crt \
        | openssl pkey -pubin -outform der 2>/dev/null \
        | openssl dgst -sha256 -hex | sed 's/^.* //'
}

report_join_info() {
    report token "$($SUDO kubeadm token create --ttl 24h)"
    report ssl_ca_cert_hash "sha256:$(ca_hash)"
    report certificate_key "$($SUDO kubeadm init phase upload-certs --upload-certs 2>/dev/null | tail -n 1)"
}

admin_token() {
    kubectl_admin -n kube-system get serviceaccount "$ADMIN_SA" >/dev/null 2>&1 \
        || kubectl_admin -n kube-system create serviceaccount "$ADMIN_SA" >/dev/null
    kubectl_admin get clusterrolebinding "$ADMIN_SA" >/dev/null 2>&1 \
        || kubectl_admin create clusterrolebinding "$ADMIN_SA" --clusterrole=cluster-admin \
            --serviceaccount="kube-system:$ADMIN_SA" >/dev/null
    # A long-lived token kept in a Secret (what a VIM registration needs).
    kubectl_admin apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: ${ADMIN_SA}-token
  namespace: kube-system
  annotations:
    kubernetes.io/service-account.name: ${ADMIN_SA}
type: kubernetes.io/service-account-token
YAML
    local token=""
    for _ in $(seq 1 30); do
        token=$(kubectl_admin -n kube-system get secret "${ADMIN_SA}-token" -o jsonpath='{.data.token}' 2>/dev/null || true)
        [[ -n "$token" ]] && break
        sleep 2
    done
    [[ -n "$token" ]] || die "the token of service account $ADMIN_SA did not appear"
    echo "$token" | base64 -d
}

install_pod_network() {
    # Calico, with the pod CIDR of the cluster.
    if kubectl_admin -n kube-system get daemonset calico-node >/dev/null 2>&1; then
        return 0
    fi
    curl -fsSL https://raw.githubusercontent.com/projectcalico/calico/v3.29.3/manifests/calico.yaml \
        | sed -e "s|# - name: CALICO_IPV4POOL_CIDR|- name: CALICO_IPV4POOL_CIDR|" \
              -e "s|#   value: \"192.168.0.0/16\"|  value: \"$POD_CIDR\"|" \
        | kubectl_admin apply -f - >/dev/null
}

case "$STEP" in
    init-master)
        need --node-ip "$NODE_IP"; need --control-plane-endpoint "$ENDPOINT"
        set_proxy; prepare_node; install_packages
        if [[ ! -f /etc/kubernetes/admin.conf ]]; then
            $SUDO kubeadm init --node-name "$NODE_NAME" --apiserver-advertise-address "$NODE_IP" \
                --control-plane-endpoint "$ENDPOINT" --pod-network-cidr "$POD_CIDR" \
                --service-cidr "$SERVICE_CIDR" --upload-certs >&2
        else
            log "the control plane is already initialised"
        fi
        install_pod_network
        report server "https://$ENDPOINT"
        report_join_info
        report bearer_token "$(admin_token)"
        report ssl_ca_cert "$($SUDO base64 -w0 /etc/kubernetes/pki/ca.crt)"
        ;;
    join-master)
        need --node-ip "$NODE_IP"; need --control-plane-endpoint "$ENDPOINT"; need --token "$TOKEN"
        need --ca-cert-hash "$CA_HASH"; need --certificate-key "$CERT_KEY"
        set_proxy; prepare_node; install_packages
        if [[ ! -f /etc/kubernetes/kubelet.conf ]]; then
            $SUDO kubeadm join "$ENDPOINT" --node-name "$NODE_NAME" --token "$TOKEN" \
                --discovery-token-ca-cert-hash "$CA_HASH" --control-plane \
                --certificate-key "$CERT_KEY" --apiserver-advertise-address "$NODE_IP" >&2
        else
            log "this node already belongs to a cluster"
        fi
        ;;
    join-worker)
        need --node-ip "$NODE_IP"; need --control-plane-endpoint "$ENDPOINT"; need --token "$TOKEN"
        need --ca-cert-hash "$CA_HASH"
        set_proxy; prepare_node; install_packages
        if [[ ! -f /etc/kubernetes/kubelet.conf ]]; then
            $SUDO kubeadm join "$ENDPOINT" --node-name "$NODE_NAME" --token "$TOKEN" \
                --discovery-token-ca-cert-hash "$CA_HASH" >&2
        else
            log "this node already belongs to a cluster"
        fi
        ;;
    join-info)
        [[ -f /etc/kubernetes/admin.conf ]] || die "this node is not a master"
        report_join_info
        ;;
    remove-node)
        need --node-name "$NODE_NAME"
        if kubectl_admin get node "$NODE_NAME" >/dev/null 2>&1; then
            kubectl_admin drain "$NODE_NAME" --ignore-daemonsets --delete-emptydir-data \
                --force --timeout=300s >&2 || log "drain of $NODE_NAME incomplete; deleting it anyway"
            kubectl_admin delete node "$NODE_NAME" >&2
        else
            log "node $NODE_NAME is not in the cluster"
        fi
        ;;
    reset)
        if command -v kubeadm >/dev/null; then
            $SUDO kubeadm reset --force >&2
        fi
        ;;
    *) die "unknown step: $STEP" ;;
esac
