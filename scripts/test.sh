#!/usr/bin/env bash
# The test suite: installs libtorch on first use (see libtorch-env.sh), then runs every test of the
# workspace. Tests read datasets from GNNAUDIT_DATA (default: ../shared/datasets beside the clone).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/libtorch-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/gnnaudit/target}"
export GNNAUDIT_DATA="${GNNAUDIT_DATA:-$PWD/../shared/datasets}"
exec cargo test --workspace "$@"
