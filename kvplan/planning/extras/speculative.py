"""Speculative decoding: the draft's KV layers and weights, from kvplan's own layout and weight formulas.

``drafted(model, settings, tp)`` answers which drafter a request asks for (what an engine's ``resolve`` checks),
``with_draft_layers(request, layout, policy)`` what it adds to the KV cache, the same for every engine (each engine
then places it by its own rule: ``kvplan/engines``):
- ``draft_model``, ``eagle``, ``eagle3``: a separate checkpoint (``speculative_model``), laid out with
  ``build_layout`` at the target's TP (vLLM requires ``draft_tensor_parallel_size`` = tp:
  ``v1/spec_decode/draft_model.py:63-78`` in 0.33; SGLang and TensorRT-LLM run the draft on the same
  ranks). Its KV dtype is the target's. An EAGLE head is a one-layer model: its config says so.
- ``mtp``: the target's own next-token-prediction modules, as vLLM builds them (``kvplan.config.mtp``: how many,
  and which target layer each one's attention repeats: full attention or MLA, DeepSeek-V4's sliding latent,
  MiMo-V2's sliding window, EXAONE-4.5's ``layer_types[j]``); one KV layer each.
- ``ngram``: prompt lookup; no weights, no KV layers, only the K drafted tokens.
The method is inferred as vLLM 0.33 does (``config/speculative.py:1240-1244``, ``:1432-1448``): from the
draft's name (``eagle-``, ``eagle3``), else a draft model; without a checkpoint only ``mtp`` and ``ngram``
make sense. K (``num_speculative_tokens``) must be given, except for MTP, where it
defaults to vLLM's ``n_predict`` (the modules the config declares); K above it must be a multiple of it, each
module drafting in turn (``spec_step_idx % num_mtp_layers``; 0.33 ``config/speculative.py:1600-1611``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from kvplan.config import as_model
from kvplan.config.model import ModelConfig
from kvplan.config.mtp import MtpModules, mtp_modules
from kvplan.engines.base import BudgetTerm, Draft, Request
from kvplan.engines.settings import Settings
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout, LayoutPolicy, build_layout
from kvplan.planning.extras import asks_draft
from kvplan.planning.weights import mtp_bytes_per_gpu, weight_bytes_by_kind, weight_bytes_per_gpu, weights_source
from kvplan.records import Record
from kvplan.specs import Composite, LayerSpec, SlidingMLA, parts

R = TypeVar("R", bound=Request)


class SpeculativeSummary(Record):
    """What speculative decoding takes beside the target's KV cache, per GPU (JSON ``speculative``)."""

    method: str
    num_speculative_tokens: int
    draft_model: str | None
    draft_tp: int
    draft_kv_layers: int
    draft_kv_bytes_per_token_per_gpu: int
    draft_weights_bytes_per_gpu: int
    draft_weights_in_budget: bool  # False: the engine loads them after sizing its pool (SGLang: from its reserve)
    lookahead_tokens_per_request: int


def method_of(settings_method: str | None, draft_name: str | None, target: ModelConfig) -> str:
    """vLLM's inference of the method: from the draft's name ("eagle-" -> eagle, "eagle3" -> eagle3, as in
    yuhuili/EAGLE-LLaMA3-Instruct-8B and yuhuili/EAGLE3-LLaMA3.1-Instruct-8B), any other draft is a draft model;
    without one, MTP if the target has MTP layers."""
    if settings_method:
        return settings_method
    if draft_name is None:
        if target.num_nextn_predict_layers:
            return "mtp"
        raise InputError(f"num_speculative_tokens without a draft: {target.model_id} has no MTP layers; name a "
                         "speculative_model or speculative_method ngram", arg="speculative_model")
    name = draft_name.lower()
    return "eagle" if "eagle-" in name else "eagle3" if "eagle3" in name else "draft_model"


def _mtp_spec(layout: Layout, index: int) -> tuple[LayerSpec, LayerSpec]:
    """(whole, per GPU) spec of an MTP module's KV layer: target layer `index`'s (DeepSeek-V4: its sliding latent
    alone, the compress ratio 1 vLLM gives a layer past num_hidden_layers)."""
    whole, gpu = layout.specs[index], layout.specs_per_gpu[index]
    if isinstance(whole, Composite) and any(isinstance(p, SlidingMLA) for p in whole.parts):
        at = next(i for i, p in enumerate(whole.parts) if isinstance(p, SlidingMLA))
        return whole.parts[at], parts(gpu)[at]
    return whole, gpu


def _specs(request: Request, layout: Layout, drafter: Draft,
           policy: LayoutPolicy) -> tuple[tuple[LayerSpec, ...], tuple[LayerSpec, ...]]:
    if drafter.method == "ngram":
        return (), ()
    if drafter.method == "mtp":
        pairs = [_mtp_spec(layout, i) for i in mtp_modules(request.model).attention_layers]
        return tuple(w for w, _ in pairs), tuple(g for _, g in pairs)
    assert drafter.model is not None  # drafted() refuses draft_model, eagle and eagle3 without a checkpoint
    # The draft runs in the target's engine: its cache config (KV dtype, quant group, state dtypes), one stage.
    cache = replace(request.cache, pp=1, dcp=1, overrides=None, kv_dtype=layout.kv_dtype.name, block_size=0)
    d = build_layout(drafter.model, cache, policy)
    return d.specs, d.specs_per_gpu


def drafted(model: ModelConfig, settings: Settings, tp: int) -> Draft | None:
    """The drafter a request asks for, before its KV layers are laid out (None: no speculative decoding asked): its
    method, K, checkpoint and MTP modules, what an engine's resolve reads of it."""
    if not asks_draft(settings):
        return None
    s = settings
    draft_model = as_model(s.speculative_model) if s.speculative_model else None
    method = method_of(s.speculative_method, s.speculative_model, model)
    if method in ("mtp", "ngram") and draft_model is not None:
        raise InputError(f"speculative_method {method} drafts without a checkpoint; drop speculative_model",
                         arg="speculative_model")
    if method not in ("mtp", "ngram") and draft_model is None:
        raise InputError(f"speculative_method {method} needs a draft checkpoint (speculative_model)",
                         arg="speculative_model")
    modules = mtp_modules(model) if method == "mtp" else None
    k = s.num_speculative_tokens or (modules.n_predict if modules else None)
    if k is None:
        raise InputError(f"speculative_method {method} needs num_speculative_tokens (vLLM: \"num_speculative_tokens "
                         "was not provided\")", arg="num_speculative_tokens")
    if modules and modules.n_predict and k > modules.n_predict and k % modules.n_predict:
        raise InputError(f"num_speculative_tokens:{k} must be divisible by n_predict={modules.n_predict} (vLLM 0.33 "
                         "config/speculative.py:1604-1611: the MTP modules draft in turn)", arg="num_speculative_tokens")
    return Draft(method=method, num_speculative_tokens=k, model=draft_model if method != "mtp" else None,
                 tp=tp, mtp=modules)


def with_draft_layers(request: R, layout: Layout, policy: LayoutPolicy) -> R:
    """The request with its drafter's KV layers laid out beside the target's `layout` (unchanged without one)."""
    if request.draft is None:
        return request
    specs, per_gpu = _specs(request, layout, request.draft, policy)
    return replace(request, draft=replace(request.draft, specs=specs, specs_per_gpu=per_gpu))


SHARED_WITH_TARGET = ("embedding", "lm_head")  # what the engines' MTP drafters take from the target by default


def draft_weights_bytes(request: Request, drafter: Draft, shared: tuple[str, ...] = SHARED_WITH_TARGET,
                        weights_dtype: str | None = None) -> tuple[int, bool, str]:
    """(bytes on one GPU, exact, rule) of the draft's weights as the engines load them; `shared`: the parts of
    an MTP module the engine takes from the target instead (``BudgetRules.draft_shared``)."""
    if drafter.method == "mtp":
        size = mtp_bytes_per_gpu(request.model, tp=drafter.tp, weights_dtype=weights_dtype, shared=shared)
        exact, how = _mtp_exact(request.model, drafter.mtp)
        kept = " and ".join(k for k in SHARED_WITH_TARGET if k not in shared)
        return size, exact, (f"{len(drafter.specs)} MTP module(s) of {drafter.mtp.drafter if drafter.mtp else 'the target'}"
                             f" ({how})" + (f", with its own {kept}" if kept else ", embedding and lm_head shared "
                                            "with the target"))
    if drafter.model is None:
        return 0, True, "n-gram lookup: no weights"
    whole = weight_bytes_per_gpu(drafter.model, tp=drafter.tp)
    if drafter.method == "draft_model":
        return whole, True, f"{drafter.model.model_id} at tp {drafter.tp}: its whole checkpoint"
    embed = weight_bytes_by_kind(drafter.model, tp=drafter.tp).get("embedding", 0)
    return whole - embed, False, (f"{drafter.model.model_id} at tp {drafter.tp} without its embedding (shared with "
                                  "the target when the head has none); EAGLE-3's wider q/k/v and fc not derived")


def _mtp_exact(model: ModelConfig, modules: MtpModules | None) -> tuple[bool, str]:
    exact, _ = weights_source(model)
    if modules is None or not modules.template_exact:
        return False, ("an estimate: the target's decoder layers + fusion projection + 3 norms; the module's own "
                       "extra tensors are not in a table")
    return exact, "the target's decoder layers + fusion projection + 3 norms" + ("" if exact else ", an estimate")


def draft_weights_term(request: Request, drafter: Draft, shared: tuple[str, ...] = SHARED_WITH_TARGET,
                       weights_dtype: str | None = None) -> BudgetTerm | None:
    size, exact, rule = draft_weights_bytes(request, drafter, shared, weights_dtype)
    if not size:
        return None
    return BudgetTerm(name=f"draft weights ({drafter.method})", bytes=size, exact=exact, kind="draft_weights",
                      source=f"{rule}; loaded before the KV cache is sized")
