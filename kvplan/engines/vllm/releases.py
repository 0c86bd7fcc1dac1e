"""vLLM releases as data: one ``VllmRelease`` row per release kvplan follows, and the small functions
that read a row (scheduler defaults, the profile run, what the budget subtracts).

Each row was read from that release's Python (paths relative to the installed ``vllm/`` package):
the budget (``worker/worker.py`` for V0, ``v1/worker/gpu_worker.py`` ``determine_available_memory``),
the profile run (``model_runner.py`` / ``gpu_model_runner.py`` ``profile_run``), the scheduler
defaults (``engine/arg_utils.py``), the start-up refusal (``v1/core/kv_cache_utils.py``
``check_enough_kv_cache_memory``; V0 ``worker.py`` ``raise_if_cache_size_invalid``) and the token
log. A release that changes one of these is a new row, not a new branch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from kvplan.engines.base import BudgetRules, Device, EncoderRule, LoraRule, ProfileRun, Request
from kvplan.engines.settings import Settings
from kvplan.errors import InputError

GIB = 1024**3
RefusalStyle = Literal["v0", "v1-0.8", "v1", "0.33"]  # the wording of the start-up check


@dataclass(frozen=True, kw_only=True)
class SchedulerTier:
    """One row of the default max_num_batched_tokens / max_num_seqs table (``engine/arg_utils.py``)."""

    min_memory_bytes: int  # torch total memory of the GPU class
    excludes_a100: bool  # an A100 falls through to the next tier (0.9.2 on; vLLM PR #17885)
    serve: tuple[int, int]  # `vllm serve`: (max_num_batched_tokens, max_num_seqs)
    llm: tuple[int, int]  # the LLM class


@dataclass(frozen=True, kw_only=True)
class VllmRelease:
    key: str  # what follows `vllm@`
    label: str  # EnginePlan.version
    gpu_memory_utilization: float
    usable_rounding: Literal["floor", "ceil"]  # total × u: int() before 0.33, ceil (request_memory) in 0.33
    absolute_peak: bool  # torch peak and non-torch are absolute device values (context included), not growth
    nccl_subtracted: bool  # NCCL buffers appear after the start-up snapshot
    graphs_subtracted: bool  # CUDA-graph memory is estimated and subtracted before the KV cache
    persistent_sampler_buffers: bool  # Model Runner V2 penalty state (max_num_seqs × vocab int32) counts
    compiled: bool  # V1 runs the profile forward through torch.compile unless enforce_eager
    rows_capped: bool  # sampler rows = min(max_num_seqs, max_num_batched_tokens) (V1); V0: max_num_seqs
    full_hidden_at_sampler: bool
    sampled_row_copies: int
    sampler: str  # default top-k/top-p path of the profile run
    sampler_paths: tuple[str, ...]  # paths the release can take
    sort_bytes_per_logit: float
    scheduler: tuple[SchedulerTier, ...]  # first tier the GPU reaches
    chunked_prefill_always: bool  # V1; V0 chunks only past 32k (then max_num_batched_tokens = max_model_len)
    async_scheduling: bool
    in_flight_per_stage: bool  # sliding reserve: max_num_batched_tokens × (pp + async) (0.33) or × 1
    legacy_token_log: bool  # "GPU KV cache size" = num_blocks // groups × block (before 0.33)
    concurrency_from_tokens: bool  # V0, 0.8: num_blocks × block / max_model_len; later: blocks / blocks per request
    hybrid_kv_cache_manager: bool  # sliding layers keep their window (0.9 on); before, every layer is full
    refusal: RefusalStyle
    mxfp4_backend: str | None  # default MoE backend for MXFP4 experts on Hopper
    mla_absorbed_weights: bool = False
    decode_context_parallel: bool = False  # --decode-context-parallel-size exists (0.11 on)
    v0_blocks_label: str = "GPU"  # V0 "# GPU blocks" (0.6), "# CUDA blocks" (0.7), "# cuda blocks" (0.8)
    # Speculative decoding (V1): methods kvplan follows, those whose drafted tokens get KV slots ahead of the
    # target's (scheduler num_lookahead_tokens), and 0.33's reserve rules for Mamba states and sliding windows.
    spec_methods: tuple[str, ...] = ()
    lookahead_methods: tuple[str, ...] = ()
    spec_state_blocks: bool = False  # MambaSpec.num_speculative_blocks counted in max_memory_usage_bytes
    spec_sliding_retained: bool = False  # SlidingWindowSpec.extra_retained_tokens (multi-module MTP)
    # LoRA: families whose embed_tokens/lm_head get slots (models' embedding_modules), extra adapter vocabulary
    lora_embedding_families: frozenset[str] = frozenset({"llama", "mistral", "mixtral"})
    lora_extra_vocab: int = 256
    lora_target_modules: bool = False  # --lora-target-modules exists
    # Multimodal profile run (V1): None = not modelled; cdiv (0.9) or floor (get_max_items, 0.10 on)
    encoder_items_rule: Literal["cdiv", "floor"] | None = None
    encoder_padded_to_budget: bool = False  # 0.11 expands each item's output to the encoder budget's rows
    kv_offloading: bool = False  # --kv-offloading-size (native CPU tier through the OffloadingConnector)
    source: str


# Bytes per logit at the sampler's peak. Sort: bf16 logits 2 + fp32 copy 4 + sorted values 4 + int64
# indices 8 + radix-sort scratch: 38.0 measured on an H100 (torch 2.11); V0's sampler (same sort, plus
# softmax and log-softmax copies) 38.7, the mean of four sampler-bound V0 logs (38.45-39.17). FlashInfer
# top-k/top-p: bf16 2 + fp32 4 + mask and probabilities, 14-16 measured.
FLASHINFER_BYTES_PER_LOGIT = 15.0
SORT_V1, SORT_V0 = 38.0, 38.7

_SMALL = SchedulerTier(min_memory_bytes=0, excludes_a100=False, serve=(2048, 256), llm=(8192, 256))
_V0 = (SchedulerTier(min_memory_bytes=0, excludes_a100=False, serve=(2048, 256), llm=(2048, 256)),)
_V1_08 = (SchedulerTier(min_memory_bytes=70 * GIB, excludes_a100=False, serve=(8192, 1024), llm=(16384, 1024)),
          _SMALL)
_V1 = (SchedulerTier(min_memory_bytes=70 * GIB, excludes_a100=True, serve=(8192, 1024), llm=(16384, 1024)), _SMALL)
_V033 = (SchedulerTier(min_memory_bytes=160 * GIB, excludes_a100=False, serve=(16384, 1024), llm=(16384, 1024)),
         *_V1)

V0_065 = VllmRelease(
    key="0.7", label="vLLM 0.7 (V0 engine)", gpu_memory_utilization=0.9, usable_rounding="floor",
    absolute_peak=False, nccl_subtracted=True, graphs_subtracted=False, persistent_sampler_buffers=False,
    compiled=False, rows_capped=False, full_hidden_at_sampler=True, sampled_row_copies=0, sampler="sort",
    sampler_paths=("sort", "flashinfer"), sort_bytes_per_logit=SORT_V0, scheduler=_V0,
    chunked_prefill_always=False, async_scheduling=False, in_flight_per_stage=False, legacy_token_log=True,
    concurrency_from_tokens=True, hybrid_kv_cache_manager=False, refusal="v0", mxfp4_backend=None,
    mla_absorbed_weights=True, v0_blocks_label="CUDA",
    source="worker/worker.py determine_num_available_blocks (snapshot before distributed init: "
           "KV = total × u − weights − torch peak growth − non-torch growth); model_runner.py profile_run "
           "(max_num_seqs prompts over max_num_batched_tokens, eager); MLA weights absorbed at load (0.7.1)")
V1_09 = replace(
    V0_065, key="0.9", label="vLLM 0.9", compiled=True, rows_capped=True, sampled_row_copies=2,
    sort_bytes_per_logit=SORT_V1, scheduler=_V1, chunked_prefill_always=True, concurrency_from_tokens=False,
    hybrid_kv_cache_manager=True, refusal="v1", mla_absorbed_weights=False,
    spec_methods=("eagle", "eagle3", "mtp", "ngram"), lookahead_methods=("eagle", "eagle3", "mtp"),
    encoder_items_rule="cdiv",
    source="v1/worker/gpu_worker.py:140-232 (snapshot before NCCL init; KV = total × u − weights − torch peak "
           "growth − non-torch growth); gpu_model_runner.py profile_run (compiled forward, then the sampler on "
           "min(max_num_seqs, T) rows, full hidden states and a rand_like copy alive); FlashInfer sampler only if "
           "installed")

RELEASES: dict[str, VllmRelease] = {r.key: r for r in (
    replace(V0_065, key="0.6.4", label="vLLM 0.6.4 (V0 engine)", absolute_peak=True, mla_absorbed_weights=False,
            v0_blocks_label="GPU",
            source="worker/worker.py 0.6.4 (KV = total × u − absolute torch peak − (used − reserved) after the "
                   "profile: the CUDA context counts)"),
    replace(V0_065, key="0.6.5", label="vLLM 0.6.5 (V0 engine)", mla_absorbed_weights=False, v0_blocks_label="GPU"),
    replace(V0_065, key="0.6.6", label="vLLM 0.6.6 (V0 engine)", mla_absorbed_weights=False, v0_blocks_label="GPU"),
    V0_065,
    replace(V0_065, key="0.8-v0", label="vLLM 0.8 (V0 engine)", mla_absorbed_weights=False, v0_blocks_label="cuda"),
    replace(V1_09, key="0.8", label="vLLM 0.8", absolute_peak=True, sampler_paths=("sort",), sampled_row_copies=1,
            full_hidden_at_sampler=False, scheduler=_V1_08, concurrency_from_tokens=True,
            hybrid_kv_cache_manager=False, refusal="v1-0.8", spec_methods=(), lookahead_methods=(),
            encoder_items_rule=None,
            source="v1/worker/gpu_worker.py:165-211 (KV = total × u − absolute torch peak − (used − allocated) "
                   "after the profile: context, cuBLAS, NCCL, other processes); FlashInfer sampling switched off "
                   "(v1/sample/ops/topk_topp_sampler.py:33-48)"),
    V1_09,
    replace(V1_09, key="0.10", label="vLLM 0.10", mxfp4_backend="marlin", encoder_items_rule="floor",
            source="v1/worker/gpu_worker.py:174-276 (0.10.1.1; snapshot before NCCL init); gpu_model_runner.py "
                   "profile_run; quantization/mxfp4.py (Marlin experts on Hopper)"),
    replace(V1_09, key="0.11", label="vLLM 0.11", nccl_subtracted=False, mxfp4_backend="marlin",
            decode_context_parallel=True, encoder_items_rule="floor", encoder_padded_to_budget=True,
            source="v1/worker/gpu_worker.py:169-298 (NCCL initialised before the snapshot: not subtracted); "
                   "gpu_model_runner.py:2977-3397 (profile run); quantization/mxfp4.py:95-102 (Marlin on Hopper "
                   "without triton_kernels)"),
    replace(V1_09, key="0.33", label="vLLM 0.33", gpu_memory_utilization=0.92, usable_rounding="ceil",
            nccl_subtracted=False, graphs_subtracted=True, persistent_sampler_buffers=True, sampled_row_copies=1,
            sampler="flashinfer", scheduler=_V033, async_scheduling=True, in_flight_per_stage=True,
            legacy_token_log=False, refusal="0.33", mxfp4_backend="triton", decode_context_parallel=True,
            spec_methods=("draft_model", "eagle", "eagle3", "mtp", "ngram"),
            lookahead_methods=("draft_model", "eagle", "eagle3", "mtp"), spec_state_blocks=True,
            spec_sliding_retained=True, lora_embedding_families=frozenset({"llama", "mixtral", "qwen3", "qwen3_moe"}),
            lora_extra_vocab=0, lora_target_modules=True, encoder_items_rule="floor", kv_offloading=True,
            source="v1/worker/gpu_worker.py:519-775 (cuBLAS and NCCL before the snapshot; KV = ceil(total × u) − "
                   "memory consumed since − transient peak − CUDA-graph estimate); v1/worker/gpu/model_runner.py "
                   "(Model Runner V2: sampler twice, FlashInfer); gpu/sample/penalties.py:43-50"),
)}
NEWEST = "0.33"
ASSUMED_DEVICE = Device(name="H100", memory_bytes=80 * GIB)  # scheduler defaults when no GPU is given


def release(key: str) -> VllmRelease:
    found = RELEASES.get(key)
    if found is None:
        raise InputError(f"unknown vLLM release {key!r}; kvplan follows: {', '.join(RELEASES)}", arg="engine")
    return found


def _tier(rel: VllmRelease, device: Device) -> SchedulerTier:
    name = (device.name or "").lower()
    return next(t for t in rel.scheduler
                if device.memory_bytes >= t.min_memory_bytes and not (t.excludes_a100 and "a100" in name))


def chunks_prefill(rel: VllmRelease, req: Request) -> bool:
    """V0 chunks prefill only past 32k tokens, and not for MLA, sliding-window or LoRA models."""
    if rel.chunked_prefill_always:
        return True
    sliding = any(kind in ("sliding", "chunked") for kind in req.model.layer_kinds)
    return req.max_model_len > 32768 and not (req.model.is_mla or sliding or req.settings.max_lora_rank)


def scheduler_defaults(rel: VllmRelease, req: Request) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) the release picks for this GPU and entry point."""
    tier = _tier(rel, req.device or ASSUMED_DEVICE)
    tokens, seqs = tier.serve if req.settings.vllm.entry_point == "serve" else tier.llm
    if not chunks_prefill(rel, req):
        tokens = max(req.max_model_len, tokens)
    return tokens, seqs


def resolve(rel: VllmRelease, req: Request) -> Request:
    """The request with every `None` knob set to the release's default."""
    s, v = req.settings, req.settings.vllm
    tokens, seqs = scheduler_defaults(rel, req)
    sampler = v.sampler or rel.sampler
    if sampler not in rel.sampler_paths:
        raise InputError(f"{rel.label} samples with {', '.join(rel.sampler_paths)}, not {sampler!r}", arg="sampler")
    async_ = rel.async_scheduling if v.async_scheduling is None else v.async_scheduling
    batches = req.pp + int(async_) if rel.in_flight_per_stage else 1
    vllm = replace(
        v, sampler=sampler, async_scheduling=async_, in_flight_batches=v.in_flight_batches or batches,
        legacy_token_log=rel.legacy_token_log if v.legacy_token_log is None else v.legacy_token_log,
        hybrid_kv_cache_manager=v.hybrid_kv_cache_manager and rel.hybrid_kv_cache_manager,
        moe_backend=v.moe_backend or rel.mxfp4_backend)
    settings = replace(s, max_num_batched_tokens=s.max_num_batched_tokens or tokens,
                       max_num_seqs=s.max_num_seqs or seqs, vllm=vllm)
    return replace(req, settings=settings)


def profile_run(rel: VllmRelease, s: Settings) -> ProfileRun:
    """The start-up profile run of a resolved request."""
    sampler = s.vllm.sampler
    assert s.max_num_batched_tokens is not None and s.max_num_seqs is not None and sampler is not None
    tokens, seqs = s.max_num_batched_tokens, s.max_num_seqs
    per_logit = rel.sort_bytes_per_logit if sampler == "sort" else FLASHINFER_BYTES_PER_LOGIT
    return ProfileRun(tokens=tokens, eager=s.enforce_eager or not rel.compiled,
                      sampler_rows=min(seqs, tokens) if rel.rows_capped else seqs, sampler_path=sampler,
                      sampler_bytes_per_logit=per_logit, full_hidden_at_sampler=rel.full_hidden_at_sampler,
                      sampled_row_copies=rel.sampled_row_copies,
                      persistent_rows=seqs if rel.persistent_sampler_buffers else 0)


def budget_rules(rel: VllmRelease, req: Request) -> BudgetRules:
    """What this release subtracts before the KV cache, for a resolved request."""
    s = req.settings
    groups = int(req.tp > 1) + int(req.pp > 1)
    return BudgetRules(
        profile=profile_run(rel, s),
        non_torch=("context_cublas_absolute",) if rel.absolute_peak else ("non_torch_growth",),
        nccl_groups=groups if rel.nccl_subtracted else 0,
        cuda_graphs=rel.graphs_subtracted and not s.enforce_eager, mxfp4_backend=s.vllm.moe_backend,
        mla_absorbed=rel.mla_absorbed_weights, draft_weights=req.draft is not None, lora=lora_rule(rel, req),
        encoder=encoder_rule(rel, s), cpu_offload_bytes=s.cpu_offload_bytes)


DEFAULT_LORA_RANK, DEFAULT_MAX_LORAS = 16, 1  # LoRAConfig defaults (config/lora.py)
MM_LIMIT_PER_PROMPT = 999  # V1 MultiModalConfig: items per modality per prompt when unset


def lora_rule(rel: VllmRelease, req: Request) -> LoraRule | None:
    """--enable-lora (kvplan: --max-lora-rank or --max-loras): max_loras slots in every wrapped layer, allocated by
    LoRAModelManager inside load_model (lora/layers create_lora_weights; 0.11 gpu_model_runner.py:2631-2651)."""
    s = req.settings
    if s.max_lora_rank is None and s.max_loras is None:
        return None
    if s.lora_target_modules and not rel.lora_target_modules:
        raise InputError(f"{rel.label} has no lora_target_modules (LoRAConfig.target_modules is vLLM 0.33's): "
                         "every linear module gets slots", arg="lora_target_modules")
    slots = s.max_loras or DEFAULT_MAX_LORAS
    return LoraRule(slots=slots, rank=s.max_lora_rank or DEFAULT_LORA_RANK, target_modules=s.lora_target_modules,
                    embeddings=(req.model.model_type or "") in rel.lora_embedding_families,
                    extra_vocab=rel.lora_extra_vocab, vocab_padding=256 if rel.lora_extra_vocab else 1,
                    host_adapters=max(s.max_cpu_loras or slots, slots),
                    source=f"{rel.label}: lora/layers create_lora_weights (max_loras × A and B per wrapped module)")


def encoder_rule(rel: VllmRelease, s: Settings) -> EncoderRule | None:
    """V1's multimodal profile run (0.9: gpu_model_runner.py:2210-2270; 0.10-0.11 v1/worker/utils.py
    get_max_items, 0.11 gpu_model_runner.py:3326-3388; 0.33 gpu/model_runner.py:1022-1032)."""
    if rel.encoder_items_rule is None or s.limit_mm_per_prompt == 0:
        return None
    assert s.max_num_batched_tokens is not None and s.max_num_seqs is not None
    return EncoderRule(budget_tokens=s.max_num_batched_tokens, max_num_seqs=s.max_num_seqs,
                       limit_per_prompt=s.limit_mm_per_prompt or MM_LIMIT_PER_PROMPT,
                       items_rule=rel.encoder_items_rule, padded_to_budget=rel.encoder_padded_to_budget,
                       source=f"{rel.label} profile_run: dummy items of the largest modality, outputs cached")
