#!/usr/bin/env bash
# One-command GPU check for a machine with a CUDA GPU and a CUDA build of libtorch (LIBTORCH):
#   scripts/gpu-check.sh [DEVICE=cuda] [DATASET=cora] [SEEDS=5]
# Verifies that
#   1. `gnnaudit doctor --device DEVICE` passes (autograd and sparse aggregation on the GPU agree
#      with the CPU);
#   2. GAP-EDP (eps 8) and GraphSAGE trained on DEVICE reach the same test accuracy as on the
#      CPU within noise: |mean_gpu - mean_cpu| <= 2 * sqrt(var_cpu/n + var_gpu/n) + 0.01 over
#      SEEDS seeds (the CUDA random generator differs from the CPU's, so runs are not identical);
#   3. and prints the speed ratio (CPU training seconds / GPU training seconds) per method;
#   4. an attack against a model trained on DEVICE (mia-metric on GAP-EDP eps 8, and the white-box
#      inversion on GAP-inf, whose gradients cross from the CPU-side attack into the GPU model)
#      reaches the same AUC as on the CPU within noise, by the rule of 2;
#   5. `audit configs/quick.toml --device DEVICE` runs and gives the same verdict per cell and
#      attack as the CPU audit (the planted bugs flagged, the sound methods holding).
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
# 4. Attacks: the model on DEVICE, the adversary's own tensors on the CPU (src/target.rs).
for spec in "gap-edp --epsilon 8 --attack mia-metric" "gap-inf --attack inversion"; do
  # shellcheck disable=SC2086
  cpu=$("$G" attack --dataset "$DATASET" --method $spec --repeats "$SEEDS" --json --device cpu)
  # shellcheck disable=SC2086
  gpu=$("$G" attack --dataset "$DATASET" --method $spec --repeats "$SEEDS" --json --device "$DEVICE")
  python3 - "$spec" "$cpu" "$gpu" "$SEEDS" <<'PY' || status=1
import json, sys
spec, cpu, gpu, n = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), int(sys.argv[4])
se = ((cpu["auc_std"] ** 2 + gpu["auc_std"] ** 2) / n) ** 0.5
diff = gpu["auc"] - cpu["auc"]
ok = abs(diff) <= 2 * se + 0.01
print(f"attack {spec}: AUC cpu {cpu['auc']:.4f}, device {gpu['auc']:.4f} (diff {diff:+.4f}, "
      f"allowed {2 * se + 0.01:.4f}) {'same within noise' if ok else 'DIFFERENT'}")
sys.exit(0 if ok else 1)
PY
done
# 5. The audit: same verdicts on both devices.
out=$(mktemp -d)
"$G" audit configs/quick.toml --device cpu --out "$out/cpu" >/dev/null
"$G" audit configs/quick.toml --device "$DEVICE" --out "$out/gpu" >/dev/null
python3 - "$out/cpu/report.json" "$out/gpu/report.json" <<'PY' || status=1
import json, sys
def verdicts(path):
    r = json.load(open(path))
    return {(s.get("dataset"), s.get("method"), str(s.get("epsilon")), a.get("attack")): a.get("verdict")
            for s in r.get("summary", []) for a in s.get("attacks", [])}
a, b = verdicts(sys.argv[1]), verdicts(sys.argv[2])
same = a == b and len(a) > 0
print(f"audit quick.toml: {len(a)} summary verdicts, {'the same on both devices' if same else 'DIFFERENT'}")
for k in sorted(set(a) | set(b), key=str):
    if a.get(k) != b.get(k):
        print(f"  {k}: cpu {a.get(k)}, device {b.get(k)}")
sys.exit(0 if same else 1)
PY
exit $status
