"""TensorRT-LLM profile: the PyTorch flow's KVCacheManager
(``tensorrt_llm/_torch/pyexecutor/resource_manager.py``, ``_util.py`` ``KvCacheCreator``).

Budget: ``free_gpu_memory_fraction × (total − weights − activations/overhead)``: the fraction
applies to memory free after the model is loaded and a dummy batch ran. Layout: ``ceil(Hkv / tp)``
heads per rank (MLA: one K-only latent); every layer keeps max_seq_len tokens unless
``max_attention_window`` is set, which kvplan does not model, so windows count as full. Tokens:
``max_tokens = budget // bytes_per_token``; ``blocks = ceil(max_tokens / tokens_per_block)``; min
over ranks. TRT-LLM logs no concurrency.
"""

from __future__ import annotations

from kvplan.engines.base import BudgetSteps, EnginePlan, GroupRow, Request, Settings, kv_stages
from kvplan.errors import CapacityError, InputError
from kvplan.formulas.layout import Layout, LayoutPolicy
from kvplan.specs import AttnSpec, Composite, LayerSpec, MLAAttn
from kvplan.units import cdiv

VERSION = "TensorRT-LLM 1.x"  # PyTorch flow, LLM-API KvCacheConfig defaults (tensorrt_llm/llmapi/llm_args.py)
FREE_GPU_MEMORY_FRACTION = 0.9  # KvCacheConfig.free_gpu_memory_fraction / kDefaultGpuMemFraction
TOKENS_PER_BLOCK = 32  # LLM-API KvCacheConfig (PyTorch backend); the legacy TRT engine flow used 64


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

    def policy(self, request: Request) -> LayoutPolicy:
        return LayoutPolicy(head_split="ceil", windows="full")

    def kv_budget(self, gpu_memory_bytes: int, weights_bytes: int, overhead_bytes: int,
                  settings: Settings, tp: int) -> BudgetSteps:
        fraction = settings.free_gpu_memory_fraction or FREE_GPU_MEMORY_FRACTION
        free = gpu_memory_bytes - weights_bytes - overhead_bytes
        budget = int(free * fraction)
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"free after load = {gpu_memory_bytes:,} − weights {weights_bytes:,} − activations/overhead "
            f"{overhead_bytes:,} = {free:,} B",
            f"KV = free × free_gpu_memory_fraction {fraction} = {budget:,} B"))

    def plan(self, request: Request, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        return _plan(request, layout, budgets_per_stage)


def _plan(req: Request, layout: Layout, budgets: tuple[int, ...]) -> EnginePlan:
    if layout.kv_dtype.is_scaled:
        raise InputError(f"TensorRT-LLM profile takes fp16/bf16/fp8 KV caches, not {layout.kv_dtype.name}",
                         arg="kv_dtype")
    tpb = req.settings.block_size or TOKENS_PER_BLOCK
    per_token = [stage.bytes_per_token() for stage in layout.stages]
    tokens = min(b // c for b, c in kv_stages(budgets, per_token, "bytes per token"))
    if tokens <= 0:
        raise CapacityError("TensorRT-LLM: no memory left for the KV cache after weights and activations")
    blocks, blocks_per_request = cdiv(tokens, tpb), cdiv(req.max_model_len, tpb)
    heavy = max(range(req.pp), key=lambda k: per_token[k])
    reserve = blocks_per_request * tpb * per_token[heavy]
    return EnginePlan(
        engine="trtllm", version=VERSION, kv_dtype=layout.kv_dtype.name, block_size=tpb,
        page_bytes=tpb * per_token[heavy], num_blocks=blocks, kv_tokens=tokens, max_concurrency=None,
        requests_at_max_len=float(blocks // blocks_per_request), reserve_bytes_per_request=reserve,
        steady_bytes_per_request=reserve, groups=_rows(layout, heavy, tpb, blocks_per_request),
        notes=_notes(req, layout, heavy, tpb, per_token[heavy]),
        explain=(f"bytes per token per GPU = Σ layers kv_factor × ceil(Hkv/{req.tp}) × head_dim × bytes: "
                 f"stages {[f'{c:,}' for c in per_token]}",
                 f"max tokens = min over ranks budget // bytes per token = {tokens:,}",
                 f"blocks = ceil({tokens:,} / tokens_per_block {tpb}) = {blocks:,}"))


def _notes(req: Request, layout: Layout, heavy: int, tpb: int, per_token: int) -> tuple[str, ...]:
    out = [f"tokens_per_block {tpb} (PyTorch flow; legacy TRT engines: 64)"]
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
