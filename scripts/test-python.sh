#!/usr/bin/env bash
# The Python package's tests: `pip install ./python` with the pip of the torch environment that
# scripts/libtorch-env.sh made (it installs torch and torch_geometric from PyPI; pytest is
# installed here once), then pytest on python/tests against the gnnaudit binary in
# CARGO_TARGET_DIR (brought up to date first). Prints how long the install and the tests took.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/libtorch-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/gnnaudit/target}"
if [ -n "${LIBTORCH:-}" ]; then
  echo "error: the Python tests need the torch environment of scripts/libtorch-env.sh; unset LIBTORCH, or leave GNNAUDIT_PYTHON unset" >&2
  exit 2
fi
PY="$GNNAUDIT_TORCH_DIR/bin/python"
if [ ! -f "$GNNAUDIT_TORCH_DIR/.pytest-installed" ]; then
  echo "gnnaudit: installing pytest from PyPI into $GNNAUDIT_TORCH_DIR (once)" >&2
  "$PY" -m pip install --quiet --disable-pip-version-check pytest
  touch "$GNNAUDIT_TORCH_DIR/.pytest-installed"
fi
if ! "$PY" -c "import torch_geometric" 2>/dev/null; then
  echo "error: torch_geometric is missing from $GNNAUDIT_TORCH_DIR (scripts/libtorch-env.sh installs it; see its warning)" >&2
  exit 2
fi
# The tests compare the package with this binary: never a stale one.
cargo build --quiet --bin gnnaudit
start=$(date +%s)
"$PY" -m pip install --quiet --disable-pip-version-check ./python
echo "gnnaudit: pip install ./python took $(( $(date +%s) - start )) s" >&2
export GNNAUDIT_BIN="$CARGO_TARGET_DIR/debug/gnnaudit"
# From outside the source folder, so that the installed package (not python/gnnaudit) is imported.
cd python/tests
start=$(date +%s)
status=0
"$PY" -m pytest -q -p no:cacheprovider --durations=5 . || status=$?
echo "gnnaudit: the Python tests took $(( $(date +%s) - start )) s" >&2
exit "$status"
