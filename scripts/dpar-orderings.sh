#!/usr/bin/env bash
# DPAR (Zhang thesis ch.5): the chapter's orderings with the thesis's
# set-up (configs/dpar-paper.toml): one `gnnaudit attack --attack degree-inference` per cell,
# which trains the target and reports its test accuracy and the degree-regression RMSE.
# Usage: scripts/dpar-orderings.sh DATASET "EPSILONS" "SEEDS" [extra flags]
#   e.g. scripts/dpar-orderings.sh cora-ml "4 16" "1 2" --delta 2e-3 --q-prime 0.09 --m-rows 70
# Output, one line per cell: dataset method eps fraction seed test_acc rmse mean_rmse ratio claimed_eps
set -eo pipefail
ds=$1; epss=$2; seeds=$3; shift 3
flags=("$@")
bin=${GNNAUDIT_BIN:-gnnaudit}
methods=${DPAR_METHODS:-"dpar-gm dpar-em0 dpar-em1 dpar-dpsgd dpar-features"}
fractions=${DPAR_FRACTIONS:-0.5}
cell() { # method eps fraction seed
  local extra=()
  case $1 in dpar-gm|dpar-em0|dpar-em1) extra=(--epsilon-pr-fraction "$3") ;; esac
  local out
  if out=$("$bin" attack --attack degree-inference --dataset "$ds" --method "$1" --epsilon "$2" --seed "$4" \
      --threads 1 --json "${extra[@]}" "${flags[@]}" 2>/dev/null); then
    echo "$out" | jq -r --arg ds "$ds" --arg m "$1" --arg e "$2" --arg f "$3" --arg s "$4" \
      '[$ds, $m, $e, $f, $s, .utility.test, .runs[0].details.rmse, .runs[0].details.mean_predictor_rmse,
        .runs[0].details.rmse_ratio, .epsilon] | @tsv'
  else
    echo -e "$ds\t$1\t$2\t$3\t$4\tfailed"
  fi
}
for e in $epss; do
  for m in $methods; do
    for f in $fractions; do
      case $m in dpar-gm|dpar-em0|dpar-em1) ;; *) [ "$f" = "$(echo $fractions | cut -d' ' -f1)" ] || continue ;; esac
      for s in $seeds; do cell "$m" "$e" "$f" "$s" "$@"; done
    done
  done
done
