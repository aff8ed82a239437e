#!/usr/bin/env bash
# Beverloo study of the nonsmooth integrator (issue 13; docs/validation.md,
# "Silo discharge"): inputs/silo_2d.yaml at openings D = 0.03 .. 0.06 m,
# two runs at a time, then postproc/silo.py fits Q = C (D - k h)^b.
#   bash jobscripts/silo_study.sh [OUTDIR]     (about 20 minutes on 2 cores)
# Extra options for every run: MPM_SILO_ARGS (e.g. "-nonsmooth_solver apgd").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-output/silo_study}
exe=${MPM_EXE:-$root/build/granular-mpm}
mkdir -p "$out"
run() {
  local D=$1 l r
  l=$(python3 -c "print(0.1 - $D / 2)")
  r=$(python3 -c "print(0.1 + $D / 2)")
  # shellcheck disable=SC2086
  "$exe" -options_file_yaml "$root/inputs/silo_2d.yaml" -integrator nonsmooth -opening_left_hi "$l,0.1" -opening_right_lo "$r,0.08" \
    -output_dir "$out/D$D" ${MPM_SILO_ARGS:-} > "$out/D$D.log" 2>&1
}
(run 0.03; run 0.05) &
(run 0.04; run 0.06) &
wait
/usr/bin/python3 "$root/postproc/silo.py" "$out"/D*/ --json "$out/silo.json" --png "$out/beverloo.png"
