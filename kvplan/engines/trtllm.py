"""TensorRT-LLM profile (engines.md §3): PyTorch-flow KVCacheManager.

Budget: ``free_gpu_memory_fraction × (total − weights − activations/overhead)``: the fraction
applies to memory free after the model is loaded and a dummy batch ran. Tokens:
``max_tokens = budget // bytes_per_token`` with ``ceil(Hkv / tp)`` heads per rank (MLA: one
576-wide K-only latent); ``blocks = ceil(max_tokens / tokens_per_block)``; min over ranks.
Every layer uses one attention window (max_seq_len) unless ``max_attention_window`` is set, which
kvplan does not model: sliding layers are counted as full. TRT-LLM logs no concurrency.
"""

from __future__ import annotations

from kvplan.engines.base import BudgetSteps, EnginePlan, GroupRow, Request, Settings, kv_stages
from kvplan.errors import CapacityError, InputError
from kvplan.formulas.dtypes import KvDtype, resolve_kv_dtype
from kvplan.formulas.sharding import check_parallel, pp_stages
from kvplan.specs import ChunkedAttn, FullAttn, LayerSpec, MLAAttn, SlidingAttn, layer_specs
from kvplan.units import cdiv

VERSION = "TensorRT-LLM 1.x"  # PyTorch flow, LLM-API KvCacheConfig defaults (engines.md T-ARGS)
FREE_GPU_MEMORY_FRACTION = 0.9  # KvCacheConfig.free_gpu_memory_fraction / kDefaultGpuMemFraction
TOKENS_PER_BLOCK = 32  # LLM-API KvCacheConfig (PyTorch backend); the legacy TRT engine flow used 64


def trt_bytes_per_token(spec: LayerSpec, tp: int, dtype: KvDtype) -> int:
    """kv_factor × ceil(Hkv / tp) × head_dim × bytes (MLA: 1 × 1 × (kv_lora_rank + rope) × bytes)."""
    if isinstance(spec, MLAAttn):
        return spec.latent_dim * dtype.element_bits // 8
    if isinstance(spec, (FullAttn, SlidingAttn, ChunkedAttn)):
        heads = cdiv(spec.num_kv_heads, tp)
        return heads * (spec.head_dim + spec.v_head_dim) * dtype.element_bits // 8
    return 0


def estimator_bytes_per_token(spec: LayerSpec, tp: int, dtype: KvDtype) -> int:
    """The PyTorch-flow estimator's 2 × floor(head_dim × Hkv / tp) × bytes: floor, not ceil."""
    if isinstance(spec, (FullAttn, SlidingAttn, ChunkedAttn)):
        return 2 * (spec.head_dim * spec.num_kv_heads // tp) * dtype.element_bits // 8
    return trt_bytes_per_token(spec, tp, dtype)


class TrtllmEngine:
    name = "trtllm"
    version = VERSION

    def kv_budget(self, gpu_memory_bytes: int, weights_bytes: int, overhead_bytes: int,
                  settings: Settings, tp: int) -> BudgetSteps:
        fraction = settings.free_gpu_memory_fraction or FREE_GPU_MEMORY_FRACTION
        free = gpu_memory_bytes - weights_bytes - overhead_bytes
        budget = int(free * fraction)
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"free after load = {gpu_memory_bytes:,} − weights {weights_bytes:,} − activations/overhead "
            f"{overhead_bytes:,} = {free:,} B",
            f"KV = free × free_gpu_memory_fraction {fraction} = {budget:,} B"))

    def plan(self, request: Request, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        req, m = request, request.model
        if req.dcp > 1:
            raise InputError("--dcp is a vLLM option; TensorRT-LLM has no decode context parallel profile here")
        specs = layer_specs(m, req.overrides)
        check_parallel(specs, m.num_attention_heads, req.tp, req.pp, 1)
        dtype = resolve_kv_dtype(req.kv_dtype, m.dtype)
        if dtype.is_scaled:
            raise InputError(f"TensorRT-LLM profile takes fp16/bf16/fp8 KV caches, not {dtype.name}")
        tpb = req.settings.block_size or TOKENS_PER_BLOCK
        budgets = budgets_per_stage if len(budgets_per_stage) == req.pp else budgets_per_stage * req.pp
        stages = pp_stages(specs, req.pp)
        per_token = [sum(trt_bytes_per_token(x, req.tp, dtype) for x in st) for st in stages]
        tokens = min(b // c for b, c in kv_stages(budgets, per_token, "bytes per token"))
        if tokens <= 0:
            raise CapacityError("TensorRT-LLM: no memory left for the KV cache after weights and activations")
        blocks = cdiv(tokens, tpb)
        heavy = max(range(req.pp), key=lambda k: per_token[k])
        estimate = sum(estimator_bytes_per_token(x, req.tp, dtype) for x in stages[heavy])
        lines = [f"bytes per token per GPU = Σ layers kv_factor × ceil(Hkv/{req.tp}) × head_dim × bytes: "
                 f"stages {[f'{c:,}' for c in per_token]}",
                 f"max tokens = min over ranks budget // bytes per token = {tokens:,}",
                 f"blocks = ceil({tokens:,} / tokens_per_block {tpb}) = {blocks:,}"]
        notes = [f"tokens_per_block {tpb} (PyTorch flow; legacy TRT engines: 64)"]
        if estimate != per_token[heavy]:
            notes.append(f"TRT-LLM's estimator uses floor(head_dim × Hkv / tp): {estimate:,} B/token instead of "
                         f"{per_token[heavy]:,}; its first estimate differs")
        if any(isinstance(x, (SlidingAttn, ChunkedAttn)) for x in specs):
            notes.append("sliding layers counted as full: TRT-LLM uses max_seq_len for every layer unless "
                         "max_attention_window is set")
        reserve = cdiv(req.max_model_len, tpb) * tpb * per_token[heavy]
        row_specs = dict.fromkeys(specs)
        rows = tuple(GroupRow(kind=x.kind, num_layers=specs.count(x), num_layers_per_gpu=stages[heavy].count(x),
                              engine_groups=1, block_size=tpb,
                              page_bytes_per_layer=tpb * trt_bytes_per_token(x, req.tp, dtype),
                              blocks_per_request=cdiv(req.max_model_len, tpb),
                              tokens_reserved_per_request=cdiv(req.max_model_len, tpb) * tpb) for x in row_specs)
        return EnginePlan(
            engine="trtllm", version=VERSION, kv_dtype=dtype.name, block_size=tpb, page_bytes=tpb * per_token[heavy],
            num_blocks=blocks, kv_tokens=tokens, max_concurrency=None,
            requests_at_max_len=float(blocks // cdiv(req.max_model_len, tpb)), reserve_bytes_per_request=reserve,
            steady_bytes_per_request=reserve, groups=rows, notes=tuple(notes), explain=tuple(lines))
