#!/usr/bin/env bash
# The test suite: installs libtorch on first use (see libtorch-env.sh), then runs every test of the
# workspace. Tests read datasets from GNNAUDIT_DATA (default: ../shared/datasets beside the clone).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/libtorch-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/gnnaudit/target}"
export GNNAUDIT_DATA="${GNNAUDIT_DATA:-$PWD/../shared/datasets}"
if cargo nextest --version >/dev/null 2>&1; then
  # One process per test (.config/nextest.toml), as many at once as there are cores.
  exec cargo nextest run --workspace "$@"
fi
# Without cargo-nextest: one test at a time within each test binary, because libtorch's random
# generator is process-wide and tests that seed it and assert reproducible results interfere
# when the harness runs them as parallel threads of one process.
echo "note: cargo-nextest not found; running the tests one at a time per binary" >&2
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-1}"
exec cargo test --workspace "$@"
