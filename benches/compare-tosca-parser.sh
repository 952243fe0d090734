#!/usr/bin/env bash
# Side-by-side: OpenStack's Python tosca-parser (what Tacker validates VNFDs with) against
# `vnfm package validate`, whole process each, on the same Tacker sample packages, in one run.
#
# Usage: benches/compare-tosca-parser.sh [RUNS] [PACKAGE_DIR...]
#   RUNS          timed runs per tool and package (default 15; the median is reported: with
#                 7, a median moved by about 20 % from one run to the next on a 2-core VM)
#   PACKAGE_DIR   package directories (default: a set of Tacker samples of the corpus: $VNFM_CORPUS_DIR, else ../shared/corpus)
# Installs tosca-parser into a private venv under target/ the first time, and times the release
# build of `vnfm` (what `cargo install --path crates/vnfm-cli` installs).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
runs=${1:-15}
shift || true

venv="$root/target/bench-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "tosca-parser==2.15.*"
fi
cargo build --release --quiet -p vnfm-cli

if [ "$#" -eq 0 ]; then
  corpus="${VNFM_CORPUS_DIR:-$root/../shared/corpus}/tacker"
  set -- "$corpus/v2-vm-basic-lcms-max" "$corpus/v2-vm-userdata-standard" "$corpus/mgmt-k8s-cluster-v1" \
         "$corpus/v1-vm-functional" "$corpus/v2-cnf-instantiate-resources" "$corpus/v1-mgmt-multi-flavour" \
         "$corpus/etsi-getting-started" "$corpus/v1-vm-single-file-vnfd-vnflcm3"
fi
exec "$venv/bin/python" "$root/benches/compare_tosca_parser.py" \
  --runs "$runs" --vnfm "$root/target/release/vnfm" "$@"
