#!/usr/bin/env bash
# Beverloo study of the nonsmooth integrator (issue 13; docs/validation.md,
# "Silo discharge"): four openings D = 0.03 .. 0.06 m, two runs at a time,
# then postproc/silo.py fits Q = C (D - k h)^b.
#   bash jobscripts/silo_study.sh [OUTDIR] [2d|3d]
# 2d (default): inputs/silo_2d.yaml, 6-12 cells (about 20 minutes on 2 cores);
# 3d: inputs/silo_3d.yaml at its 1 cm cells, round holes of 3-6 cells, with
# -nonsmooth_solver apgd (about 15 minutes on 2 cores).
# Extra options for every run: MPM_SILO_ARGS (e.g. "-nonsmooth_solver apgd" in 2d);
# other openings: MPM_SILO_OPENINGS (default "0.03 0.04 0.05 0.06" [m]);
# another 3D deck: MPM_SILO_DECK (e.g. silo_3d_quarter.yaml, a quarter of a
# silo 0.3 m wide, with MPM_SILO_OPENINGS="0.045 0.06 0.075 0.09 0.105 0.12",
# MPM_SILO_WINDOW="0.25 0.5" and MPM_SILO_ARGS="-dx 0.0075 -history_interval 1":
# holes of 6-16 cells, about 35 minutes on 2 cores); the steady
# window for postproc/silo.py: MPM_SILO_WINDOW (default "0.2 0.6" in 2d,
# "0.3 0.6" in 3d).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-output/silo_study}
dim=${2:-2d}
exe=${MPM_EXE:-$root/build/granular-mpm}
case "$dim" in 2d | 3d) ;; *) echo "silo_study.sh: the second argument must be 2d or 3d, got '$dim'" >&2; exit 2 ;; esac
mkdir -p "$out"
run() {
  local D=$1 l r
  if [ "$dim" = 3d ]; then
    r=$(python3 -c "print($D / 2)")
    # shellcheck disable=SC2086
    "$exe" -options_file_yaml "$root/inputs/${MPM_SILO_DECK:-silo_3d.yaml}" -nonsmooth_solver apgd -bottom_hole_radius "$r" \
      -output_dir "$out/D$D" ${MPM_SILO_ARGS:-} > "$out/D$D.log" 2>&1
    return
  fi
  l=$(python3 -c "print(0.1 - $D / 2)")
  r=$(python3 -c "print(0.1 + $D / 2)")
  # shellcheck disable=SC2086
  "$exe" -options_file_yaml "$root/inputs/silo_2d.yaml" -integrator nonsmooth -opening_left_hi "$l,0.1" -opening_right_lo "$r,0.08" \
    -output_dir "$out/D$D" ${MPM_SILO_ARGS:-} > "$out/D$D.log" 2>&1
}
read -r -a D <<<"${MPM_SILO_OPENINGS:-0.03 0.04 0.05 0.06}"
(for ((i = 0; i < ${#D[@]}; i += 2)); do run "${D[i]}"; done) &
a=$!
(for ((i = 1; i < ${#D[@]}; i += 2)); do run "${D[i]}"; done) &
b=$!
wait "$a" || { echo "silo_study.sh: a run failed (see $out/D*.log)" >&2; exit 1; }
wait "$b" || { echo "silo_study.sh: a run failed (see $out/D*.log)" >&2; exit 1; }
window=(0.2 0.6)
[ "$dim" = 3d ] && window=(0.3 0.6) # the first grains leave the 3D domain at about 0.15 s
[ -n "${MPM_SILO_WINDOW:-}" ] && read -r -a window <<<"$MPM_SILO_WINDOW"
/usr/bin/python3 "$root/postproc/silo.py" "$out"/D*/ --window "${window[@]}" --json "$out/silo.json" --png "$out/beverloo.png"
