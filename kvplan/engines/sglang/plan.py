"""The plan SGLang's pool gives a request: N, the full / sliding split, what one request holds, the pool's
allocation line as the release prints it (``mem_cache/memory_pool.py``: none in 0.4.0; ``K size, V size`` 0.4.1
:194-196; ``#tokens`` 0.4.3.post4 :211, MLA :452-454 from 0.4.5; ``dtype`` 0.5.13.post1 :819) and its notes.
SGLang logs no concurrency; each DP-attention rank owns its own pool.
"""

from __future__ import annotations

from kvplan.dtypes import TORCH_NAMES
from kvplan.engines.base import EnginePlan, GroupRow, Request
from kvplan.engines.sglang import extras, pool
from kvplan.engines.sglang.releases import SglangRelease
from kvplan.formulas.layout import Layout, Load
from kvplan.formulas.per_token import kv_bytes_per_token
from kvplan.specs import AttnSpec, IndexerCache, MLAAttn, parts
from kvplan.units import cdiv, format_gib


def build(rel: SglangRelease, req: Request, layout: Layout, budgets: tuple[int, ...]) -> EnginePlan:
    lines: list[str] = []
    tokens, per_stage, left = pool.pool_tokens(rel, req, layout, budgets, lines)
    page, s = pool.page_size(req), req.settings.sglang
    heavy = max(range(req.pp), key=lambda k: layout.stages[k].bytes_per_token())
    full, swa = tokens, tokens
    if pool.is_hybrid_swa(rel, req):
        full, swa = pool.swa_split(rel, layout, tokens, left[heavy], s.swa_full_tokens_ratio, page)
        tokens = full if rel.swa is not None and rel.swa.split == "available" else tokens
        lines.append(f"hybrid SWA pool ({rel.swa.split if rel.swa else ''}): full_layer_tokens = {full:,}, "
                     f"swa_layer_tokens = {swa:,} (swa_full_tokens_ratio {s.swa_full_tokens_ratio})")
    stage, stored = layout.stages[heavy], pool.dsa_store_delta(layout, heavy)
    # SGLang admits by free tokens: a request takes max_model_len full-pool slots and, in the SWA pool, only its
    # window (older tokens are evicted): reserve and steady state coincide.
    steady = stage.sequence_bytes(req.max_model_len) - stage.state_bytes + req.max_model_len * stored
    return EnginePlan(
        engine="sglang", version=rel.label, kv_dtype=layout.kv_dtype.name, block_size=page,
        page_bytes=page * (stage.bytes_per_token() + stored), num_blocks=tokens // page, kv_tokens=full,
        max_concurrency=None,
        requests_at_max_len=float(_requests(rel, req, stage, full, swa) * req.cache.dp),
        reserve_bytes_per_request=steady, steady_bytes_per_request=steady, groups=_rows(req, layout, heavy, page),
        notes=(*_notes(rel, req, layout, heavy, tokens, (full, swa), per_stage), *extras.notes(req, rel, layout, tokens)),
        explain=tuple(lines), lookahead_tokens_per_request=extras.lookahead_tokens(req),
        log_lines=_log_lines(rel, req, layout, heavy, tokens))


def pad_slots(rel: SglangRelease, req: Request) -> int:
    """Slots the pool allocates beyond N: one (0.4.0-0.4.3, ``memory_pool.py`` size + 1), a page from 0.4.4."""
    return pool.page_size(req) if rel.pages else 1


def _requests(rel: SglangRelease, req: Request, stage: Load, full: int, swa: int) -> int:
    requests = full // req.max_model_len
    window = max((w for w, _ in stage.windowed), default=0)
    if pool.is_hybrid_swa(rel, req) and window:
        requests = min(requests, swa // min(window, req.max_model_len))
    return requests


def _log_lines(rel: SglangRelease, req: Request, layout: Layout, heavy: int, tokens: int) -> tuple[str, ...]:
    """The pool's allocation line (N + pad slots). Hybrid SWA and Mamba pools log other lines: none here."""
    mla = layout.model.is_mla
    if (rel.log == "none" or pool.is_hybrid_swa(rel, req) or any(s.state_bytes for s in layout.stages)
            or (mla and (rel.log == "sizes" or not rel.mla_log))):
        return ()
    sizes = pool_log(rel, layout, heavy, tokens, pad_slots(rel, req))
    if rel.log == "sizes":
        return (f"KV Cache is allocated. {sizes}.",)
    dtype = f"dtype: torch.{TORCH_NAMES.get(layout.kv_dtype.name, layout.kv_dtype.name)}, " if rel.log == "dtype" else ""
    return (f"KV Cache is allocated. {dtype}#tokens: {tokens}, {sizes}",)


def _notes(rel: SglangRelease, req: Request, layout: Layout, heavy: int, tokens: int, pools: tuple[int, int],
           per_stage: list[int]) -> tuple[str, ...]:
    pad = pad_slots(rel, req)
    out = [f"page size {pool.page_size(req)}; the pool holds N + {pad} slots: " + pool_log(rel, layout, heavy, tokens, pad)]
    if pool.is_hybrid_swa(rel, req):
        out = [f"page size {pool.page_size(req)}; each pool holds its tokens + {pad} slots",
               f"sliding window memory pool: full_layer_tokens={pools[0]}, swa_layer_tokens={pools[1]}"]
    elif any(kind in ("sliding", "chunked") for kind in req.model.layer_kinds):
        out.append(f"{rel.label} has no sliding-window pool for {req.model.model_type}: every layer keeps all tokens")
    if rel.pp == "per-stage" and req.pp > 1:
        out.append(f"{rel.label} sizes each PP stage's pool on its own: stages {[f'{n:,}' for n in per_stage]} "
                   "tokens (the smallest shown)")
    if req.cache.dp > 1:
        out.append(f"DP attention {req.cache.dp}: each DP rank has its own pool of {tokens:,} tokens "
                   f"({req.cache.dp * tokens:,} in the system)")
    if any(isinstance(x, MLAAttn) for s in layout.specs for x in parts(s)):
        out.append("MLA: one latent per token per layer, the same on every TP rank")
    return tuple(out)


def pool_bytes(rel: SglangRelease, layout: Layout, stage: int, tokens: int, page: int) -> tuple[int, int, int]:
    """(K, V, MLA) bytes SGLang allocates on one GPU of a stage for a pool of N = `tokens` and its `page` pad slots,
    as its allocation line counts them (``MHATokenToKVPool`` / ``MLATokenToKVPool``: one buffer of N + page rows per
    layer). A DSA layer (``NSATokenToKVPool``, 0.5.8 mem_cache/memory_pool.py:1375-1387, :1676-1757) stores its
    latent rows as the layout does (fp8: kv_lora_rank fp8 + one fp32 scale per 128 + bf16 rope, 656 B) and
    (N + page + 1) // page pages of index keys (132 B a token), which the line counts from 0.5.4 (:1832-1836)."""
    bits, rows = layout.kv_dtype.element_bits, tokens + page
    index_rows = (tokens + page + 1) // page * page
    k = v = mla = 0
    for g in layout.groups:
        layers = g.stage_layers[stage]
        for spec in parts(g.spec_per_gpu):
            if isinstance(spec, MLAAttn):
                row = pool.dsa_row_bytes(spec, layout.kv_dtype) if spec.sparse else spec.latent_dim * bits // 8
                mla += layers * (rows * row)
            elif isinstance(spec, IndexerCache) and rel.dsa_indexer_counted:
                mla += layers * index_rows * kv_bytes_per_token(spec, layout.kv_dtype)
            elif isinstance(spec, AttnSpec):
                k += layers * (rows * spec.num_kv_heads * spec.head_dim * bits // 8)
                v += layers * (rows * spec.num_kv_heads * spec.v_head_dim * bits // 8)
    return k, v, mla


def pool_log(rel: SglangRelease, layout: Layout, stage: int, tokens: int, page: int) -> str:
    """SGLang's K and V sizes (MLA: one KV size) of the pool in GiB (SGLang labels them "GB")."""
    k, v, mla = pool_bytes(rel, layout, stage, tokens, page)
    if mla:
        return f"KV size: {format_gib(mla)} GB"
    return f"K size: {format_gib(k)} GB, V size: {format_gib(v)} GB"


def _rows(req: Request, layout: Layout, heavy: int, page: int) -> tuple[GroupRow, ...]:
    rows: dict[str, GroupRow] = {}
    for g in layout.groups:
        per_tok = g.bytes_per_token_per_layer_per_gpu
        rows[g.spec.kind] = GroupRow(
            kind=g.spec.kind, num_layers=g.num_layers, num_layers_per_gpu=g.stage_layers[heavy], engine_groups=1,
            block_size=page, page_bytes_per_layer=page * per_tok,
            blocks_per_request=cdiv(req.max_model_len, page) if per_tok else 0,
            tokens_reserved_per_request=req.max_model_len if per_tok else 0)
    return tuple(rows.values())
