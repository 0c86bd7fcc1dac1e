"""TensorRT-LLM profile: the PyTorch flow's KVCacheManager
(``tensorrt_llm/_torch/pyexecutor/resource_manager.py``, ``_util.py`` ``KvCacheCreator``).

Budget: ``free_gpu_memory_fraction × (total − peak)`` with ``peak = torch peak + (used − torch
allocated)`` after dummy context requests of ``max_num_tokens`` ran (``KvCacheCreator``
``_cal_max_memory``): the fraction applies to memory free after the weights, the activations, the
CUDA context, NCCL and graphs; the temporary KV pool of the estimation is added back. Layout: ``ceil(Hkv / tp)``
heads per rank (MLA: one K-only latent); every layer keeps max_seq_len tokens unless
``max_attention_window`` is set, which kvplan does not model, so windows count as full. Tokens:
``max_tokens = budget // bytes_per_token``; ``blocks = ceil(max_tokens / tokens_per_block)``; min
over ranks. TRT-LLM logs no concurrency.

Speculative decoding: a separate draft (draft/target, EAGLE-3 two-model) gets its own KV cache manager
with the same token count, so ``KvCacheCreator._get_kv_size_per_token`` adds the draft's bytes per token to
the target's (``_torch/pyexecutor/_util.py``); MTP and one-model EAGLE-3 layers join the target's manager
(``_torch/speculative/utils.py`` ``get_num_spec_layers``): either way one token costs both. The draft's
weights are loaded before the estimation run, so they count in its peak. A request also holds its K draft
tokens in the cache (``resource_manager.py`` ``get_num_available_tokens`` subtracts ``max_num_draft_tokens``).
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.engines.base import (
    BudgetRules,
    BudgetSteps,
    BudgetTerm,
    EnginePlan,
    GroupRow,
    ProfileRun,
    Refusal,
    Request,
    kv_stages,
    term_bytes,
)
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout, LayoutPolicy
from kvplan.formulas.per_token import kv_bytes_per_token
from kvplan.specs import AttnSpec, Composite, LayerSpec, MLAAttn
from kvplan.units import cdiv

VERSION = "TensorRT-LLM 1.x (PyTorch backend)"  # LLM-API KvCacheConfig defaults (tensorrt_llm/llmapi/llm_args.py)
FREE_GPU_MEMORY_FRACTION = 0.9  # KvCacheConfig.free_gpu_memory_fraction / kDefaultGpuMemFraction
TOKENS_PER_BLOCK = 32  # LLM-API KvCacheConfig (PyTorch backend); the legacy TRT engine flow used 64
MAX_NUM_TOKENS = 8192  # LLM-API BuildConfig.max_num_tokens: the dummy context requests' total
NO_MEMORY = "TensorRT-LLM: no memory left for the KV cache after the weights, activations and non-torch memory"


def estimator_bytes_per_token(spec: LayerSpec, tp: int, element_bits: int) -> int:
    """The PyTorch-flow estimator's 2 × floor(head_dim × Hkv / tp) × bytes: floor, not ceil."""
    if isinstance(spec, Composite):
        return sum(estimator_bytes_per_token(p, tp, element_bits) for p in spec.parts)
    if isinstance(spec, AttnSpec):
        return 2 * (spec.head_dim * spec.num_kv_heads // tp) * element_bits // 8
    if isinstance(spec, MLAAttn):
        return spec.latent_dim * element_bits // 8
    return 0


class TrtllmEngine:
    name = "trtllm"
    version = VERSION
    supports_dcp = False

    def __init__(self, release_key: str = "1") -> None:
        if release_key != "1":
            raise InputError(f"unknown TensorRT-LLM release {release_key!r}; kvplan follows: 1 (PyTorch backend)",
                             arg="engine")

    def resolve(self, request: Request) -> Request:
        s = request.settings
        fraction = s.trtllm.free_gpu_memory_fraction or FREE_GPU_MEMORY_FRACTION
        return replace(request, settings=replace(
            s, max_num_batched_tokens=s.max_num_batched_tokens or MAX_NUM_TOKENS,
            trtllm=replace(s.trtllm, free_gpu_memory_fraction=fraction)))

    def policy(self, request: Request) -> LayoutPolicy:
        return LayoutPolicy(head_split="ceil", windows="full")

    def budget_rules(self, request: Request) -> BudgetRules:
        """Everything on the device at the estimation's peak counts: the dummy forward, context, cuBLAS,
        NCCL and graphs captured before it."""
        s = self.resolve(request).settings
        assert s.max_num_batched_tokens is not None
        run = ProfileRun(tokens=s.max_num_batched_tokens, eager=True, sampler_rows=0, sampler_path="none",
                         sampler_bytes_per_logit=0.0, full_hidden_at_sampler=False, sampled_row_copies=0)
        if s.max_lora_rank or s.max_loras or s.cpu_offload_bytes:
            name = "max_lora_rank" if s.max_lora_rank or s.max_loras else "cpu_offload_bytes"
            raise InputError(f"kvplan models no TensorRT-LLM LoRA cache (PeftCacheConfig) or weight offloading: drop "
                             f"{name}", arg=name)
        return BudgetRules(profile=run, non_torch=("cuda_context", "cublas_handles"),
                           nccl_groups=int(request.tp > 1) + int(request.pp > 1), cuda_graphs=not s.enforce_eager,
                           draft_weights=request.draft is not None)

    def kv_budget(self, request: Request, terms: tuple[BudgetTerm, ...]) -> BudgetSteps:
        assert request.device is not None
        fraction = self.resolve(request).settings.trtllm.free_gpu_memory_fraction
        assert fraction is not None
        free = request.device.memory_bytes - term_bytes(terms)
        budget = int(free * fraction)
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"free after the estimation run = {request.device.memory_bytes:,} − Σ terms {term_bytes(terms):,} = "
            f"{free:,} B", f"KV = free × free_gpu_memory_fraction {fraction} = {budget:,} B"))

    def no_memory(self, request: Request) -> Refusal:
        return Refusal(message=NO_MEMORY)

    def plan(self, request: Request, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        plan = _plan(request, layout, budgets_per_stage)
        return replace(plan, refusal=self.no_memory(request)) if plan.kv_tokens <= 0 else plan


def _plan(req: Request, layout: Layout, budgets: tuple[int, ...]) -> EnginePlan:
    if layout.kv_dtype.is_scaled:
        raise InputError(f"TensorRT-LLM profile takes fp16/bf16/fp8 KV caches, not {layout.kv_dtype.name}",
                         arg="kv_dtype")
    tpb = req.cache.block_size or TOKENS_PER_BLOCK
    per_token = [stage.bytes_per_token() for stage in layout.stages]
    per_token[-1] += _draft_bytes_per_token(req, layout)
    tokens = max(0, min(b // c for b, c in kv_stages(budgets, per_token, "bytes per token")))
    ahead = req.draft.num_speculative_tokens if req.draft else 0
    blocks, blocks_per_request = cdiv(tokens, tpb), cdiv(req.max_model_len + ahead, tpb)
    heavy = max(range(req.pp), key=lambda k: per_token[k])
    reserve = blocks_per_request * tpb * per_token[heavy]
    return EnginePlan(
        engine="trtllm", version=VERSION, kv_dtype=layout.kv_dtype.name, block_size=tpb,
        page_bytes=tpb * per_token[heavy], num_blocks=blocks, kv_tokens=tokens, max_concurrency=None,
        requests_at_max_len=float(blocks // blocks_per_request), reserve_bytes_per_request=reserve,
        steady_bytes_per_request=reserve, groups=_rows(layout, heavy, tpb, blocks_per_request),
        notes=_notes(req, layout, heavy, tpb, per_token[heavy]), lookahead_tokens_per_request=ahead,
        log_lines=_log_lines(req, blocks, blocks_per_request, per_token[heavy], tpb),
        explain=(f"bytes per token per GPU = Σ layers kv_factor × ceil(Hkv/{req.tp}) × head_dim × bytes: "
                 f"stages {[f'{c:,}' for c in per_token]}",
                 f"max tokens = min over ranks budget // bytes per token = {tokens:,}",
                 f"blocks = ceil({tokens:,} / tokens_per_block {tpb}) = {blocks:,}"))


def _log_lines(req: Request, blocks: int, blocks_per_request: int, per_token: int, tpb: int) -> tuple[str, ...]:
    """The KV cache manager's lines (cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp): the blocks of the
    1.x PyTorch flow's final cache, then the tokens of the primary blocks and their bytes ('%0.2f GiB')."""
    length = req.max_model_len
    return (f"Max KV cache blocks per sequence: {blocks_per_request} [window size={length}], tokens per block={tpb}, "
            f"primary blocks={blocks}, secondary blocks=0, max sequence length={length}",
            f"[MemUsageChange] Allocated {blocks * tpb * per_token / 2**30:.2f} GiB for max tokens in paged KV cache "
            f"({blocks * tpb}).")


def _draft_bytes_per_token(req: Request, layout: Layout) -> int:
    """The draft's KV per token on one GPU (its own manager, or extra layers in the target's)."""
    return sum(kv_bytes_per_token(s, layout.kv_dtype) for s in req.draft.specs_per_gpu) if req.draft else 0


def _notes(req: Request, layout: Layout, heavy: int, tpb: int, per_token: int) -> tuple[str, ...]:
    out = [f"tokens_per_block {tpb} (PyTorch flow; legacy TRT engines: 64)"]
    if req.draft is not None:
        out.append(f"speculative ({req.draft.method}, max_draft_len {req.draft.num_speculative_tokens}): a token costs "
                   f"the target's and the draft's {_draft_bytes_per_token(req, layout):,} B per GPU; each request "
                   f"holds {req.draft.num_speculative_tokens} draft tokens more")
    bits = layout.kv_dtype.element_bits
    stage = layout.stage_ranges[heavy]
    estimate = sum(estimator_bytes_per_token(layout.specs[i], req.tp, bits) for i in stage)
    if estimate != per_token:
        out.append(f"TRT-LLM's estimator uses floor(head_dim × Hkv / tp): {estimate:,} B/token instead of "
                   f"{per_token:,}; its first estimate differs")
    if any(kind in ("sliding", "chunked") for kind in req.model.layer_kinds):
        out.append("sliding layers counted as full: TRT-LLM uses max_seq_len for every layer unless "
                   "max_attention_window is set")
    return tuple(out)


def _rows(layout: Layout, heavy: int, tpb: int, blocks_per_request: int) -> tuple[GroupRow, ...]:
    return tuple(GroupRow(kind=g.spec.kind, num_layers=g.num_layers, num_layers_per_gpu=g.stage_layers[heavy],
                          engine_groups=1, block_size=tpb, page_bytes_per_layer=tpb * g.bytes_per_token_per_layer_per_gpu,
                          blocks_per_request=blocks_per_request, tokens_reserved_per_request=blocks_per_request * tpb)
                 for g in layout.groups)
