#!/usr/bin/env bash
# One-command GPU check for a machine with a CUDA GPU and a CUDA build of libtorch (LIBTORCH):
#   scripts/gpu-check.sh [DEVICE=cuda] [DATASET=cora] [SEEDS=5]
# Verifies that
#   1. `gnnaudit doctor --device DEVICE` passes (autograd and sparse aggregation on the GPU agree
#      with the CPU);
#   2. GAP-EDP (eps 8) and GraphSAGE trained on DEVICE reach the same test accuracy as on the
#      CPU within noise: |mean_gpu - mean_cpu| <= 2 * sqrt(var_cpu/n + var_gpu/n) + 0.01 over
#      SEEDS seeds (the CUDA random generator differs from the CPU's, so runs are not identical);
#   3. and prints the speed ratio (CPU training seconds / GPU training seconds) per method.
# Exit 0 when every check passes, 1 otherwise.
set -euo pipefail
DEVICE="${1:-cuda}"; DATASET="${2:-cora}"; SEEDS="${3:-5}"
cd "$(dirname "$0")/.."
G="${GNNAUDIT_BIN:-scripts/gnnaudit}"  # GNNAUDIT_BIN: an already built binary
"$G" doctor --device "$DEVICE"
status=0
for method in "gap-edp --epsilon 8" "sage"; do
  # shellcheck disable=SC2086
  cpu=$("$G" train --dataset "$DATASET" --method $method --repeats "$SEEDS" --json --no-pld --device cpu)
  # shellcheck disable=SC2086
  gpu=$("$G" train --dataset "$DATASET" --method $method --repeats "$SEEDS" --json --no-pld --device "$DEVICE")
  python3 - "$method" "$cpu" "$gpu" <<'PY' || status=1
import json, statistics as st, sys
method, cpu, gpu = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
a, b = cpu["test_accuracy"]["runs"], gpu["test_accuracy"]["runs"]
n = len(a)
se = ((st.pvariance(a) + st.pvariance(b)) / n) ** 0.5
diff = st.mean(b) - st.mean(a)
ok = abs(diff) <= 2 * se + 0.01
ratio = sum(cpu["train_seconds"]) / max(sum(gpu["train_seconds"]), 1e-9)
print(f"{method}: test accuracy cpu {st.mean(a):.4f}, device {st.mean(b):.4f} "
      f"(diff {diff:+.4f}, allowed {2 * se + 0.01:.4f}) {'same within noise' if ok else 'DIFFERENT'}; "
      f"speed ratio cpu/device {ratio:.2f}x")
sys.exit(0 if ok else 1)
PY
done
exit $status
