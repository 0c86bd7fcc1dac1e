"""A recurrent state is a number of its own (issue 25): `kvplan size Qwen/Qwen3-Next-80B-A3B-Thinking` showed the
linear layers as "0 (0) 0/0 … 0 0" and folded the state per sequence into bytes/sequence with no column;
`kvplan models` listed falcon-mamba at 0 bytes/token and nothing else."""

from __future__ import annotations

import io
import json
from typing import Any

from rich.console import Console

from kvplan.formulas.sizing import kv_cache
from kvplan.render.size import size_payload, size_tables


def draw(parts: list[Any], width: int = 250) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, highlight=False)
    for part in parts:
        console.print(part)
    return buf.getvalue()


def test_size_shows_the_linear_layers_state_in_its_own_columns() -> None:
    payload = size_payload(kv_cache("Qwen/Qwen3-Next-80B-A3B-Thinking"))
    linear = next(g for g in payload.layer_groups if g.kind == "linear")
    # 36 gated-delta-net layers (48, every 4th full attention), bf16, from the bundled config: conv state
    # (kernel 4 - 1) × (2 × 16 key heads × 128 + 32 value heads × 128) × 2 B = 49,152, recurrent state
    # 32 value heads × 128 × 128 × 2 B = 1,048,576; (49,152 + 1,048,576) × 36 = 39,518,208 ("39.5 MB" in the issue)
    assert linear.state_bytes_per_sequence == 39_518_208
    assert payload.state_bytes_per_sequence == linear.state_bytes_per_sequence > 0
    assert payload.state_bytes_per_sequence_per_gpu == linear.state_bytes_per_sequence_per_gpu
    out = draw(size_tables(payload))
    assert "state B/seq" in out and "state B/seq/GPU" in out and "of which state" in out
    row = next(line for line in out.splitlines() if " linear " in line)
    assert f"{linear.state_bytes_per_sequence:,}" in row and "0 (0)" not in row and "0/0" not in row


def test_a_model_without_state_keeps_its_table() -> None:
    payload = size_payload(kv_cache("meta-llama/Llama-3.1-8B"))
    assert payload.state_bytes_per_sequence == 0
    out = draw(size_tables(payload))
    assert "state" not in out


def test_models_lists_the_state_per_sequence(run_cli: Any) -> None:
    code, out, _ = run_cli("models", "--json")
    assert code == 0
    rows = {r["id"]: r for r in json.loads(out)}
    mamba = rows["tiiuae/falcon-mamba-7b"]
    assert mamba["bytes_per_token"] == 0 and mamba["state_bytes_per_sequence"] > 0
    assert mamba["state_bytes_per_sequence"] == size_payload(kv_cache("tiiuae/falcon-mamba-7b")).state_bytes_per_sequence
    assert rows["meta-llama/Llama-3.1-8B"]["state_bytes_per_sequence"] == 0
    code, out, _ = run_cli("models")
    assert "state bytes/seq" in out
    line = next(line for line in out.splitlines() if "falcon-mamba-7b" in line)
    assert f"{mamba['state_bytes_per_sequence']:,}" in line
