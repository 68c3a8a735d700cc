#!/usr/bin/env bash
# The GPU benchmarks, in three stages that each finish within ten minutes, from a copy
# of the repository that is not installed; every report and log goes to $OUT
# (default /tmp/gpu_out), with the GPU's name, memory and driver in machine.txt.
#
#   bash experiments/bench_gpu.sh cfr-small   # CFR+ on Leduc, liar's dice, Goofspiel 5, Battleship
#   bash experiments/bench_gpu.sh cfr-big     # CFR+ on Goofspiel 6 and 7 (10^6, 4.8 * 10^7 histories)
#   bash experiments/bench_gpu.sh mcts        # our MCTS against mctx, with waves; the GPU tests
#
# Writes bench_cfr_gpu_small.json, bench_cfr_gpu_big.json and bench_mcts_gpu.json
# (bench_cfr.py's and bench_mcts.py's reports) beside each stage's log. A machine
# without network access installs mctx and OpenSpiel from wheels in .whl (ignored by
# git), downloaded beforehand with
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
#     --platform manylinux_2_17_x86_64 -d .whl mctx==0.0.71 open_spiel==2.0.2 ml-collections
set -euo pipefail
cd "$(dirname "$0")/.."
stage="${1:?usage: bench_gpu.sh cfr-small|cfr-big|mcts}"
out="${OUT:-/tmp/gpu_out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# Run from this copy without installing it: an install maps games/ to jaxsolve.games
# (pyproject.toml's package-dir); here a link inside the copy does.
[ -e jaxsolve/games ] || ln -s ../games jaxsolve/games
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
  python3 -c "import jax; print('jax', jax.__version__, jax.devices())"
} 2>&1 | tee "$out/machine.txt"

# Each stage stops within ten minutes, with room left to write its report.
limit=540
case "$stage" in
  cfr-small)
    timeout "$limit" python3 experiments/bench_cfr.py \
      --games leduc,liars_builder,goofspiel5,battleship --out "$out/bench_cfr_gpu_small.json" \
      2>&1 | tee "$out/cfr_small.log" ;;
  cfr-big)
    timeout "$limit" python3 experiments/bench_cfr.py --jaxsolve-only \
      --games goofspiel6,goofspiel7 --out "$out/bench_cfr_gpu_big.json" \
      2>&1 | tee "$out/cfr_big.log" ;;
  mcts)
    timeout 300 python3 experiments/bench_mcts.py --waves --out "$out/bench_mcts_gpu.json" \
      2>&1 | tee "$out/mcts.log"
    timeout 220 python3 -m pytest -q -x -p no:cacheprovider tests/mcts/ \
      tests/test_contract.py 2>&1 | tail -30 | tee "$out/gpu_tests.log" ;;
  *)
    echo "unknown stage $stage: cfr-small, cfr-big or mcts" >&2
    exit 2 ;;
esac
