#!/usr/bin/env bash
# Throwaway PostgreSQL for the store tests: trust auth, 127.0.0.1 only.
#
#   scripts/test-env/postgres.sh start   # initdb (first time) + start; prints the URL
#   scripts/test-env/postgres.sh url     # prints the URL
#   scripts/test-env/postgres.sh stop    # stops the server and removes its data
#   scripts/test-env/postgres.sh halt    # stops the server, keeping its data (start again)
#   scripts/test-env/postgres.sh standby PRIMARY_PORT  # a streaming-replication standby of
#                                        # the server on PRIMARY_PORT (pg_basebackup -R), started
#   scripts/test-env/postgres.sh promote # makes a standby the primary (pg_ctl promote)
#
# Tests read the URL from VNFM_TEST_POSTGRES_URL:
#   export VNFM_TEST_POSTGRES_URL=$(scripts/test-env/postgres.sh start)
#
# Environment: VNFM_PG_DIR (data dir, default /tmp/vnfm-test-postgres), VNFM_PG_PORT
# (default 55432), VNFM_PG_BIN (default: newest /usr/lib/postgresql/*/bin).
# Runs as root (the server then runs as the `postgres` user) or as any other user.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/test-env/common.sh
. "$HERE/common.sh"
DIR="${VNFM_PG_DIR:-/tmp/vnfm-test-postgres}"
PORT="${VNFM_PG_PORT:-55432}"
URL="postgres://postgres@127.0.0.1:${PORT}/postgres"

find_bin() {
    if [[ -n "${VNFM_PG_BIN:-}" ]]; then
        echo "$VNFM_PG_BIN"
        return
    fi
    local d
    d=$(newest_bin)
    if [[ -z "$d" ]]; then
        apt_install postgresql
        d=$(newest_bin)
    fi
    [[ -n "$d" ]] || die "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin"
    echo "$d"
}

# The newest server's directory of programs, if any.
newest_bin() {
    local d
    for d in /usr/lib/postgresql/*/bin; do
        [[ -d $d ]] && echo "$d"
    done | sort -V | tail -n 1 || true
}

# Runs a command as the owner of the data directory.
as_pg() {
    if [[ $(id -u) -eq 0 ]]; then
        # `su` resets the environment; pass the command as one quoted string.
        su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
    else
        "$@"
    fi
}

running() {
    [[ -f "$DIR/data/postmaster.pid" ]] && as_pg "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1
}

# The directory of the server's files, owned by the user it runs as (`postgres`, made if
# missing, when we are root).
make_dir() {
    if [[ $(id -u) -eq 0 ]]; then
        id postgres >/dev/null 2>&1 || useradd --system --home-dir "$DIR" --shell /bin/sh postgres
    fi
    mkdir -p "$DIR"
    if [[ $(id -u) -eq 0 ]]; then
        chown postgres: "$DIR"
        chmod 700 "$DIR"
    fi
}

start() {
    make_dir
    if running; then
        print_var postgres VNFM_TEST_POSTGRES_URL "$URL"
        return
    fi
    if [[ ! -f "$DIR/data/PG_VERSION" ]]; then
        as_pg "$BIN/initdb" -D "$DIR/data" -A trust -U postgres -E UTF8 --locale=C >"$DIR/initdb.log" 2>&1 || {
            cat "$DIR/initdb.log" >&2
            exit 1
        }
    fi
    # A stale pid file from a killed server would block the start.
    rm -f "$DIR/data/postmaster.pid"
    as_pg "$BIN/pg_ctl" -D "$DIR/data" -w -t 60 -l "$DIR/server.log" \
        -o "-p $PORT -c listen_addresses=127.0.0.1 -k $DIR -c max_connections=300 -c fsync=off" \
        start >/dev/null || {
        cat "$DIR/server.log" >&2
        exit 1
    }
    print_var postgres VNFM_TEST_POSTGRES_URL "$URL"
}

stop() {
    halt
    rm -rf "$DIR"
}

halt() {
    if running; then
        as_pg "$BIN/pg_ctl" -D "$DIR/data" -w -m fast stop >/dev/null
    fi
}

# A standby of the server on 127.0.0.1:$1, replicating by streaming (the primary's default
# pg_hba.conf of initdb trusts replication from 127.0.0.1), started on $PORT.
standby() {
    local primary="$1"
    [[ ! -f "$DIR/data/PG_VERSION" ]] || die "$DIR/data exists already"
    make_dir
    as_pg "$BIN/pg_basebackup" -h 127.0.0.1 -p "$primary" -U postgres -D "$DIR/data" -R \
        -X stream -c fast >"$DIR/basebackup.log" 2>&1 || {
        cat "$DIR/basebackup.log" >&2
        exit 1
    }
    start
}

promote() {
    as_pg "$BIN/pg_ctl" -D "$DIR/data" -w -t 60 promote >/dev/null
}

BIN=$(find_bin)
case "${1:-}" in
    start) start ;;
    stop) stop ;;
    halt) halt ;;
    standby)
        [[ -n "${2:-}" ]] || {
            echo "usage: $0 standby PRIMARY_PORT" >&2
            exit 2
        }
        standby "$2"
        ;;
    promote) promote ;;
    url) print_var postgres VNFM_TEST_POSTGRES_URL "$URL" ;;
    *)
        echo "usage: $0 start|stop|halt|standby PRIMARY_PORT|promote|url" >&2
        exit 2
        ;;
esac
