"""What shares the GPU with the KV cache, or extends it: speculative decoding, LoRA slots, the multimodal
encoder cache, weights kept in host memory, and the host KV tier.

Each is data plus small functions (``speculative``, ``lora``, ``encoder``, ``offload``). The engines declare
how they account for them (``BudgetRules`` of a release, and their ``plan``); this package sizes them:
- budget terms (``extra_terms``): the draft's weights, LoRA slots, the profile run's encoder outputs, and
  weights the engine keeps in host memory (a negative term);
- the KV request: a draft's layers and lookahead slots (``speculative.drafted``, ``with_draft_layers``, read by
  the engines);
- results beside the plan (``Extras``): one summary per feature, and the host tier, which adds no GPU tokens.
"""

from __future__ import annotations

from kvplan.engines import Engine
from kvplan.engines.base import BudgetRules, BudgetTerm, EnginePlan, Request, Resolved
from kvplan.formulas.layout import Layout
from kvplan.formulas.per_token import kv_bytes_per_token
from kvplan.planning.extras import encoder, lora, role
from kvplan.planning.extras.encoder import EncoderSummary, encoder_term
from kvplan.planning.extras.lora import LoraSummary, lora_term
from kvplan.planning.extras.offload import HostMemory, HostTier, host_memory, host_tier
from kvplan.planning.extras.role import RoleSummary
from kvplan.planning.extras.speculative import (
    SpeculativeSummary,
    draft_weights_bytes,
    draft_weights_term,
    drafted,
    with_draft_layers,
)
from kvplan.planning.weights import weight_bytes_by_kind
from kvplan.records import Record


class Extras(Record):
    """The summaries of a capacity result (None: the feature is off)."""

    speculative: SpeculativeSummary | None = None
    lora: LoraSummary | None = None
    encoder_cache: EncoderSummary | None = None
    host_tier: HostTier | None = None
    host_memory: HostMemory | None = None  # what the replica pins in host memory against its node
    role: RoleSummary | None = None  # a prefill or decode instance of a disaggregated deployment


NO_EXTRAS = Extras()


NOT_OFFLOADED = ("embedding", "lm_head", "vision")  # built outside make_layers: never offloaded
OFFLOAD_TERM = "weights kept in host memory (cpu_offload)"


def offload_term(request: Request, rules: BudgetRules, stage: int, weights_dtype: str | None) -> BudgetTerm | None:
    """vLLM/SGLang --cpu-offload-gb: whole parameters of the decoder layers move to pinned host memory until
    the total reaches the limit (vLLM model_executor/models/utils.py maybe_offload_to_cpu, from make_layers)."""
    if not rules.cpu_offload_bytes:
        return None
    kinds = weight_bytes_by_kind(request.model, tp=request.tp, pp=request.pp, stage=stage, weights_dtype=weights_dtype)
    layers = sum(b for kind, b in kinds.items() if kind not in NOT_OFFLOADED)
    moved = min(rules.cpu_offload_bytes, layers)
    return BudgetTerm(name=OFFLOAD_TERM, bytes=-moved, exact=False, kind="weights",
                      source=f"min(cpu_offload {rules.cpu_offload_bytes:,} B, decoder layers {layers:,} B); whole "
                             "parameters move until the limit is reached (up to one tensor more)")


def extra_terms(request: Request, rules: BudgetRules, stage: int, weights_dtype: str | None = None) -> list[BudgetTerm]:
    """The terms these features add on one GPU of `stage` (the draft on the last, the encoder on the first)."""
    found = [offload_term(request, rules, stage, weights_dtype)]
    if rules.draft_weights and request.draft is not None and stage == request.pp - 1:
        found.append(draft_weights_term(request, request.draft, rules.draft_shared, weights_dtype))
    if rules.lora is not None:
        found.append(lora_term(request.model, rules.lora, request.tp, request.pp, stage))
    if rules.encoder is not None and stage == 0:
        found.append(encoder_term(request.model, rules.encoder, request.max_model_len))
    return [t for t in found if t is not None]


def speculative_summary(request: Request, plan: EnginePlan, layout: Layout,
                        terms: tuple[BudgetTerm, ...]) -> SpeculativeSummary | None:
    d = request.draft
    if d is None:
        return None
    counted = [t.bytes for t in terms if t.kind == "draft_weights"]
    return SpeculativeSummary(
        method=d.method, num_speculative_tokens=d.num_speculative_tokens, draft_model=d.model_id, draft_tp=d.tp,
        draft_kv_layers=d.num_layers,
        draft_kv_bytes_per_token_per_gpu=sum(kv_bytes_per_token(s, layout.kv_dtype) for s in d.specs_per_gpu),
        draft_weights_bytes_per_gpu=counted[0] if counted else draft_weights_bytes(request, d)[0],
        draft_weights_in_budget=bool(counted), lookahead_tokens_per_request=plan.lookahead_tokens_per_request)


def summarize(profile: Engine, request: Resolved, plan: EnginePlan, layout: Layout | None,
              terms: tuple[BudgetTerm, ...], node: tuple[str | None, int | None] = (None, None)) -> Extras:
    """The summaries of a capacity answer, from the request, the engine's rules and its plan; `node`: the GPU's
    catalog name and the node's memory (--host-mem) the pinned host memory is held against."""
    from kvplan.engines.protocol import rules_of  # the budget's, computed once per request

    rules = rules_of(profile, request)
    m, ranks = request.model, request.tp * request.pp
    tier = host_tier(profile, request, plan)
    moved = -sum(t.bytes for t in terms if t.name == OFFLOAD_TERM)
    return Extras(
        speculative=speculative_summary(request, plan, layout, terms) if layout is not None else None,
        lora=lora.summary(m, rules.lora, request.tp, request.pp) if rules.lora else None,
        encoder_cache=encoder.summary(m, rules.encoder, request.max_model_len, request.tp) if rules.encoder else None,
        host_tier=tier, host_memory=host_memory(tier, moved, ranks, *node),
        role=role.summary(profile, request, plan, layout) if layout is not None and plan.kv_tokens else None)


__all__ = [
    "NO_EXTRAS",
    "EncoderSummary",
    "Extras",
    "HostMemory",
    "HostTier",
    "LoraSummary",
    "RoleSummary",
    "SpeculativeSummary",
    "drafted",
    "extra_terms",
    "host_tier",
    "summarize",
    "with_draft_layers",
]
