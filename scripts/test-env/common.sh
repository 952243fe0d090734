# Shell helpers shared by the test-env service scripts (sourced, never run). The sourcing
# script sets DIR to its working directory (from its VNFM_*_DIR variable) first.

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
