#!/usr/bin/env bash
# Chapter 5, Fig. 8 at the paper's size (N = 64, 10^6 SGD steps) on one CUDA GPU.
#
# First the GPU kernels' tests (tests/sparse/test_sgd_cuda.py, on the device instead of numba's
# simulator); then the whole (lr, m) grid in one process. Results go to $OUT (default ./gpu-out):
# tests.log, run.log, the checkpoint directory ck/ and, when the grid is done,
# sparse_sgd_long_N64_cuda.nc (copy it to book/data/). A run stopped by TIME_LIMIT (seconds) keeps ck/;
# start again with CK=<that directory> to continue. Needs python3 with numba (CUDA target), numpy,
# scipy, xarray, h5netcdf, pytest.
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export NUMBA_ENABLE_CUDASIM=0 PYTHONUNBUFFERED=1 PYTHONPATH=lib${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import numba, numpy; print('numba', numba.__version__, 'numpy', numpy.__version__)"
if [ -n "${CK:-}" ] && [ "$CK" != "$OUT/ck" ]; then cp -r "$CK" "$OUT/ck"; fi
if ! python3 -m pytest -q -x -p no:cacheprovider tests/sparse/test_sgd_cuda.py > "$OUT/tests.log" 2>&1; then
  tail -40 "$OUT/tests.log"; exit 1
fi
tail -2 "$OUT/tests.log"
python3 scripts/sparse_long_sgd.py --backend cuda --N 64 --lrs 0.1 1.0 0.01 10.0 0.001 3.0 0.3 0.03 0.003 \
  --ms 1 4 16 64 256 --seeds 10 --seed 311 --lanes 8 --checkpoint "$OUT/ck" --time-limit "${TIME_LIMIT:-420}" \
  --out "$OUT/sparse_sgd_long_N64_cuda.nc" 2>&1 | tee "$OUT/run.log"
