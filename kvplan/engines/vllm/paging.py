"""vLLM 0.33's paged spec of every cache module on one worker: backend and block size, Mamba
alignment and padding (``mamba.py``), the blocks a request reserves for its fixed caches.

Cross-attention (Whisper) reserves ``cdiv(max_num_encoder_input_tokens, block)`` blocks, and
``max_num_encoder_input_tokens`` is ``max_num_batched_tokens`` (vllm/v1/kv_cache_interface.py:1220-1228,
vllm/config/scheduler.py:306), which an encoder-decoder model, having no chunked prefill, raises to
at least max_model_len (vllm/engine/arg_utils.py:3190-3199).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvplan.engines.base import Request
from kvplan.engines.vllm.backends import attention_backend, is_hopper
from kvplan.engines.vllm.groups import PagedSpec, Specs, modules, paged_spec
from kvplan.engines.vllm.mamba import (
    MambaRules,
    checkpoint_alignment,
    gdn_flashinfer,
    hybrid_block_size,
    state_blocks,
)
from kvplan.engines.vllm.speculative import worker_stages
from kvplan.formulas.layout import Layout
from kvplan.formulas.per_token import StateDtypes
from kvplan.specs import AttnSpec, CrossAttn, IndexerCache, LinearState, MLAAttn, parts

MAX_NUM_BATCHED_TOKENS = 8192  # vLLM 0.33 `vllm serve` default on an H100
MAMBA_ALIGN_BLOCK = 16  # attention-free models in align mode: mamba_block_size = cache_config.block_size


@dataclass(frozen=True, slots=True)
class Paging:
    """The paged specs of one worker's cache modules, and how their block size was chosen."""

    specs: Specs
    stages: tuple[range, ...]  # module indices of each PP stage
    backend: str
    block_size: int  # of attention layers, after any Mamba alignment
    mamba_alignment: int | None  # set when a Mamba hybrid's alignment set the block size
    mamba_align_mode: bool = False


def max_num_batched_tokens(req: Request) -> int:
    batched = req.settings.max_num_batched_tokens or MAX_NUM_BATCHED_TOKENS
    encoder_decoder = any(isinstance(p, CrossAttn) for s in req.model.layer_specs for p in parts(s))
    if encoder_decoder and not req.settings.max_num_batched_tokens:
        return max(batched, req.max_model_len)
    return batched


def prefix_caching(req: Request, layout: Layout) -> bool:
    """vLLM's default: on, except for attention-free models (pure Mamba) and encoder-decoders."""
    if req.settings.vllm.prefix_caching is not None:
        return req.settings.vllm.prefix_caching
    kinds = {type(p) for s in layout.specs for p in parts(s)}
    return bool(kinds - {LinearState}) and CrossAttn not in kinds


def paging(req: Request, layout: Layout, mamba_prefix_caching: bool = True,
           mla_block: tuple[int, bool] | None = None) -> Paging:
    """Backend and block size, then every module's paged spec (Mamba hybrids raise the block size).

    `mamba_prefix_caching`: the release caches Mamba state for prefixes (0.33's align mode). Before
    (0.10, 0.11) a state is one block per request and the hybrid block is 16 · cdiv(state page,
    16 · attention page per token) (vllm 0.11 model_executor/models/config.py:315-400). A draft's KV
    layers follow the target's on the last stage: they register in the same forward context and share
    its pool (speculative.py). `mla_block`: (size, keeps multiples) of the FlashMLA block releases before 0.18
    force on Hopper (0.11 platforms/cuda.py:161-167 whatever the size; 0.12-0.17 unless a multiple)."""
    per_gpu = (*layout.specs_per_gpu, *(req.draft.specs_per_gpu if req.draft else ()))
    mods = modules(per_gpu, worker_stages(req, layout))
    mla = [p for p in mods.parts if isinstance(p, MLAAttn)]
    head_size = max((p.head_dim for p in mods.parts if isinstance(p, AttnSpec)), default=0)
    asked = _forced_mla_block(req, bool(mla) and not any(p.sparse for p in mla), mla_block)
    backend, bs, kernel = attention_backend(bool(mla), layout.kv_dtype, asked, req.gpu_name,
                                            sparse=any(p.sparse for p in mla), head_size=head_size)
    dtypes = StateDtypes(layout.state_dtype, layout.ssm_state_dtype)
    specs = tuple(paged_spec(p, layout.kv_dtype, dtypes, bs) for p in mods.parts)
    specs = _with_cross_blocks(specs, max_num_batched_tokens(req))
    states = [s.spec for s in specs if s and isinstance(s.spec, LinearState)]
    if not states:
        return Paging(specs, mods.stages, backend, bs, None)
    rules = MambaRules(mamba_prefix_caching and prefix_caching(req, layout), _gdn_flashinfer(req, states),
                       legacy=not mamba_prefix_caching)
    attention = [s for s in specs if s and not isinstance(s.spec, (LinearState, CrossAttn, IndexerCache))]
    if not attention:  # attention-free: unpadded states, block = 16 (align) or max_model_len
        block = MAMBA_ALIGN_BLOCK if rules.align else req.max_model_len
        return Paging(_states(specs, rules, block, None), mods.stages, backend, block, None, rules.align)
    per_token = attention[0].page_bytes // attention[0].block_size
    state_page = max(s.page_bytes for s in specs if s and isinstance(s.spec, LinearState))
    alignment = checkpoint_alignment(states, rules)
    block = hybrid_block_size(bs, kernel, per_token, state_page, bool(mla), alignment, rules.legacy)
    raised = tuple(replace(s, block_size=block, page_bytes=s.page_bytes // s.block_size * block)
                   if s and not isinstance(s.spec, LinearState) else s for s in specs)
    return Paging(_states(raised, rules, block if rules.align else req.max_model_len, block * per_token),
                  mods.stages, backend, block, alignment, rules.align)


def _forced_mla_block(req: Request, dense_mla: bool, rule: tuple[int, bool] | None) -> int | None:
    asked = req.cache.block_size
    if rule is None or not dense_mla or not is_hopper(req.gpu_name):
        return asked
    size, keeps_multiples = rule
    return asked if asked and (asked == size or (keeps_multiples and asked % size == 0)) else size


def _gdn_flashinfer(req: Request, states: list[LinearState]) -> bool:
    key_dim = req.model.raw.get("linear_key_head_dim")
    return any(s.mixer == "gdn" for s in states) and gdn_flashinfer(req.gpu_name, key_dim or 0)


def _states(specs: Specs, rules: MambaRules, block: int, padded: int | None) -> Specs:
    """State pages padded to the attention page (hybrids), with their block size and reserve."""
    def state(s: PagedSpec) -> PagedSpec:
        assert isinstance(s.spec, LinearState)
        return replace(s, block_size=block, page_bytes=padded or s.page_bytes, fixed_blocks=state_blocks(s.spec, rules))
    return tuple(state(s) if s and isinstance(s.spec, LinearState) else s for s in specs)


def _with_cross_blocks(specs: Specs, encoder_tokens: int) -> Specs:
    return tuple(replace(s, encoder_tokens=encoder_tokens) if s and isinstance(s.spec, CrossAttn) else s
                 for s in specs)
