"""SGLang's default ``mem_fraction_static`` by release (``SglangRelease.fraction_rule``).

G is the GPU's ``nvidia-smi --query-gpu=memory.total`` in MiB, the minimum over the GPUs it lists (0.4.0
``utils.py:925-954``, 0.5.23 ``utils/common.py:802-837``), not torch's total.

- ``tp-table`` (0.4.0-0.4.4, ``server_args.py:170-181``): 0.88 / 0.87 / 0.85 / 0.81 / 0.79 at tp 1 / ≥2 / ≥4 / ≥8 /
  ≥16; G is not read.
- ``tp-table-80g`` (0.4.5, ``server_args.py:224-239``): the table up to 80 GiB, above it (G − 13 GiB) / G unrounded.
- ``tp-pp-table`` (0.4.6, ``server_args.py:247-269``): the table on tp·pp up to 80 GiB, else 0.88; above 96 GiB
  ``min(f + 48 GiB·(1 − f)/G, (G − 18 GiB)/G)``.
- ``tiers`` (0.4.7-0.5.2, 0.5.2 ``server_args.py:452-507``): ``round((G − reserved)/G, 3)``, reserved = (a + b·tp·pp)
  GiB by GPU tier, + the draft's reserve, + 4 GiB with DP attention.
- ``reserve`` (0.5.3 on; 0.5.3.post3 ``server_args.py:719-751``, 0.5.23 ``arg_groups/memory_hook.py:281-331`` and
  ``reserve_for_graph_mb`` :357-399): reserved MiB = 512 + 1.5·max(chunked, 2048) + 1024·tp·pp/8 + 2·decode max_bs
  (+ 3·max_bs·dp, + 1.5·max_bs·dp above 300, with DP attention) + prefill graphs (0.5.10 on: 8 MiB per capture size,
  MLA 1,536), at least 10 GiB above 60 GiB, then + the draft's reserve (0.5.3-0.5.13).
Multimodal models (a vision tower) then scale f by ``extras.vlm_factor`` (0.4.9 on).
"""

from __future__ import annotations

from collections.abc import Callable

from kvplan.engines.base import Request
from kvplan.engines.sglang import extras
from kvplan.engines.sglang.releases import SglangRelease, Tier
from kvplan.errors import InputError
from kvplan.specs import MLAAttn, parts

MIB = 1024**2
MLA_PREFILL_GRAPH_MIB = 1536  # flat reserve for MLA backends (0.5.10 server_args.py:1318-1320)
PREFILL_GRAPH_MIB = 8  # per prefill capture size (0.5.10 server_args.py:1315-1317)


def gpu_mib(req: Request) -> int | None:
    """SGLang's G: nvidia-smi's total in MiB (torch's when no nvidia-smi reading is known)."""
    if req.device is None:
        return None
    return req.device.smi_memory_mib or req.device.memory_bytes // MIB or None


def tp_table(parallel: int) -> float:
    """0.4.0-0.4.6's table by TP size (0.4.6: by tp·pp)."""
    return 0.79 if parallel >= 16 else 0.81 if parallel >= 8 else 0.85 if parallel >= 4 else 0.87 if parallel >= 2 else 0.88


def tier(rel: SglangRelease, g: int | None) -> Tier:
    """The release's defaults for a GPU of G MiB (the first tier whose bound G is below)."""
    if g is None:
        return rel.unknown_tier
    return next(t for t in rel.tiers if t.below_mib is None or g < t.below_mib)


def decode_max_bs(rel: SglangRelease, req: Request, g: int | None) -> int:
    """--cuda-graph-max-bs, else the default by GPU class; 0.5.22 on caps a default at --max-running-requests
    (kvplan's max_num_seqs)."""
    if req.settings.sglang.cuda_graph_max_bs is not None:
        return req.settings.sglang.cuda_graph_max_bs
    small, big = tier(rel, g).max_bs
    max_bs = small if req.tp < 4 else big
    cap = req.settings.max_num_seqs
    return min(max_bs, cap) if rel.max_bs_capped and cap is not None else max_bs


def _archs(req: Request) -> frozenset[str]:
    return frozenset(req.model.raw.get("architectures") or ())


def _kda(req: Request) -> bool:
    """A KDA linear-attention model (0.5.20 configs/model_config.py:183-205: kda_layers, or linear_attention layers
    with linear_num_heads and linear_head_dim)."""
    raw = req.model.raw
    linear = raw.get("linear_attn_config")
    return bool(isinstance(linear, dict) and linear.get("kda_layers")) or (
        "linear_attention" in (raw.get("layer_types") or ()) and raw.get("linear_num_heads") is not None
        and raw.get("linear_head_dim") is not None)


def _sparse_mla(req: Request) -> bool:
    return any(isinstance(p, MLAAttn) and p.sparse for s in req.model.layer_specs for p in parts(s))


def is_multimodal(req: Request) -> bool:
    return isinstance(req.model.raw.get("vision_config"), dict)


def _offload(req: Request) -> bool:
    s = req.settings
    return s.cpu_offload_bytes > 0 or s.sglang.hicache_ratio is not None or s.kv_offloading_bytes is not None


# What turns prefill CUDA graphs off, by the names the release rows use (PrefillGraphs.off_when).
PREFILL_OFF: dict[str, tuple[str, Callable[[Request], bool]]] = {
    "spec": ("speculative decoding", lambda r: r.draft is not None),
    "dp": ("DP attention", lambda r: r.cache.dp > 1),
    "pp": ("pipeline parallelism", lambda r: r.pp > 1),
    "lora": ("LoRA", lambda r: r.settings.max_lora_rank is not None or r.settings.max_loras is not None),
    "offload": ("CPU offload / hierarchical cache", _offload),
    "eager": ("--disable-cuda-graph (enforce_eager)", lambda r: r.settings.enforce_eager),
    "dcp": ("decode context parallelism", lambda r: r.dcp > 1),
    "mla": ("MLA attention", lambda r: r.model.is_mla),
    "mla-non-dsa": ("MLA attention (non-DSA)", lambda r: r.model.is_mla and not _sparse_mla(r)),
    "nsa": ("DeepSeek sparse attention (index_topk)", _sparse_mla),
    "kda": ("KDA linear attention", _kda),
}


def prefill_graphs_off(rel: SglangRelease, req: Request) -> str | None:
    """Why the release's prefill CUDA graphs are off for this request (None: they are on)."""
    pg = rel.prefill_graphs
    if pg is None:
        return "no prefill CUDA graphs in this release"
    for key in sorted(pg.off_when - {"multimodal"}):
        name, holds = PREFILL_OFF[key]
        if holds(req):
            return name
    if "multimodal" in pg.off_when and is_multimodal(req) and not _archs(req) & pg.multimodal_archs:
        return "a multimodal model"
    if _archs(req) & pg.off_archs:
        return f"architecture {', '.join(sorted(_archs(req) & pg.off_archs))}"
    return None


def prefill_graph_sizes(max_tokens: int) -> list[int]:
    """Prefill capture sizes up to max_tokens (0.5.10 server_args.py:1397-1415; 0.5.23
    arg_groups/cuda_graph_hook.py generate_prefill_cuda_graph_batch_sizes)."""
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
             *range(1280, 4097, 256), *range(4608, max_tokens + 1, 512)]
    return [n for n in sizes if n <= max_tokens]


def prefill_graph_mib(rel: SglangRelease, req: Request, chunked: int) -> int:
    """8 MiB per prefill capture size up to chunked (at most --max-total-tokens; Llama-2: 4,096; 0.5.13-0.5.16: an
    explicit --context-length);
    MLA a flat 1,536 MiB; 0 when the release or the request turns them off."""
    if prefill_graphs_off(rel, req) is not None:
        return 0
    if req.model.is_mla:
        return MLA_PREFILL_GRAPH_MIB
    largest = min(chunked, req.settings.sglang.max_total_tokens or chunked)  # 0.5.10 server_args.py:1124-1127
    if "llama-2" in req.model.model_id.lower():
        largest = min(largest, 4096)
    assert rel.prefill_graphs is not None
    if rel.prefill_graphs.context_cap and req.max_model_len != req.model.max_model_len:
        largest = min(largest, req.max_model_len)
    return PREFILL_GRAPH_MIB * len(prefill_graph_sizes(largest))


def spec_reserve_mib(rel: SglangRelease, req: Request) -> int:
    """The draft's reserve: (EAGLE/MTP, STANDALONE, NGRAM) MiB by release."""
    if req.draft is None:
        return 0
    eagle, standalone, ngram = rel.spec_reserve_mib
    return {"draft_model": standalone, "ngram": ngram}.get(req.draft.method, eagle)


def reserve_mib(rel: SglangRelease, req: Request, g: int, chunked: int) -> float:
    """The ``reserve`` rule's reserved MiB (0.5.3 on)."""
    max_bs = decode_max_bs(rel, req, g)
    eager_off = rel.prefill_graphs is not None and rel.prefill_graphs.eager_drops_decode and req.settings.enforce_eager
    reserved = 512 + 1.5 * max(chunked, 2048) + req.tp * req.pp / 8 * 1024 + (0 if eager_off else 2 * max_bs)
    if req.cache.dp > 1:
        reserved += 3 * max_bs * req.cache.dp + (1.5 * max_bs * req.cache.dp if max_bs > 300 else 0)
    reserved += prefill_graph_mib(rel, req, chunked)
    if g > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return reserved + spec_reserve_mib(rel, req)


def tiers_reserve_mib(rel: SglangRelease, req: Request, g: int) -> float:
    """The ``tiers`` rule (0.4.7-0.5.2): (a + b·tp·pp) GiB by GPU tier, + the draft's, + 4 GiB with DP attention."""
    a, b = tier(rel, g).reserve_gib
    return (a + b * req.tp * req.pp) * 1024 + spec_reserve_mib(rel, req) + (4096 if req.cache.dp > 1 else 0)


def _table_fraction(rel: SglangRelease, req: Request, g: int | None) -> float:
    if rel.fraction_rule == "tp-table":
        return tp_table(req.tp)
    if rel.fraction_rule == "tp-table-80g":
        if g is None:
            raise InputError(f"{rel.label} cannot pick mem_fraction_static without the GPU's memory", arg="gpu")
        return tp_table(req.tp) if g <= 81920 else (g - 13 * 1024) / g
    f = tp_table(req.tp * req.pp) if g is not None and g <= 81920 else 0.88
    return min(f + 48 * 1024 * (1 - f) / g, (g - 18 * 1024) / g) if g is not None and g > 96 * 1024 else f


def default_fraction(rel: SglangRelease, req: Request, chunked: int) -> float:
    """The release's default mem_fraction_static for the request's GPU, × the vision-tower factor (0.4.9 on)."""
    g = gpu_mib(req)
    if rel.fraction_rule in ("tp-table", "tp-table-80g", "tp-pp-table"):
        f = _table_fraction(rel, req, g)
    elif g is None:
        assert rel.unknown_gpu_fraction is not None
        f = rel.unknown_gpu_fraction
    else:
        reserved = reserve_mib(rel, req, g, chunked) if rel.fraction_rule == "reserve" else tiers_reserve_mib(rel, req, g)
        f = round((g - reserved) / g, 3)
    return f * extras.vlm_factor(req.model) if rel.vlm_factor and is_multimodal(req) else f
