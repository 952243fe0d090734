#!/usr/bin/env bash
# The store's and the REST server's targets (docs/performance.md, "REST server, in process"),
# measured in one command: median [min-max] of RUNS runs of `api_load` on a fresh database
# each, then one line per target with the figure it asks for.
#
# Usage: benches/targets.sh [RUNS]
#   RUNS   runs of each measurement (default 3)
# Environment:
#   VNFM_TARGETS_SECONDS   seconds of each measuring phase (default 10)
#   VNFM_TARGETS_MILLION   0 skips the 1,000,000-instance PostgreSQL run (seeding and export
#                          take several minutes); run once whatever RUNS is
#   VNFM_PG_DIR, VNFM_PG_PORT, VNFM_PG_BIN
#                          the PostgreSQL test server (scripts/test-env/postgres.sh), started
#                          here in a directory of its own and stopped at the end
#
# Every figure is measured without any response cache, with the load generator in the
# server's process (the two share the cores). Raw outputs are kept in the printed directory.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
seconds=${VNFM_TARGETS_SECONDS:-10}
work=$(mktemp -d /tmp/vnfm-targets.XXXXXX)
chmod 755 "$work" # the PostgreSQL server runs as its own user
export VNFM_PG_DIR=${VNFM_PG_DIR:-$work/postgres}
export VNFM_PG_PORT=${VNFM_PG_PORT:-55466}
pg_started=""
cleanup() {
    if [[ -n "$pg_started" ]]; then scripts/test-env/postgres.sh stop >/dev/null 2>&1 || true; fi
    rm -rf "$work/db"
}
trap cleanup EXIT
echo "raw outputs: $work"

cargo bench -p vnfm-api --bench api_load --no-run 2>"$work/build.log" \
    || { cat "$work/build.log"; exit 1; }
bench=$PWD/$(sed -n 's/.*Executable benches\/api_load.rs (\(.*\))/\1/p' "$work/build.log" | tail -n 1)
[[ -x "$bench" ]] || { cat "$work/build.log"; echo "api_load was not built" >&2; exit 1; }

# api_load NAME [VAR=VALUE ...]: one run, output kept as $work/NAME.log.
api_load() {
    local name=$1
    shift
    rm -rf "$work/db" && mkdir -p "$work/db"
    echo "  $name" >&2
    (cd crates/vnfm-api && env VNFM_LOAD_SECONDS="$seconds" "$@" "$bench" --bench) \
        >"$work/$name.log" 2>&1 || { tail -n 20 "$work/$name.log"; exit 1; }
}

# pick FILES PATTERN SED: the values SED extracts from the lines of FILES matching PATTERN.
pick() {
    local pattern=$2 expr=$3
    # shellcheck disable=SC2086
    grep -h -- "$pattern" $1 | sed -n -E "s/$expr/\1/p"
}

# summary: "median [min-max]" of the numbers on standard input ("-" when there are none).
summary() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "-"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        if (NR == 1) printf "%g\n", m; else printf "%g [%g-%g]\n", m, v[1], v[NR]
    }'
}

rate='.*= ([0-9.]+) (requests|cycles)\/s.*'
p99='.*p99 ([0-9.]+) ms.*'
median='.*median ([0-9.]+) ms.*'
mib='.*: ([0-9.]+) MiB.*'

echo "SQLite, 50,000 instances, $runs runs:" >&2
for r in $(seq "$runs"); do
    api_load "sqlite-$r" VNFM_LOAD_STORE_URL="sqlite://$work/db/load.db"
done
echo "SQLite, open loop at 5,000 pages/s, $runs rounds:" >&2
api_load sqlite-open-loop VNFM_LOAD_STORE_URL="sqlite://$work/db/load.db" \
    VNFM_LOAD_AB_ROUNDS="$runs" VNFM_LOAD_RATE=5000 VNFM_LOAD_AB_PATHS=stored VNFM_LOAD_LIST_ONLY=1

pg_url=$(scripts/test-env/postgres.sh start)
pg_started=yes
pg_fresh() {
    psql -q -v ON_ERROR_STOP=1 "$pg_url" -c "DROP DATABASE IF EXISTS vnfm_targets" \
        -c "CREATE DATABASE vnfm_targets" >/dev/null 2>>"$work/psql.log"
    echo "${pg_url%/*}/vnfm_targets"
}
echo "PostgreSQL, 50,000 instances, $runs runs:" >&2
for r in $(seq "$runs"); do
    api_load "postgres-$r" VNFM_LOAD_STORE_URL="$(pg_fresh)"
done
if [[ "${VNFM_TARGETS_MILLION:-1}" != 0 ]]; then
    echo "PostgreSQL, 1,000,000 instances, one run (seeding and export take minutes):" >&2
    api_load postgres-million VNFM_LOAD_STORE_URL="$(pg_fresh)" VNFM_LOAD_INSTANCES=1000000 \
        VNFM_LOAD_SEEDERS=16 VNFM_LOAD_EXPORT=1 VNFM_LOAD_SKIP_CYCLES=1 \
        VNFM_LOAD_AB_ROUNDS=1 VNFM_LOAD_RATE=2000 VNFM_LOAD_AB_PATHS=stored
fi
echo "idle server:" >&2
benches/server-rss.sh 30 >"$work/idle-rss.log" 2>&1

sq="$work/sqlite-[0-9]*.log"
pg="$work/postgres-[0-9]*.log"
million="$work/postgres-million.log"
row() { printf '| %s | %s | %s |\n' "$1" "$2" "$3"; }
echo
echo "| target | asks for | measured: median [min-max] |"
echo "|---|---|---|"
row "distinct filtered pages, 50,000 instances, 200 clients (SQLite), closed loop" "5,000 req/s" \
    "$(pick "$sq" '200 clients' "$rate" | summary) req/s, p99 $(pick "$sq" '200 clients' "$p99" | summary) ms"
row "same, 5,000 req/s offered over 200 connections, open loop" "p99 under 20 ms" \
    "served $(pick "$work/sqlite-open-loop.log" 'open loop' "$rate" | summary) req/s, p99 $(pick "$work/sqlite-open-loop.log" 'open loop' "$p99" | summary) ms"
row "same, 1 client" "-" \
    "$(pick "$sq" ' 1 clients' "$rate" | summary) req/s, p99 $(pick "$sq" ' 1 clients' "$p99" | summary) ms"
row "(cont,vnfInstanceName,...), first page, many / one match" "under 20 ms" \
    "$(pick "$sq" 'many matches' "$median" | summary) / $(pick "$sq" 'one match' "$median" | summary) ms"
row "filter on a member with no column, no match, whole answer" "-" \
    "$(pick "$sq" 'no column' "$median" | summary) ms"
for clients in polling notified; do
    for n in 1 8 32; do
        row "cycles over REST, SQLite, $clients client, $n instance(s)" \
            "$([[ $n == 32 ]] && echo "1,000/s" || echo "32 not below 1")" \
            "$(pick "$sq" "$clients, $n instance" "$rate" | summary) cycles/s"
    done
done
for clients in polling notified; do
    row "cycles over REST, PostgreSQL, $clients client, 32 instances" "500/s" \
        "$(pick "$pg" "$clients, 32 instance" "$rate" | summary) cycles/s"
done
if [[ -f "$million" ]]; then
    row "1,000,000 instances (PostgreSQL), distinct filtered page, 1 client" "p99 under 50 ms" \
        "p99 $(pick "$million" ' 1 clients' "$p99" | summary) ms"
    row "same, 2,000 req/s offered over 200 connections, open loop" "p99 under 50 ms" \
        "served $(pick "$million" 'open loop' "$rate" | summary) req/s, p99 $(pick "$million" 'open loop' "$p99" | summary) ms"
    row "full export of 1,000,000 instances" "constant memory" \
        "$(pick "$million" '^export: [0-9]* instances (' '.* in ([0-9.]+) s = .*' | summary) s; RSS $(pick "$million" '^export: .*, RSS' '.*RSS ([0-9.]+) MiB.*' | summary) MiB along the way"
fi
row "RSS, idle server" "under 50 MiB" "$(pick "$work/idle-rss.log" '^after' '.*VmRSS ([0-9.]+) MiB.*' | tail -n 1) MiB"
row "RSS with 50,000 instances after list load (server and generator)" "under 150 MiB" \
    "$(pick "$sq" 'RSS after list load' "$mib" | summary) MiB"
row "RSS after the cycles" "-" "$(pick "$sq" 'RSS after cycles' "$mib" | summary) MiB"
echo
echo "Flat memory over 100,000 cycles: VNFM_LOAD_SOAK_CYCLES=100000 cargo bench -p vnfm-api --bench api_load"
