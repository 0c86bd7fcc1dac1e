"""vLLM 0.33's rules for Mamba / linear-attention / short-conv states in the paged cache.

- Mode: ``mamba_cache_mode`` is "align" exactly when prefix caching is on, which vLLM does by default
  for hybrids and not for attention-free models (vllm/model_executor/models/config.py:763-787,
  vllm/config/model.py:2277-2285).
- Blocks one request reserves per Mamba group (``MambaSpec.max_memory_usage_bytes``,
  vllm/v1/kv_cache_interface.py:1135-1141): align ``2 + C``, none ``1`` (no speculative decoding).
  C, the prefill checkpoint block, is 1 for every Mamba-2 layer (MambaMixer2.get_kv_cache_spec,
  vllm/model_executor/layers/mamba/mamba_mixer2.py:1108-1118) and for Qwen's gated DeltaNet when its
  prefill runs on FlashInfer (qwen_gdn_linear_attn.py:690-760; FlashInfer on SM 9.0, or Blackwell
  with linear_key_head_dim 128 and CUDA 13: :148-270); 0 for every other mixer.
- Block size of a hybrid (``Platform._align_hybrid_block_size``, vllm/platforms/interface.py:940-1137):
  ``a = max(kernel block, block size)``, at least 128 with MLA, lcm with the checkpoint alignment in
  align mode (64 for FlashInfer GDN, else 1); ``block = a · cdiv(state page, a · attention page of one
  token)`` rounded up to the kernel block, never below the block size asked for; every state page is
  padded to ``block × attention page of one token``.

Earlier releases differ by row (``VllmRelease``): which mixers have a checkpoint block (none before 0.32,
Mamba-2 in 0.32), whether hybrids default to prefix caching (0.28 on), whether prefix caching gives
"align" (0.15 on) and the 16-token hybrid block rule before 0.29.
"""

from __future__ import annotations

import math

from kvplan.engines.vllm.backends import is_blackwell, is_sm90
from kvplan.records import Record
from kvplan.specs import LinearState
from kvplan.units import cdiv

FLASHINFER_GDN_CHECKPOINT_ALIGNMENT = 64  # vllm/model_executor/layers/mamba/gdn/gdn_attn.py:34
MLA_HYBRID_MIN_BLOCK = 128  # interface.py: TRTLLM/FlashInfer MLA decode kernels


class MambaRules(Record):
    """The Mamba cache rules of one release and request (``paging.mamba_rules``)."""

    align: bool  # mamba_cache_mode == "align"
    gdn_flashinfer: bool  # Qwen gated DeltaNet prefill on FlashInfer
    legacy: bool = False  # a release before 0.29: the hybrid block by 16-token alignment only
    checkpoints: frozenset[str] = frozenset({"mamba2", "gdn"})  # mixers with a prefill checkpoint block (0.32 on)


def gdn_flashinfer(gpu_name: str | None, linear_key_head_dim: int) -> bool:
    """Qwen GDN prefill backend "auto" on CUDA: FlashInfer on SM 9.0; on Blackwell only with 128-wide
    keys (CUDA runtime 13 assumed, as vLLM 0.33's torch 2.14 wheels)."""
    return is_sm90(gpu_name) or (is_blackwell(gpu_name) and linear_key_head_dim == 128)


def checkpoint_blocks(state: LinearState, rules: MambaRules) -> int:
    """C: the prefill checkpoint block a state layer adds to a request in align mode."""
    if not rules.align or state.mixer not in rules.checkpoints:
        return 0
    return int(state.mixer != "gdn" or rules.gdn_flashinfer)


def state_blocks(state: LinearState, rules: MambaRules) -> int:
    """Blocks one request reserves in a Mamba group: 2 + C in align mode, 1 otherwise."""
    return 2 + checkpoint_blocks(state, rules) if rules.align else 1


def checkpoint_alignment(states: list[LinearState], rules: MambaRules) -> int:
    """lcm of the layers' prefill checkpoint alignments, 1 unless every state layer declares one
    (vllm/model_executor/layers/mamba/abstract.py:98-113): only FlashInfer GDN does (64)."""
    if not rules.align or "gdn" not in rules.checkpoints or \
            not all(s.mixer == "gdn" and rules.gdn_flashinfer for s in states):
        return 1
    return FLASHINFER_GDN_CHECKPOINT_ALIGNMENT


def hybrid_block_size(block_size: int, kernel_block: int, attn_page_per_token: int, state_page: int,
                      has_mla: bool, alignment: int, legacy: bool = False) -> int:
    """The attention block size that makes one attention page hold one state page (before 0.33:
    16 · cdiv(state page, 16 · attention page per token), never below the block size asked for)."""
    if legacy:
        return max(block_size, 16 * cdiv(state_page, 16 * attn_page_per_token))
    align = max(kernel_block, block_size)
    if has_mla:
        align = max(align, MLA_HYBRID_MIN_BLOCK)
    align = math.lcm(align, alignment)
    block = align * cdiv(state_page, align * attn_page_per_token)
    block = kernel_block * cdiv(block, kernel_block)
    return max(block_size, block)
