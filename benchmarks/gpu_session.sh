#!/usr/bin/env bash
# Everything nda owes a GPU, in one call of the device tool (one machine start, ~10 minutes):
#
#   run(command="bash benchmarks/gpu_session.sh", carry=[".whl"])
#
# Set-up as the developers' guide says (the machine has no network: array-api-compat comes as
# a wheel in .whl/, downloaded here once with
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#       --platform manylinux2014_x86_64 -d .whl array-api-compat
# ). Every step has its own time limit and writes its log under $OUT (a folder of its own when
# run elsewhere), so one step that hangs or fails does not cost the others' figures.
# STEPS="tests kit gradients bench" picks steps (default: all).
set -u
OUT=${OUT:-$(mktemp -d)}
STEPS=${STEPS:-"tests kit gradients bench"}
cd "$(dirname "$0")/.."
step() { echo "== $1 ($(date +%T))" | tee -a "$OUT/summary.txt"; }

step setup
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . -e plugins/nda-sim -e plugins/nda-cuda \
  > "$OUT/install.txt" 2>&1 || python3 -c "import nda, nda_sim, nda_cuda" 2>>"$OUT/install.txt" \
  || { echo "install failed and nda is not importable: see install.txt" | tee -a "$OUT/summary.txt"; exit 1; }
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
timeout 120 python3 -m nda info > "$OUT/nda-info.txt" 2>&1
tail -n 20 "$OUT/nda-info.txt" >> "$OUT/summary.txt"

for s in $STEPS; do
  case $s in
    tests)
      step "GPU tests"
      timeout 420 python3 -m pytest -q -p no:cacheprovider -o faulthandler_timeout=60 \
        tests/test_cuda.py tests/test_cuda_workarounds.py tests/test_cuda_fusion.py tests/test_dlpack.py \
        > "$OUT/tests-cuda.txt" 2>&1
      echo "rc=$?" >> "$OUT/tests-cuda.txt"; tail -n 3 "$OUT/tests-cuda.txt" >> "$OUT/summary.txt" ;;
    kit)
      step "conformance kit, cuda against cpu (worker processes over disjoint ops)"
      /usr/bin/time -f "wall %e s" timeout 480 python3 -m nda.testing.conformance cuda --reference cpu --jobs auto \
        --quiet --json "$OUT/kit-cuda-vs-cpu.json" > "$OUT/kit.txt" 2>&1
      echo "rc=$?" >> "$OUT/kit.txt"; tail -n 8 "$OUT/kit.txt" >> "$OUT/summary.txt" ;;
    gradients)
      step "gradient kit on cuda"
      timeout 300 python3 -m nda.testing.conformance cuda --gradients --jobs auto --quiet \
        --json "$OUT/kit-gradients.json" > "$OUT/kit-gradients.txt" 2>&1
      echo "rc=$?" >> "$OUT/kit-gradients.txt"; tail -n 5 "$OUT/kit-gradients.txt" >> "$OUT/summary.txt" ;;
    bench)
      step "benchmarks: nda-cuda against CuPy and PyTorch in the same run"
      timeout 300 python3 -m benchmarks.gpu --json "$OUT/bench-gpu.json" > "$OUT/bench-gpu.txt" 2>&1
      echo "rc=$?" >> "$OUT/bench-gpu.txt"; cat "$OUT/bench-gpu.txt" >> "$OUT/summary.txt"
      step "benchmarks: fused chains (hybridize) on the GPU"
      timeout 240 python3 -m benchmarks.fusion --json "$OUT/bench-fusion.json" > "$OUT/bench-fusion.txt" 2>&1
      echo "rc=$?" >> "$OUT/bench-fusion.txt"; cat "$OUT/bench-fusion.txt" >> "$OUT/summary.txt" ;;
    *) echo "unknown step $s (tests kit gradients bench)" | tee -a "$OUT/summary.txt" ;;
  esac
done
step done
cat "$OUT/summary.txt"
