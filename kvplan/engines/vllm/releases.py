"""The functions that read a vLLM release row (``row.py``; the rows: ``rows.py``, ``rows_late.py``): scheduler
defaults, which model runner a model gets, the profile run, what the budget subtracts and what is allocated after
the KV cache. A release that changes one of these is a new row (or a new field), not a new branch here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from kvplan.engines.base import (
    AfterKv,
    BudgetRules,
    CommRule,
    Device,
    EncoderRule,
    LoadRule,
    LoraRule,
    ProfileRun,
    Request,
)
from kvplan.engines.settings import Settings
from kvplan.engines.vllm.backends import NVLS_GPUS, sm_count
from kvplan.engines.vllm.families import experts_kind
from kvplan.engines.vllm.row import COMM_GROUP_BYTES, GIB, RefusalStyle, SchedulerTier, VllmRelease
from kvplan.engines.vllm.rows import FLASHINFER_BYTES_PER_LOGIT, SORT_V0, SORT_V1
from kvplan.engines.vllm.rows_late import NEWEST, RELEASES
from kvplan.errors import InputError

if TYPE_CHECKING:  # moe_backends.py is imported for a model with MXFP4 experts only (experts_kind)
    from kvplan.engines.vllm.moe_backends import Mxfp4Pick

ASSUMED_DEVICE = Device(name="H100", memory_bytes=80 * GIB)  # scheduler defaults when no GPU is given
# Bytes per logit of the paths besides sort (row.SamplerPath; Model Runner V2's default pass: fp32 copy + Gumbel
# noise "gumbel" until 0.27, the bf16 logits only "bf16" 0.28-0.32, both derived from the tensors the code allocates).
TRITON_BYTES_PER_LOGIT = 14.0  # bf16 2 + fp32 4 + softmax 4 + exponential noise 4 (0.17 topk_topp_sampler.py)
PATH_BYTES = {"flashinfer": FLASHINFER_BYTES_PER_LOGIT, "triton": TRITON_BYTES_PER_LOGIT,
              "flashinfer+triton": max(FLASHINFER_BYTES_PER_LOGIT, TRITON_BYTES_PER_LOGIT), "gumbel": 6.0, "bf16": 2.0}
TRITON_MIN_ROWS = 8  # fewer rows sort (0.17-0.29 apply_top_k_top_p)
WARMUP_MESSAGE = ("CUDA out of memory occurred when warming up sampler with {rows} dummy requests. Please try lowering "
                  "`max_num_seqs` or `gpu_memory_utilization` when initializing the engine.")  # V1 runner, 0.8-0.33
MRV2_WARMUP_MESSAGE = "CUDA out of memory in Model Runner V2's warmup_kernels (sampling {rows} requests)"
__all__ = ["NEWEST", "RELEASES", "SORT_V0", "SORT_V1", "RefusalStyle", "SchedulerTier", "VllmRelease"]


def release(key: str) -> VllmRelease:
    found = RELEASES.get(key)
    if found is None:
        raise InputError(f"unknown vLLM release {key!r}; kvplan follows: {', '.join(RELEASES)}", arg="engine")
    return found


def _mxfp4_pick(rel: VllmRelease, req: Request, *, given: bool = True) -> Mxfp4Pick | None:
    """The MXFP4 MoE backend (moe_backends.py; `given`: a --moe-backend wins); None for a model without MXFP4 experts,
    whose pick is no backend."""
    if experts_kind(req) is None:
        return None
    from kvplan.engines.vllm.moe_backends import mxfp4_pick, release_pick

    return mxfp4_pick(rel, req) if given else release_pick(rel, req)


def _backend_of(pick: Mxfp4Pick | None) -> str | None:
    return pick.backend if pick else None


def _tier(rel: VllmRelease, device: Device) -> SchedulerTier:
    name = (device.name or "").lower()
    return next(t for t in rel.scheduler
                if (any(n in name for n in t.names) if t.names else device.memory_bytes >= t.min_memory_bytes)
                and not (t.excludes_a100 and "a100" in name))


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
    tokens = req.settings.max_num_batched_tokens or tokens
    return tokens, min(seqs, tokens) if rel.seqs_capped else seqs


def uses_mrv2(rel: VllmRelease, req: Request) -> bool:
    """The model runs on Model Runner V2 by default (config/vllm.py _is_default_v2_model_runner_model)."""
    rule, m = rel.mrv2, req.model
    if rule is None:
        return False
    if rule.every_model:
        return True
    archs = m.raw.get("architectures") or []
    listed = any(a in rule.architectures for a in archs)
    moe = bool(m.field("num_experts"))
    hybrid = "linear" in m.layer_kinds
    if not set(m.layer_kinds) - {"linear", "none"} or (hybrid and (rule.hybrid == "never"
                                                                     or (rule.hybrid == "listed" and not listed))):
        return False
    if rule.listed_dense_only:
        return listed and not moe and not m.raw.get("quantization_config")
    return listed or (rule.any_dense and not moe)


def default_sampler(rel: VllmRelease, req: Request) -> str:
    return rel.mrv2_sampler if uses_mrv2(rel, req) else rel.sampler


def resolve(rel: VllmRelease, req: Request) -> Request:
    """The request with every `None` knob set to the release's default."""
    s, v = req.settings, req.settings.vllm
    tokens, seqs = scheduler_defaults(rel, req)
    sampler = v.sampler or default_sampler(rel, req)
    if sampler not in (*rel.sampler_paths, default_sampler(rel, req)):
        raise InputError(f"{rel.label} samples with {', '.join(rel.sampler_paths)}, not {sampler!r}", arg="sampler")
    async_ = (rel.async_scheduling and (rel.async_with_pp or req.pp == 1)) if v.async_scheduling is None \
        else v.async_scheduling
    vllm = replace(
        v, sampler=sampler, async_scheduling=async_, in_flight_batches=v.in_flight_batches or in_flight(rel, req, async_),
        legacy_token_log=rel.legacy_token_log if v.legacy_token_log is None else v.legacy_token_log,
        hybrid_kv_cache_manager=v.hybrid_kv_cache_manager and rel.hybrid_kv_cache_manager,
        moe_backend=v.moe_backend or _backend_of(_mxfp4_pick(rel, req, given=False)) or rel.mxfp4_backend,
        gpu_memory_utilization=v.gpu_memory_utilization or rel.gpu_memory_utilization)
    settings = replace(s, max_num_batched_tokens=s.max_num_batched_tokens or tokens,
                       max_num_seqs=s.max_num_seqs or seqs, vllm=vllm)
    return replace(req, settings=settings)


def in_flight(rel: VllmRelease, req: Request, async_: bool) -> int:
    """Batches whose tokens a sliding window keeps (max_concurrent_batches, 0.26 config/vllm.py:512-533): one
    before 0.26; then pp + 1 on Model Runner V2 with async scheduling, 2 on V1 with async at pp 1, else pp."""
    if rel.in_flight == "one":
        return 1
    if async_ and uses_mrv2(rel, req):
        return req.pp + 1
    return 2 if async_ and req.pp <= 1 else req.pp


def _path_bytes(rel: VllmRelease, path: str, rows: int, vocab: int, sms: int) -> tuple[float, int]:
    """(bytes per logit, bytes the sampler keeps) of a top-k/top-p path over `rows` rows."""
    if path in ("triton", "flashinfer+triton") and rows < TRITON_MIN_ROWS and rel.triton_sampler_sorts_few_rows:
        path = "sort" if path == "triton" else "flashinfer"
    if path == "sort":
        return rel.sort_bytes_per_logit, 0
    kept = min(sms, rows) * vocab * 4 if path in ("triton", "flashinfer+triton") else 0
    return PATH_BYTES[path], kept


# Drafters whose dummy forward runs in the profile after the target's (use_eagle(): 0.25
# v1/worker/gpu_model_runner.py:6024-6066 drafter.dummy_run(num_tokens); Model Runner V2 0.33
# v1/worker/gpu/model_runner.py:946-986 speculator.propose(dummy_run=True)); a draft model's forward is not modelled.
DRAFTER_FORWARD_METHODS = ("mtp", "eagle", "eagle3")


def profile_run(rel: VllmRelease, req: Request) -> ProfileRun:
    """The start-up profile run of a resolved request. With speculative decoding the V1 runner's dummy sampler also
    runs the rejection sampler over randn logits of num_reqs draft + num_reqs bonus rows (0.25
    v1/worker/gpu_model_runner.py:6170-6199; 0.9.2 :2210-2240), which Model Runner V2 does not."""
    s = req.settings
    sampler, tokens, seqs = s.vllm.sampler, s.max_num_batched_tokens, s.max_num_seqs
    assert tokens is not None and seqs is not None and sampler is not None
    rows, mrv2 = min(seqs, tokens) if rel.rows_capped else seqs, uses_mrv2(rel, req)
    per_logit, kept = _path_bytes(rel, sampler, rows, int(req.model.field("vocab_size") or 0),
                                  sm_count(req.gpu_name))
    drafts = req.draft is not None and req.draft.method in DRAFTER_FORWARD_METHODS
    return ProfileRun(tokens=tokens, eager=s.enforce_eager or not rel.compiled, sampler_rows=rows, sampler_path=sampler,
                      sampler_bytes_per_logit=per_logit, full_hidden_at_sampler=rel.full_hidden_at_sampler,
                      sampled_row_copies=1 if mrv2 else rel.sampled_row_copies, sampler_buffer_bytes=kept,
                      persistent_rows=seqs if mrv2 and rel.persistent_sampler_buffers else 0,
                      draft_tokens=tokens if drafts else 0,
                      spec_logit_rows=2 * rows if req.draft is not None and not mrv2 else 0)


def graphs_subtracted(rel: VllmRelease, req: Request) -> bool:
    """A CUDA-graph estimate is subtracted before the KV cache (V1 runner 0.20 on, Model Runner V2 0.29 on)."""
    return rel.graph_estimate == "subtracted" and not req.settings.enforce_eager and \
        (rel.mrv2_graph_estimate or not uses_mrv2(rel, req))


def budget_rules(rel: VllmRelease, req: Request) -> BudgetRules:
    """What this release subtracts before the KV cache, for a resolved request."""
    s, moe, run = req.settings, _mxfp4_pick(rel, req), profile_run(rel, req)
    return BudgetRules(
        profile=run,
        non_torch=("context_cublas_absolute",) if rel.absolute_peak else ("non_torch_growth",),
        nccl_groups=int(req.tp > 1) + int(req.pp > 1) if rel.generation == "V0" else 0, comm=comm_rule(rel, req),
        cuda_graphs=graphs_subtracted(rel, req), mxfp4_backend=_backend_of(moe),
        mxfp4_assumed=moe.assumed if moe else "", mxfp4_keeps_scales=moe.keeps_scales if moe else False,
        mxfp4_source=moe.source if moe else "",
        fp8_moe_refine=rel.fp8_moe_refine,
        mla_absorbed=rel.mla_absorbed_weights, draft_weights=req.draft is not None,
        draft_shared=draft_shared(rel, req), lora=lora_rule(rel, req),
        encoder=encoder_rule(rel, s), cpu_offload_bytes=s.cpu_offload_bytes, after_kv=after_kv(rel, req, run),
        load=load_rule(rel, req))


def draft_shared(rel: VllmRelease, req: Request) -> tuple[str, ...]:
    """The MTP module parts the drafter takes from the target: the embedding at pp 1 (0.33
    llm_base_proposer.py:1418-1480; 0.9.2 eagle.py:344-346), the head where the module computes its logits with
    an lm_head (replaced by the target's), or its shared_head.head from 0.16 (eagle.py:1494-1521)."""
    mtp = req.draft.mtp if req.draft else None
    head = mtp is None or mtp.head == "lm_head" or rel.mtp_head_shared
    return (*(("embedding",) if req.pp == 1 else ()), *(("lm_head",) if head else ()))


def load_rule(rel: VllmRelease, req: Request) -> LoadRule:
    """How this release keeps the weights it loads on this GPU: Machete for AWQ on sm90 where the release chooses
    the kernel (0.19 on), else Marlin; the AWQ kernel is unknown (None) when the GPU's compute capability is."""
    cc = req.device.compute_capability if req.device is not None else None
    if not rel.awq_kernel_chooser:
        return LoadRule(awq_kernel="marlin", mrope_per_model=rel.mrope_per_model)
    return LoadRule(awq_kernel=None if cc is None else "machete" if cc == (9, 0) else "marlin",
                    mrope_per_model=rel.mrope_per_model)


def comm_rule(rel: VllmRelease, req: Request) -> CommRule | None:
    """NCCL memory in the budget (V1): all groups before 0.11, the TP group's profile-run communicator 0.11-0.25."""
    if rel.generation == "V0" or rel.tp_comm == "none" or (rel.tp_comm == "lazy" and req.tp == 1):
        return None
    device = req.device or ASSUMED_DEVICE  # an NVSwitch part at its own memory (a GPU given only by size is not)
    nvls = (device.name or "") in NVLS_GPUS and device.memory_bytes >= 70 * GIB
    if rel.tp_comm == "lazy":
        on = rel.tp_comm_measured_on
        return CommRule(when="profile", nvls=nvls, tp_groups=1, measured_on=on,
                        group_bytes=COMM_GROUP_BYTES["profile", on, nvls],
                        pp_group_bytes=COMM_GROUP_BYTES["profile", on, False])
    return CommRule(when="init", nvls=nvls, tp_groups=int(req.tp > 1), pp_groups=int(req.pp > 1),
                    group_bytes=COMM_GROUP_BYTES["init", "", nvls], pp_group_bytes=COMM_GROUP_BYTES["init", "", False]) \
        if req.tp > 1 or req.pp > 1 else None


def after_kv(rel: VllmRelease, req: Request, run: ProfileRun | None = None) -> AfterKv | None:
    """What V1 allocates once the KV cache is sized (v1/worker/gpu_worker.py compile_or_warm_up_model): CUDA graphs
    (captured after the KV cache; budgeted only where an estimate was subtracted), then the V1 runner's sampler
    warm-up over min(max_num_seqs, max_num_batched_tokens) rows on the last PP stage, or Model Runner V2's
    warmup_kernels with SamplingParams.for_sampler_warmup() (fp32 + FlashInfer top-k/top-p; 0.33 profiles it)."""
    if rel.generation == "V0":
        return None
    run, mrv2 = run or profile_run(rel, req), uses_mrv2(rel, req)  # `run`: the budget's, already built
    if mrv2 and rel.mrv2_sampler != "flashinfer":
        run = replace(run, sampler_path="flashinfer", sampler_bytes_per_logit=FLASHINFER_BYTES_PER_LOGIT)
    return AfterKv(graphs_unbudgeted=not req.settings.enforce_eager and not graphs_subtracted(rel, req),
                   warmup=replace(run, tokens=run.sampler_rows, full_hidden_at_sampler=False),
                   uncounted_rows=run.sampler_rows if mrv2 and not rel.persistent_sampler_buffers else 0,
                   message=MRV2_WARMUP_MESSAGE if mrv2 else WARMUP_MESSAGE,
                   source=f"{rel.release} v1/worker/gpu_worker.py compile_or_warm_up_model")


DEFAULT_LORA_RANK, DEFAULT_MAX_LORAS = 16, 1  # LoRAConfig defaults (config/lora.py)
MM_LIMIT_PER_PROMPT = 999  # V1 MultiModalConfig: items per modality per prompt when unset


def lora_rule(rel: VllmRelease, req: Request) -> LoraRule | None:
    """--enable-lora (kvplan: --max-lora-rank or --max-loras): max_loras slots in every wrapped layer, allocated by
    LoRAModelManager inside load_model (lora/layers create_lora_weights; 0.11 gpu_model_runner.py:2631-2651)."""
    s = req.settings
    if s.max_lora_rank is None and s.max_loras is None:
        return None
    if s.lora_target_modules and not rel.lora_target_modules:
        raise InputError(f"{rel.label} has no lora_target_modules (LoRAConfig.target_modules is vLLM 0.19's): "
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
