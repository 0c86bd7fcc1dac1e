"""`--explain` takes each layer's formula from kvplan.formulas.per_token, which computed the layout's bytes in the
same call: the dtype rules (sparse MLA at fp8 is vLLM's fp8_ds_mla latent) cannot drift between the two."""

from __future__ import annotations

import kvplan
from kvplan.formulas.per_token import layer_cost
from kvplan.render.explain import explain, explained, group_explain


def test_sparse_mla_at_fp8_is_explained_as_fp8_ds_mla() -> None:
    """DeepSeek-V3.2 at fp8: vLLM's sparse MLA backend stores the fp8_ds_mla latent, 512 × 1 B + 512/128 × 4 B
    scales + 64 × 2 B rope = 656 B, beside the indexer key, 128 × 1 B + 128/128 × 4 B = 132 B: 788 B per layer
    (not the 576 + 132 of a plain fp8 latent). The explanation names that layout and prints the layout's bytes."""
    result = kvplan.kv_cache("deepseek-ai/DeepSeek-V3.2", kv_dtype="fp8", max_model_len=1024)
    (group,) = result.layout.groups
    assert group.bytes_per_token_per_layer == 656 + 132
    explained = group_explain(group, result)
    assert "(fp8_ds_mla)" in explained.formula
    line = next(line for line in explain(result) if "per layer per token" in line)
    assert line.endswith(f"{explained.formula} = {group.bytes_per_token_per_layer:,} B"), line
    assert layer_cost(group.spec, result.layout.kv_dtype).bytes == group.bytes_per_token_per_layer


def test_a_dense_mla_at_fp8_keeps_the_plain_latent() -> None:
    """The rule is sparse MLA's only: DeepSeek-V3 at fp8 is (512 + 64) × 1 B = 576 B."""
    result = kvplan.kv_cache("deepseek-ai/DeepSeek-V3", kv_dtype="fp8", max_model_len=1024)
    line = next(line for line in explain(result) if "per layer per token" in line)
    assert "fp8_ds_mla" not in line and line.endswith("(512 + 64) × 1 B (one latent, no ×2 for V) = 576 B")


def test_every_group_line_prints_the_layouts_bytes() -> None:
    """Every bundled kind of layer (full, sliding, MLA + indexer, linear state, cross-attention): the bytes after
    each formula are the layout's bytes per token per layer, and the report's group texts are the lines' formulas."""
    for model in ("openai/gpt-oss-20b", "deepseek-ai/DeepSeek-V3.2", "Qwen/Qwen3-Next-80B-A3B-Thinking",
                  "openai/whisper-small"):
        result = kvplan.kv_cache(model, kv_dtype="fp8", max_model_len=448)
        groups, lines = explained(result)
        formula_lines = [line for line in lines if "per layer per token" in line]
        for group, texts, line in zip(result.layout.groups, groups, formula_lines, strict=True):
            assert line.endswith(f": {texts.formula} = {group.bytes_per_token_per_layer:,} B"), (model, line)
