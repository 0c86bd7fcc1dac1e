"""The formula text `--explain` prints comes from the code that computes the bytes (kvplan.formulas.per_token):
evaluated as arithmetic it gives those bytes, for every KV dtype scheme (tests/render/test_explain.py: the
explanation prints that text and those bytes)."""

from __future__ import annotations

import math
import re

import pytest

from kvplan.dtypes import KV_DTYPE_NAMES, resolve_kv_dtype
from kvplan.errors import InputError
from kvplan.formulas.per_token import StateDtypes, part_cost, state_cost
from kvplan.specs import FullAttn, LinearState, MLAAttn

# Words and tags around the numbers: dropped before the text is evaluated.
TAGS = re.compile(r"\((?:one latent, no ×2 for V|indexer key, any KV dtype|fp8_ds_mla)\)|\[\w+\]")
WORDS = re.compile(r"\b(?:B|scales?|rope|fp32|fp8|conv elements|recurrent elements)\b")


def evaluate(formula: str) -> float:
    """`8 × (128 + 128) × (1 B + 2 B / 64 scale)` -> 2112.0: the formula as arithmetic, its words dropped."""
    text = WORDS.sub("", TAGS.sub("", formula)).replace("×", "*").replace(",", "")
    assert re.fullmatch(r"[\d\s.+*/()]+", text), (formula, text)  # nothing but numbers and operators is evaluated
    return float(eval(text, {"__builtins__": {}}))  # checked above: digits, spaces and + * / ( ) only


def kv_dtypes() -> list[str]:
    return [name for name in KV_DTYPE_NAMES if name != "auto"]


@pytest.mark.parametrize("name", kv_dtypes())
@pytest.mark.parametrize(("heads", "head_dim", "v_head_dim"), [(8, 128, 128), (1, 64, 64), (4, 192, 128), (16, 256, 0)])
def test_an_attention_formula_gives_its_bytes(name: str, heads: int, head_dim: int, v_head_dim: int) -> None:
    dtype = resolve_kv_dtype(name, "bf16", quant_group=64)
    try:
        cost = part_cost(FullAttn(num_kv_heads=heads, head_dim=head_dim, v_head_dim=v_head_dim), dtype)
    except InputError:  # fp8_ds_mla is an MLA layout: K/V heads refuse it
        assert dtype.scale == "ds_mla"
        return
    assert math.ceil(evaluate(cost.formula)) == cost.bytes, cost


@pytest.mark.parametrize("name", kv_dtypes())
@pytest.mark.parametrize(("rank", "rope"), [(512, 64), (256, 64), (384, 64)])
@pytest.mark.parametrize("sparse", [False, True])
def test_an_mla_formula_gives_its_bytes(name: str, rank: int, rope: int, sparse: bool) -> None:
    dtype = resolve_kv_dtype(name, "bf16", quant_group=64)
    try:
        cost = part_cost(MLAAttn(kv_lora_rank=rank, qk_rope_head_dim=rope, sparse=sparse), dtype)
    except InputError:  # per-head scales have no heads to scale in one latent
        assert dtype.scale == "per_token_head"
        return
    assert math.ceil(evaluate(cost.formula)) == cost.bytes, cost


def test_the_nvfp4_latent_counts_its_scales() -> None:
    """Before the text moved beside the bytes it said (512 + 64) × 0.5 B = 288 and printed 324 B: the scales
    (one 1-byte scale per 16 values: 576 / 16 = 36 B) were in the bytes and missing from the text."""
    cost = part_cost(MLAAttn(kv_lora_rank=512, qk_rope_head_dim=64), resolve_kv_dtype("nvfp4", "bf16"))
    assert cost.bytes == 324 and "576/16 × 1 B scales" in cost.formula


@pytest.mark.parametrize(("conv", "ssm"), [("bf16", None), ("bf16", "fp32"), ("fp32", "fp32"), ("fp8", "bf16")])
def test_a_state_formula_gives_its_bytes(conv: str, ssm: str | None) -> None:
    spec = LinearState(conv_kernel=4, conv_channels=8192, num_state_heads=32, state_rows=128, state_cols=128)
    dtypes = StateDtypes(resolve_kv_dtype(conv, "bf16"), None if ssm is None else resolve_kv_dtype(ssm, "bf16"))
    cost = state_cost(spec, dtypes)
    assert evaluate(cost.formula) == cost.bytes, cost
