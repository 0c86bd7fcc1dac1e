"""Prefix sharing (vLLM prefix caching, SGLang RadixAttention): requests that start with the same
tokens store those tokens once.

Tokens stored = P + Σ (n_i − P) for a prefix of P tokens shared by requests of n_i tokens; with
`batch` requests of `max_model_len` tokens that is P + batch × (max_model_len − P). A paged engine shares only
*full* blocks: the prefix's last partial block is stored by every request (vLLM hashes full blocks
only), so with block size bs the shared part is floor(P / bs) × bs tokens and each request rounds its
own rest up to blocks. Block size 1 is SGLang's radix cache (page size 1): token-exact sharing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.errors import InputError
from kvplan.formulas.request import CacheRequest, cache_request
from kvplan.units import cdiv
from kvplan.workflows.allocators import Workload, WorkloadMemory, plan_workload
from kvplan.workflows.models import layout_of


def stored_tokens(prefix_tokens: int, seq_lens: Sequence[int], block_size: int = 1) -> int:
    """floor(P/bs)·bs + Σ cdiv(n_i − floor(P/bs)·bs, bs)·bs: the tokens (slots) requests hold."""
    if block_size <= 0 or prefix_tokens < 0:
        raise InputError(f"block size must be positive and prefix >= 0, got {block_size}, {prefix_tokens}")
    if any(n < prefix_tokens for n in seq_lens):
        raise InputError(f"every request must be at least as long as the {prefix_tokens:,}-token shared prefix")
    shared = prefix_tokens // block_size * block_size
    return shared + sum(cdiv(n - shared, block_size) * block_size for n in seq_lens)


def prefix_sharing(model: ModelConfig | str, request: CacheRequest | None = None, *, shared_prefix_tokens: int,
                   **fields: Any) -> WorkloadMemory:
    """The request's `batch` requests of `max_model_len` tokens whose first `shared_prefix_tokens` are common."""
    layout = layout_of(model, request, **fields)
    request = cache_request(request, **fields)
    workload = Workload(batch=request.batch, prompt_tokens=request.length(layout.model),
                        shared_prefix_tokens=shared_prefix_tokens)
    return plan_workload(layout, workload)
