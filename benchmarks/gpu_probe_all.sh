#!/usr/bin/env bash
# One GPU session: the GPU tests natively, then `kvplan probe --gpu 0` on every bundled model (KV dtype auto and
# fp8), one process per model so that one model's failure cannot stop the others.
#   bash benchmarks/gpu_probe_all.sh OUT_DIR [BLOCKS] [SECONDS_PER_MODEL]
# Writes OUT_DIR/pytest.log, OUT_DIR/probe-<dtype>.jsonl (one `kvplan probe --json` object per model) and
# OUT_DIR/probe-<dtype>.err (stderr lines of models that did not run); prints a summary last.
set -u
out=$1; blocks=${2:-512}; limit=${3:-20}
mkdir -p "$out"
unset TRITON_INTERPRET
export PYTHONUNBUFFERED=1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name(0))" \
  | tee "$out/env.txt"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu tests/probe/test_probe_decode.py > "$out/pytest.log" 2>&1
echo "pytest rc=$?: $(tail -1 "$out/pytest.log")"
models=$(python3 -c "from kvplan.config import bundled_index; print('\n'.join(bundled_index()))")
for dtype in auto fp8; do
  : > "$out/probe-$dtype.jsonl"; : > "$out/probe-$dtype.err"
  for m in $models; do
    line=$(timeout "$limit" python3 -m kvplan probe --gpu 0 -m "$m" --kv-dtype "$dtype" --blocks "$blocks" --json \
           2>>"$out/probe-$dtype.err"); rc=$?
    if [ -n "$line" ] && echo "$line" | python3 -c "import json,sys; print(json.dumps(json.load(sys.stdin)))" \
         >> "$out/probe-$dtype.jsonl" 2>/dev/null; then :; else echo "$m: exit $rc" >> "$out/probe-$dtype.err"; fi
  done
done
python3 benchmarks/summarize_probe.py "$out"/probe-*.jsonl | tee "$out/summary.md"
