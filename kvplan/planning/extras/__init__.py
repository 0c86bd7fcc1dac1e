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

from importlib import import_module
from typing import TYPE_CHECKING, Any

from kvplan.engines import Engine
from kvplan.engines.base import BudgetRules, BudgetTerm, Draft, EncoderRule, EnginePlan, Request, Resolved
from kvplan.engines.settings import Settings
from kvplan.records import Record

if TYPE_CHECKING:
    from kvplan.config.model import ModelConfig
    from kvplan.formulas.layout import Layout, LayoutPolicy
    from kvplan.planning.extras.encoder import EncoderSummary
    from kvplan.planning.extras.lora import LoraSummary
    from kvplan.planning.extras.offload import HostMemory, HostTier
    from kvplan.planning.extras.role import RoleSummary
    from kvplan.planning.extras.speculative import R, SpeculativeSummary

# Each feature's module is imported when a request asks for the feature (a plain run asks for none of them: 3 to 9 ms
# of imports it never used); the summaries' classes are still importable from here (__getattr__ below).
LAZY = {"EncoderSummary": "encoder", "encoder_term": "encoder", "LoraSummary": "lora", "lora_term": "lora",
        "HostMemory": "offload", "HostTier": "offload", "host_memory": "offload", "host_tier": "offload",
        "RoleSummary": "role", "SpeculativeSummary": "speculative", "draft_weights_bytes": "speculative",
        "draft_weights_term": "speculative"}


def __getattr__(name: str) -> Any:
    """A summary's class or a function of a feature's module, imported when first asked (kept here: ``Extras``'s
    type hints name the classes)."""
    if name not in LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{LAZY[name]}"), name)
    globals()[name] = value
    return value


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
    from kvplan.planning.weights import weight_bytes_by_kind

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
        from kvplan.planning.extras.speculative import draft_weights_term

        found.append(draft_weights_term(request, request.draft, rules.draft_shared, weights_dtype))
    if rules.lora is not None:
        from kvplan.planning.extras.lora import lora_term

        found.append(lora_term(request.model, rules.lora, request.tp, request.pp, stage))
    if rules.encoder is not None and stage == 0 and has_tower(request.model):
        from kvplan.planning.extras.encoder import encoder_term

        found.append(encoder_term(request.model, rules.encoder, request.max_model_len))
    return [t for t in found if t is not None]


def has_tower(model: ModelConfig) -> bool:
    """A config with a vision or audio sub-config: a text model's encoder terms are all None (``encoder``'s own first
    test, without its import)."""
    return isinstance(model.raw.get("vision_config"), dict) or isinstance(model.raw.get("audio_config"), dict)


def encoder_phase(model: ModelConfig, rule: EncoderRule, max_model_len: int, tp: int) -> tuple[int, str] | None:
    """``encoder.encoder_phase``, its module imported for a model with a tower."""
    if not has_tower(model):
        return None
    from kvplan.planning.extras import encoder

    return encoder.encoder_phase(model, rule, max_model_len, tp)


def unmodelled_tower_note(request: Request, rules: BudgetRules) -> str | None:
    """``encoder.unmodelled_tower_note``, where the release profiles an encoder at all."""
    if rules.encoder is None or not has_tower(request.model):
        return None
    from kvplan.planning.extras import encoder

    return encoder.unmodelled_tower_note(request, rules)


def asks_draft(s: Settings) -> bool:
    """Whether the settings ask for speculative decoding (``speculative.drafted``'s own first test)."""
    return bool(s.speculative_model or s.speculative_method or s.num_speculative_tokens)


def drafted(model: ModelConfig, settings: Settings, tp: int) -> Draft | None:
    """``speculative.drafted``: the drafter a request asks for (None: no speculative decoding asked)."""
    if not asks_draft(settings):
        return None
    from kvplan.planning.extras import speculative

    return speculative.drafted(model, settings, tp)


def with_draft_layers(request: R, layout: Layout, policy: LayoutPolicy) -> R:
    """``speculative.with_draft_layers``: the drafter's KV layers beside the target's (unchanged without one)."""
    if request.draft is None:
        return request
    from kvplan.planning.extras import speculative

    return speculative.with_draft_layers(request, layout, policy)


def speculative_summary(request: Request, plan: EnginePlan, layout: Layout,
                        terms: tuple[BudgetTerm, ...]) -> SpeculativeSummary | None:
    d = request.draft
    if d is None:
        return None
    from kvplan.formulas.per_token import kv_bytes_per_token
    from kvplan.planning.extras.speculative import SpeculativeSummary, draft_weights_bytes

    counted = [t.bytes for t in terms if t.kind == "draft_weights"]
    return SpeculativeSummary(
        method=d.method, num_speculative_tokens=d.num_speculative_tokens, draft_model=d.model_id, draft_tp=d.tp,
        draft_kv_layers=d.num_layers,
        draft_kv_bytes_per_token_per_gpu=sum(kv_bytes_per_token(s, layout.kv_dtype) for s in d.specs_per_gpu),
        draft_weights_bytes_per_gpu=counted[0] if counted else draft_weights_bytes(request, d)[0],
        draft_weights_in_budget=bool(counted), lookahead_tokens_per_request=plan.lookahead_tokens_per_request)


def asks_host_tier(s: Settings) -> bool:
    """Whether the settings name a host KV tier (``offload.connector`` finds none, and refuses nothing, otherwise)."""
    return s.kv_offloading_bytes is not None or s.sglang.hicache_ratio is not None \
        or s.lmcache_cpu_bytes is not None or s.mooncake_segment_bytes is not None


def _host(profile: Engine, request: Resolved, plan: EnginePlan, terms: tuple[BudgetTerm, ...],
          node: tuple[str | None, int | None]) -> tuple[HostTier | None, HostMemory | None]:
    """The host tier and the host memory the replica pins ((None, None): it pins none)."""
    moved = -sum(t.bytes for t in terms if t.name == OFFLOAD_TERM)
    if not moved and not asks_host_tier(request.settings):
        return None, None
    from kvplan.planning.extras.offload import host_memory, host_tier

    tier = host_tier(profile, request, plan)
    return tier, host_memory(tier, moved, request.tp * request.pp, *node)


def summarize(profile: Engine, request: Resolved, plan: EnginePlan, layout: Layout | None,
              terms: tuple[BudgetTerm, ...], node: tuple[str | None, int | None] = (None, None)) -> Extras:
    """The summaries of a capacity answer, from the request, the engine's rules and its plan; `node`: the GPU's
    catalog name and the node's memory (--host-mem) the pinned host memory is held against."""
    from kvplan.engines.protocol import rules_of  # the budget's, computed once per request

    rules = rules_of(profile, request)
    tier, host = _host(profile, request, plan, terms, node)
    speculative = speculative_summary(request, plan, layout, terms) if layout is not None else None
    lora, encoder = _lora_summary(request, rules), _encoder_summary(request, rules)
    role = _role_summary(profile, request, plan, layout)
    if all(found is None for found in (speculative, lora, encoder, tier, host, role)):
        return NO_EXTRAS  # nothing to summarise: the record Extras() is
    return Extras(speculative=speculative, lora=lora, encoder_cache=encoder, host_tier=tier, host_memory=host,
                  role=role)


def _lora_summary(request: Resolved, rules: BudgetRules) -> LoraSummary | None:
    if not rules.lora:
        return None
    from kvplan.planning.extras import lora

    return lora.summary(request.model, rules.lora, request.tp, request.pp)


def _encoder_summary(request: Resolved, rules: BudgetRules) -> EncoderSummary | None:
    if not rules.encoder or not has_tower(request.model):
        return None
    from kvplan.planning.extras import encoder

    return encoder.summary(request.model, rules.encoder, request.max_model_len, request.tp)


def _role_summary(profile: Engine, request: Resolved, plan: EnginePlan, layout: Layout | None) -> RoleSummary | None:
    if layout is None or not plan.kv_tokens or request.settings.role is None:
        return None
    from kvplan.planning.extras import role

    return role.summary(profile, request, plan, layout)


__all__ = [
    "NO_EXTRAS",
    "EncoderSummary",
    "Extras",
    "HostMemory",
    "HostTier",
    "LoraSummary",
    "RoleSummary",
    "SpeculativeSummary",
    "asks_draft",
    "asks_host_tier",
    "drafted",
    "encoder_phase",
    "extra_terms",
    "has_tower",
    "host_tier",
    "summarize",
    "unmodelled_tower_note",
    "with_draft_layers",
]
