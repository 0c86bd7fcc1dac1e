"""How each vLLM release pages Mamba / linear-attention states, rule by rule (the rows' fields; the oracle
fixtures of tests/data/vllm-oracle-releases cover the same rules record by record).

Blocks one request reserves per Mamba group (MambaSpec.max_memory_usage_bytes): 1 without prefix caching,
2 in "align" mode (0.15.0 v1/kv_cache_interface.py:297-298), + 1 prefill checkpoint block for Mamba-2 layers
from 0.32 (0.32.0 model_executor/layers/mamba/mamba_mixer2.py:1100-1108).
"""

from __future__ import annotations

from typing import Any

import pytest
from plan_helpers import GIB, plan

from kvplan.engines import Settings
from kvplan.errors import InputError


def _state_blocks(p: Any) -> int:
    return next(g.blocks_per_request for g in p.groups if g.kind == "mamba")


@pytest.mark.parametrize(("release", "blocks"), [
    ("0.27", 1),  # hybrids default to no prefix caching (0.26-0.27 engine/arg_utils.py: `and not is_hybrid`)
    ("0.28", 2),  # on by default (0.28.0 engine/arg_utils.py:2650), align mode (models/config.py:602-604)
    ("0.31", 2), ("0.32", 3), ("0.33", 3),  # Mamba-2 checkpoint block from 0.32
])
def test_granite_hybrid_state_blocks_by_release(model: Any, release: str, blocks: int) -> None:
    p = plan(model, "ibm-granite/granite-4.0-tiny-preview", f"vllm@{release}", 40 * GIB, max_model_len=32768)
    assert _state_blocks(p) == blocks


@pytest.mark.parametrize(("release", "blocks"), [
    ("0.14", 1),  # 0.14 turns prefix caching off for a model without Mamba prefix caching (models/config.py:349)
    ("0.15", 2), ("0.26", 2),  # align mode (0.15.0 model_executor/models/config.py:332-338)
])
def test_lfm2_explicit_prefix_caching(model: Any, release: str, blocks: int) -> None:
    on = plan(model, "LiquidAI/LFM2-1.2B", f"vllm@{release}", 40 * GIB, max_model_len=32768,
              settings=Settings.of(prefix_caching=True))
    off = plan(model, "LiquidAI/LFM2-1.2B", f"vllm@{release}", 40 * GIB, max_model_len=32768)
    assert (_state_blocks(on), _state_blocks(off)) == (blocks, 1)


def test_mamba_all_mode_is_refused_not_guessed(model: Any) -> None:
    # 0.26: GraniteMoeHybrid supports Mamba prefix caching, so prefix caching gives mamba_cache_mode "all"
    with pytest.raises(InputError, match="mamba_cache_mode 'all'"):
        plan(model, "ibm-granite/granite-4.0-tiny-preview", "vllm@0.26", 40 * GIB, max_model_len=32768,
             settings=Settings.of(prefix_caching=True))


def test_0_17_start_up_check_counts_the_first_group_only(model: Any) -> None:
    # Qwen3-Next tp1, 32k, 16-token blocks asked: block 544 (16 · cdiv(1,097,728, 16 · 2,048)); 3 GDN groups and
    # 1 attention group of 12 layers: one block id = 12 × 544 × 2,048 = 13,369,344 B. Reserve: 3 × 1 +
    # cdiv(32,768, 544) = 61 -> 64 blocks = 855,638,016 B. 0.14-0.18 check 12 × page × the first (GDN) group's
    # 1 block = 13,369,344 B (0.17.0 v1/core/kv_cache_utils.py _max_memory_usage_bytes_from_groups), so 0.5 GiB
    # passes the check there and not on 0.19, which counts every group.
    kw: dict[str, Any] = {"max_model_len": 32768, "block_size": 16}
    old = plan(model, "Qwen/Qwen3-Next-80B-A3B-Thinking", "vllm@0.17", GIB // 2, **kw)
    new = plan(model, "Qwen/Qwen3-Next-80B-A3B-Thinking", "vllm@0.19", GIB // 2, **kw)
    assert old.reserve_bytes_per_request == new.reserve_bytes_per_request == 855_638_016
    assert (old.check_bytes_per_request, new.check_bytes_per_request) == (13_369_344, None)
    assert old.refusal is None and new.refusal is not None


@pytest.mark.parametrize(("release", "block"), [("0.17", 16), ("0.18", 2048)])
def test_attention_free_legacy_token_log(model: Any, release: str, block: int) -> None:
    # one Mamba group whose block is max_model_len (no prefix caching): "GPU KV cache size" = num_blocks // 1 ×
    # 2,048 (0.12.0 v1/core/kv_cache_utils.py:1264-1273); the kept block size is the config's 16 before 0.18,
    # the smallest group's from 0.18 (0.18.0 v1/engine/core.py:271-275)
    p = plan(model, "tiiuae/falcon-mamba-7b", f"vllm@{release}", 10 * GIB, max_model_len=2048, block_size=16)
    assert p.kv_tokens == p.num_blocks * 2048 and p.block_size == block
