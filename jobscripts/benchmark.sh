#!/usr/bin/env bash
# The 3D performance benchmark: inputs/bench_3d.yaml (1,000,000 particles of
# Drucker-Prager sand, quadratic B-splines, APIC, double precision) run for a
# fixed number of steps on 1 and 2 ranks.  For each run it prints the rank
# count, particles, steps, particle-steps per second in total and per core,
# the particle state in bytes per particle and the peak resident memory
# summed over the ranks (all from the run's summary.json), then the speed-up
# of every multi-rank run over the 1-rank run.  See docs/performance.md.
#
# Knobs (environment):
#   MPM_BUILD_DIR      build directory with granular-mpm (default <repo>/build)
#   MPM_BENCH_STEPS    time steps per run (default 30)
#   MPM_BENCH_RANKS    rank counts, space separated (default "1 2")
#   MPM_BENCH_OPTIONS  extra solver options (default none)
#   MPM_BENCH_OUT      directory for the runs' output (default: a temporary
#                      directory, deleted at exit)
#   MPM_BENCH_LOG_VIEW=1  also print the per-phase times of -log_view
#
# The deck cuts the slabs along z (slab_axis: z): the sand block fills only
# x < 0.4 m.  Cut along z the block splits 52/48.  MPM_BENCH_OPTIONS=
# "-slab_axis x" is the long-box case on the default axis: the run starts
# on slabs placed at the seeded particles' quantiles (-balance_initial), so
# it splits the block as well.
#
# Timings need an otherwise idle machine: one rank per core, nothing else
# running (check with `uptime`).
#
# `bash jobscripts/benchmark.sh implicit` is the implicit benchmark instead:
# inputs/bench_implicit_3d.yaml (stiff sand, E = 35 MPa, 311,040 particles)
# run with -integrator explicit and -integrator implicit to the same
# simulated time on each rank count; it prints the steps, mean dt, Newton
# iterations per step, GMRES iterations per Newton iteration, wall time and
# the ratios implicit/explicit.  Knobs: MPM_BENCH_TIME (simulated seconds,
# default 0.01), MPM_BENCH_DT_RATIO (the implicit dt over the explicit
# run's mean dt, default 20), MPM_BENCH_DX (another resolution, e.g.
# 0.016 for 38,880 particles, 0.012 for 92,160), MPM_BENCH_RANKS, MPM_BENCH_OPTIONS (added to
# the implicit runs, e.g. "-implicit_pmat tangent"), MPM_BUILD_DIR,
# MPM_BENCH_OUT.
#
# `bash jobscripts/benchmark.sh snow` is the snow benchmark (issue "Snow"):
# inputs/snowball_wall_3d.yaml (310,248 particles, the seed's parameters, the
# ball hits the wall at 0.019 s) for one frame of 1/24 s, with
# -integrator semi_implicit and -integrator explicit on each rank count; it
# prints steps, mean dt, CR iterations per step and the wall time of the
# frame.  Knobs: MPM_BENCH_TIME (simulated seconds, default one frame),
# MPM_BENCH_INTEGRATORS (default "semi_implicit explicit"),
# MPM_BENCH_RANKS, MPM_BENCH_OPTIONS (added to every run), MPM_BUILD_DIR,
# MPM_BENCH_OUT.
#
# `bash jobscripts/benchmark.sh mixture` is the sand-water benchmark (issue
# "Sand-water mixtures"): inputs/dam_breach_3d.yaml (605,000 particles of
# sand, pore water and free water at dx = 1 cm) for MPM_BENCH_TIME simulated
# seconds (default 0.01) with each of MPM_BENCH_STRESSES (default
# "explicit implicit": -mixture_stress), the implicit runs at
# MPM_BENCH_DT_MAX (default 5e-3 s); it prints dt over the explicit limits
# of the water's sound speed and of the drag, Newton steps and MINRES
# iterations, wall time and wall time per simulated second.  MPM_BENCH_DX
# sets another resolution (0.03: 22,000 particles), MPM_BENCH_K_HAT the
# bed's hydraulic conductivity (the deck's 1e-3 m/s, coarse sand; 1e-5 m/s,
# a fine sand, makes the drag the stiffest term).
#
# `bash jobscripts/benchmark.sh pbd` is the position-based grains' benchmark
# (issue "Position-based granular solver"): inputs/pbd_bench_3d.yaml
# (1,000,000 spheres, 2 substeps x 12 Jacobi sweeps, FleX's granular
# defaults) for MPM_BENCH_STEPS steps (default 10) on each rank count; it
# prints grain-steps per second, grain-iterations (grains x substeps x
# sweeps, pre-stabilization included) per second per core, the halo bytes
# per step, the wall time per simulated second, and the efficiency of
# every multi-rank run against the 1-rank run.  MPM_BENCH_BLOCK (e.g.
# "0.25,0.25,0.25" for 125,000 grains) shrinks the block.
#
# `bash jobscripts/benchmark.sh nonsmooth` is the nonsmooth solver's
# benchmark (issue "Nonsmooth granular MPM"): inputs/silo_3d.yaml at
# MPM_BENCH_DX (default 0.00375 m) with MPM_BENCH_PPC particles per cell and
# axis (default 3): 1,327,104 particles on 32 x 48 x 32 filled cells, the
# size of the seed's silo (Table 1: 1.3e6 particles, 49,774 active nodes).
# It runs MPM_BENCH_STEPS steps (default 10) with each of
# MPM_BENCH_SOLVERS (default "gs apgd") on each rank count, and, with
# MPM_BENCH_WEAK=1, a silo twice as wide on 2 ranks (two openings) for the
# weak scaling of the friction solve.  It prints the friction problem's
# iterations per step, seconds per step and per iteration, seconds per
# frame of 1/96 s (the seed's frame rate) from the mean dt, and core-seconds
# per frame against the seed's 61.5 s per frame on a 2010 quad-core.
#
# `bash jobscripts/benchmark.sh migrate` is the migration benchmark (issue
# "Scale and speed"): inputs/bench_3d.yaml on 2 ranks cut along x on even
# slabs (-slab_axis x -balance_initial false), so the rebalance at step 1
# moves about half the particles from rank 0 to rank 1; MPM_BENCH_REPEAT
# runs (default 3), each printing the megabytes moved, the rate of the
# slowest rank (bytes sent plus received over its migration time), the
# MPMBalance event's time and the peak resident memory (largest rank and
# summed).
# The seed's figure (Table 3, "Snowball smash", the same scene): 3.0e5
# particles, 7.3 min per frame on 8 cores of a 2009 Xeon X5550 (the issue's
# "~2 min" is the table's Snowplow row, 3.9e6 particles at 2.1 min).
set -euo pipefail
mode=${1:-explicit}
case "$mode" in explicit | implicit | snow | mixture | pbd | nonsmooth | migrate) ;; *) echo "usage: bash jobscripts/benchmark.sh [explicit|implicit|snow|mixture|pbd|nonsmooth|migrate]" >&2; exit 2 ;; esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MPM_BUILD_DIR:-$root/build}
case "$build" in /*) ;; *) build=$root/$build ;; esac # relative to the repository root
steps=${MPM_BENCH_STEPS:-30}
read -r -a ranks <<<"${MPM_BENCH_RANKS:-1 2}"
read -r -a options <<<"${MPM_BENCH_OPTIONS:-}"
exe=$build/granular-mpm
python=/usr/bin/python3

[ -x "$exe" ] || { echo "benchmark: $exe not found; build first (jobscripts/quickstart.sh build) or set MPM_BUILD_DIR" >&2; exit 1; }
if [ -n "${MPM_BENCH_OUT:-}" ]; then
  out=$MPM_BENCH_OUT
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi

# Open MPI refuses to run as root without these.
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

if [ "$mode" = migrate ]; then
  echo "migration benchmark: $exe, inputs/bench_3d.yaml on 2 ranks, -slab_axis x -balance_initial false, 3 steps, options: ${options[*]:-none}"
  printf "%4s %10s %14s %16s %18s %16s\n" run "MB moved" "GB/s slowest" "MPMBalance [s]" "peak max rank [MB]" "peak total [MB]"
  for k in $(seq 1 "${MPM_BENCH_REPEAT:-3}"); do
    dir=$out/migrate$k
    rm -rf "$dir"
    mpiexec -n 2 "$exe" -options_file_yaml "$root/inputs/bench_3d.yaml" -slab_axis x -balance_initial false -max_steps 3 -log_view -output_dir "$dir" \
      ${options[@]+"${options[@]}"} >"$out/migrate$k.log" 2>&1 || { echo "benchmark: run $k failed:" >&2; tail -20 "$out/migrate$k.log" >&2; exit 1; }
    mb=$(sed -n 's/.*(\([0-9.e+]*\) MB of particles moved, \([0-9.e+]*\) GB\/s.*/\1/p' "$out/migrate$k.log" | head -1)
    gbs=$(sed -n 's/.*MB of particles moved, \([0-9.e+]*\) GB\/s.*/\1/p' "$out/migrate$k.log" | head -1)
    bal=$(awk '$1 == "MPMBalance" {print $4; exit}' "$out/migrate$k.log")
    peak=$("$python" -c "import json,sys; s=json.load(open(sys.argv[1])); print('%.0f %.0f' % (s['peak_rss_bytes_max_rank']/1e6, s['peak_rss_bytes_total']/1e6))" "$dir/summary.json")
    printf "%4d %10s %14s %16s %18s %16s\n" "$k" "${mb:--}" "${gbs:--}" "${bal:--}" ${peak}
  done
  exit 0
fi

if [ "$mode" = snow ]; then
  simtime=${MPM_BENCH_TIME:-0.0416666666666667}
  read -r -a integs <<<"${MPM_BENCH_INTEGRATORS:-semi_implicit explicit}"
  echo "snow benchmark: $exe, inputs/snowball_wall_3d.yaml to t = $simtime s, ranks: ${ranks[*]}, integrators: ${integs[*]}, options: ${options[*]:-none}"
  for n in "${ranks[@]}"; do
    for integ in "${integs[@]}"; do
      dir=$out/$integ$n
      rm -rf "$dir"
      mpiexec -n "$n" "$exe" -options_file_yaml "$root/inputs/snowball_wall_3d.yaml" -t_end "$simtime" -output_dt "$simtime" -integrator "$integ" -output_dir "$dir" \
        ${options[@]+"${options[@]}"} >"$out/$integ$n.log" 2>&1 || { echo "benchmark: the $n-rank $integ run failed:" >&2; tail -20 "$out/$integ$n.log" >&2; exit 1; }
    done
  done
  "$python" - "$out" "$simtime" "${ranks[@]}" -- "${integs[@]}" <<'EOF'
import json, os, sys

args = sys.argv[1:]
out, simtime = args[0], float(args[1])
ranks = [int(r) for r in args[2:args.index("--")]]
integs = args[args.index("--") + 1:]
SEED = 7.3 * 60 * 8 / 3.0  # Table 3, Snowball smash: core-s per frame per 1e5 particles
print("%6s %14s %10s %7s %10s %8s %10s %16s %18s %8s" % ("ranks", "integrator", "particles", "steps", "mean dt", "CR/step", "wall [s]", "wall/frame [s]", "core-s/frame/1e5p", "x seed"))
for n in ranks:
    for integ in integs:
        with open(os.path.join(out, "%s%d" % (integ, n), "summary.json")) as f:
            s = json.load(f)
        per_frame = s["wall_seconds_stepping"] * (1.0 / 24) / simtime
        cr = s.get("integrator_ksp_its", 0)
        cost = per_frame * n / (s["particles"] / 1e5)
        print("%6d %14s %10d %7d %10.3g %8s %10.1f %16.1f %18.1f %8.1f" % (n, integ, s["particles"], s["steps"], simtime / s["steps"], "%.1f" % (cr / s["steps"]) if cr else "-",
              s["wall_seconds_stepping"], per_frame, cost, SEED / cost))
print("seed (Stomakhin et al. 2013, Table 3, Snowball smash): 3.0e5 particles, 7.3 min per frame on 8 cores: %.0f core-s per frame per 1e5 particles" % SEED)
EOF
  exit 0
fi

if [ "$mode" = pbd ]; then
  steps=${MPM_BENCH_STEPS:-10}
  deck=(-options_file_yaml "$root/inputs/pbd_bench_3d.yaml" -max_steps "$steps" -output_dt 100)
  [ -n "${MPM_BENCH_BLOCK:-}" ] && deck+=(-block_hi "$MPM_BENCH_BLOCK")
  echo "pbd benchmark: $exe, inputs/pbd_bench_3d.yaml, $steps steps, ranks: ${ranks[*]}, block: ${MPM_BENCH_BLOCK:-deck}, options: ${options[*]:-none}"
  for n in "${ranks[@]}"; do
    dir=$out/pbd$n
    rm -rf "$dir"
    mpiexec -n "$n" "$exe" "${deck[@]}" -output_dir "$dir" ${options[@]+"${options[@]}"} >"$out/pbd$n.log" 2>&1 ||
      { echo "benchmark: the $n-rank run failed:" >&2; tail -20 "$out/pbd$n.log" >&2; exit 1; }
  done
  "$python" - "$out" "${ranks[@]}" <<'EOF'
import json, os, sys

out, ranks = sys.argv[1], [int(r) for r in sys.argv[2:]]
print("%6s %10s %6s %10s %14s %24s %14s %12s %10s" % ("ranks", "grains", "steps", "mean dt", "grain-steps/s", "grain-iterations/s/core", "halo B/step", "wall/sim s", "efficiency"))
base = None
for n in ranks:
    with open(os.path.join(out, "pbd%d" % n, "summary.json")) as f:
        s = json.load(f)
    with open(os.path.join(out, "pbd%d" % n, "run.json")) as f:
        opts = json.load(f)["options"].split()
    get = lambda k, d: float(opts[opts.index("-" + k) + 1]) if "-" + k in opts else d
    sweeps = get("pbd_substeps", 2) * (get("pbd_iterations", 12) + get("pbd_stabilization_iterations", 2))
    wall, steps, grains = s["wall_seconds_stepping"], s["steps"], s["particles"]
    rate = grains * steps / wall
    base = base or rate
    halo = s.get("integrator_pbd_halo_bytes", 0) / steps
    print("%6d %10d %6d %10.3g %14.3g %24.3g %14.3g %12.1f %10.2f" % (n, grains, steps, s["simulated_time"] / steps, rate, rate * sweeps / n, halo, wall / s["simulated_time"], rate / n / base))
EOF
  exit 0
fi

if [ "$mode" = nonsmooth ]; then
  steps=${MPM_BENCH_STEPS:-10}
  read -r -a solvers <<<"${MPM_BENCH_SOLVERS:-gs apgd}"
  deck=(-options_file_yaml "$root/inputs/silo_3d.yaml" -dx "${MPM_BENCH_DX:-0.00375}" -fill_ppc "${MPM_BENCH_PPC:-3}" -max_steps "$steps" -output_dt 100 -history_interval 1)
  echo "nonsmooth benchmark: $exe, inputs/silo_3d.yaml, dx ${MPM_BENCH_DX:-0.00375} m, ppc ${MPM_BENCH_PPC:-3}, $steps steps, ranks: ${ranks[*]}, solvers: ${solvers[*]}, weak: ${MPM_BENCH_WEAK:-0}, options: ${options[*]:-none}"
  runs=()
  for s in "${solvers[@]}"; do
    for n in "${ranks[@]}"; do runs+=("$s:$n:1"); done
    [ "${MPM_BENCH_WEAK:-0}" = 1 ] && runs+=("$s:2:2")
  done
  for r in "${runs[@]}"; do
    IFS=: read -r s n w <<<"$r"
    dir=$out/$s${n}w$w
    rm -rf "$dir"
    wide=()
    # twice as wide along x (the slab axis), one opening centred in each half
    [ "$w" = 2 ] && wide=(-domain_hi 0.24,0.3,0.12 -fill_hi 0.24,0.28,0.12 -bottom_plate_hi 0.29,0.1,0.17 -bottom_parts plate,hole,hole2
      -bottom_hole2_shape cylinder -bottom_hole2_center 0.18,0.09,0.06 -bottom_hole2_axis 0,1,0 -bottom_hole2_radius 0.02 -bottom_hole2_half_length 0.05 -slab_axis x)
    mpiexec -n "$n" "$exe" "${deck[@]}" ${wide[@]+"${wide[@]}"} -nonsmooth_solver "$s" -output_dir "$dir" -log_view ${options[@]+"${options[@]}"} >"$out/$s${n}w$w.log" 2>&1 ||
      { echo "benchmark: the run $r failed:" >&2; tail -20 "$out/$s${n}w$w.log" >&2; exit 1; }
  done
  "$python" - "$out" "${runs[@]}" <<'EOF'
import json, os, re, sys

out, runs = sys.argv[1], sys.argv[2:]
print("%6s %5s %5s %10s %12s %6s %9s %8s %8s %12s %9s %13s %7s" % ("solver", "ranks", "width", "particles", "stress nodes", "steps", "its/step", "s/step", "ms/it", "solve s/step", "s/frame", "core-s/frame", "x seed"))
for r in runs:
    s, n, w = r.split(":")
    tag = "%s%sw%s" % (s, n, w)
    with open(os.path.join(out, tag, "summary.json")) as f:
        sm = json.load(f)
    with open(os.path.join(out, tag + ".log")) as f:
        log = f.read()
    m = re.search(r"^MPMDCFPSolve\s+\d+\s+\S+\s+(\S+)", log, re.M)
    solve = float(m.group(1)) if m else float("nan")
    steps, its = sm["steps"], sm["integrator_dcfp_its"]
    wall = sm["wall_seconds_stepping"]
    frame = (1.0 / 96) / (sm["simulated_time"] / steps) * wall / steps
    print("%6s %5s %5s %10d %12d %6d %9.1f %8.2f %8.2f %12.2f %9.1f %13.1f %7.2f" % (s, n, w, sm["particles"], sm["integrator_dcfp_nodes"], steps, its / steps, wall / steps,
          1e3 * solve / max(its, 1), solve / steps, frame, frame * int(n), 61.5 * 4 / (frame * int(n))))
print("seed (Daviet and Bertails-Descoubes 2016, Table 1, Silo): 1.3e6 particles, 49,774 active nodes, 61.5 s per frame of 1/96 s on a 2010 quad-core (246 core-s per frame); the issue's target: 4x per core")
EOF
  exit 0
fi

if [ "$mode" = mixture ]; then
  simtime=${MPM_BENCH_TIME:-0.01}
  read -r -a stresses <<<"${MPM_BENCH_STRESSES:-explicit implicit}"
  deck=(-options_file_yaml "$root/inputs/dam_breach_3d.yaml" -t_end "$simtime" -output_dt "$simtime")
  [ -n "${MPM_BENCH_DX:-}" ] && deck+=(-dx "$MPM_BENCH_DX")
  [ -n "${MPM_BENCH_K_HAT:-}" ] && deck+=(-mixture_hydraulic_conductivity "$MPM_BENCH_K_HAT")
  echo "mixture benchmark: $exe, inputs/dam_breach_3d.yaml to t = $simtime s, ranks: ${ranks[*]}, dx: ${MPM_BENCH_DX:-deck}, k_hat: ${MPM_BENCH_K_HAT:-deck} m/s, stresses: ${stresses[*]}, options: ${options[*]:-none}"
  for n in "${ranks[@]}"; do
    for st in "${stresses[@]}"; do
      dir=$out/$st$n
      rm -rf "$dir"
      extra=(-mixture_stress "$st")
      [ "$st" = implicit ] && extra+=(-dt_max "${MPM_BENCH_DT_MAX:-5e-3}")
      mpiexec -n "$n" "$exe" "${deck[@]}" -output_dir "$dir" "${extra[@]}" ${options[@]+"${options[@]}"} >"$out/$st$n.log" 2>&1 ||
        { echo "benchmark: the $n-rank $st run failed:" >&2; tail -20 "$out/$st$n.log" >&2; exit 1; }
    done
  done
  "$python" - "$out" "$simtime" "${ranks[@]}" -- "${stresses[@]}" <<'EOF'
import json, os, sys

args = sys.argv[1:]
out, simtime = args[0], float(args[1])
ranks = [int(r) for r in args[2:args.index("--")]]
stresses = args[args.index("--") + 1:]
print("%6s %9s %10s %6s %10s %9s %9s %10s %11s %9s %14s" % ("ranks", "stresses", "particles", "steps", "mean dt", "dt/sound", "dt/drag", "Newton/st", "MINRES/Newt", "wall [s]", "wall/sim-s [s]"))
for n in ranks:
    for st in stresses:
        with open(os.path.join(out, "%s%d" % (st, n), "summary.json")) as f:
            s = json.load(f)
        newton, ksp = s.get("integrator_newton_its", 0), s.get("integrator_ksp_its", 0)
        print("%6d %9s %10d %6d %10.3g %9s %9s %10s %11s %9.1f %14.1f" % (n, st, s["particles"], s["steps"], simtime / s["steps"],
              "%.1f" % s["integrator_dt_over_sound"] if newton else "1", "%.1f" % s["integrator_dt_over_drag"] if newton else "-", "%.1f" % (newton / s["steps"]) if newton else "-",
              "%.1f" % (ksp / newton) if newton else "-", s["wall_seconds_stepping"], s["wall_seconds_stepping"] / simtime))
EOF
  exit 0
fi

if [ "$mode" = implicit ]; then
  simtime=${MPM_BENCH_TIME:-0.01}
  ratio=${MPM_BENCH_DT_RATIO:-20}
  deck=(-options_file_yaml "$root/inputs/bench_implicit_3d.yaml" -t_end "$simtime" -output_dt "$simtime")
  [ -n "${MPM_BENCH_DX:-}" ] && deck+=(-dx "$MPM_BENCH_DX")
  echo "implicit benchmark: $exe, inputs/bench_implicit_3d.yaml to t = $simtime s, ranks: ${ranks[*]}, dx: ${MPM_BENCH_DX:-deck}, implicit options: ${options[*]:-none}"
  for n in "${ranks[@]}"; do
    for integ in explicit implicit; do
      dir=$out/$integ$n
      rm -rf "$dir"
      extra=()
      if [ "$integ" = implicit ]; then # dt = ratio x the explicit run's mean step (its stable step, less the landings on output times)
        dt=$("$python" -c 'import json, sys; s = json.load(open(sys.argv[1])); print("%.6g" % (float(sys.argv[2]) * s["simulated_time"] / s["steps"]))' "$out/explicit$n/summary.json" "$ratio")
        extra=(-dt_max "$dt" ${options[@]+"${options[@]}"})
      fi
      mpiexec -n "$n" "$exe" "${deck[@]}" -integrator "$integ" -output_dir "$dir" ${extra[@]+"${extra[@]}"} >"$out/$integ$n.log" 2>&1 ||
        { echo "benchmark: the $n-rank $integ run failed:" >&2; tail -20 "$out/$integ$n.log" >&2; exit 1; }
    done
  done
  "$python" - "$out" "${ranks[@]}" <<'EOF'
import json, os, sys

out, ranks = sys.argv[1], [int(r) for r in sys.argv[2:]]
print("%6s %9s %10s %7s %10s %10s %11s %10s" % ("ranks", "method", "particles", "steps", "dt [s]", "Newton/st", "GMRES/Newt", "wall [s]"))
for n in ranks:
    s = {}
    for integ in ("explicit", "implicit"):
        with open(os.path.join(out, "%s%d" % (integ, n), "summary.json")) as f:
            s[integ] = json.load(f)
        r = s[integ]
        newton, ksp = r.get("integrator_newton_its", 0), r.get("integrator_ksp_its", 0)
        print("%6d %9s %10d %7d %10.3g %10s %11s %10.2f" % (n, integ, r["particles"], r["steps"], r["dt_max"],
              "%.2f" % (newton / r["steps"]) if newton else "-", "%.1f" % (ksp / newton) if newton else "-", r["wall_seconds_stepping"]))
    e, i = s["explicit"], s["implicit"]
    print("   %d rank(s): dt implicit/explicit %.1fx, wall time implicit/explicit %.2fx, dt halvings %d" % (
        n, i["dt_max"] / e["dt_max"], i["wall_seconds_stepping"] / e["wall_seconds_stepping"], i.get("integrator_dt_halvings", 0)))
EOF
  exit 0
fi

echo "benchmark: $exe, inputs/bench_3d.yaml, $steps steps, ranks: ${ranks[*]}, options: ${options[*]:-none}"
for n in "${ranks[@]}"; do
  dir=$out/ranks$n
  rm -rf "$dir"
  mpiexec -n "$n" "$exe" -options_file_yaml "$root/inputs/bench_3d.yaml" -output_dir "$dir" -max_steps "$steps" ${options[@]+"${options[@]}"} -log_view \
    >"$out/ranks$n.log" 2>&1 || { echo "benchmark: the $n-rank run failed:" >&2; tail -20 "$out/ranks$n.log" >&2; exit 1; }
  if [ "${MPM_BENCH_LOG_VIEW:-0}" = 1 ]; then
    echo "-- $n rank(s), -log_view events (time: max over ranks):"
    grep -E '^MPM' "$out/ranks$n.log" | awk -v steps="$steps" '{printf "   %-18s %4d calls %9.3f s %9.1f ms/step\n", $1, $2, $4, 1000 * $4 / steps}'
  fi
done

"$python" - "$out" "${ranks[@]}" <<'EOF'
import json, os, sys

out, ranks = sys.argv[1], [int(r) for r in sys.argv[2:]]
rows = {}
print("%6s %10s %6s %16s %16s %12s %15s" % ("ranks", "particles", "steps", "p-steps/s total", "p-steps/s/core", "bytes/part", "peak RSS [MiB]"))
for n in ranks:
    with open(os.path.join(out, "ranks%d" % n, "summary.json")) as f:
        s = json.load(f)
    rate = s["particle_steps_per_second"]
    rows[n] = rate
    print("%6d %10d %6d %16.4g %16.4g %12d %15.1f" % (n, s["particles"], s["steps"], rate, rate / n, s["state_bytes_per_particle"], s["peak_rss_bytes_total"] / 2**20))
if 1 in rows:
    for n in ranks:
        if n != 1:
            print("speed-up on %d ranks: %.2fx (parallel efficiency %.0f%%)" % (n, rows[n] / rows[1], 100 * rows[n] / rows[1] / n))
EOF
