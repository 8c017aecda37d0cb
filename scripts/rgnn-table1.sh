#!/usr/bin/env bash
# RGNN Table 1 (Bhaila et al.) with `gnnaudit train`: RGNN and the "GraphSAGE"
# baseline (the same GNN on X', Y': kx = ky = 0, alpha = 0) over eps_x x eps_y, m = 10.
# Usage: scripts/rgnn-table1.sh DATASET REPEATS "EPS_X..." [extra train flags]
# (facebook-pagepage: the paper's best K_x = K_y = 4, l.444).
set -eo pipefail
ds=$1; reps=$2; exs=$3; shift 3
bin=${GNNAUDIT_BIN:-gnnaudit}
for ex in $exs; do
  for ey in 3 2 1 0.5; do
    for variant in rgnn baseline; do
      # The baseline sets its own K_x, K_y (0): drop any --kx/--ky of the extra flags (clap refuses
      # a flag given twice).
      flags=("$@")
      if [ "$variant" = baseline ]; then
        flags=(--kx 0 --ky 0 --alpha 0)
        skip=0
        for a in "$@"; do
          if [ $skip = 1 ]; then skip=0; continue; fi
          case $a in --kx|--ky|--alpha) skip=1 ;; *) flags+=("$a") ;; esac
        done
      fi
      acc=$("$bin" train --dataset "$ds" --method rgnn --epsilon-x "$ex" --epsilon-y "$ey" --seed 123 \
        --repeats "$reps" --threads 1 "${flags[@]}" 2>/dev/null | grep "^test accuracy" || echo "failed (run it alone to see the error)")
      echo "$ds eps_x=$ex eps_y=$ey $variant: $acc"
    done
  done
done
