#!/bin/bash
# Test stand-in for vnfd-samples/vnf-a-k8s-cluster/Scripts/install_k8s_cluster.sh with the
# same interface (subcommands, options, K8S_CLUSTER_INFO report lines). Instead of running
# kubeadm it records "<address reached> <arguments>" in @LOG@ and reports the test
# environment's real control plane (scripts/test-env/kubernetes.sh) as the cluster: its API
# server, CA (and the CA's public-key hash) and a bearer token of the cluster administrator.
#
# Failure injection: while @LOG@.fail-join-worker exists, the first worker to run join-worker
# becomes the broken host (its address is written to @LOG@.broken) and its join-worker fails.
set -eu
LOG="@LOG@"
server=$(echo "${SSH_CONNECTION:-x x local x}" | awk '{print $3}')
printf '%s %s\n' "$server" "$*" >>"$LOG"
step="$1"
if [ "$step" = join-worker ] && [ -e "$LOG.fail-join-worker" ]; then
    if mkdir "$LOG.claim" 2>/dev/null; then
        echo "$server" >"$LOG.broken"
    fi
    if [ "$(cat "$LOG.broken" 2>/dev/null)" = "$server" ]; then
        echo "[preflight] Running pre-flight checks" 
        echo "error execution phase preflight: container runtime is not running on $server" >&2
        exit 1
    fi
fi
report() { echo "K8S_CLUSTER_INFO $1=$2"; }
hash="@CA_HASH@"
case "$step" in
    init-master)
        echo "[init] Using Kubernetes version: v1.33.0"
        report server "@SERVER@"
        report token abcdef.0123456789abcdef
        report ssl_ca_cert_hash "$hash"
        report certificate_key 0011223344556677889900112233445566778899001122334455667788990011
        report bearer_token "@TOKEN@"
        report ssl_ca_cert "@CA_B64@"
        ;;
    join-info)
        report token ghijkl.0123456789abcdef
        report ssl_ca_cert_hash "$hash"
        report certificate_key ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100
        ;;
    join-master | join-worker | remove-node | reset) echo "[$step] done" ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
esac
