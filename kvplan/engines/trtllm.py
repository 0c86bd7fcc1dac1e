"""TensorRT-LLM profiles: the PyTorch flow's KV cache by release (``TrtllmRelease`` rows: 0.20, 1.1, 1.2).

Budget: ``free_gpu_memory_fraction × (total − peak + estimation cache)`` with ``peak = torch peak + (used − torch
allocated)`` after dummy context requests of ``max_num_tokens`` ran; the estimation run's own KV pool is added
back, so the fraction applies to memory free after the weights, the activations, the CUDA context, NCCL and
graphs. 0.20.0: ``_torch/pyexecutor/_util.py`` ``cal_max_tokens`` / ``estimate_max_kv_cache_tokens``; 1.1 / 1.2:
``KvCacheCreator._cal_max_memory`` / ``configure_kv_cache_capacity``. Tokens: ``max_tokens = budget // estimator
bytes``, the estimator being ``2 B (1 B with an fp8 cache) × layers × head_dim × Hkv // tp`` (floor of the product;
MLA: the K-only latent) — 0.20 counts every hidden layer of the PP stage, 1.x the attention layers. The final
``KVCacheManager`` (``resource_manager.py`` ``calculate_max_num_blocks``) lays those tokens out with ``ceil(Hkv /
tp)`` heads per rank and ``blocks = ceil(max_tokens / tokens_per_block)``, min over ranks; with a fraction set it
also caps them at ``fraction × free memory / its bytes per token``. kvplan plans ``budget // max(estimator,
manager bytes)``: where the estimator counts fewer bytes (tp > Hkv: half a head), TRT-LLM takes more tokens, up to
that cap on the memory free after the estimation run, which kvplan does not know (noted). Every layer keeps
max_seq_len tokens unless ``max_attention_window`` is set, which kvplan does not model. TRT-LLM logs no concurrency.

Speculative decoding: a separate draft (draft/target, EAGLE-3 two-model) gets its own KV cache manager
with the same token count, so the estimator adds the draft's bytes per token to the target's; MTP and one-model
EAGLE-3 layers join the target's manager (``_torch/speculative/utils.py`` ``get_num_spec_layers``): either way one
token costs both. The draft's weights are loaded before the estimation run, so they count in its peak. A request
also holds its K draft tokens in the cache (``resource_manager.py`` ``get_num_available_tokens``).

Not pinned (no row): the TensorRT-engine flow (``trtllm-build`` engines, C++ ``calculateMaxNumBlocks``: fraction ×
free memory after the engine's execution context and runtime buffers, which the engine sizes at build time), the
early PyTorch flow (~0.17-0.19: no add-back of the estimation cache), 0.21, 1.0 and 1.3 on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from kvplan.engines.base import (
    EnginePlan,
    GroupRow,
    Refusal,
    Request,
    Resolved,
    kv_stages,
    no_data_parallel,
    resolved,
)
from kvplan.engines.protocol import EngineBase
from kvplan.engines.rules import BudgetRules, BudgetSteps, BudgetTerm, ProfileRun, WeightSplit, term_bytes
from kvplan.engines.settings import Settings
from kvplan.engines.trtllm_launch import SPELLING as LAUNCH_SPELLING
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout, LayoutPolicy
from kvplan.formulas.per_token import kv_bytes_per_token
from kvplan.formulas.request import Parallel
from kvplan.specs import AttnSpec, Composite, LayerSpec, MLAAttn
from kvplan.units import cdiv

FREE_GPU_MEMORY_FRACTION = 0.9  # KvCacheConfig.free_gpu_memory_fraction None -> 0.9 (_get_free_gpu_memory_fraction)
MAX_NUM_TOKENS = 8192  # LLM-API BuildConfig.max_num_tokens: the dummy context requests' total
NO_MEMORY = "TensorRT-LLM: no memory left for the KV cache after the weights, activations and non-torch memory"


@dataclass(frozen=True, kw_only=True)
class TrtllmRelease:
    key: str
    label: str
    tokens_per_block: int
    estimator_layers: Literal["hidden", "attention"]  # layers the estimator counts on a PP stage
    kv_dtypes: tuple[str, ...]  # KV dtypes besides the model's own ("auto")
    estimate_log: str  # the line the estimation prints, with {tokens} / {gib}
    blocks_log: Literal["pages", "blocks"]  # the C++ manager's first line: "pages per sequence" (0.20) or the 1.x form
    changes: str
    source: str
    # the trtllm-serve whose options are read (kvplan.launch.tables): the nearest release whose serve.py was read,
    # or the one snapshot (snapshot-00209af, 1.2/1.3-era serve.py) for every 1.x row
    launch_table: str
    serve_subcommand: bool  # `trtllm-serve serve MODEL` is accepted (the snapshot's DefaultGroup; 0.18.2 has none)


RELEASES = {r.key: r for r in (
    TrtllmRelease(
        key="0.20", label="TensorRT-LLM 0.20 (PyTorch backend)", tokens_per_block=32, estimator_layers="hidden",
        kv_dtypes=("fp8",), estimate_log="Estimated max tokens in KV cache : {tokens}", blocks_log="pages",
        changes="PyTorch flow: max_tokens = int((total − peak + estimation cache) × fraction // estimator bytes); the "
                "estimator counts num_hidden_layers of the PP stage",
        source="0.20.0 tensorrt_llm/_torch/pyexecutor/_util.py get_cache_size_per_token, cal_max_tokens, "
               "estimate_max_kv_cache_tokens (github Ataraksia/TensorRT-LLM@a451bf93, HEAD side, version.py 0.20.0); "
               "32 tokens per block and the 'Max KV cache pages per sequence' line as NVIDIA/TensorRT-LLM#6294's 0.20.0 "
               "log prints", launch_table="0.18.2", serve_subcommand=False),
    TrtllmRelease(
        key="1.1", label="TensorRT-LLM 1.x (PyTorch backend)", tokens_per_block=32, estimator_layers="attention",
        kv_dtypes=("fp8", "nvfp4"), estimate_log="Estimated max memory in KV cache : {gib} GiB", blocks_log="blocks",
        changes="KvCacheCreator sizes in bytes: int((total − peak + allocated) × fraction), then // estimator bytes "
                "of the attention layers; KvCacheConfig.tokens_per_block 32; NVFP4 caches (the estimator still "
                "counts 2 B per element)",
        source="1.1.0rc6-era tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator._cal_max_memory and "
               "tensorrt_llm/llmapi/llm_args.py KvCacheConfig (Ataraksia/TensorRT-LLM@a451bf93, upstream side); "
               "1.2.0rc2 _util.py KvCacheCreator, resource_manager.py KVCacheManager.get_cache_size_per_token / "
               "get_cache_bytes_per_token (NVIDIA/TensorRT-LLM@b35ac1b6); the 1.1.0rc3 and 1.2.1 start-up logs",
        launch_table="snapshot-00209af", serve_subcommand=True),
)}
# trtllm-serve's entry point, its subcommand absent from the table of the rows without one
SPELLING = replace(LAUNCH_SPELLING, entry_points=tuple(
    replace(e, subcommand_absent_in=next((r.launch_table for r in RELEASES.values() if not r.serve_subcommand), ""))
    for e in LAUNCH_SPELLING.entry_points))
# Names kvplan takes -> the row (1.1 and 1.2 size the cache alike: the 1.1.0rc6-era and 1.2.0rc2 code read the same).
VERSIONS = {"0.20": "0.20", "1": "1.1", "1.1": "1.1", "1.2": "1.1"}


def estimator_bytes_per_token(spec: LayerSpec, tp: int, element_bits: int) -> int:
    """The PyTorch-flow estimator's 2 × floor(head_dim × Hkv / tp) × bytes: floor, not ceil; 1 B per element for an
    fp8 cache, 2 B for every other (``mem_per_token = 2`` unless ``has_fp8_kv_cache``)."""
    size = 1 if element_bits == 8 else 2
    if isinstance(spec, Composite):
        return sum(estimator_bytes_per_token(p, tp, element_bits) for p in spec.parts)
    if isinstance(spec, AttnSpec):
        return 2 * (spec.head_dim * spec.num_kv_heads // tp) * size
    if isinstance(spec, MLAAttn):
        return spec.latent_dim * size
    return 0


def estimator_stage_bytes(rel: TrtllmRelease, layout: Layout, stage: int, tp: int) -> int:
    """The estimator's bytes per token on a stage: its attention layers (1.x), or every hidden layer of the stage
    at the attention layers' size (0.20)."""
    bits = layout.kv_dtype.element_bits
    sizes = [estimator_bytes_per_token(layout.specs[i], tp, bits) for i in layout.stage_ranges[stage]]
    found = [b for b in sizes if b]
    if rel.estimator_layers == "hidden" and found:
        return sum(found) + (len(sizes) - len(found)) * found[0]
    return sum(found)


class TrtllmEngine(EngineBase):
    name = "trtllm"
    budget_overflow = ("CUDA out of memory allocating the KV cache pool",
                       "TensorRT-LLM allocates KvCacheConfig.max_gpu_total_bytes in place of its fraction of free memory, "
                       "tensorrt_llm/_torch/pyexecutor/resource_manager.py KVCacheManager.calculate_max_num_blocks_from_cpp")
    spelling = SPELLING
    fraction_default = "TensorRT-LLM free_gpu_memory_fraction: its default (section 3 shows the value)"
    host_tiers = frozenset({"trtllm_host"})  # kv_cache_config.host_cache_size
    native_host_tier = "trtllm_host"

    def __init__(self, release_key: str = "1") -> None:
        found = RELEASES.get(VERSIONS.get(release_key, ""))
        if found is None:
            raise InputError(f"unknown TensorRT-LLM release {release_key!r}; kvplan follows: {', '.join(VERSIONS)} "
                             "(PyTorch backend)", arg="engine")
        label = "1.x" if release_key == "1" else release_key
        self.release, self.version = found, f"TensorRT-LLM {label} (PyTorch backend)"
        self.launch_release = found.launch_table

    def resolve(self, request: Request) -> Resolved:
        no_data_parallel(request, "kvplan plans TensorRT-LLM without attention DP or expert parallel (enable_attention_dp, moe_expert_parallel_size): not modelled")
        s = request.settings
        fraction = s.trtllm.free_gpu_memory_fraction or FREE_GPU_MEMORY_FRACTION
        return resolved(replace(request, settings=replace(
            s, max_num_batched_tokens=s.max_num_batched_tokens or MAX_NUM_TOKENS,
            trtllm=replace(s.trtllm, free_gpu_memory_fraction=fraction))))

    def weight_split(self, request: Request) -> WeightSplit:
        return WeightSplit(tp=request.tp)

    def policy(self, request: Request) -> LayoutPolicy:
        return LayoutPolicy(head_split="ceil", windows="full")

    def budget_rules(self, request: Resolved) -> BudgetRules:
        """Everything on the device at the estimation's peak counts: the dummy forward, context, cuBLAS,
        NCCL and graphs captured before it."""
        s = request.settings
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

    def kv_budget(self, request: Resolved, terms: tuple[BudgetTerm, ...]) -> BudgetSteps:
        assert request.device is not None
        fraction = request.settings.trtllm.free_gpu_memory_fraction
        assert fraction is not None  # FREE_GPU_MEMORY_FRACTION unless given, filled in by resolve
        free = request.device.memory_bytes - term_bytes(terms)
        budget = int(free * fraction)
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"free after the estimation run = {request.device.memory_bytes:,} − Σ terms {term_bytes(terms):,} = "
            f"{free:,} B", f"KV = free × free_gpu_memory_fraction {fraction} = {budget:,} B"))

    def no_memory(self, request: Resolved) -> Refusal:
        return Refusal(message=NO_MEMORY)

    def plan(self, request: Resolved, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        plan = replace(_plan(self.release, request, layout, budgets_per_stage), version=self.version)
        return replace(plan, refusal=self.no_memory(request)) if plan.kv_tokens <= 0 else plan

    def multi_node(self, parallel: Parallel, gpus_per_node: int) -> dict[str, int]:
        """trtllm-serve spreads the replica over nodes by --gpus_per_node."""
        return {"gpus_per_node": gpus_per_node} if super().multi_node(parallel, gpus_per_node) else {}

    def memory_fraction(self, settings: Settings) -> float | None:
        return settings.trtllm.free_gpu_memory_fraction


def _check_dtype(rel: TrtllmRelease, layout: Layout) -> None:
    name = layout.kv_dtype.name
    if name != layout.model.dtype and name not in rel.kv_dtypes:
        raise InputError(f"{rel.label} takes {layout.model.dtype} (auto) or {', '.join(rel.kv_dtypes)} KV caches, "
                         f"not {name}", arg="kv_dtype")


def _per_token(rel: TrtllmRelease, req: Request, layout: Layout) -> tuple[list[int], list[int]]:
    """(the manager's bytes per token per GPU, the estimator's) of each stage, the draft's on the last."""
    manager = [stage.bytes_per_token() for stage in layout.stages]
    estimator = [estimator_stage_bytes(rel, layout, k, req.tp) for k in range(len(layout.stages))]
    manager[-1] += _draft_bytes_per_token(req, layout)
    if req.draft is not None:
        estimator[-1] += sum(estimator_bytes_per_token(s, req.tp, layout.kv_dtype.element_bits) for s in req.draft.specs)
    return manager, estimator


def _plan(rel: TrtllmRelease, req: Request, layout: Layout, budgets: tuple[int, ...]) -> EnginePlan:
    _check_dtype(rel, layout)
    tpb = req.cache.block_size or rel.tokens_per_block
    per_token, estimator = _per_token(rel, req, layout)
    sizing = [max(m, e) for m, e in zip(per_token, estimator, strict=True)]
    tokens = max(0, min(b // c for b, c in kv_stages(budgets, sizing, "bytes per token")))
    if req.settings.trtllm.max_tokens is not None:  # the smaller of the two is used (KvCacheConfig.max_tokens)
        tokens = min(tokens, req.settings.trtllm.max_tokens)
    ahead = req.draft.num_speculative_tokens if req.draft else 0
    blocks, blocks_per_request = cdiv(tokens, tpb), cdiv(req.max_model_len + ahead, tpb)
    heavy = max(range(req.pp), key=lambda k: per_token[k])
    reserve = blocks_per_request * tpb * per_token[heavy]
    return EnginePlan(
        engine="trtllm", version=rel.label, kv_dtype=layout.kv_dtype.name, block_size=tpb,
        page_bytes=tpb * per_token[heavy], num_blocks=blocks, kv_tokens=tokens, max_concurrency=None,
        requests_at_max_len=float(blocks // blocks_per_request), reserve_bytes_per_request=reserve,
        steady_bytes_per_request=reserve, groups=_rows(layout, heavy, tpb, blocks_per_request),
        notes=_notes(rel, req, layout, (per_token[heavy], estimator[heavy]), tpb, min(budgets)),
        lookahead_tokens_per_request=ahead, log_lines=_log_lines(rel, req, blocks, (blocks_per_request, per_token[heavy], tpb)),
        explain=(f"bytes per token per GPU = Σ layers kv_factor × ceil(Hkv/{req.tp}) × head_dim × bytes: "
                 f"stages {[f'{c:,}' for c in per_token]}; the estimator's (floor(head_dim × Hkv / tp), "
                 f"{rel.estimator_layers} layers): {[f'{c:,}' for c in estimator]}",
                 f"max tokens = min over ranks budget // max(manager, estimator bytes) = {tokens:,}",
                 f"blocks = ceil({tokens:,} / tokens_per_block {tpb}) = {blocks:,}"))


def _log_lines(rel: TrtllmRelease, req: Request, blocks: int, sizes: tuple[int, int, int]) -> tuple[str, ...]:
    """The KV cache manager's lines (cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp) for the final cache: its
    blocks (0.20: "Max KV cache pages per sequence: N [window size=W]" and "Number of tokens per block: T."; 1.x:
    one line with the primary blocks), then the tokens of the primary blocks and their bytes ('%0.2f GiB')."""
    blocks_per_request, per_token, tpb = sizes
    length = req.max_model_len
    first: tuple[str, ...] = (
        (f"Max KV cache pages per sequence: {blocks_per_request} [window size={length}]",
         f"Number of tokens per block: {tpb}.") if rel.blocks_log == "pages" else
        (f"Max KV cache blocks per sequence: {blocks_per_request} [window size={length}], tokens per block={tpb}, "
         f"primary blocks={blocks}, secondary blocks=0, max sequence length={length}",))
    return (*first, f"[MemUsageChange] Allocated {blocks * tpb * per_token / 2**30:.2f} GiB for max tokens in paged KV "
                    f"cache ({blocks * tpb}).")


def _draft_bytes_per_token(req: Request, layout: Layout) -> int:
    """The draft's KV per token on one GPU (its own manager, or extra layers in the target's)."""
    return sum(kv_bytes_per_token(s, layout.kv_dtype) for s in req.draft.specs_per_gpu) if req.draft else 0


def _notes(rel: TrtllmRelease, req: Request, layout: Layout, sizes: tuple[int, int], tpb: int,
           budget: int) -> tuple[str, ...]:
    per_token, estimate = sizes
    out = [f"tokens_per_block {tpb}; the estimation logs '"
           + rel.estimate_log.format(tokens=budget // max(estimate, 1), gib=f"{budget / 2**30:.2f}") + "'"]
    if req.draft is not None:
        out.append(f"speculative ({req.draft.method}, max_draft_len {req.draft.num_speculative_tokens}): a token costs "
                   f"the target's and the draft's {_draft_bytes_per_token(req, layout):,} B per GPU; each request "
                   f"holds {req.draft.num_speculative_tokens} draft tokens more")
    if estimate < per_token:
        out.append(f"TRT-LLM's estimator counts {estimate:,} B per token (floor(head_dim × Hkv / tp), 2 B per element "
                   f"unless fp8) where the cache takes {per_token:,}: it asks for up to {budget // max(estimate, 1):,} "
                   "tokens, capped by the final manager at fraction × the memory free after the estimation run; "
                   "kvplan shows what the budget holds")
    elif estimate > per_token:
        out.append(f"TRT-LLM's estimator counts {estimate:,} B per token (2 B per element unless fp8) where the cache "
                   f"takes {per_token:,}: max_tokens = budget // {estimate:,}")
    if any(kind in ("sliding", "chunked") for kind in req.model.layer_kinds):
        out.append("sliding layers counted as full: TRT-LLM uses max_seq_len for every layer unless "
                   "max_attention_window is set")
    return tuple(out)


def _rows(layout: Layout, heavy: int, tpb: int, blocks_per_request: int) -> tuple[GroupRow, ...]:
    return tuple(GroupRow(kind=g.spec.kind, num_layers=g.num_layers, num_layers_per_gpu=g.stage_layers[heavy],
                          engine_groups=1, block_size=tpb, page_bytes_per_layer=tpb * g.bytes_per_token_per_layer_per_gpu,
                          blocks_per_request=blocks_per_request, tokens_reserved_per_request=blocks_per_request * tpb)
                 for g in layout.groups)
