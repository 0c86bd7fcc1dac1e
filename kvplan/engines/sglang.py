"""SGLang profile (engines.md §2): a token pool sized by a cell size per token.

Budget: ``free_at_init × mem_fraction_static − weights`` (SGLang's ``rest`` memory; the fraction
covers weights and KV, activations live in the remainder). Pool: ``N = budget // cell`` tokens
(min over PP ranks, rounded down to the page size), allocated with one extra pad page. Hybrid-SWA
architectures split ``N × L`` layer-tokens into a full and a sliding pool; every other model keeps
all tokens on every attention layer. SGLang logs no concurrency.
"""

from __future__ import annotations

from kvplan.engines.base import BudgetSteps, EnginePlan, GroupRow, Request, Settings, kv_stages
from kvplan.errors import CapacityError, InputError
from kvplan.formulas.dtypes import KvDtype, resolve_kv_dtype
from kvplan.formulas.per_token import kv_bytes_per_token, state_bytes_per_sequence
from kvplan.formulas.sharding import check_parallel, pp_stages, shard_spec
from kvplan.specs import ChunkedAttn, FullAttn, LayerSpec, LinearState, MLAAttn, SlidingAttn, layer_specs
from kvplan.units import cdiv

VERSION = "SGLang 0.4"  # defaults from server_args.py 8b5e1bbf72cc (engines.md S-ARGS)
PAGE_SIZE = 1  # server_args page_size None -> 1
HYBRID_SWA_MODEL_TYPES = ("llama4", "gpt_oss", "mimo_v2", "step3p5", "gemma4")  # is_hybrid_swa_model
MAMBA_FULL_MEMORY_RATIO = 0.9  # mamba state memory : full KV memory (handle_max_mamba_cache), assumed


def default_mem_fraction_static(tp: int) -> float:
    """The old SGLang table by TP size (current releases derive it from a reserve; pass it as a flag)."""
    return 0.79 if tp >= 16 else 0.81 if tp >= 8 else 0.85 if tp >= 4 else 0.87 if tp >= 2 else 0.88


class SglangEngine:
    name = "sglang"
    version = VERSION

    def kv_budget(self, gpu_memory_bytes: int, weights_bytes: int, overhead_bytes: int,
                  settings: Settings, tp: int) -> BudgetSteps:
        fraction = settings.mem_fraction_static or default_mem_fraction_static(tp)
        free_at_init = gpu_memory_bytes - overhead_bytes
        budget = int(free_at_init * fraction) - weights_bytes
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"free at init = {gpu_memory_bytes:,} − CUDA context/NCCL {overhead_bytes:,} = {free_at_init:,} B",
            f"KV pool = free at init × mem_fraction_static {fraction} − weights {weights_bytes:,} = {budget:,} B"))

    def plan(self, request: Request, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        req, s, m = request, request.settings, request.model
        if req.dcp > 1:
            raise InputError("--dcp is a vLLM option; SGLang splits MLA over DP attention (--dp)")
        if s.dp < 1 or req.tp % s.dp:
            raise InputError(f"--dp {s.dp} must divide tp {req.tp} (SGLang attention TP = tp / dp)")
        attn_tp = req.tp // s.dp
        specs = layer_specs(m, req.overrides)
        check_parallel(specs, m.num_attention_heads, req.tp, req.pp, 1)
        dtype = resolve_kv_dtype(req.kv_dtype, m.dtype)
        page = s.block_size or PAGE_SIZE
        budgets = budgets_per_stage if len(budgets_per_stage) == req.pp else budgets_per_stage * req.pp
        swa = m.model_type in HYBRID_SWA_MODEL_TYPES and any(isinstance(x, (SlidingAttn, ChunkedAttn)) for x in specs)
        stages = pp_stages(specs, req.pp)
        cells = [sum(kv_bytes_per_token(shard_spec(x, attn_tp), dtype) for x in st) for st in stages]
        lines = [f"cell size per token per GPU (attention TP {attn_tp}): stages {[f'{c:,}' for c in cells]} B"]
        budgets, lines = _carve_mamba(stages, budgets, attn_tp, m.dtype, lines)
        tokens = min(b // c for b, c in kv_stages(budgets, cells, "the cell size")) // page * page
        if tokens <= 0:
            raise CapacityError("SGLang refuses: not enough memory for the KV pool; raise --mem-fraction-static")
        lines.append(f"#tokens N = min over stages budget // cell, rounded down to page {page} = {tokens:,}")
        heavy = max(range(req.pp), key=lambda k: cells[k])
        full_tokens, swa_tokens = tokens, tokens
        if swa:
            full_tokens, swa_tokens = _split_swa(stages[heavy], tokens, s.swa_full_tokens_ratio, page)
            lines.append(f"hybrid SWA pool: full_layer_tokens = int(N·L / (r·n_swa + n_full)) = {full_tokens:,}, "
                         f"swa_layer_tokens = int(full · r {s.swa_full_tokens_ratio}) = {swa_tokens:,}")
        full_cell, window_cells = _cells(stages[heavy], attn_tp, dtype, swa)
        # SGLang admits by free tokens: a request takes max_model_len full-pool slots and, in the SWA pool,
        # only its window (older tokens are evicted): reserve and steady state coincide.
        steady = full_cell * req.max_model_len + sum(b * min(w, req.max_model_len) for w, b in window_cells)
        notes = [f"page size {page}; the pool holds N + {page} slots (one pad page): "
                 + _pool_log(stages[heavy], attn_tp, dtype, tokens + page)]
        if swa:
            notes.append(f"sliding window memory pool: full_layer_tokens={full_tokens}, swa_layer_tokens={swa_tokens}")
        if s.dp > 1:
            notes.append(f"DP attention {s.dp}: each DP rank has its own pool of {tokens:,} tokens "
                         f"({s.dp * tokens:,} in the system)")
        if any(isinstance(x, (SlidingAttn, ChunkedAttn)) for x in specs) and not swa:
            notes.append(f"SGLang has no sliding-window pool for {m.model_type}: every layer keeps all tokens")
        if any(isinstance(x, MLAAttn) for x in specs):
            notes.append("MLA: one latent per token per layer, the same on every TP rank")
        window = max((w for w, _ in window_cells), default=0)
        requests = full_tokens // req.max_model_len
        if swa and window:
            requests = min(requests, swa_tokens // min(window, req.max_model_len))
        return EnginePlan(
            engine="sglang", version=VERSION, kv_dtype=dtype.name, block_size=page, page_bytes=page * cells[heavy],
            num_blocks=tokens // page, kv_tokens=full_tokens, max_concurrency=None,
            requests_at_max_len=float(requests * s.dp), reserve_bytes_per_request=steady,
            steady_bytes_per_request=steady, groups=_rows(specs, stages[heavy], attn_tp, dtype, page, req.max_model_len),
            notes=tuple(notes), explain=tuple(lines))


def _pool_log(stage: tuple[LayerSpec, ...], attn_tp: int, dtype: KvDtype, slots: int) -> str:
    """SGLang's allocation log: K and V sizes (MLA: one KV size) of N + page slots, in GiB."""
    bits = dtype.element_bits
    mla = sum(slots * x.latent_dim * bits // 8 for x in stage if isinstance(x, MLAAttn))
    k = v = 0
    for x in stage:
        if isinstance(x, (FullAttn, SlidingAttn, ChunkedAttn)):
            heads = shard_spec(x, attn_tp).num_kv_heads  # type: ignore[union-attr]
            k += slots * heads * x.head_dim * bits // 8
            v += slots * heads * x.v_head_dim * bits // 8
    if mla:
        return f"KV size: {mla / 2**30:.2f} GB"
    return f"K size: {k / 2**30:.2f} GB, V size: {v / 2**30:.2f} GB"


def _cells(stage: tuple[LayerSpec, ...], attn_tp: int, dtype: KvDtype, swa: bool) -> tuple[int, list[tuple[int, int]]]:
    """(bytes per token of layers keeping every token, [(window, bytes per token)] of SWA layers)."""
    full, windows = 0, []
    for x in stage:
        b = kv_bytes_per_token(shard_spec(x, attn_tp), dtype)
        if swa and isinstance(x, (SlidingAttn, ChunkedAttn)):
            windows.append((x.window if isinstance(x, SlidingAttn) else x.chunk_size, b))
        else:
            full += b
    return full, windows


def _split_swa(stage: tuple[LayerSpec, ...], tokens: int, ratio: float, page: int) -> tuple[int, int]:
    """set_num_tokens_hybrid_swa: T = N·L; full = int(T / (r·n_swa + n_full)); swa = int(full·r)."""
    n_swa = sum(1 for x in stage if isinstance(x, (SlidingAttn, ChunkedAttn)))
    n_full = sum(1 for x in stage if x.kind in ("full", "mla"))
    full = int(tokens * (n_swa + n_full) / (ratio * n_swa + n_full))
    return full // page * page, int(full * ratio) // page * page


def _carve_mamba(stages: list[tuple[LayerSpec, ...]] | tuple[tuple[LayerSpec, ...], ...], budgets: tuple[int, ...],
                 attn_tp: int, model_dtype: str, lines: list[str]) -> tuple[tuple[int, ...], list[str]]:
    """Mamba hybrids: the state pool takes ratio / (1 + ratio) of the memory first (assumed default)."""
    if not any(isinstance(x, LinearState) for st in stages for x in st):
        return budgets, lines
    r = MAMBA_FULL_MEMORY_RATIO
    out = tuple(int(b / (1 + r)) for b in budgets)
    state = max(sum(state_bytes_per_sequence(shard_spec(x, attn_tp), resolve_kv_dtype("auto", model_dtype))
                    for x in st) for st in stages)
    lines.append(f"Mamba state pool: budget × {r}/(1+{r}) set aside ({cdiv(budgets[0] - out[0], max(state, 1)):,} "
                 f"requests of {state:,} B state); KV gets {out[0]:,} B")
    return out, lines


def _rows(specs: tuple[LayerSpec, ...], stage: tuple[LayerSpec, ...], attn_tp: int, dtype: KvDtype, page: int,
          max_model_len: int) -> tuple[GroupRow, ...]:
    rows: dict[str, GroupRow] = {}
    for x in dict.fromkeys(specs):
        per_tok = kv_bytes_per_token(shard_spec(x, attn_tp), dtype)
        rows[x.kind] = GroupRow(kind=x.kind, num_layers=specs.count(x), num_layers_per_gpu=stage.count(x),
                                engine_groups=1, block_size=page, page_bytes_per_layer=page * per_tok,
                                blocks_per_request=cdiv(max_model_len, page) if per_tok else 0,
                                tokens_reserved_per_request=max_model_len if per_tok else 0)
    return tuple(rows.values())
