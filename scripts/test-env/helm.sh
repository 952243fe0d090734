#!/usr/bin/env bash
# The Helm SDK C library for the Kubernetes driver's Helm tests: installs the PyPI package
# helm-python-sdk (which ships helm_python/lib/libhelm_c.so, the Helm 4 SDK built as a C
# library) into a cached virtual environment, and prints the library's absolute path.
#
#   export VNFM_HELM_C_LIB=$(scripts/test-env/helm.sh)
#
# The cache is reused across runs (VNFM_HELM_VENV overrides its place); progress goes to
# stderr so stdout is only the path.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/test-env/common.sh
. "$HERE/common.sh"
VERSION="${HELM_PYTHON_SDK_VERSION:-0.2.2}"
VENV="${VNFM_HELM_VENV:-$VNFM_CACHE/helm-python-sdk-$VERSION}"

find_lib() {
  find "$VENV" -path '*/helm_python/lib/libhelm_c.so' -print -quit 2>/dev/null || true
}

LIB=$(find_lib)
if [ -z "$LIB" ]; then
  echo "installing helm-python-sdk $VERSION into $VENV" >&2
  venv_install "$VENV" "helm-python-sdk==$VERSION"
  LIB=$(find_lib)
fi
[ -n "$LIB" ] || die "helm-python-sdk $VERSION did not provide libhelm_c.so"
print_var helm VNFM_HELM_C_LIB "$LIB"
