"""SGLang's token pool by release: the cell (bytes per token per GPU), what comes off the budget first (a
Mamba state pool, multimodal caches), N = budget // cell rounded to the page, and the hybrid sliding-window split.

Cell (0.4.0 ``model_executor/model_runner.py:460-485``; 0.5.7 ``model_runner_kv_cache_mixin.py:49-111``;
0.5.11 ``model_executor/pool_configurator.py:113-168``): Σ attention layers of the stage × heads per GPU ×
(2·head_dim before 0.5.7, head_dim + v_head_dim from 0.5.7) × bytes; MLA one latent per layer. N is capped,
rounded down to the page (0.4.4 on), and the minimum over PP stages (0.5.2 on, ``model_runner.py:1297-1310``;
before, each stage sizes its own pool).
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.dtypes import KvDtype, KvDtypeName
from kvplan.engines.base import Request, kv_stages
from kvplan.engines.sglang import extras
from kvplan.engines.sglang.fraction import is_multimodal
from kvplan.engines.sglang.releases import SglangRelease
from kvplan.engines.sglang.spelling import KV_DTYPES
from kvplan.errors import InputError
from kvplan.formulas.layout import Group, Layout
from kvplan.formulas.per_token import kv_bytes_per_token
from kvplan.specs import AttnSpec, IndexerCache, MLAAttn, Part, parts
from kvplan.units import cdiv

MIB = 1024**2
MAMBA_FULL_MEMORY_RATIO = 0.9  # --mamba-full-memory-ratio default (0.5.3.post3 model_runner.py:1396-1410)
MAMBA_FIXED_SLOTS = 512  # 0.5.2 max_mamba_cache_size without --max-running-requests (model_runner.py:312-325)


def page_size(req: Request) -> int:
    return req.cache.block_size or 1


def check(rel: SglangRelease, req: Request) -> None:
    """What the release refuses at start-up, before any memory is read (exit 2)."""
    extras.check(rel, req)
    dp = req.cache.dp
    if rel.dp_forced and dp not in (1, req.tp):
        raise InputError(f"{rel.label} sets the DP size to tp ({req.tp}) with DP attention; dp {dp} is not taken", arg="dp")
    if rel.pp == "none" and req.pp > 1:
        raise InputError(f"{rel.label} has no pipeline parallelism (first in 0.4.6)", arg="pp")
    if not rel.pages and page_size(req) != 1:
        raise InputError(f"{rel.label} has no --page-size (first in 0.4.4): block_size must be 1", arg="block_size")
    name = req.cache.kv_dtype_name
    if KvDtypeName(name.spelled(KV_DTYPES)) not in rel.kv_dtypes:  # the choices by kvplan's names of them
        raise InputError(f"{rel.label} --kv-cache-dtype takes {', '.join(sorted(rel.kv_dtypes))}, not {name!r}",
                         arg="kv_dtype")
    _check_state(rel, req)


def check_data_parallel(tp: int, dp: int, ep: int) -> None:
    """DP attention (--dp-size with --enable-dp-attention; 0.5.22 on, --attn-dp-size) splits the tp GPUs into dp
    attention groups: tp % dp asserted (0.5.2 server_args.py:640; 0.5.23 arg_groups/parallel_hook.py:326). The MoE runs
    at TP tp // ep over ep expert groups (0.5.2 distributed/parallel_state.py:1461-1462), ep at most tp."""
    if tp % dp:
        raise InputError(f"dp {dp} must divide tp {tp}: SGLang's DP attention splits the TP GPUs into DP attention "
                         "groups (assert tp_size % dp_size == 0, sglang/srt/server_args.py:640)", arg=("dp", "tp"))
    if tp % ep:
        raise InputError(f"ep {ep} must divide tp {tp}: SGLang's MoE runs at TP size / EP size over EP expert groups "
                         "inside the TP GPUs (sglang/srt/distributed/parallel_state.py:1461-1462)", arg=("ep", "tp"))


def _check_state(rel: SglangRelease, req: Request) -> None:
    if req.model.linear is None:
        return
    if rel.mamba == "none":
        raise InputError(f"{rel.label} has no pool for Mamba / linear-attention state (first in 0.5.2)", arg="engine")
    if rel.mamba == "fixed" and "Qwen3NextForCausalLM" not in (req.model.raw.get("architectures") or ()):
        raise InputError(f"{rel.label} keeps state only for Qwen3-Next (hybrid GDN); Mamba hybrids come in 0.5.3",
                         arg="engine")


def cells(rel: SglangRelease, layout: Layout) -> list[int]:
    """Bytes per token per GPU of each stage's KV layers, as SGLang sizes N; before 0.5.7 V is counted at head_dim.
    A DSA layer is counted as the release's cell counts it (``dsa_cell_bytes``), which is not what its pool stores."""
    if rel.v_head_dim_cell:
        stored = [stage.bytes_per_token() for stage in layout.stages]
    else:
        stored = [sum(g.stage_layers[s] * _k_as_v_bytes(g, layout) for g in layout.groups)
                  for s in range(len(layout.stages))]
    return [b + sum(g.stage_layers[s] * _dsa_cell_delta(rel, g, layout) for g in layout.groups)
            for s, b in enumerate(stored)]


def dsa_row_bytes(part: MLAAttn, dtype: KvDtype) -> int:
    """One token's latent row in SGLang's DSA pool (``NSATokenToKVPool``, 0.5.3 on): fp8 e4m3 stores the kv_lora_rank
    values in fp8, one fp32 scale per 128 of them and the rope part in bf16 (0.5.8 mem_cache/memory_pool.py:1697-1707:
    512 + 16 + 128 = 656 B for DeepSeek-V3.2 and GLM-5); any other dtype kv_lora_rank + rope elements of it."""
    if dtype.name in ("fp8", "fp8_e4m3"):
        return part.kv_lora_rank + part.kv_lora_rank // 128 * 4 + part.qk_rope_head_dim * 2
    return part.latent_dim * dtype.element_bits // 8


def dsa_cell_bytes(rel: SglangRelease, part: Part, dtype: KvDtype) -> int:
    """What SGLang's cell counts per token for one DSA cache of a layer: the latent as kv_lora_rank + rope elements of
    the KV dtype (0.5.8 model_executor/model_runner_kv_cache_mixin.py:47-56; fp8 576 B where the pool stores 656),
    as stored from 0.5.17 (mem_cache/kv_cache_configurator.py:1985); the indexer key and its scales (:70-80), 0 before
    0.5.4."""
    if isinstance(part, MLAAttn) and part.sparse:
        return dsa_row_bytes(part, dtype) if rel.dsa_cell_stored else part.latent_dim * dtype.element_bits // 8
    if isinstance(part, IndexerCache) and not rel.dsa_indexer_counted:
        return 0
    return kv_bytes_per_token(part, dtype)


def _dsa_cell_delta(rel: SglangRelease, g: Group, layout: Layout) -> int:
    return sum(dsa_cell_bytes(rel, p, layout.kv_dtype) - kv_bytes_per_token(p, layout.kv_dtype)
               for p in parts(g.spec_per_gpu) if isinstance(p, (MLAAttn, IndexerCache)))


def dsa_store_delta(layout: Layout, stage: int) -> int:
    """Bytes per token per GPU SGLang's DSA pool stores beyond kvplan's layout (which follows vLLM's choice of the
    sparse latent's layout): its own latent row in place of the layout's."""
    return sum(g.stage_layers[stage] * (dsa_row_bytes(p, layout.kv_dtype) - kv_bytes_per_token(p, layout.kv_dtype))
               for g in layout.groups for p in parts(g.spec_per_gpu) if isinstance(p, MLAAttn) and p.sparse)


def _k_as_v_bytes(g: Group, layout: Layout) -> int:
    return sum(kv_bytes_per_token(replace(p, v_head_dim=p.head_dim) if isinstance(p, AttnSpec) else p, layout.kv_dtype)
               for p in parts(g.spec_per_gpu))


def carve(rel: SglangRelease, req: Request, layout: Layout, budgets: tuple[int, ...], lines: list[str]) -> tuple[int, ...]:
    """What comes off each stage's budget before the KV pool: multimodal caches (0.5.18 on), then the state pool."""
    if rel.mm_reserve_mib and is_multimodal(req):
        budgets = tuple(b - rel.mm_reserve_mib * MIB for b in budgets)
        lines.append(f"multimodal reservation (SGLANG_VLM_CACHE_SIZE_MB): − {rel.mm_reserve_mib} MiB per GPU")
    state = max(stage.state_bytes for stage in layout.stages)
    if not state:
        return budgets
    if rel.mamba == "fixed":
        slots = MAMBA_FIXED_SLOTS // req.cache.dp
        lines.append(f"Mamba state pool: {slots} slots × {state:,} B taken first")
        return tuple(b - slots * state for b in budgets)
    r = MAMBA_FULL_MEMORY_RATIO
    out = tuple(int(b / (1 + r)) for b in budgets)
    lines.append(f"Mamba state pool: budget × {r}/(1+{r}) set aside ({cdiv(budgets[0] - out[0], state):,} "
                 f"requests of {state:,} B state); KV gets {out[0]:,} B")
    return out


def pool_tokens(rel: SglangRelease, req: Request, layout: Layout, budgets: tuple[int, ...],
                lines: list[str]) -> tuple[int, list[int], tuple[int, ...]]:
    """N (the min over stages, rounded to the page), each stage's own N before the min, and the budgets left for
    the KV pool."""
    cell = extras.cells(req, rel, layout, cells(rel, layout))
    lines.append(f"cell size per token per GPU (attention TP {layout.policy.attention_tp}): "
                 f"stages {[f'{c:,}' for c in cell]} B")
    budgets = carve(rel, req, layout, budgets, lines)
    per_stage = [max(0, b // c) for b, c in kv_stages(budgets, cell, "the cell size")]
    tokens = extras.headroom(req, rel, min(per_stage), lines)
    cap = req.settings.sglang.max_total_tokens
    if cap is not None and cap < tokens:
        tokens = cap
        lines.append(f"capped at --max-total-tokens {cap:,}")
    page = page_size(req)
    tokens = tokens // page * page
    lines.append(f"#tokens N = min over stages budget // cell, rounded down to page {page} = {tokens:,}")
    return tokens, per_stage, budgets


def is_hybrid_swa(rel: SglangRelease, req: Request) -> bool:
    """The release gives this model the hybrid sliding-window pool (its architecture, and windows to keep)."""
    if rel.swa is None or not any(kind in ("sliding", "chunked") for kind in req.model.layer_kinds):
        return False
    names = frozenset(req.model.raw.get("architectures") or ())
    text = req.model.raw.get("text_config")
    opt_in = bool(req.model.raw.get("is_hybrid_swa") or (isinstance(text, dict) and text.get("is_hybrid_swa")))
    return bool(names & rel.swa.archs) or (rel.swa.opt_in and opt_in)


def swa_split(rel: SglangRelease, layout: Layout, tokens: int, budget: int, ratio: float, page: int) -> tuple[int, int]:
    """(full-layer tokens, sliding-layer tokens) by the release's split rule (see ``SwaPool``)."""
    assert rel.swa is not None
    swa_groups = [g for g in layout.groups if g.token_limit and g.bytes_per_token_per_layer]
    full_groups = [g for g in layout.groups if g.token_limit is None and g.bytes_per_token_per_layer]
    n_swa, n_full = sum(g.num_layers for g in swa_groups), sum(g.num_layers for g in full_groups)
    # per-layer bytes of a full and of a sliding layer, in SGLang's order of float operations
    f_per = full_groups[0].bytes_per_token_per_layer_per_gpu if full_groups else 0
    s_per = swa_groups[0].bytes_per_token_per_layer_per_gpu if swa_groups else 0
    rule = rel.swa.split
    if rule == "available":
        full = int(budget // (f_per * n_full + ratio * s_per * n_swa)) // page * page
        return full, int(full * ratio) // page * page
    if rule == "memory-weighted":
        full = int(tokens * (f_per * n_full + s_per * n_swa) / (f_per * n_full + ratio * s_per * n_swa))
    else:
        full = int(tokens * layout.model.num_layers / (ratio * n_swa + n_full))
    swa = int(full * ratio)
    return (full, swa) if rule == "layer-tokens" else (full // page * page, swa // page * page)

