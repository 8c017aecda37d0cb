#!/usr/bin/env bash
# The test suite: installs libtorch on first use (see libtorch-env.sh), then runs every test of the
# workspace. Tests need no data beside the repository: cora ships in tests/fixtures; tests on larger
# graphs read GNNAUDIT_DATA or ~/.cache/gnnaudit/datasets (`gnnaudit datasets fetch NAME`) and say
# SKIPPED when their graph is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/libtorch-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/gnnaudit/target}"
# cargo-nextest runs one process per test, all cores busy. Without it, install it from source once
# (a few minutes) unless GNNAUDIT_NO_INSTALL=1; if that fails too, fall back to cargo test.
if ! cargo nextest --version >/dev/null 2>&1 && [ "${GNNAUDIT_NO_INSTALL:-0}" != 1 ]; then
  echo "note: cargo-nextest not found; installing it (cargo install cargo-nextest --locked)" >&2
  cargo install cargo-nextest --locked --quiet >&2 \
    || echo "warning: could not install cargo-nextest; falling back to cargo test" >&2
fi
# The Rust tests first; their failure fails the script, after the Python tests have run too.
status=0
if cargo nextest --version >/dev/null 2>&1; then
  # One process per test (.config/nextest.toml), as many at once as there are cores.
  cargo nextest run --workspace "$@" || status=$?
else
  # Without cargo-nextest: one test at a time within each test binary, because libtorch's random
  # generator is process-wide and tests that seed it and assert reproducible results interfere
  # when the harness runs them as parallel threads of one process.
  echo "note: running the tests with cargo test, one at a time per binary" >&2
  RUST_TEST_THREADS="${RUST_TEST_THREADS:-1}" cargo test --workspace "$@" || status=$?
fi
# The Python package (python/): installed into the torch environment by its pip, as the README
# says, then its pytest suite, which compares it with the CLI built above. GNNAUDIT_PYTHON=0
# skips it; with a libtorch of your own (LIBTORCH) there is no torch environment to install into.
if [ "${GNNAUDIT_PYTHON:-1}" = 0 ]; then
  echo "note: the Python package's tests were skipped (GNNAUDIT_PYTHON=0)" >&2
elif [ -n "${LIBTORCH:-}" ] && [ "${GNNAUDIT_PYTHON:-}" != 1 ]; then
  echo "note: the Python package's tests were skipped: they need the torch environment of scripts/libtorch-env.sh, not LIBTORCH" >&2
else
  scripts/test-python.sh || { rc=$?; [ "$status" != 0 ] || status=$rc; }
fi
exit "$status"
