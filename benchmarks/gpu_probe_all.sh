#!/usr/bin/env bash
# One GPU session: the GPU tests natively, then `kvplan probe --gpu 0` on every bundled model, CHUNK models per
# process (torch, CUDA and Triton start once per chunk); a chunk that dies without its JSON is run again one
# model per process, so that one model's failure cannot stop the others.
#   bash benchmarks/gpu_probe_all.sh OUT_DIR [BLOCKS] [SECONDS_PER_CHUNK] [DTYPES] [CHUNK] [SKIP_PYTEST]
# DTYPES: a space-separated list (default "auto fp8"); MODELS (environment, space-separated) narrows the models.
# Writes OUT_DIR/pytest.log, OUT_DIR/probe-<dtype>.jsonl
# (one `kvplan probe --json` object per process) and OUT_DIR/probe-<dtype>.err (stderr, and the models that did
# not run); prints a summary last.
set -u
out=$1; blocks=${2:-512}; limit=${3:-120}; dtypes=${4:-auto fp8}; chunk=${5:-8}; skip_pytest=${6:-}
mkdir -p "$out"
unset TRITON_INTERPRET
export PYTHONUNBUFFERED=1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name(0))" \
  | tee "$out/env.txt"
if [ -z "$skip_pytest" ]; then
  timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu tests/probe/test_probe_decode.py > "$out/pytest.log" 2>&1
  echo "pytest rc=$?: $(tail -1 "$out/pytest.log")"
fi
if [ -n "${MODELS:-}" ]; then read -r -a models <<< "$MODELS"; else
  mapfile -t models < <(python3 -c "from kvplan.config import bundled_index; print('\n'.join(bundled_index()))"); fi

probe() {  # probe DTYPE SECONDS MODEL...: appends one JSON line; fails when none came
  local dtype=$1 seconds=$2; shift 2
  local args=(); for m in "$@"; do args+=(-m "$m"); done
  local line
  line=$(timeout "$seconds" python3 -m kvplan probe --gpu 0 "${args[@]}" --kv-dtype "$dtype" --blocks "$blocks" \
         --json 2>>"$out/probe-$dtype.err")
  [ -n "$line" ] && echo "$line" | python3 -c "import json,sys; print(json.dumps(json.load(sys.stdin)))" \
    >> "$out/probe-$dtype.jsonl" 2>/dev/null
}

for dtype in $dtypes; do
  touch "$out/probe-$dtype.jsonl" "$out/probe-$dtype.err"  # appended: one OUT_DIR can hold several calls
  for ((i = 0; i < ${#models[@]}; i += chunk)); do
    part=("${models[@]:i:chunk}")
    probe "$dtype" "$limit" "${part[@]}" && continue
    echo "chunk ${part[*]}: no JSON; one model per process" >> "$out/probe-$dtype.err"
    for m in "${part[@]}"; do probe "$dtype" 30 "$m" || echo "$m: no JSON" >> "$out/probe-$dtype.err"; done
  done
done
python3 benchmarks/summarize_probe.py "$out"/probe-*.jsonl | tee "$out/summary.md"
