"""SGLang logs recomputed: the token pool from the memory the log prints around weight loading
(through kvplan's SGLang budget rule and planner), and the K/V sizes of the pool from #tokens.

SGLang 0.4-0.5 (``model_runner.py:1092-1133`` in 0.5.2; the same rule from 0.4.0, ``model_runner.py:189-230``,
to 0.5.23, ``utils/common.py:427-576``): rest = free after weights (minimum over ranks) − free before loading
(minimum over ranks) × (1 − mem_fraction_static); #tokens = rest // cell. ``max_total_tokens`` caps it.
The pool holds #tokens + one page of slots; a DSA pool allocates more than its cell counts (the fp8 latent's scales
and bf16 rope, ``kvplan.engines.sglang.pool``), which the size check recomputes. Where the fraction is not logged, the release's default for the GPU
the user names is used (kvplan's SGLang row, ``engines/sglang.py``), and said.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from kvplan.engines import get_engine, settings_from
from kvplan.engines.base import Request
from kvplan.engines.sglang import SglangEngine, SglangRelease, pool_bytes
from kvplan.engines.sglang.pool import cells
from kvplan.planning.budget import device
from kvplan.reconcile.check import Outcome, compare, skip, weights_checks
from kvplan.reconcile.inputs import Inputs, logged_budget, plan, reference
from kvplan.reconcile.parse import GIB, Number, Record, StartupLog

RULES = "SGLang 0.5 pool: python/sglang/srt/model_executor/model_runner.py:1092-1133 (0.5.2)"
Span = tuple[Fraction, Fraction]


def free_memory(log: StartupLog) -> tuple[Span, Span] | None:
    """(free before loading, free after weights), each the minimum over ranks as a range of bytes.
    Before loading: "Load weight begin", else a rank's "avail mem" after plus its "mem usage"."""
    ends = log.of_kind("load_end")
    if not ends:
        return None
    begins = {r.worker: r.get("avail_before") for r in log.of_kind("load_begin")}
    before, after = [], []
    for r in ends:
        free, used, start = r.get("avail_after"), r.get("weights"), begins.get(r.worker)
        if free is None or (used is None and start is None):
            continue
        after.append(free.bytes_range())
        if start is not None:
            before.append(start.bytes_range())
        elif used is not None:
            before.append((free.bytes_range()[0] + used.bytes_range()[0], free.bytes_range()[1] + used.bytes_range()[1]))
    if not after:
        return None
    return (min(b[0] for b in before), min(b[1] for b in before)), (min(a[0] for a in after), min(a[1] for a in after))


def budget_span(inputs: Inputs, before: Span, after: Span) -> Span:
    """kvplan's SGLang budget: free_at_init × mem_fraction_static − weights, weights = before − after."""
    def budget(free: Fraction, left: Fraction) -> Fraction:
        return Fraction(logged_budget(inputs, int(free), int(free - left)))
    return budget(before[1], after[0]), budget(before[0], after[1])


def _gib(span: Span) -> str:
    return f"{float(span[0] / GIB):.3f}-{float(span[1] / GIB):.3f}"


def default_fraction(inputs: Inputs) -> tuple[float | None, str]:
    """mem_fraction_static as logged, else the release's default for the GPU the user names (it depends on the
    GPU's nvidia-smi memory, tp·pp and the chunked-prefill size: kvplan's SGLang row, engines/sglang.py)."""
    stated = inputs.settings.sglang.mem_fraction_static
    if stated is not None:
        return stated, f"mem_fraction_static {stated}"
    if inputs.memory.gpu is None and inputs.memory.gpu_memory_bytes is None:
        return None, "mem_fraction_static is not logged; give the GPU (gpu) for the release's default"
    gpu, _ = device(inputs.memory, needed=True)
    profile = get_engine(inputs.profile)
    request = Request(model=inputs.model, cache=inputs.cache, settings=inputs.settings, device=gpu)
    found = profile.resolve(request).settings.sglang.mem_fraction_static
    return found, f"mem_fraction_static not logged: {profile.version}'s default on {gpu.name if gpu else 'it'} = {found}"


def pool_tokens(log: StartupLog) -> list[tuple[Record, Number]]:
    """The pool's #tokens (SGLang 0.4.3 on), else the scheduler's max_total_num_tokens (0.4.1-0.4.2 print none)."""
    found = [(r, n) for r, n in log.numbers("kv_tokens") if r.kind == "kv_pool"]
    return found or list(log.numbers("max_total_num_tokens"))


def token_checks(log: StartupLog, inputs: Inputs) -> list[Outcome]:
    memory, (fraction, said) = free_memory(log), default_fraction(inputs)
    cap = log.setting("max_total_tokens")
    out: list[Outcome] = []
    for record, number in pool_tokens(log):
        if memory is None or fraction is None:
            out.append(skip("kv_tokens", record, number, "the log prints no 'Load weight' memory" if memory is None
                            else said))
            continue
        at = replace(inputs, settings=settings_from({"mem_fraction_static": fraction}, inputs.settings))
        low, high = budget_span(at, *memory)
        found = [p for b in (low, high) if not isinstance(p := plan(at, int(b)), str)]
        if len(found) < 2:
            out.append(skip("kv_tokens", record, number, f"kvplan refuses: {plan(at, int(low))}"))
            continue
        tokens = [min(p.kv_tokens, int(cap)) if cap else p.kv_tokens for p in found]
        how = (f"min free after weights {_gib(memory[1])} GiB − min free before {_gib(memory[0])} GiB × (1 − {fraction}) = "
               f"{float(low / GIB):.3f}-{float(high / GIB):.3f} GiB // {_cell(at):,} B per token, the release's cell "
               f"(kvplan; {said}){f', capped at max_total_tokens {cap}' if cap else ''}")
        out.append(compare("kv_tokens", record, number, Fraction(tokens[0]), Fraction(tokens[1]), how))
    return out


def _release(inputs: Inputs) -> SglangRelease:
    profile = get_engine(inputs.profile)
    assert isinstance(profile, SglangEngine)
    return profile.release


def _cell(inputs: Inputs) -> int:
    """The bytes per token the release sizes N with on the most loaded stage (pool.cells: not what it allocates for
    a DSA model)."""
    layout = reference(inputs).layout
    assert layout is not None
    return max(cells(_release(inputs), layout))


def size_checks(log: StartupLog, inputs: Inputs) -> list[Outcome]:
    """K, V (MLA: KV) sizes of the logged #tokens + one page, on kvplan's SGLang layout."""
    result, rel = reference(inputs), _release(inputs)
    layout, page = result.layout, result.plan.block_size
    assert layout is not None
    heavy = max(range(inputs.pp), key=lambda k: layout.stages[k].bytes_per_token())
    out: list[Outcome] = []
    printed = log.numbers("max_total_num_tokens")
    for record in log.of_kind("kv_pool"):
        tokens = record.get("kv_tokens") or (printed[0][1] if printed else None)
        if tokens is None:
            continue
        sizes = dict(zip(("k_size", "v_size", "kv_size"), pool_bytes(rel, layout, heavy, int(tokens.value), page),
                         strict=True))
        out += [_size_check(record, name, Fraction(value), int(tokens.value), page)
                for name, value in sizes.items() if record.get(name) is not None]
    return out


def _size_check(record: Record, name: str, value: Fraction, tokens: int, page: int) -> Outcome:
    logged = record.get(name)
    assert logged is not None
    return compare(f"{name}_bytes", record, logged, value, value,
                   f"({tokens:,} + {page} pad slots) × kvplan's bytes per token = {int(value):,} B")


def sglang_checks(log: StartupLog, inputs: Inputs) -> tuple[list[Outcome], str]:
    return [*weights_checks(log, inputs), *token_checks(log, inputs), *size_checks(log, inputs)], RULES
