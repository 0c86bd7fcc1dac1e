"""TensorRT-LLM logs recomputed: primary blocks from the free memory the log prints (through
kvplan's TRT-LLM budget rule and planner), the tokens of those blocks, and the bytes allocated for
those tokens.

The PyTorch flow (1.x) builds the cache twice, a small one to measure the peak and then the final
one, and logs both: the last record of each kind is the cache the engine serves with.
"""

from __future__ import annotations

from fractions import Fraction

from kvplan.reconcile.check import Outcome, compare, skip
from kvplan.reconcile.inputs import Inputs, logged_budget, plan, reference_plan
from kvplan.reconcile.parse import GIB, StartupLog
from kvplan.units import cdiv

RULES = ("TensorRT-LLM KV cache manager: blocks = ceil((free × free_gpu_memory_fraction // bytes per token) / "
         "tokens per block); the last cache built is the one served")
EARLIER = "an earlier cache (TensorRT-LLM 1.x sizes a small one first to measure the peak); the last one is checked"


def block_checks(log: StartupLog, inputs: Inputs) -> list[Outcome]:
    pools, memory = log.numbers("num_blocks"), log.of_kind("memory")
    if not pools:
        return []
    earlier: list[Outcome] = [skip("num_blocks", r, n, EARLIER) for r, n in pools[:-1]]
    record, number = pools[-1]
    available = memory[-1].get("available") if memory else None
    if available is None:
        return [*earlier, skip("num_blocks", record, number, "the log prints no free memory (Memory usage when "
                               "calculating max tokens in paged kv cache) to recompute it from")]
    budgets = [logged_budget(inputs, int(b), 0) for b in available.bytes_range()]
    found = [plan(inputs, b) for b in budgets]
    if isinstance(found[0], str) or isinstance(found[1], str):
        return [*earlier, skip("num_blocks", record, number, f"kvplan refuses: {found[0]}")]
    per_token = found[0].page_bytes // found[0].block_size
    fraction = inputs.settings.trtllm.free_gpu_memory_fraction
    how = (f"available {available.text} GiB × free_gpu_memory_fraction {fraction or '0.9 (default)'} // "
           f"{per_token:,} B per token (kvplan), in blocks of {found[0].block_size}")
    hint = (f"the log's {int(number.value):,} blocks × {found[0].block_size} tokens would need "
            f"{int(number.value) * found[0].page_bytes / GIB:.2f} GiB at kvplan's {per_token:,} B per token")
    return [*earlier, compare("num_blocks", record, number, Fraction(found[0].num_blocks or 0),
                    Fraction(found[1].num_blocks or 0), how, hint)]


def allocation_checks(log: StartupLog, inputs: Inputs) -> list[Outcome]:
    """The last "Allocated X GiB for max tokens in paged KV cache (T)": T = blocks × tokens per
    block; X = T × kvplan's bytes per token."""
    allocated = log.of_kind("allocated")
    if not allocated:
        return []
    record, ref = allocated[-1], reference_plan(inputs)
    pools = log.of_kind("pool")
    blocks = pools[-1].get("num_blocks") if pools else None
    tpb = ref.block_size
    per_token = ref.page_bytes // tpb
    out: list[Outcome] = [skip(n.name if n.name == "kv_tokens" else f"{n.name}_bytes", r, n, EARLIER)
                          for r in allocated[:-1] for n in r.numbers]
    tokens, size = record.get("kv_tokens"), record.get("kv_size")
    warned = [r.get("max_tokens") for r in log.of_kind("max_tokens") if r.seq < record.seq]
    if tokens is not None and blocks is not None:
        value = Fraction(int(blocks.value) * tpb)
        out.append(compare("kv_tokens", record, tokens, value, value,
                           f"the logged {int(blocks.value):,} primary blocks × {tpb} tokens per block"))
    elif tokens is not None and warned and warned[-1] is not None:
        value = Fraction(cdiv(int(warned[-1].value), tpb) * tpb)
        out.append(compare("kv_tokens", record, tokens, value, value,
                           f"the logged max_tokens {warned[-1].text} in whole blocks of {tpb} tokens"))
    if tokens is not None and size is not None:
        value = Fraction(int(tokens.value) * per_token)
        hint = (f"the log's {size.text} GiB for {int(tokens.value):,} tokens is {int(size.value * GIB / tokens.value):,} B "
                f"per token, not {inputs.model.model_id}'s {per_token:,} at {ref.kv_dtype}")
        out.append(compare("kv_size_bytes", record, size, value, value,
                           f"{int(tokens.value):,} tokens × {per_token:,} B per token (kvplan, {ref.kv_dtype})",
                           hint))
    return out


def profile_checks(log: StartupLog, inputs: Inputs) -> list[Outcome]:
    """The PyTorch flow's profiling line (0.20-1.2, ``_util.py`` KvCacheCreator): KV memory = (total − peak +
    the estimation cache's bytes) × fraction; its bytes per token (TensorRT-LLM's estimator: every attention layer
    × 2 × KV heads per rank × head dim × dtype bytes) against kvplan's; and max_tokens = memory // those bytes."""
    out: list[Outcome] = []
    for record in log.of_kind("peak"):
        total, peak, tmp, fraction = (record.get(k) for k in ("total", "peak", "estimation_kv", "fraction"))
        available, per_token = record.get("available"), record.get("kv_bytes_per_token")
        if None in (total, peak, tmp, fraction, available, per_token):
            continue
        assert total and peak and tmp and fraction and available and per_token
        low = (total.bytes_range()[0] - peak.bytes_range()[1] + tmp.bytes_range()[0]) * fraction.value
        high = (total.bytes_range()[1] - peak.bytes_range()[0] + tmp.bytes_range()[1]) * fraction.value
        how = f"(total {total.text} − peak {peak.text} + estimation cache {tmp.text} GiB) × {fraction.text}"
        out.append(compare("kv_budget_bytes", record, available, low, high, how))
        mine = Fraction(reference_plan(inputs).page_bytes // reference_plan(inputs).block_size)
        out.append(compare("kv_bytes_per_token", record, per_token, mine, mine,
                           f"{inputs.model.model_id}'s bytes per token at tp {inputs.tp} (kvplan)"))
        for warned in [r for r in log.of_kind("max_tokens") if r.seq > record.seq][:1]:
            tokens = warned.get("max_tokens")
            assert tokens is not None
            span = [int(b // per_token.value) for b in available.bytes_range()]
            out.append(compare("max_tokens", warned, tokens, Fraction(span[0]), Fraction(span[1]),
                               f"{available.text} GiB // the logged {int(per_token.value):,} B per token"))
    return out


def trtllm_checks(log: StartupLog, inputs: Inputs) -> tuple[list[Outcome], str]:
    return [*block_checks(log, inputs), *profile_checks(log, inputs), *allocation_checks(log, inputs)], RULES
