"""SGLang profile: a token pool sized by a cell size per token.

Budget: ``free_at_init × mem_fraction_static − weights`` (SGLang's ``rest`` memory; the fraction
covers weights and KV, activations live in the remainder). Pool: ``N = budget // cell`` tokens
(min over PP ranks, rounded down to the page size), allocated with one extra pad page
(``python/sglang/srt/mem_cache/memory_pool.py``). Hybrid-SWA architectures
(``is_hybrid_swa_model``) split ``N × L`` layer-tokens into a full and a sliding pool; every other
model keeps all tokens on every attention layer. Heads split over the attention TP size
(tp // dp with DP attention). SGLang logs no concurrency.
"""

from __future__ import annotations

from kvplan.engines.base import BudgetSteps, EnginePlan, GroupRow, Request, Settings, kv_stages
from kvplan.errors import CapacityError, InputError
from kvplan.formulas.layout import Layout, LayoutPolicy, Load
from kvplan.specs import AttnSpec, MLAAttn
from kvplan.units import cdiv, format_gib

VERSION = "SGLang 0.4"  # defaults from python/sglang/srt/server_args.py (commit 8b5e1bbf72cc)
PAGE_SIZE = 1  # server_args page_size None -> 1
HYBRID_SWA_MODEL_TYPES = ("llama4", "gpt_oss", "mimo_v2", "step3p5", "gemma4")  # is_hybrid_swa_model
MAMBA_FULL_MEMORY_RATIO = 0.9  # mamba state memory : full KV memory (handle_max_mamba_cache), assumed


def default_mem_fraction_static(tp: int) -> float:
    """The old SGLang table by TP size (current releases derive it from a reserve; pass it as a flag)."""
    return 0.79 if tp >= 16 else 0.81 if tp >= 8 else 0.85 if tp >= 4 else 0.87 if tp >= 2 else 0.88


def has_windows(request: Request) -> bool:
    return any(kind in ("sliding", "chunked") for kind in request.model.layer_kinds)


def is_hybrid_swa(request: Request) -> bool:
    return request.model.model_type in HYBRID_SWA_MODEL_TYPES and has_windows(request)


class SglangEngine:
    name = "sglang"
    version = VERSION
    supports_dcp = False

    def policy(self, request: Request) -> LayoutPolicy:
        dp = request.settings.dp
        if dp < 1 or request.tp % dp:
            raise InputError(f"dp {dp} must divide tp {request.tp} (SGLang attention TP = tp / dp)", arg=("dp", "tp"))
        return LayoutPolicy(attention_tp=request.tp // dp, windows="window" if is_hybrid_swa(request) else "full")

    def kv_budget(self, gpu_memory_bytes: int, weights_bytes: int, overhead_bytes: int,
                  settings: Settings, tp: int) -> BudgetSteps:
        fraction = settings.mem_fraction_static or default_mem_fraction_static(tp)
        free_at_init = gpu_memory_bytes - overhead_bytes
        budget = int(free_at_init * fraction) - weights_bytes
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"free at init = {gpu_memory_bytes:,} − CUDA context/NCCL {overhead_bytes:,} = {free_at_init:,} B",
            f"KV pool = free at init × mem_fraction_static {fraction} − weights {weights_bytes:,} = {budget:,} B"))

    def plan(self, request: Request, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        return _plan(request, layout, budgets_per_stage)


def _pool_tokens(layout: Layout, budgets: tuple[int, ...], page: int, lines: list[str]) -> int:
    cells = [stage.bytes_per_token() for stage in layout.stages]
    lines.append(f"cell size per token per GPU (attention TP {layout.policy.attention_tp}): "
                 f"stages {[f'{c:,}' for c in cells]} B")
    budgets = _carve_mamba(layout, budgets, lines)
    tokens = min(b // c for b, c in kv_stages(budgets, cells, "the cell size")) // page * page
    if tokens <= 0:
        raise CapacityError("SGLang refuses: not enough memory for the KV pool; raise mem_fraction_static",
                            arg="mem_fraction_static")
    lines.append(f"#tokens N = min over stages budget // cell, rounded down to page {page} = {tokens:,}")
    return tokens


def _plan(req: Request, layout: Layout, budgets: tuple[int, ...]) -> EnginePlan:
    s, page = req.settings, req.settings.block_size or PAGE_SIZE
    lines: list[str] = []
    tokens = _pool_tokens(layout, budgets, page, lines)
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
        engine="sglang", version=VERSION, kv_dtype=layout.kv_dtype.name, block_size=page,
        page_bytes=page * stage.bytes_per_token(), num_blocks=tokens // page, kv_tokens=full_tokens,
        max_concurrency=None, requests_at_max_len=float(_requests(req, stage, full_tokens, swa_tokens) * s.dp),
        reserve_bytes_per_request=steady, steady_bytes_per_request=steady, groups=_rows(req, layout, heavy, page),
        notes=_notes(req, layout, heavy, tokens, page, (full_tokens, swa_tokens)), explain=tuple(lines))


def _requests(req: Request, stage: Load, full_tokens: int, swa_tokens: int) -> int:
    requests = full_tokens // req.max_model_len
    window = max((w for w, _ in stage.windowed), default=0)
    if is_hybrid_swa(req) and window:
        requests = min(requests, swa_tokens // min(window, req.max_model_len))
    return requests


def _notes(req: Request, layout: Layout, heavy: int, tokens: int, page: int,
           pools: tuple[int, int]) -> tuple[str, ...]:
    out = [f"page size {page}; the pool holds N + {page} slots (one pad page): "
           + pool_log(layout, heavy, tokens + page)]
    if is_hybrid_swa(req):
        out.append(f"sliding window memory pool: full_layer_tokens={pools[0]}, swa_layer_tokens={pools[1]}")
    if req.settings.dp > 1:
        out.append(f"DP attention {req.settings.dp}: each DP rank has its own pool of {tokens:,} tokens "
                   f"({req.settings.dp * tokens:,} in the system)")
    if has_windows(req) and not is_hybrid_swa(req):
        out.append(f"SGLang has no sliding-window pool for {req.model.model_type}: every layer keeps all tokens")
    if any(isinstance(x, MLAAttn) for x in layout.specs):
        out.append("MLA: one latent per token per layer, the same on every TP rank")
    return tuple(out)


def pool_bytes(layout: Layout, stage: int, slots: int) -> tuple[int, int, int]:
    """(K, V, MLA latent) bytes SGLang allocates on one GPU of a stage for `slots` token slots
    (``MHATokenToKVPool`` / ``MLATokenToKVPool``: one buffer per layer, N + page slots)."""
    bits = layout.kv_dtype.element_bits
    k = v = mla = 0
    for g in layout.groups:
        layers, spec = g.stage_layers[stage], g.spec_per_gpu
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
