#!/usr/bin/env bash
# Runs the ETSI SOL003 v2.6.1 conformance suites (VNFLifecycleManagement-API, VNFIndicator-API,
# VNFFaultManagement-API and
# VNFPackageManagement-API, Robot Framework) against `vnfm serve` and compares every test's
# outcome with tests/conformance/expected.tsv. Exits non-zero when any outcome differs.
#
#   tests/conformance/run.sh                      # everything
#   tests/conformance/run.sh --suite ScaleVNFTask # some suite files only (repeatable)
#   tests/conformance/run.sh --work /tmp/conf     # keep Robot outputs and the server log there
#   tests/conformance/run.sh --update-expected    # rewrite expected.tsv from this run
#
# Environment: VNFM_CONF_VENV (virtualenv location, default ~/.cache/vnfm/conformance-venv),
# VNFM_CONF_CORPUS (the corpus's api-tests/SOL003 folder; default etsi/api-tests/SOL003 of the
# corpus: VNFM_CORPUS_DIR, else ../shared/corpus beside the checkout), PYTHON (default python3, 3.11).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${VNFM_CONF_VENV:-$HOME/.cache/vnfm/conformance-venv}"
corpus="${VNFM_CONF_CORPUS:-${VNFM_CORPUS_DIR:-$root/../shared/corpus}/etsi/api-tests/SOL003}"
python="${PYTHON:-python3}"

if [ ! -d "$corpus/VNFLifecycleManagement-API" ]; then
    echo "conformance: the ETSI suites are not at $corpus (set VNFM_CONF_CORPUS)" >&2
    exit 2
fi

# The virtualenv is rebuilt when requirements.txt changes.
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/robot" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "== conformance: installing Robot Framework into $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$here/requirements.txt"
    echo "$want" > "$stamp"
fi

echo "== conformance: MockServer stand-in self-test"
(cd "$here" && "$venv/bin/python" -m unittest --quiet test_mockserver)

echo "== conformance: building vnfm"
(cd "$root" && cargo build --quiet --locked -p vnfm-cli)
target_dir="$(cd "$root" && cargo metadata --format-version 1 --no-deps | "$python" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"

exec "$venv/bin/python" "$here/conformance.py" \
    --vnfm "$target_dir/debug/vnfm" \
    --robot "$venv/bin/robot" \
    --corpus "$corpus" \
    "$@"
