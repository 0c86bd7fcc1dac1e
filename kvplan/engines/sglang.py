"""SGLang profiles (0.5.23, the newest; 0.5.2; 0.4's table): a token pool sized by a cell size per token.

Budget: ``free_at_init × mem_fraction_static − weights`` (SGLang's ``rest`` memory:
``free after weights − free after distributed init × (1 − f)``, ``model_runner.py``
``profile_max_num_token`` in 0.5.2, ``mem_cache/kv_cache_configurator.py`` in 0.5.23; the fraction
covers weights and KV, activations and graphs live in the remainder). The default fraction is
``round((G − reserved) / G, 3)`` with G the GPU's nvidia-smi total in MiB and the reserve by release
(``SglangRelease``: 0.5.2 by GPU tier and tp·pp, ``server_args.py``; 0.5.23 from the chunked-prefill
size, the decode and prefill CUDA-graph sizes and tp·pp, ``arg_groups/memory_hook.py``). Pool: ``N = budget // cell`` tokens
(min over PP ranks, rounded down to the page size), allocated with one extra pad page
(``python/sglang/srt/mem_cache/memory_pool.py``). Hybrid-SWA architectures
(``is_hybrid_swa_model``) split ``N × L`` layer-tokens into a full and a sliding pool; every other
model keeps all tokens on every attention layer. Heads split over the attention TP size
(tp // dp with DP attention). SGLang logs no concurrency.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from kvplan.engines import sglang_extras as extras
from kvplan.engines.base import (
    BudgetRules,
    BudgetSteps,
    BudgetTerm,
    EnginePlan,
    GroupRow,
    Refusal,
    Request,
    kv_stages,
    term_bytes,
)
from kvplan.engines.sglang_extras import SglangRelease
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout, LayoutPolicy, Load
from kvplan.specs import AttnSpec, MLAAttn, parts
from kvplan.units import cdiv, format_gib

PAGE_SIZE = 1  # server_args page_size None -> 1
HYBRID_SWA_MODEL_TYPES = ("llama4", "gpt_oss", "mimo_v2", "step3p5", "gemma4")  # is_hybrid_swa_model
MAMBA_FULL_MEMORY_RATIO = 0.9  # mamba state memory : full KV memory (handle_max_mamba_cache), assumed
MIB = 1024**2
NO_MEMORY = "Not enough memory. Please try to increase --mem-fraction-static."  # model_runner / pool_configurator


RELEASES = {r.key: r for r in (
    SglangRelease(key="0.4", label="SGLang 0.4", fraction_rule="tp-table", unknown_gpu_fraction=0.88,
                  source="python/sglang/srt/server_args.py (commit 8b5e1bbf72cc): mem_fraction_static by tp"),
    SglangRelease(key="0.5.2", label="SGLang 0.5.2", fraction_rule="tiers", unknown_gpu_fraction=0.88,
                  spec_rule="headroom", spec_reserve_mib=(2048, 6144),
                  source="srt/server_args.py:452-527 (reserve by GPU tier and tp·pp; chunked prefill by tier)"),
    SglangRelease(key="0.5.23", label="SGLang 0.5.23", fraction_rule="reserve", unknown_gpu_fraction=0.95,
                  spec_rule="cell", logs_dtype=True,
                  source="srt/arg_groups/memory_hook.py:47-343 (reserve from chunked prefill, graph sizes, tp·pp)"),
)}
Tier052 = tuple[int | None, float, float, int]
Tier0523 = tuple[int | None, int, int, int]
Tier = TypeVar("Tier", Tier052, Tier0523)
# 0.5.2 (server_args.py): (G below MiB, reserved GiB = a + b·tp·pp, chunked_prefill_size)
TIERS_052: tuple[Tier052, ...] = ((20 * 1024, 2.8, 0.1, 2048), (35 * 1024, 2.8, 0.1, 2048), (90 * 1024, 9.5, 0.5, 8192),
             (100 * 1024, 12.0, 0.5, 8192), (160 * 1024, 12.0, 0.5, 8192), (None, 32.0, 0.0, 16384))
# 0.5.23 (memory_hook.py:94-180): (G below MiB, chunked_prefill_size, decode graph max_bs at tp < 4, tp >= 4)
TIERS_0523: tuple[Tier0523, ...] = ((20 * 1024, 2048, 8, 8), (35 * 1024, 4096, 48, 160), (60 * 1024, 4096, 32, 160),
              (90 * 1024, 8192, 256, 512), (160 * 1024, 8192, 256, 512), (None, 16384, 512, 512))


def default_mem_fraction_static(tp: int) -> float:
    """SGLang 0.4's table by TP size."""
    return 0.79 if tp >= 16 else 0.81 if tp >= 8 else 0.85 if tp >= 4 else 0.87 if tp >= 2 else 0.88


def _tier(table: tuple[Tier, ...], gpu_mib: int) -> Tier:
    """The first row of a tier table whose bound the GPU's MiB is below (None: no bound)."""
    return next(t for t in table if t[0] is None or gpu_mib < t[0])


def prefill_graph_sizes(max_tokens: int) -> list[int]:
    """0.5.23 prefill CUDA-graph token sizes (arg_groups/cuda_graph_hook.py generate_prefill_cuda_graph_batch_sizes)."""
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
             *range(1280, 4097, 256), *range(4608, max_tokens + 1, 512)]
    return [n for n in sizes if n <= max_tokens]


def reserve_mib_0523(gpu_mib: int, req: Request, chunked: int) -> float:
    """512 + 1.5 × max(chunked, 2048) + 1024 × tp·pp / 8 + 2 × decode max_bs + prefill graphs (8 MiB each;
    MLA 1,536), at least 10 GiB on GPUs over 60 GiB."""
    _, _, small_tp, big_tp = _tier(TIERS_0523, gpu_mib)
    prefill_max = min(8192, chunked) if req.model.is_mla else chunked
    if "llama-2" in req.model.model_id.lower():  # memory_hook: Llama-2 prefill graphs capped at 4,096 tokens
        prefill_max = min(prefill_max, 4096)
    graphs = 1536 if req.model.is_mla else 8 * len(prefill_graph_sizes(prefill_max))
    reserved = 512 + 1.5 * max(chunked, 2048) + req.tp * req.pp / 8 * 1024 + 2 * (small_tp if req.tp < 4 else big_tp)
    reserved += graphs
    return max(reserved, 10 * 1024) if gpu_mib > 60 * 1024 else reserved


def reserve_mib_052(gpu_mib: int, req: Request, rel: SglangRelease) -> float:
    """(a + b·tp·pp) GiB by GPU tier (32 GiB from 160 GiB on), + the draft's reserve (server_args.py:485-492)."""
    _, a, b, _ = _tier(TIERS_052, gpu_mib)
    return (a + b * req.tp * req.pp) * 1024 + extras.spec_reserve_mib(rel, req)


def chunked_prefill_size(rel: SglangRelease, gpu_mib: int) -> int:
    return _tier(TIERS_0523, gpu_mib)[1] if rel.fraction_rule == "reserve" else _tier(TIERS_052, gpu_mib)[3]


def gpu_mib(req: Request) -> int | None:
    """SGLang's G: nvidia-smi's total in MiB (torch's when no nvidia-smi reading is known)."""
    if req.device is None:
        return None
    return req.device.smi_memory_mib or req.device.memory_bytes // MIB or None


def mem_fraction_static(rel: SglangRelease, req: Request, chunked: int) -> float:
    """The release's default fraction: round((G − reserved) / G, 3)."""
    g = gpu_mib(req)
    if rel.fraction_rule == "tp-table":
        return default_mem_fraction_static(req.tp)
    if g is None:
        return rel.unknown_gpu_fraction
    reserved = reserve_mib_0523(g, req, chunked) if rel.fraction_rule == "reserve" else reserve_mib_052(g, req, rel)
    return round((g - reserved) / g, 3) * extras.vlm_factor(req.model)


def has_windows(request: Request) -> bool:
    return any(kind in ("sliding", "chunked") for kind in request.model.layer_kinds)


def is_hybrid_swa(request: Request) -> bool:
    return request.model.model_type in HYBRID_SWA_MODEL_TYPES and has_windows(request)


class SglangEngine:
    name = "sglang"
    supports_dcp = False

    def __init__(self, release_key: str = "0.5.23") -> None:
        found = RELEASES.get(release_key)
        if found is None:
            raise InputError(f"unknown SGLang release {release_key!r}; kvplan follows: {', '.join(RELEASES)}",
                             arg="engine")
        self.release, self.version = found, found.label

    def resolve(self, request: Request) -> Request:
        """Chunked prefill and mem_fraction_static from the GPU (left unset when no GPU is given)."""
        s, g = request.settings, gpu_mib(request)
        if request.device is None:
            return request
        chunked = s.sglang.chunked_prefill_size or chunked_prefill_size(self.release, g or 0)
        fraction = s.sglang.mem_fraction_static or mem_fraction_static(self.release, request, chunked)
        sglang = replace(s.sglang, chunked_prefill_size=chunked, mem_fraction_static=fraction)
        return replace(request, settings=replace(s, sglang=sglang))

    def budget_rules(self, request: Request) -> BudgetRules:
        """Nothing is profiled: the context and NCCL lower the free memory the fraction applies to. LoRA
        buffers are allocated after the weights and before the pool is sized; a draft loads after it."""
        extras.check(self.release, request)
        return BudgetRules(profile=None, non_torch=("cuda_context",), nccl_groups=int(request.tp > 1) + int(request.pp > 1),
                           lora=extras.lora_rule(request), cpu_offload_bytes=request.settings.cpu_offload_bytes)

    def no_memory(self, request: Request) -> Refusal:
        return Refusal(message=NO_MEMORY)

    def policy(self, request: Request) -> LayoutPolicy:
        return LayoutPolicy(attention_tp=request.tp // request.cache.dp, windows="window" if is_hybrid_swa(request) else "full")

    def kv_budget(self, request: Request, terms: tuple[BudgetTerm, ...]) -> BudgetSteps:
        assert request.device is not None
        fraction = self.resolve(request).settings.sglang.mem_fraction_static
        assert fraction is not None
        weights = term_bytes(terms, ("weights", "weights_extra", "lora"))
        free_at_init = request.device.memory_bytes - (term_bytes(terms) - weights)
        budget = int(free_at_init * fraction) - weights
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"free at init = {request.device.memory_bytes:,} − non-torch {term_bytes(terms) - weights:,} = "
            f"{free_at_init:,} B",
            f"KV pool = free at init × mem_fraction_static {fraction} − weights {weights:,} = {budget:,} B"))

    def plan(self, request: Request, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        plan = _plan(request, layout, budgets_per_stage, self.release)
        return replace(plan, refusal=self.no_memory(request)) if plan.kv_tokens <= 0 else plan


def _pool_tokens(req: Request, rel: SglangRelease, layout: Layout, budgets: tuple[int, ...], lines: list[str]) -> int:
    page = req.cache.block_size or PAGE_SIZE
    cells = extras.cells(req, rel, layout, [stage.bytes_per_token() for stage in layout.stages])
    lines.append(f"cell size per token per GPU (attention TP {layout.policy.attention_tp}): "
                 f"stages {[f'{c:,}' for c in cells]} B")
    budgets = _carve_mamba(layout, budgets, lines)
    tokens = max(0, min(b // c for b, c in kv_stages(budgets, cells, "the cell size")))
    tokens = extras.headroom(req, rel, tokens, lines) // page * page
    lines.append(f"#tokens N = min over stages budget // cell, rounded down to page {page} = {tokens:,}")
    return tokens


def _plan(req: Request, layout: Layout, budgets: tuple[int, ...], rel: SglangRelease) -> EnginePlan:
    s, page, version = req.settings.sglang, req.cache.block_size or PAGE_SIZE, rel.label
    lines: list[str] = []
    tokens = _pool_tokens(req, rel, layout, budgets, lines)
    heavy = max(range(req.pp), key=lambda k: layout.stages[k].bytes_per_token())
    stage = layout.stages[heavy]
    full_tokens, swa_tokens = tokens, tokens
    if is_hybrid_swa(req):
        full_tokens, swa_tokens = _split_swa(layout, heavy, tokens, s.swa_full_tokens_ratio, page)
        lines.append(f"hybrid SWA pool: full_layer_tokens = int(N·L / (r·n_swa + n_full)) = {full_tokens:,}, "
                     f"swa_layer_tokens = int(full · r {s.swa_full_tokens_ratio}) = {swa_tokens:,}")
    # SGLang admits by free tokens: a request takes max_model_len full-pool slots and, in the SWA pool,
    # only its window (older tokens are evicted): reserve and steady state coincide.
    steady = stage.sequence_bytes(req.max_model_len) - stage.state_bytes
    return EnginePlan(
        engine="sglang", version=version, kv_dtype=layout.kv_dtype.name, block_size=page,
        page_bytes=page * stage.bytes_per_token(), num_blocks=tokens // page, kv_tokens=full_tokens,
        max_concurrency=None, requests_at_max_len=float(_requests(req, stage, full_tokens, swa_tokens) * req.cache.dp),
        reserve_bytes_per_request=steady, steady_bytes_per_request=steady, groups=_rows(req, layout, heavy, page),
        notes=(*_notes(req, layout, heavy, tokens, page, (full_tokens, swa_tokens)), *extras.notes(req, rel, layout, tokens)),
        explain=tuple(lines), lookahead_tokens_per_request=extras.lookahead_tokens(req),
        log_lines=_log_lines(req, rel, layout, heavy, tokens, page))


def _requests(req: Request, stage: Load, full_tokens: int, swa_tokens: int) -> int:
    requests = full_tokens // req.max_model_len
    window = max((w for w, _ in stage.windowed), default=0)
    if is_hybrid_swa(req) and window:
        requests = min(requests, swa_tokens // min(window, req.max_model_len))
    return requests


TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp8": "float8_e4m3fn",
                "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2"}


def _log_lines(req: Request, rel: SglangRelease, layout: Layout, heavy: int, tokens: int,
               page: int) -> tuple[str, ...]:
    """The pool's allocation line (mem_cache/memory_pool.py _finalize_allocation_log: 0.5.2 line 352, 0.5.23
    line 2088): #tokens N, K/V sizes of N + page slots. Hybrid SWA and Mamba pools log other lines: none here."""
    if is_hybrid_swa(req) or any(stage.state_bytes for stage in layout.stages):
        return ()
    dtype = f"dtype: torch.{TORCH_DTYPES.get(layout.kv_dtype.name, layout.kv_dtype.name)}, " if rel.logs_dtype else ""
    return (f"KV Cache is allocated. {dtype}#tokens: {tokens}, {pool_log(layout, heavy, tokens + page)}",)


def _notes(req: Request, layout: Layout, heavy: int, tokens: int, page: int,
           pools: tuple[int, int]) -> tuple[str, ...]:
    out = [f"page size {page}; the pool holds N + {page} slots (one pad page): "
           + pool_log(layout, heavy, tokens + page)]
    if is_hybrid_swa(req):
        out.append(f"sliding window memory pool: full_layer_tokens={pools[0]}, swa_layer_tokens={pools[1]}")
    if req.cache.dp > 1:
        out.append(f"DP attention {req.cache.dp}: each DP rank has its own pool of {tokens:,} tokens "
                   f"({req.cache.dp * tokens:,} in the system)")
    if has_windows(req) and not is_hybrid_swa(req):
        out.append(f"SGLang has no sliding-window pool for {req.model.model_type}: every layer keeps all tokens")
    if any(isinstance(x, MLAAttn) for s in layout.specs for x in parts(s)):
        out.append("MLA: one latent per token per layer, the same on every TP rank")
    return tuple(out)


def pool_bytes(layout: Layout, stage: int, slots: int) -> tuple[int, int, int]:
    """(K, V, MLA latent) bytes SGLang allocates on one GPU of a stage for `slots` token slots
    (``MHATokenToKVPool`` / ``MLATokenToKVPool``: one buffer per layer, N + page slots)."""
    bits = layout.kv_dtype.element_bits
    k = v = mla = 0
    for g in layout.groups:
        layers = g.stage_layers[stage]
        for spec in parts(g.spec_per_gpu):
            if isinstance(spec, MLAAttn):
                mla += layers * (slots * spec.latent_dim * bits // 8)
            elif isinstance(spec, AttnSpec):
                k += layers * (slots * spec.num_kv_heads * spec.head_dim * bits // 8)
                v += layers * (slots * spec.num_kv_heads * spec.v_head_dim * bits // 8)
    return k, v, mla


def pool_log(layout: Layout, stage: int, slots: int) -> str:
    """SGLang's allocation log line: K and V sizes (MLA: one KV size) of N + page slots, in GiB
    (SGLang labels them "GB")."""
    k, v, mla = pool_bytes(layout, stage, slots)
    if mla:
        return f"KV size: {format_gib(mla)} GB"
    return f"K size: {format_gib(k)} GB, V size: {format_gib(v)} GB"


def _split_swa(layout: Layout, stage: int, tokens: int, ratio: float, page: int) -> tuple[int, int]:
    """set_num_tokens_hybrid_swa: T = N·L; full = int(T / (r·n_swa + n_full)); swa = int(full·r)."""
    n_swa = sum(g.stage_layers[stage] for g in layout.groups if g.token_limit)
    n_full = sum(g.stage_layers[stage] for g in layout.groups
                 if g.token_limit is None and g.bytes_per_token_per_layer)
    full = int(tokens * (n_swa + n_full) / (ratio * n_swa + n_full))
    return full // page * page, int(full * ratio) // page * page


def _carve_mamba(layout: Layout, budgets: tuple[int, ...], lines: list[str]) -> tuple[int, ...]:
    """Mamba hybrids: the state pool takes ratio / (1 + ratio) of the memory first (assumed default)."""
    state = max(stage.state_bytes for stage in layout.stages)
    if not state:
        return budgets
    r = MAMBA_FULL_MEMORY_RATIO
    out = tuple(int(b / (1 + r)) for b in budgets)
    lines.append(f"Mamba state pool: budget × {r}/(1+{r}) set aside ({cdiv(budgets[0] - out[0], state):,} "
                 f"requests of {state:,} B state); KV gets {out[0]:,} B")
    return out


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
