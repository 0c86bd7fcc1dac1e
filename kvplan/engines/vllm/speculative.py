"""vLLM's speculative decoding, as far as the KV cache sees it (V1: 0.9 on).

- The draft's attention layers (a draft model's, an EAGLE head's, or the target's MTP layers) register in
  the same forward context as the target's, so ``get_kv_cache_spec`` returns them too: they join the KV
  cache groups and share the one pool of block ids (one block id costs their pages as well). They sit on
  the last PP stage, the only one with a speculator (0.33 ``v1/worker/gpu/model_runner.py:298-304``).
- The draft's weights load inside the same ``DeviceMemoryProfiler`` as the target's (0.11
  ``gpu_model_runner.py:2631-2651``; 0.33 ``gpu/model_runner.py:396-427``): they count in the weights.
- ``num_speculative_tokens`` K: the scheduler allocates K slots past the scheduled tokens of every running
  request (``num_lookahead_tokens``: EAGLE, EAGLE-3 and MTP; 0.33 also a draft model; n-grams none), which
  the start-up check and the logged concurrency do not count. 0.33 reserves K more state blocks per request
  on Mamba layers (``MambaSpec.num_speculative_blocks``, ``kv_cache_interface.py:1135-1141``) and keeps K − 1
  more tokens below a sliding window for multi-module MTP (``extra_retained_tokens``,
  ``kv_cache_planning.py:1634-1641``; ``config/vllm.py:655-675``).
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.engines.base import Request
from kvplan.engines.vllm.groups import NO_SPEC, SpecReserve
from kvplan.engines.vllm.releases import draft_shared as draft_shared  # every request's: there, no import here
from kvplan.engines.vllm.row import VllmRelease
from kvplan.engines.vllm.rows_late import NEWEST, V1_ROWS
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout, held_tokens, paged
from kvplan.formulas.per_token import kv_bytes_per_token
from kvplan.specs import Composite, LayerSpec, LinearState, Part, token_limit


def _check_mtp(rel: VllmRelease, req: Request) -> None:
    mtp = req.draft.mtp if req.draft else None
    if mtp is None or rel.mtp_drafters is None or mtp.key in rel.mtp_drafters:
        return
    first = next((r.key for r in V1_ROWS if r.mtp_drafters and mtp.key in r.mtp_drafters), None)
    if first is not None:
        raise InputError(f"{rel.label} has no MTP drafter for {req.model.model_id} ({mtp.drafter}, matched by "
                         f"{mtp.key}, arrives in vLLM {first}: config/speculative.py hf_config_override)",
                         arg="speculative_method")


def check(rel: VllmRelease, req: Request) -> None:
    """The methods a release runs (0.9-0.11 refuse a draft model: arg_utils.py:1485-1489 in 0.11), and the MTP
    drafters it has."""
    draft = req.draft
    if draft is None or draft.method in rel.spec_methods:
        _check_mtp(rel, req)
        return
    if draft.method == "draft_model" and rel.spec_methods:
        raise InputError(f"{rel.label} refuses speculative_method draft_model: \"Draft model speculative decoding is "
                         "not supported yet\" (V1 runs ngram, eagle, eagle3 and mtp; kvplan runs draft models on "
                         f"vllm@{NEWEST})",
                         arg="speculative_method")
    raise InputError(f"kvplan follows vLLM's speculative decoding (speculative_method) from 0.9 (V1); {rel.label} is "
                     "not modelled", arg="speculative_method")


def _grown(part: Part, k: int, mixers: frozenset[str]) -> Part:
    return replace(part, conv_kernel=part.conv_kernel + k) if isinstance(part, LinearState) \
        and part.mixer in mixers and part.conv_kernel else part


def with_draft_conv_rows(specs: tuple[LayerSpec, ...], req: Request, rel: VllmRelease) -> tuple[LayerSpec, ...]:
    """Linear layers whose conv state keeps K more rows for the drafted tokens (every method: vLLM's
    num_speculative_tokens): conv_kernel − 1 + K rows (0.33 mamba_utils.py:186-205, 272-290)."""
    k = req.draft.num_speculative_tokens if req.draft else 0
    if not k or not rel.spec_conv_mixers:
        return specs
    return tuple(Composite(parts=tuple(_grown(p, k, rel.spec_conv_mixers) for p in s.parts))
                 if isinstance(s, Composite) else _grown(s, k, rel.spec_conv_mixers) if isinstance(s, LinearState)
                 else s for s in specs)


def worker_stages(req: Request, layout: Layout) -> tuple[range, ...]:
    """The layers of each PP stage on a worker, the draft's appended to the last stage."""
    stages = layout.stage_ranges
    if req.draft is None or not req.draft.num_layers:
        return stages
    last = stages[-1]
    return (*stages[:-1], range(last.start, last.stop + req.draft.num_layers))


def reserve(req: Request, rel: VllmRelease) -> SpecReserve:
    """0.33's extra reserve per request: K − 1 retained tokens on sliding layers when more than one MTP
    module drafts (min(num_nextn_predict_layers, K) > 1), and K state blocks on Mamba layers."""
    draft = req.draft
    if draft is None:
        return NO_SPEC
    k = draft.num_speculative_tokens
    multi_module = draft.method == "mtp" and min(draft.num_layers, k) > 1
    return SpecReserve(retained_tokens=k - 1 if rel.spec_sliding_retained and multi_module else 0,
                       state_blocks=k if rel.spec_state_blocks else 0)


def lookahead_tokens(req: Request, rel: VllmRelease) -> int:
    """KV slots a running request holds past its scheduled tokens (the scheduler's num_lookahead_tokens)."""
    draft = req.draft
    return draft.num_speculative_tokens if draft and draft.method in rel.lookahead_methods else 0


def draft_sequence_bytes(req: Request, layout: Layout, block_size: int) -> int:
    """What a max_model_len request holds in the draft's layers on one GPU (paged)."""
    if req.draft is None:
        return 0
    return sum(kv_bytes_per_token(s, layout.kv_dtype) * paged(held_tokens(token_limit(s), req.max_model_len),
                                                               block_size)
               for s in req.draft.specs_per_gpu)


def notes(req: Request, rel: VllmRelease, block_size: int) -> tuple[str, ...]:
    draft = req.draft
    if draft is None:
        return ()
    out = [f"speculative decoding ({draft.method}, K={draft.num_speculative_tokens}): {draft.num_layers} draft KV "
           "layer(s) share the pool (one block id spans them too)"]
    ahead = lookahead_tokens(req, rel)
    if ahead:
        out.append(f"{ahead} lookahead slot(s) per running request (near max_model_len: cdiv(len + {ahead}, {block_size}) "
                   "blocks); the start-up check and the logged concurrency use max_model_len")
    return tuple(out)
