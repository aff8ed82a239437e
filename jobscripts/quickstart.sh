#!/usr/bin/env bash
# Set up everything granular-mpm needs on a Debian 12 machine, build it, and
#   scene  run the default scene (2D column collapse on 2 ranks) and compare
#          it with the published law, or
#   test   run the whole test suite (ctest), or
#   build  only set up and build.
# Idempotent: packages already installed and an up-to-date build are reused.
#
# Knobs (environment): MPM_BUILD_DIR (default ./build), MPM_JOBS (make -j),
# MPM_SKIP_APT=1 (never call apt-get; fail if something is missing),
# MPM_NATIVE (ON: -march=native, the default here; OFF: portable code).
set -euo pipefail

action=${1:-scene}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MPM_BUILD_DIR:-$root/build}
jobs=${MPM_JOBS:-$(nproc)}

packages="build-essential cmake pkg-config git libopenmpi-dev openmpi-bin petsc-dev libhdf5-openmpi-dev hdf5-tools libyaml-dev
python3-h5py python3-numpy python3-matplotlib paraview paraview-dev python3-paraview xvfb xauth slurm-wlm munge"

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  if [ "${MPM_SKIP_APT:-0}" = 1 ]; then
    echo "quickstart: missing Debian packages:$missing (MPM_SKIP_APT=1, not installing)" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "quickstart: need root (or sudo) to install:$missing" >&2; exit 1; }
    sudo=sudo
  fi
  echo "quickstart: installing$missing"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
fi

# -march=native: this script builds where it runs.  A build for other
# machines (a cluster's compute nodes) uses the portable default:
# MPM_NATIVE=OFF here, or `cmake --preset portable` (docs/install.md).
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMPM_NATIVE="${MPM_NATIVE:-ON}" >/dev/null
cmake --build "$build" -j "$jobs"

# Open MPI refuses to run as root without these; 3-rank tests on 2 cores
# need oversubscription.
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1

case "$action" in
  build) ;;
  scene)
    out=${MPM_OUTPUT_DIR:-$root/output/default}
    mpiexec -n 2 "$build/granular-mpm" -options_file_yaml "$root/inputs/column_collapse_2d.yaml" -output_dir "$out"
    /usr/bin/python3 "$root/postproc/column_collapse.py" "$out"
    echo "output, XDMF series and deposit plot: $out (deposit.png, particles.xmf, summary.json)"
    ;;
  test)
    ctest --test-dir "$build" --output-on-failure -j 1
    ;;
  *)
    echo "usage: bash jobscripts/quickstart.sh [scene|test|build]" >&2
    exit 2
    ;;
esac
