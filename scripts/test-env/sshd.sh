#!/usr/bin/env bash
# Throwaway OpenSSH servers for the SSH and management-driver tests: N "hosts", each an sshd
# of its own on its own loopback address (127.0.1.1, 127.0.1.2, ...), all on one free port,
# so that VNFC addresses without ports can point at them like at VMs.
#
#   scripts/test-env/sshd.sh start [N]   # N hosts (default 4); prints the state directory
#   scripts/test-env/sshd.sh stop        # stops them and removes the state directory
#
# Tests read the state directory from VNFM_TEST_SSHD:
#   export VNFM_TEST_SSHD=$(scripts/test-env/sshd.sh start 4)
#
# Besides them, one more sshd (h0) listens on every address on a port of its own and accepts
# logins from loopback clients only: it answers at any 127.x.y.z address, so VMs whose ports
# have loopback addresses (a Neutron subnet in 127.0.0.0/8) have an SSH server each,
# told apart by the address they were reached at (SSH_CONNECTION).
#
# The state directory holds:
#   hosts          one line per host: "<address> <port> <host key SHA-256 fingerprint>"
#   any_host       "<port> <host key SHA-256 fingerprint>" of the sshd on every address
#   user           the user to log in as with client_key: the current user, or VNFM_SSHD_USER
#   client_key     an ed25519 private key accepted by every host (client_key.pub)
#   known_hosts    the hosts' keys, as OpenSSH writes them ("[address]:port ssh-ed25519 ...")
#   password_user, password   a user that may log in with this password (only when run as root;
#                  one per state directory, removed by stop)
#   h<i>/          each host's config, host key, pid file and log
#
# Environment: VNFM_SSHD_DIR (state directory, default /tmp/vnfm-test-sshd),
# VNFM_SSHD_NET (first three octets of the addresses, default 127.0.1), VNFM_SSHD_USER (when
# run as root: log in with the key as this user, created with /bin/sh as its shell if
# missing, like a VM image's default user; benchmarks use it so that the current user's
# shell start-up files, which run on every SSH command, are not part of the figures).
# Installs openssh-server with apt-get when sshd is missing and we are root.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/test-env/common.sh
. "$HERE/common.sh"
DIR="${VNFM_SSHD_DIR:-/tmp/vnfm-test-sshd}"
NET="${VNFM_SSHD_NET:-127.0.1}"
# The password user is per state directory: two environments started side by side must not
# reset each other's password.
PW_USER="vnfm-ssh-$(printf '%s' "$DIR" | sha256sum | cut -c1-8)"

find_sshd() {
    local s
    s=$(command -v sshd || true)
    [[ -z "$s" && -x /usr/sbin/sshd ]] && s=/usr/sbin/sshd
    if [[ -z "$s" ]]; then
        apt_install openssh-server
        s=/usr/sbin/sshd
    fi
    [[ -x "$s" ]] || die "no sshd binary (install openssh-server)"
    echo "$s"
}

# A port that every test address can bind.
free_port() {
    local addrs=() i
    for ((i = 1; i <= $1; i++)); do addrs+=("$NET.$i"); done
    python3 "$HERE/free_ports.py" 1 "${addrs[@]}"
}

# A free port on every address.
free_any_port() {
    python3 "$HERE/free_ports.py" 1 0.0.0.0
}

stop() {
    if [[ -d "$DIR" ]]; then
        # Each sshd writes its pid file itself (h<i>/sshd.pid) and, as a daemon, leads its own
        # process group (each connection's process a session of its own).
        local names=() h
        for h in "$DIR"/h*/; do
            h=${h%/}
            names+=("${h##*/}/sshd")
        done
        stop_processes "${names[@]}"
        rm -rf "$DIR"
    fi
    if [[ $(id -u) -eq 0 ]] && id "$PW_USER" >/dev/null 2>&1; then
        userdel "$PW_USER" 2>/dev/null || true
    fi
}

start() {
    local n="${1:-4}" sshd port user i h addr
    if (( n < 1 || n > 250 )); then
        echo "sshd.sh: the number of hosts must be between 1 and 250" >&2
        exit 2
    fi
    sshd=$(find_sshd)
    stop
    mkdir -p "$DIR" /run/sshd
    chmod 700 "$DIR"
    user=$(id -un)
    if [[ -n "${VNFM_SSHD_USER:-}" ]]; then
        if [[ $(id -u) -ne 0 ]]; then
            echo "sshd.sh: VNFM_SSHD_USER needs root (it may create the user)" >&2
            exit 2
        fi
        user="$VNFM_SSHD_USER"
        id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --home-dir / --shell /bin/sh "$user"
        # No password, but not locked: sshd without PAM refuses key logins to locked accounts.
        usermod -p "*" "$user"
        # Its sessions start in /; the state directory must be reachable.
        chmod 711 "$DIR"
    fi
    echo "$user" >"$DIR/user"
    ssh-keygen -q -t ed25519 -N '' -C vnfm-test-client -f "$DIR/client_key"
    cp "$DIR/client_key.pub" "$DIR/authorized_keys"
    chmod 644 "$DIR/authorized_keys"
    local password_auth=no
    if [[ $(id -u) -eq 0 ]]; then
        id "$PW_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /bin/sh "$PW_USER"
        python3 -c 'import secrets; print(secrets.token_urlsafe(18))' >"$DIR/password"
        # sshd without PAM checks the hash with crypt(3): SHA-512 works everywhere, yescrypt did not.
        echo "$PW_USER:$(cat "$DIR/password")" | chpasswd -c SHA512
        echo "$PW_USER" >"$DIR/password_user"
        chmod 600 "$DIR/password"
        password_auth=yes
        # The password user's sessions start in /; the tests write under the state directory.
        chmod 711 "$DIR"
    fi
    port=$(free_port "$n")
    : >"$DIR/hosts"
    : >"$DIR/known_hosts"
    for ((i = 1; i <= n; i++)); do
        addr="$NET.$i"
        h="$DIR/h$i"
        mkdir -p "$h"
        ssh-keygen -q -t ed25519 -N '' -C "vnfm-test-host-$i" -f "$h/host_ed25519"
        cat >"$h/sshd_config" <<EOF
Port $port
ListenAddress $addr
HostKey $h/host_ed25519
PidFile $h/sshd.pid
AuthorizedKeysFile $DIR/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication $password_auth
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
MaxStartups 200:30:400
MaxSessions 50
LogLevel INFO
EOF
        "$sshd" -t -f "$h/sshd_config"
        "$sshd" -f "$h/sshd_config" -E "$h/sshd.log"
        echo "$addr $port $(ssh-keygen -l -E sha256 -f "$h/host_ed25519.pub" | awk '{print $2}')" >>"$DIR/hosts"
        echo "[$addr]:$port $(cut -d' ' -f1,2 "$h/host_ed25519.pub")" >>"$DIR/known_hosts"
    done
    # h0: every address, loopback clients only.
    h="$DIR/h0"
    mkdir -p "$h"
    ssh-keygen -q -t ed25519 -N '' -C "vnfm-test-host-any" -f "$h/host_ed25519"
    local any_port
    any_port=$(free_any_port)
    sed -e "s|^Port .*|Port $any_port|" -e "s|^ListenAddress .*|ListenAddress 0.0.0.0|" \
        -e "s|$DIR/h$n/|$h/|g" "$DIR/h$n/sshd_config" >"$h/sshd_config"
    echo "AllowUsers *@127.0.0.0/8" >>"$h/sshd_config"
    "$sshd" -t -f "$h/sshd_config"
    "$sshd" -f "$h/sshd_config" -E "$h/sshd.log"
    echo "$any_port $(ssh-keygen -l -E sha256 -f "$h/host_ed25519.pub" | awk '{print $2}')" >"$DIR/any_host"
    # Wait until every server accepts connections.
    for ((i = 1; i <= n; i++)); do
        wait_for "sshd h$i accepting connections at $NET.$i:$port" 20 "" port_open "$NET.$i" "$port"
    done
    wait_for "sshd h0 accepting connections at 127.0.0.1:$any_port" 20 "" port_open "$any_port"
    print_var sshd VNFM_TEST_SSHD "$DIR"
}

case "${1:-}" in
    start) start "${2:-4}" ;;
    stop) stop ;;
    *)
        echo "usage: $0 start [N] | stop" >&2
        exit 2
        ;;
esac
