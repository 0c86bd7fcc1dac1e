"""Beam search: `beam_width` beams decode each request from one shared prompt.

Contiguous caches (TensorRT-LLM's gpt_attention) replicate the context KV in every beam, and
preallocate max_seqlen tokens per beam. Paged caches share the prompt's full blocks between the
beams and copy the last partial block on write once a beam appends to it; each beam then owns the
blocks of its own generated tokens. With no output tokens yet (right after the prompt) nothing has
been copied, so paged memory equals a single sequence's.
"""

from __future__ import annotations

from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.formulas.request import CacheRequest, cache_request
from kvplan.workflows.allocators import Workload, WorkloadMemory, plan_workload
from kvplan.workflows.models import layout_of


def beam_search(model: ModelConfig | str, request: CacheRequest | None = None, *, prompt_tokens: int,
                beam_width: int, output_tokens: int = 0, shared_prefix_tokens: int = 0, **fields: Any) -> WorkloadMemory:
    """The request's `batch` requests, each `beam_width` beams from one prompt; a contiguous allocator
    preallocates the request's max_model_len per beam (prompt + output when not given)."""
    request = cache_request(request, **fields)
    workload = Workload(batch=request.batch, prompt_tokens=prompt_tokens, output_tokens=output_tokens,
                        beam_width=beam_width, shared_prefix_tokens=shared_prefix_tokens,
                        max_model_len=request.max_model_len or 0)
    return plan_workload(layout_of(model, request), workload)
