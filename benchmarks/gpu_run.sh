#!/usr/bin/env bash
# One GPU session: native correctness first, then the tile/split sweep and/or the full benchmark.
#   bash benchmarks/gpu_run.sh OUT_DIR [tests|tests-decode] [sweep|variants] [quick|full]
# Each step has its own time limit and logs under OUT_DIR; a step that fails does not stop the next.
set -u
out=$1; shift
mkdir -p "$out"
unset TRITON_INTERPRET
export PYTHONUNBUFFERED=1
python3 -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__, torch.cuda.get_device_name(0))" | tee "$out/env.txt"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$out/env.txt" 2>&1
for step in "$@"; do
  case $step in
    tests) timeout 110 python3 -m pytest -q -p no:cacheprovider tests/probe/test_probe_decode.py tests/probe/test_probe_kernels.py tests/gpu \
             > "$out/pytest.log" 2>&1; echo "pytest rc=$?"; tail -15 "$out/pytest.log";;
    tests-decode) timeout 70 python3 -m pytest -q -p no:cacheprovider tests/probe/test_probe_decode.py \
             -k "deeper or every_format or mla_decode" > "$out/pytest.log" 2>&1; echo "pytest rc=$?"; tail -6 "$out/pytest.log";;
    variants) timeout 185 python3 benchmarks/bench_variants.py --budget-s 140 --out "$out/variants.json" \
             > "$out/variants.txt" 2> "$out/variants.log"; echo "variants rc=$?"; cat "$out/variants.log";;
    sweep) timeout 150 python3 benchmarks/bench_decode.py --sweep all --out "$out/sweep.json" > "$out/sweep.txt" 2> "$out/sweep.log";
           echo "sweep rc=$?"; tail -3 "$out/sweep.log";;
    sweep-fp8) timeout 50 python3 benchmarks/bench_decode.py --sweep fp8 --out "$out/sweep_fp8.json" > "$out/sweep_fp8.txt" 2> "$out/sweep_fp8.log";
           echo "sweep-fp8 rc=$?"; tail -3 "$out/sweep_fp8.log";;
    sweep-splits) timeout 60 python3 benchmarks/bench_decode.py --sweep splits --out "$out/sweep_splits.json" > "$out/sweep_splits.txt" 2> "$out/sweep_splits.log";
           echo "sweep-splits rc=$?"; tail -3 "$out/sweep_splits.log";;
    quick) timeout 200 python3 benchmarks/bench_decode.py --quick --out "$out/bench_quick.json" > "$out/bench_quick.txt" 2> "$out/bench_quick.log";
           echo "quick rc=$?"; tail -3 "$out/bench_quick.log";;
    full)  timeout 200 python3 benchmarks/bench_decode.py --out "$out/bench.json" > "$out/bench.txt" 2> "$out/bench.log";
           echo "full rc=$?"; tail -3 "$out/bench.log";;
  esac
done
