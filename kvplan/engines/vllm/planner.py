"""vLLM's KV planning on a layout: paged specs -> groups -> blocks per worker -> the logs.

``num_blocks = budget // (group width × page)`` per worker, min over PP stages (the null block is
one of them); ``max_concurrency = num_blocks / Σ_groups blocks per request`` (V0 and 0.8:
``num_blocks × block / max_model_len``); "GPU KV cache size" = ``int(max_concurrency × max_model_len)``
tokens in 0.33 (``vllm/v1/core/kv_cache_utils.py`` ``get_max_concurrency_for_kv_cache_config`` and
``_report_kv_cache_config``), ``num_blocks // groups × block`` before. A request that does not fit is
refused as the release words it (``refusals.py``), with vLLM's estimate of the longest length that
would fit (``start_check.py``); the plan is still returned with its numbers. Which release: the ``VllmRelease`` row.
"""

from __future__ import annotations

from kvplan.engines.base import EnginePlan, GroupRow, Refusal, Request
from kvplan.engines.vllm.backends import is_hopper
from kvplan.engines.vllm.groups import NO_SPEC, Group, SpecReserve, Specs, kv_cache_groups, stage_block_bytes
from kvplan.engines.vllm.paging import Paging, kept_block_size, paging
from kvplan.engines.vllm.releases import NEWEST, RELEASES, VllmRelease
from kvplan.engines.vllm.served import check_served
from kvplan.engines.vllm.start_check import Blocks, check_bytes, group_need, refusal
from kvplan.errors import InputError, ShardingError
from kvplan.formulas.layout import Layout
from kvplan.memo import IdentityCache
from kvplan.specs import AttnSpec, parts
from kvplan.units import cdiv

V0_SWAP_SPACE_BYTES = 4 * 1024**3  # V0 CacheConfig.swap_space default (4 GiB)
# vLLM model files that split KV heads by tp without replicating them (tp > KV heads -> 0 heads).
KV_HEADS_NOT_REPLICATED = {"gpt_oss": "vllm/model_executor/models/gpt_oss.py"}


# Model classes without SupportsPP: vLLM refuses pp > 1 ("Pipeline parallelism is not supported for this
# model", vllm/config/model.py:1573): whisper.py, gemma3n_mm.py.
NO_PP_ARCHITECTURES = ("WhisperForConditionalGeneration", "Gemma3nForConditionalGeneration", "Gemma3nForCausalLM")


def check_request(req: Request, layout: Layout, rel: VllmRelease) -> None:
    """What vLLM refuses before planning: a length past the model's, heads it cannot split, an architecture
    the release does not build (not yet, or no longer), pipeline parallelism a model class lacks, a KV dtype
    Falcon ignores."""
    m = req.model
    if m.max_model_len and req.max_model_len > m.max_model_len:
        raise InputError(f"vLLM refuses max_model_len {req.max_model_len:,}: the model's maximum is "
                         f"{m.max_model_len:,} (set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 to override)", arg="max_model_len")
    source = KV_HEADS_NOT_REPLICATED.get(m.model_type or "")
    heads = next((p.num_kv_heads for s in layout.specs for p in parts(s) if isinstance(p, AttnSpec)), 0) if source else 0
    if source and heads and req.tp > heads:
        raise ShardingError(f"vLLM's {m.model_type} model ({source}) splits its {heads} KV heads over tp without "
                            f"replicating them: tp {req.tp} leaves 0 heads per rank (vLLM crashes); use tp <= {heads}",
                            arg="tp")
    _check_architecture(req, layout, rel)


def _check_architecture(req: Request, layout: Layout, rel: VllmRelease) -> None:
    m, archs = req.model, req.model.raw.get("architectures")
    archs = [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []
    check_served(archs, rel.key, rel.label.split(" (")[0])  # served.py: the registry by release
    if "FalconForCausalLM" in archs and not m.raw.get("alibi") and layout.kv_dtype.name != m.dtype:
        raise InputError(f"vLLM's Falcon attention ignores the KV dtype ({layout.kv_dtype.name}): it builds its "
                         "rotary Attention without the cache config (vllm/model_executor/models/falcon.py:173-180), "
                         f"so the cache stays {m.dtype}; use kv_dtype auto", arg="kv_dtype")
    if req.pp > 1 and any(a in NO_PP_ARCHITECTURES for a in archs):
        raise ShardingError(f"vLLM refuses pp {req.pp} for {archs[0]}: the model does not support pipeline "
                            "parallelism", arg="pp")




def in_flight_tokens(req: Request) -> int:
    """Tokens a running request may add before it is scheduled again: its batches in flight (0.33: one per PP
    stage, +1 with async scheduling; before 0.33 one) × max_num_batched_tokens (both set by the release)."""
    s = req.settings
    assert s.max_num_batched_tokens is not None and s.vllm.in_flight_batches is not None, "settings not resolved"
    return s.max_num_batched_tokens * s.vllm.in_flight_batches


def blocks(req: Request, pages: Paging, budgets: tuple[int, ...], rel: VllmRelease) -> Blocks:
    """Groups, bytes per block id on each stage, blocks per request, and num_blocks (min over stages)."""
    specs = pages.specs
    stages = pages.stages
    if pages.packed is not None:  # block-outermost packing (DeepSeek-V4): packed.py
        from kvplan.engines.vllm import deepseek_v4, packed  # imported for DeepSeek-V4 only

        groups, uniform_type = packed.packed_groups(specs), True
        block_bytes = tuple(deepseek_v4.block_bytes(rel, groups, specs, r, pages.packed) for r in stages)
    else:
        groups, uniform_type, block_bytes = _GROUPS.get(specs, (stages, rel.group_size_ratio, rel.hybrid_groups_strided),
                                                        lambda: _grouped(specs, stages, rel))
    if 0 in block_bytes:
        raise InputError(f"PP stage {block_bytes.index(0)} holds no KV-cache layer; use a smaller pp", arg="pp")
    in_flight, reserve = in_flight_tokens(req), _reserve(req, rel)
    need = tuple(group_need(g, specs, req.max_model_len, (in_flight, req.dcp), uniform_type, reserve) for g in groups)
    num_blocks = min(b // bb for b, bb in zip(budgets, block_bytes, strict=True))
    per_request = _dsv4_blocks_per_request(rel, groups, specs, need, stages[-1]) \
        if pages.packed is not None else sum(need)
    return Blocks(groups=groups, block_bytes=block_bytes, need=need, num_blocks=num_blocks, in_flight=in_flight,
                  stages=stages, reserve=reserve, check=rel.start_check,
                  packed=pages.packed is not None, uniform=uniform_type, per_request=per_request)


def _reserve(req: Request, rel: VllmRelease) -> SpecReserve:
    if req.draft is None:
        return NO_SPEC
    from kvplan.engines.vllm import speculative

    return speculative.reserve(req, rel)


def _dsv4_blocks_per_request(rel: VllmRelease, groups: tuple[Group, ...], specs: Specs, need: tuple[int, ...],
                             last: range) -> int:
    from kvplan.engines.vllm import deepseek_v4

    return deepseek_v4.blocks_per_request(rel, groups, specs, need, last)


def _grouped(specs: Specs, stages: tuple[range, ...], rel: VllmRelease) -> tuple[tuple[Group, ...], bool, tuple[int, ...]]:
    groups, uniform_type = kv_cache_groups(specs, rel.group_size_ratio, rel.hybrid_groups_strided)
    return groups, uniform_type, tuple(stage_block_bytes(groups, specs, r, uniform_type) for r in stages)


# The groups of a paged specs tuple, once per tuple: paging returns the same cached tuple for a cached layout
# (unless a Mamba state or a cross-attention reserve made a new one), so a repeated question groups it once.
_GROUPS: IdentityCache[tuple[tuple[Group, ...], bool, tuple[int, ...]]] = IdentityCache()


def logged_tokens(req: Request, paged: Blocks, concurrency: float) -> int:
    """GPU KV cache size: int(concurrency × max_model_len); before 0.33: num_blocks // groups × block × dcp."""
    if not req.settings.vllm.legacy_token_log:
        return int(concurrency * req.max_model_len)
    block = min(g.spec.block_size for g in paged.groups)  # a Mamba group's too (0.11 kv_cache_utils.py:1076-1080)
    return paged.num_blocks // len(paged.groups) * block * req.dcp


def max_concurrency(req: Request, rel: VllmRelease, pages: Paging, paged: Blocks) -> float:
    """V0 and 0.8: tokens / max_model_len; 0.9 on: blocks / blocks one request reserves."""
    if rel.concurrency_from_tokens:
        return paged.num_blocks * pages.block_size / req.max_model_len
    return paged.num_blocks / (paged.per_request or sum(paged.need))


def log_lines(req: Request, rel: VllmRelease, paged: Blocks, concurrency: float, tokens: int,
              refused: Refusal | None) -> tuple[str, ...]:
    """What the release logs about the cache (V1 checks before it logs; V0 logs, then refuses)."""
    if rel.generation == "V0":  # CPU blocks: the default 4 GiB swap space over one block of every layer
        lines = (f"# {rel.v0_blocks_label} blocks: {paged.num_blocks}, # CPU blocks: "
                 f"{V0_SWAP_SPACE_BYTES // max(paged.block_bytes)}",
                 f"Maximum concurrency for {req.max_model_len} tokens per request: {concurrency:.2f}x")
        return lines + ((refused.message,) if refused else ())
    if refused:
        return (refused.message,)
    size = f"GPU KV cache size: {tokens:,} tokens"
    most = f"Maximum concurrency for {req.max_model_len:,} tokens per request: {concurrency:.2f}x"
    # one line from 0.28 (v1/core/kv_cache_utils.py:1861-1875); earlier V1 releases two
    return (f"{size}, {most}",) if rel.one_line_log else (size, most)


def plan(req: Request, layout: Layout, budgets: tuple[int, ...], rel: VllmRelease = RELEASES[NEWEST]) -> EnginePlan:
    check_request(req, layout, rel)
    pages = paging(req, layout, rel)
    paged = blocks(req, pages, budgets, rel)
    concurrency = max_concurrency(req, rel, pages, paged)
    tokens = logged_tokens(req, paged, concurrency)
    refused = refusal(req, rel, pages, paged, budgets)
    draft_bytes, draft_notes, lookahead = _draft(req, rel, layout, pages.block_size)
    steady = layout.sequence_bytes_per_gpu(cdiv(req.max_model_len, req.dcp), pages.block_size) + draft_bytes
    return EnginePlan(
        engine="vllm", version=rel.label, kv_dtype=layout.kv_dtype.name, block_size=kept_block_size(req, rel, pages),
        page_bytes=max(paged.block_bytes), num_blocks=paged.num_blocks, kv_tokens=tokens, max_concurrency=concurrency,
        requests_at_max_len=concurrency, reserve_bytes_per_request=sum(paged.need) * max(paged.block_bytes),
        check_bytes_per_request=check_bytes(req, pages.specs, paged),
        steady_bytes_per_request=steady, groups=rows(paged), notes=(*notes(req, pages, paged), *draft_notes),
        explain=explain(req, rel, pages, paged, budgets, (concurrency, tokens)),
        log_lines=log_lines(req, rel, paged, concurrency, tokens, refused), refusal=refused,
        lookahead_tokens_per_request=lookahead)


def _draft(req: Request, rel: VllmRelease, layout: Layout, block_size: int) -> tuple[int, tuple[str, ...], int]:
    """A draft's sequence bytes, notes and lookahead slots (speculative.py, imported for a draft only)."""
    if req.draft is None:
        return 0, (), 0
    from kvplan.engines.vllm import speculative

    return (speculative.draft_sequence_bytes(req, layout, block_size), speculative.notes(req, rel, block_size),
            speculative.lookahead_tokens(req, rel))


def notes(req: Request, pages: Paging, paged: Blocks) -> tuple[str, ...]:
    out = []
    if req.gpu_name and not is_hopper(req.gpu_name) and pages.backend.endswith("MLA"):
        out.append(f"MLA backend table is vLLM's Hopper one; on {req.gpu_name} assumed TRITON_MLA")
    if pages.mamba_alignment is not None:
        mode = "align (prefix caching)" if pages.mamba_align_mode else "none (no prefix caching)"
        out.append(f"attention block size set to {pages.block_size} tokens so one page holds a Mamba/linear state "
                   f"(a smaller block_size is raised); mamba_cache_mode {mode}")
    padding = 0 if paged.packed else _padding(paged.groups)
    if paged.packed:
        from kvplan.engines.vllm import packed

        out.append(packed.waste_note(paged.groups, pages.specs, paged.block_bytes))
    if padding:
        width = max(len(g.layers) for g in paged.groups)
        out.append(f"hybrid groups padded with {padding} layers: up to "
                   f"{100 * padding / (len(paged.groups) * width):.2f}% of the KV memory is never used")
    if req.dcp > 1:
        out.append(f"DCP {req.dcp}: each rank stores cdiv(len, {req.dcp}) tokens of a request; the token log is "
                   "int(concurrency × max_model_len), i.e. multiplied by dcp (not in the sample)")
    return tuple(out)


def _padding(groups: tuple[Group, ...]) -> int:
    if len(groups) < 2:
        return 0
    width = max(len(g.layers) for g in groups)
    return len(groups) * width - sum(len(g.layers) for g in groups)


def explain(req: Request, rel: VllmRelease, pages: Paging, paged: Blocks, budgets: tuple[int, ...],
            answer: tuple[float, int]) -> tuple[str, ...]:
    concurrency, tokens = answer
    widths = sorted({len(g.layers) for g in paged.groups})
    lines = [f"attention backend {pages.backend} ({rel.label} on {req.gpu_name or 'H100'}), block size {pages.block_size}"]
    if pages.mamba_alignment is not None:
        lines.append(f"Mamba alignment: a = lcm(max(kernel block, block size), checkpoint alignment "
                     f"{pages.mamba_alignment}); block = a · cdiv(state page, a · attention page per token) = "
                     f"{pages.block_size}; state pages padded to block × page per token")
    lines.append(f"{len(paged.groups)} KV cache group(s) of {widths} layers sharing one pool of block ids")
    for k, (budget, bb) in enumerate(zip(budgets, paged.block_bytes, strict=True)):
        lines.append(f"stage {k}: one block = {bb:,} B; {budget:,} // {bb:,} = {budget // bb:,} blocks")
    lines += [f"num_blocks = min over stages = {paged.num_blocks:,} (includes the null block)",
              f"in-flight tokens = max_num_batched_tokens × batches in flight = {paged.in_flight:,}",
              f"blocks per max-length request = {' + '.join(map(str, paged.need))} = {sum(paged.need):,}",
              f"max concurrency = {paged.num_blocks:,} × {pages.block_size} / {req.max_model_len:,} = {concurrency:.2f}x"
              if rel.concurrency_from_tokens else
              f"max concurrency = {paged.num_blocks:,} / {paged.per_request or sum(paged.need):,} = {concurrency:.2f}x"]
    if paged.per_request and paged.per_request != sum(paged.need):
        lines.insert(-1, f"as this release counts them, weighted by each group's page sum over the latent group's: "
                         f"{paged.per_request:,} blocks")
    lines.append(f"GPU KV cache size = int({concurrency:.6f} × {req.max_model_len:,}) = {tokens:,} tokens"
                 if not req.settings.vllm.legacy_token_log else
                 f"GPU KV cache size (legacy) = num_blocks // groups × block × dcp = {tokens:,} tokens")
    return tuple(lines)


def rows(paged: Blocks) -> tuple[GroupRow, ...]:
    """One row per kind of cache module: its modules, the engine groups holding it, its blocks per request."""
    heavy = paged.stages[paged.block_bytes.index(max(paged.block_bytes))]
    out: dict[str, GroupRow] = {}
    blocks: dict[str, set[int]] = {}  # a kind in groups of several block sizes (DeepSeek-V4's compressor states) gets a row per size
    for g in paged.groups:
        blocks.setdefault(g.spec.kind, set()).add(g.spec.block_size)
    for g, n in zip(paged.groups, paged.need, strict=True):
        spec = g.spec
        kind = spec.kind if len(blocks[spec.kind]) == 1 else f"{spec.kind} (block {spec.block_size})"
        prev = out.get(kind)
        out[kind] = GroupRow(
            kind=kind, num_layers=len(g.layers) + (prev.num_layers if prev else 0),
            num_layers_per_gpu=sum(1 for i in g.layers if i in heavy) + (prev.num_layers_per_gpu if prev else 0),
            engine_groups=(prev.engine_groups if prev else 0) + 1, block_size=spec.block_size,
            page_bytes_per_layer=spec.page_bytes, blocks_per_request=n,
            tokens_reserved_per_request=0 if spec.kind == "mamba" else n * spec.block_size)
    return tuple(out.values())
