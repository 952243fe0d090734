#!/bin/bash
# A stand-in for install_k8s_cluster.sh with the same interface: records which host ran
# which step with which arguments, and prints the report lines the real script prints.
set -eu
LOG="@LOG@"
server=$(echo "${SSH_CONNECTION:-x x local x}" | awk '{print $3}')
printf '%s %s\n' "$server" "$*" >>"$LOG"
if [ -e "$LOG.fail-$server" ]; then
    echo "kubeadm join failed: token abcdef.0123456789abcdef rejected via http://u:proxy-pass@proxy:3128" >&2
    exit 1
fi
step="$1"
shift
endpoint=""
while [ $# -gt 0 ]; do
    case "$1" in
        --control-plane-endpoint) endpoint="$2"; shift 2 ;;
        *) shift ;;
    esac
done
report() { echo "K8S_CLUSTER_INFO $1=$2"; }
hash="sha256:$(printf '%064d' 7)"
case "$step" in
    init-master)
        echo "[init] pretending to run kubeadm init"
        report server "https://$endpoint"
        report token abcdef.0123456789abcdef
        report ssl_ca_cert_hash "$hash"
        report certificate_key 0011223344556677889900112233445566778899001122334455667788990011
        report bearer_token fake-bearer-token-123
        report ssl_ca_cert "$(printf -- '-----BEGIN CERTIFICATE-----\nMIIBfakeCA\n-----END CERTIFICATE-----\n' | base64 -w0)"
        ;;
    join-info)
        report token ghijkl.0123456789abcdef
        report ssl_ca_cert_hash "$hash"
        report certificate_key ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100
        ;;
    join-master | join-worker | remove-node | reset) echo "[$step] done" ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
esac
