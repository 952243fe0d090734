# shellcheck shell=bash
# The library of the test services' scripts (sourced, never run): every helper they share is
# written here once; a script of scripts/test-env defines none of these names itself
# (scripts/check-layers.py checks).
#
#   messages     die, log_tail
#   directory    need_dir
#   processes    spawn, alive, check_alive, running_env, stop_processes
#   readiness    wait_for, wait_port, port_open, http_ok
#   variables    write_env, print_var, declared_vars (services.tsv: the one table of them)
#   installing   apt_install, need_program (Debian packages), venv_install (PyPI),
#                cache_work, work_run, go_work, work_done (what is fetched or built into a cache)
#
# The sourcing script sets DIR, its working directory, from its VNFM_*_DIR variable (need_dir
# makes it absolute): logs, pid files and the env file are there. Processes are NAMEs: the
# process spawned as NAME has its pid in $DIR/NAME.pid and its output in $DIR/NAME.log.

TEST_ENV_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Where what the services are built or installed from is kept between runs.
# shellcheck disable=SC2034 # for the sourcing script
VNFM_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/vnfm

# Prints the message, prefixed by the running script's name, on stderr and exits 1.
die() {
    echo "$(basename "$0"): $*" >&2
    exit 1
}

# Prints the last 40 lines of the working directory's file $1 on stderr, if it exists: the
# log of a component that failed to start.
log_tail() {
    local f="$DIR/$1"
    if [[ -f "$f" ]]; then
        echo "---- last lines of $f" >&2
        tail -n 40 "$f" >&2
    fi
}

# Makes sure the working directory is set (by the variable named $1), exists and is absolute.
need_dir() {
    [[ -n "$DIR" ]] || die "set $1 to a working directory (e.g. \$(mktemp -d))"
    mkdir -p "$DIR"
    DIR=$(cd "$DIR" && pwd)
}

# ---- processes

# spawn NAME COMMAND...: starts COMMAND in the background in its own session (so that
# stop_processes ends it with its whole process group), stdin from /dev/null, stdout and
# stderr appended to $DIR/NAME.log; its pid in $DIR/NAME.pid. Environment for the command:
# `spawn NAME env VAR=VALUE... COMMAND...`.
spawn() {
    local name=$1
    shift
    setsid "$@" >>"$DIR/$name.log" 2>&1 </dev/null &
    echo $! >"$DIR/$name.pid"
}

# running_env NAME...: when the env file is there and every process NAME runs (`start` was done
# already), prints the env file and succeeds.
running_env() {
    [[ -f "$DIR/env" ]] || return 1
    local name
    for name in "$@"; do
        alive "$name" || return 1
    done
    cat "$DIR/env"
}

# alive NAME: whether the process of $DIR/NAME.pid runs.
alive() {
    local f="$DIR/$1.pid"
    [[ -f "$f" ]] && kill -0 "$(cat "$f")" 2>/dev/null
}

# check_alive NAME...: dies, with the tail of its log, naming the first of the processes that
# does not run.
check_alive() {
    local name
    for name in "$@"; do
        alive "$name" || { log_tail "$name.log"; die "$name exited while starting (log: $DIR/$name.log)"; }
    done
}

# stop_processes [-w SECONDS] NAME...: ends each process of $DIR/NAME.pid, in this order, with
# its whole process group: TERM, then KILL when the group is still there after SECONDS
# (default 10); removes the pid file. Names without a pid file are skipped.
stop_processes() {
    local tries=40 name pid
    if [[ ${1:-} == -w ]]; then
        tries=$(($2 * 4))
        shift 2
    fi
    for name in "$@"; do
        [[ -f "$DIR/$name.pid" ]] || continue
        pid=$(cat "$DIR/$name.pid")
        kill -TERM -- "-$pid" 2>/dev/null || true
        for _ in $(seq "$tries"); do
            group_running "$pid" || break
            sleep 0.25
        done
        kill -KILL -- "-$pid" 2>/dev/null || true
        # Reaped, when it is this shell's child (bash then prints no notice of its end).
        wait "$pid" 2>/dev/null || true
        rm -f "$DIR/$name.pid"
    done
}

# group_running PGID: whether a process of the process group PGID runs. An exited process
# whose parent has not reaped it yet (a zombie: an orphan waits for init's next round, here up
# to 2 s) holds nothing and does not count.
group_running() {
    ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }'
}

# ---- readiness

# wait_for WHAT SECONDS NAMES CHECK...: runs CHECK (its output discarded) every quarter second
# until it succeeds. Dies, naming WHAT and printing the tail of the log, when one of the
# processes NAMES (comma-separated names of spawn; "" for none) exits first, or when SECONDS
# pass.
wait_for() {
    local what=$1 seconds=$2 names=() name deadline
    IFS=, read -ra names <<<"$3"
    shift 3
    deadline=$((SECONDS + seconds))
    while true; do
        "$@" >/dev/null 2>&1 && return 0
        for name in "${names[@]}"; do
            alive "$name" || {
                log_tail "$name.log"
                die "$name exited while waiting for $what (log: $DIR/$name.log)"
            }
        done
        if ((SECONDS >= deadline)); then
            for name in "${names[@]}"; do log_tail "$name.log"; done
            die "$what: not within $seconds s${names[0]:+ (logs in $DIR: ${names[*]/%/.log})}"
        fi
        sleep 0.25
    done
}

# port_open [ADDRESS] PORT: whether ADDRESS (default 127.0.0.1) accepts a TCP connection on PORT.
port_open() {
    local addr=127.0.0.1
    (($# == 2)) && { addr=$1; shift; }
    # shellcheck disable=SC2016 # the inner shell expands them
    timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$addr" "$1" 2>/dev/null
}

# wait_port NAME PORT [SECONDS]: waits (default 60 s) until the process NAME listens on
# 127.0.0.1:PORT (wait_for).
wait_port() {
    wait_for "$1 listening on port $2" "${3:-60}" "$1" port_open "$2"
}

# http_ok URL [CURL ARGS...]: whether URL answers with a 2xx status.
http_ok() {
    local url=$1
    shift
    curl -sf -o /dev/null --max-time 5 "$@" "$url"
}

# ---- the variables each service gives the tests: services.tsv

# declared_vars SERVICE: the variables services.tsv declares for SERVICE, one a line, in its order.
declared_vars() {
    awk -F '\t' -v s="$1" '$0 !~ /^#/ && $1 == s { print $2 }' "$TEST_ENV_DIR/services.tsv"
}

# Dies unless the names $2... are exactly the variables services.tsv declares for service $1,
# in its order.
check_declared() {
    local service=$1 declared
    shift
    declared=$(declared_vars "$service" | tr '\n' ' ')
    declared=${declared% }
    [[ "$*" == "$declared" ]] ||
        die "service $service gives ${*:-no variables}; services.tsv declares ${declared:-none} (they must agree)"
}

# write_env SERVICE VAR=VALUE...: writes $DIR/env, an `export VAR=VALUE` line a variable, in
# this order, which must be the variables services.tsv declares for SERVICE and no others.
write_env() {
    local service=$1 a names=()
    shift
    for a in "$@"; do names+=("${a%%=*}"); done
    check_declared "$service" "${names[@]}"
    printf 'export %s\n' "$@" >"$DIR/env"
}

# print_var SERVICE VAR VALUE: prints VALUE, the value of the one variable VAR that
# services.tsv declares for SERVICE (the caller exports it: VAR=$(script start)).
print_var() {
    check_declared "$1" "$2"
    echo "$3"
}

# ---- installing

# apt_install [APT-OPTION...] PACKAGE...: installs Debian packages with apt-get (needs root),
# its output on stderr; the package lists are updated and the install tried again when it
# fails (lists missing or stale on a fresh machine). Dies when apt-get cannot run or fails.
apt_install() {
    local pkgs=() a
    for a in "$@"; do [[ $a == -* ]] || pkgs+=("$a"); done
    if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
        die "${pkgs[*]} missing: install the Debian package(s) (apt-get here needs root)"
    fi
    echo "$(basename "$0"): installing ${pkgs[*]} with apt-get" >&2
    local install=(apt-get install -y -qq "$@")
    DEBIAN_FRONTEND=noninteractive "${install[@]}" >&2 ||
        { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive "${install[@]}" >&2; } ||
        die "apt-get could not install ${pkgs[*]}"
}

# need_program "PROGRAM..." [APT-OPTION...] PACKAGE...: the programs (paths, or command names
# looked up in PATH) are there, or the packages are installed (apt_install) to provide them;
# dies when one is missing still.
need_program() {
    local progs=$1
    shift
    has_programs "$progs" && return 0
    apt_install "$@"
    has_programs "$progs" || die "the Debian package(s) $* did not install $progs"
}

has_programs() {
    local p
    for p in $1; do
        if [[ $p == */* ]]; then [[ -x $p ]]; else command -v "$p" >/dev/null; fi || return 1
    done
}

# venv_install VENV PIP-ARGS...: `pip install PIP-ARGS` into the virtual environment VENV
# (made first, with VENV_PYTHON or python3, when it has no pip), quietly, its output on stderr.
venv_install() {
    local venv=$1
    shift
    if [[ ! -x "$venv/bin/pip" ]]; then
        mkdir -p "$(dirname "$venv")"
        "${VENV_PYTHON:-python3}" -m venv "$venv" >&2
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" >&2
}

# cache_work CACHE PREFIX: WORK, a new directory in CACHE (made if missing) where something is
# fetched or built before it is moved into the cache; WORK_STARTED, the time.
cache_work() {
    mkdir -p "$1"
    WORK=$(mktemp -d "$1/$2.XXXXXX")
    WORK_STARTED=$(date +%s)
}

# go_work CACHE WHAT: cache_work for a Go build of WHAT; GO_ENV, the environment that gives it
# Go build and module caches of its own in WORK (several GB for the control plane; they serve
# no later run and go with WORK).
go_work() {
    command -v go >/dev/null || die "Go is needed to build $2 (install golang-go or go.dev/dl)"
    cache_work "$1" build
    # shellcheck disable=SC2034 # for the caller
    GO_ENV=(env GOCACHE="$WORK/go-build" GOMODCACHE="$WORK/mod" GOFLAGS="-buildvcs=false -modcacherw"
        CGO_ENABLED=0 GOWORK=off)
}

# work_run LOG FAILURE COMMAND...: runs COMMAND, its output appended to $WORK/LOG; when it
# fails, prints the log's last lines, removes WORK and dies saying FAILURE.
work_run() {
    local log=$1 failure=$2
    shift 2
    "$@" >>"$WORK/$log" 2>&1 && return 0
    tail -n 40 "$WORK/$log" >&2
    work_done
    die "$failure; the log's end is above"
}

# work_done: removes WORK (a module cache is read-only by design); WORK_CACHES, the sizes of
# the Go caches it held ("<dir> <size>, ..."), and WORK_SECONDS, the time since cache_work.
work_done() {
    # (du fails for a cache that is not there: a fetch has none)
    WORK_CACHES=$(du -sh "$WORK/go-build" "$WORK/mod" 2>/dev/null | awk '{printf "%s %s, ", $2, $1}' || true)
    WORK_CACHES=${WORK_CACHES%, }
    # shellcheck disable=SC2034 # for the caller
    WORK_SECONDS=$(($(date +%s) - WORK_STARTED))
    chmod -R u+w "$WORK" 2>/dev/null || true
    rm -rf "$WORK"
}
