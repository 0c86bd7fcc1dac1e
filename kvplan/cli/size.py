"""`kvplan size`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

from kvplan.cli.common import emit
from kvplan.cli.expand import Expand, command
from kvplan.cli.options import CACHE, OUTPUT, Explain, Json, ModelArgs, cache_options, option
from kvplan.formulas import CacheRequest, KvCacheResult, kv_cache
from kvplan.render.size import SizePayload, size_payload, size_tables
from kvplan.units import parse_positive_tokens, parse_tokens

if TYPE_CHECKING:
    from rich.console import RenderableType

SharedPrefix = Annotated[str, option("--shared-prefix", "Prompt tokens all --batch requests share (prefix caching; "
                                     "paged engines share full blocks only).", CACHE, "TOKENS")]
BeamWidth = Annotated[int, option("--beam-width", "Beams per request.", CACHE, "N")]
PromptLen = Annotated[str | None, option("--prompt-len", "Prompt tokens of --max-model-len (shared by the beams); "
                                         "the rest is generated per beam. Default: all.", CACHE, "TOKENS")]
Allocator = Annotated[str | None, option("--allocator", "contiguous, paged or exact: the allocator reported in the "
                                         "workload section (all three are shown).", OUTPUT, "NAME")]


SizeCache = Annotated[CacheRequest, Expand(cache_options, without=("dp", "ep"))]  # DP attention is an engine's


def _workload(result: KvCacheResult, payload: SizePayload, shared_prefix: str, beam_width: int, prompt_len: str | None,
              allocator: str | None) -> tuple[SizePayload, Callable[[SizePayload], list[RenderableType]]]:
    """The payload and tables, with the workload section when one of its options is given."""
    prefix_tokens = parse_tokens(shared_prefix)
    if not prefix_tokens and beam_width == 1 and prompt_len is None and allocator is None:
        return payload, size_tables
    from kvplan.render.workflows import size_and_workload_tables
    from kvplan.render.workload import workload_payload
    from kvplan.workflows.size_section import size_workload

    memory = size_workload(result, shared_prefix_tokens=prefix_tokens, beam_width=beam_width,
                           prompt_tokens=parse_positive_tokens(prompt_len, "--prompt-len") if prompt_len else None,
                           allocator=allocator)
    return replace(payload, workload=workload_payload(memory, allocator or "paged")), size_and_workload_tables


@command
def size(model: ModelArgs, cache: SizeCache, json: Json = False, explain: Explain = False,
         shared_prefix: SharedPrefix = "0", beam_width: BeamWidth = 1, prompt_len: PromptLen = None,
         allocator: Allocator = None) -> None:
    """KV cache per token, per sequence and per GPU."""
    result = kv_cache(model, cache)
    payload, tables = _workload(result, size_payload(result), shared_prefix, beam_width, prompt_len, allocator)
    engine_notes = vllm_notes(result, cache)
    lines = None
    if explain:
        from kvplan.render.explain import explain as explain_lines

        lines = explain_lines(result)
    emit(payload, json, tables, lines, notes=(*result.notes, *engine_notes))


def vllm_notes(result: KvCacheResult, cache: CacheRequest) -> tuple[str, ...]:
    """vLLM 0.33's checks on the KV dtype and block size (size answers regardless; the engines are imported only
    when one of them is asked for, so a plain `kvplan size` starts without them)."""
    if cache.kv_dtype == "auto" and cache.block_size is None:
        return ()
    from kvplan.engines import Request
    from kvplan.engines.vllm.checks import size_notes
    from kvplan.engines.vllm.releases import NEWEST, RELEASES

    return size_notes(Request(model=result.model, cache=cache), RELEASES[NEWEST])
