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
        # crates/vnfm-test-env/data/ca.pem: a VIM's CA is checked to be X.509 when registered.
        report ssl_ca_cert "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJoakNDQVN1Z0F3SUJBZ0lVT0RwWnkraENlZm1EOXY1eitlNWhKUTA2YitFd0NnWUlLb1pJemowRUF3SXcKRnpFVk1CTUdBMVVFQXd3TWRtNW1iU0IwWlhOMElFTkJNQ0FYRFRJMk1URXlOekEyTXpjek1sb1lEekl4TWpZeApNVEF6TURZek56TXlXakFYTVJVd0V3WURWUVFEREF4MmJtWnRJSFJsYzNRZ1EwRXdXVEFUQmdjcWhrak9QUUlCCkJnZ3Foa2pPUFFNQkJ3TkNBQVJSL3ZOeWlEbnZhdi84ZHVlZTNsM3hocjVjN0tZWXIxcXdpcmJDOHRCSk5BYU0KUTBQR0JUK29UVWRPSGt4V1UzOTJxU2c3L3V5MDNQdWd1TVFxc1JMbG8xTXdVVEFkQmdOVkhRNEVGZ1FVT0RZUwpwWXNKQ0ZKbnF1UkEvS0J1TkI2bmFvb3dId1lEVlIwakJCZ3dGb0FVT0RZU3BZc0pDRkpucXVSQS9LQnVOQjZuCmFvb3dEd1lEVlIwVEFRSC9CQVV3QXdFQi96QUtCZ2dxaGtqT1BRUURBZ05KQURCR0FpRUFyM253OFR1dnZZTU4KSFUyWXR4TTBIbXMvWUczczgrUTJoYTZSWE5jWkVPZ0NJUURBRlh4Y2FQVEJKTlFrRHpCUFJFTC93SE44dUdDcwoxUktlUHJDb04zR201Zz09Ci0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"
        ;;
    join-info)
        report token ghijkl.0123456789abcdef
        report ssl_ca_cert_hash "$hash"
        report certificate_key ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100
        ;;
    join-master | join-worker | remove-node | reset) echo "[$step] done" ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
esac
