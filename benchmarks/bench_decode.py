"""Decode and write bandwidth of kvplan's paged kernels against what the GPU can do, on one GPU.

    python benchmarks/bench_decode.py --out results.json [--quick] [--sweep]

For each model shape × batch × context × KV dtype (bf16, fp8), in one process:
  (a) copy   a torch copy of the same bytes (the reachable ceiling; GB/s = read + written bytes / s),
  (b) sdpa   torch scaled_dot_product_attention over a contiguous bf16 cache (what users would run),
  (c) kvplan paged decode over shuffled blocks, and the write kernel (reshape_and_cache).
Decode GB/s counts the cache's bytes once (K/V of every KV head, the MLA latent once). Timings: CUDA
graphs of one call per input set (so launch gaps do not count), replayed after a warm-up, median of
the replays; inputs are rotated over ≥ 4× the L2 when one set would fit in it; data is random.
--sweep times tile/split variants on key shapes instead. Targets: decode ≥ 80% of copy when
batch × context ≥ 64k tokens, ≥ 50% at batch 1 × 32k; write ≥ 80% for ≥ 64k tokens.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import torch

from kvplan.probe import kernels
from kvplan.probe.kernels.plan import Tile
from kvplan.probe.pages import Pages

GB, L2_BYTES = 1e9, 50 * 2**20
DEVICE = "cuda"  # the dry run in tests sets "cpu"


@dataclass(frozen=True)
class Shape:
    name: str
    q_heads: int
    kv_heads: int = 1  # 0: MLA (one 512 + 64 latent)
    head_dim: int = 128


SHAPES = [Shape("Llama-3.1-8B", 32, 8), Shape("Llama-3.1-70B TP8", 8, 1), Shape("Falcon-7B", 71, 1, 64),
          Shape("gpt-oss-20b", 64, 8, 64), Shape("Qwen3-32B", 64, 8), Shape("DeepSeek-V3 MLA h16", 16, 0, 576),
          Shape("DeepSeek-V3 MLA h128", 128, 0, 576)]
DTYPES = {"bf16": torch.bfloat16, "fp8": torch.float8_e4m3fn}


@dataclass(frozen=True)
class Case:
    shape: Shape
    batch: int
    context: int
    dtype: str
    tile: Tile | None = None
    splits: int | None = None

    @property
    def block_size(self) -> int:
        return 64 if self.shape.kv_heads == 0 else 16

    @property
    def token_bytes(self) -> int:
        width = self.shape.head_dim * (1 if self.shape.kv_heads == 0 else 2 * self.shape.kv_heads)
        return width * DTYPES[self.dtype].itemsize

    @property
    def bytes(self) -> int:
        return self.batch * self.context * self.token_bytes

    @property
    def sets(self) -> int:
        """Input sets to rotate over: enough that they do not all fit in the L2 (at most 256)."""
        return max(1, min(256, -(-4 * L2_BYTES // self.bytes)))


def rand(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """N(0, 1) values in `dtype` (float8 included) on the GPU, drawn in chunks (no fp32 copy of it all)."""
    out = torch.empty(shape, dtype=dtype, device=DEVICE)
    for chunk in out.view(-1).split(1 << 28):
        chunk.copy_(torch.randn(chunk.numel(), device=DEVICE))
    return out


def graph_time_s(calls: list[Callable[[], object]], replays: int = 20) -> float:
    """Median seconds per call of a CUDA graph holding one of each call, over its replays."""
    for call in calls:  # warm-up outside the graph: compiles the kernels, picks the tiles
        call()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for call in calls:
            call()
    graph.replay()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / len(calls))
    del graph
    return statistics.median(times)


def copy_gbps(num_bytes: int, sets: int) -> float:
    src = torch.randint(0, 255, (sets, num_bytes), dtype=torch.uint8, device=DEVICE)
    dst = torch.empty(num_bytes, dtype=torch.uint8, device=DEVICE)
    seconds = graph_time_s([lambda r=r: dst.copy_(src[r]) for r in range(sets)])
    return 2 * num_bytes / seconds / GB


def _pages(case: Case) -> tuple[Pages, int]:
    """Paged caches (vLLM layout) for `sets` input sets of the case: (pages, blocks per set)."""
    blocks = case.batch * case.context // case.block_size
    total, dtype, s = blocks * case.sets, DTYPES[case.dtype], case.shape
    if s.kv_heads == 0:
        return Pages(rand((total, case.block_size, 576), dtype), mla_rank=512, q_width=576), blocks
    kv = rand((2, total, case.block_size, s.kv_heads, s.head_dim), dtype)
    return Pages(kv[0], kv[1], q_width=s.head_dim), blocks


def decode_gbps(case: Case) -> float:
    pages, blocks = _pages(case)
    per_seq = blocks // case.batch
    lens = torch.full((case.batch,), case.context, dtype=torch.int32, device=DEVICE)
    calls = []
    for r in range(case.sets):
        table = (r * blocks + torch.randperm(blocks, device=DEVICE)).view(case.batch, per_seq).int()
        q = torch.randn(case.batch, case.shape.q_heads, pages.q_width, device=DEVICE).bfloat16()
        calls.append(lambda q=q, table=table: kernels.paged_decode_mla(
            q, pages.k, 512, table, lens, 0.1, num_splits=case.splits, tile=case.tile) if pages.mla_rank else
            kernels.paged_decode(q, pages.k, pages.v, table, lens, 0.1, num_splits=case.splits, tile=case.tile))
    return case.bytes / graph_time_s(calls) / GB


def write_gbps(case: Case) -> tuple[int, float]:
    """(tokens, GB/s) of writing up to 256k tokens' K (or latent) rows into shuffled slots."""
    pages, blocks = _pages(replace(case, batch=1, context=case.batch * case.context))
    cache = pages.k if pages.mla_rank is None else pages.k.unsqueeze(2)
    tokens = min(case.batch * case.context, 1 << 18)
    src = rand((case.sets, tokens, *cache.shape[2:]), cache.dtype)
    cache, src = (cache.view(torch.uint8), src.view(torch.uint8)) if cache.element_size() == 1 else (cache, src)
    slots = [torch.randperm(blocks * case.block_size, device=DEVICE)[:tokens] + r * blocks * case.block_size
             for r in range(case.sets)]
    calls = [lambda r=r: kernels.reshape_and_cache(src[r], slots[r], cache) for r in range(case.sets)]
    row_bytes = src[0, 0].numel() * src.element_size()
    return tokens, 2 * tokens * row_bytes / graph_time_s(calls) / GB


def sdpa_gbps(case: Case) -> float | None:
    """SDPA over a contiguous bf16 cache (B, Hkv, T, D) with grouped heads; None where it has no fused kernel."""
    s = case.shape
    if s.kv_heads == 0 or case.dtype != "bf16":
        return None
    k = rand((case.sets * case.batch, s.kv_heads, case.context, s.head_dim), torch.bfloat16)
    v = rand(tuple(k.shape), torch.bfloat16)
    q = rand((case.batch, s.q_heads, 1, s.head_dim), torch.bfloat16)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    calls = [lambda r=r: sdpa(q, k[r * case.batch:(r + 1) * case.batch], v[r * case.batch:(r + 1) * case.batch],
                              enable_gqa=True) for r in range(case.sets)]
    return case.bytes / graph_time_s(calls) / GB


def run_case(case: Case, *, baselines: bool = True) -> dict[str, Any]:
    """One row: copy, SDPA, kvplan decode and write, each in GB/s; a shape that cannot run is a note."""
    row: dict[str, Any] = {"shape": case.shape.name, "batch": case.batch, "context": case.context,
                           "dtype": case.dtype, "bytes": case.bytes, "sets": case.sets,
                           "tile": asdict(case.tile) if case.tile else None, "splits": case.splits}
    free, _ = torch.cuda.mem_get_info()
    if 3 * case.bytes * case.sets > 0.85 * free:
        return {**row, "note": f"skipped: needs {3 * case.bytes * case.sets / GB:.0f} GB"}
    steps: list[tuple[str, Callable[[], Any]]] = [("decode_gbps", lambda: decode_gbps(case))]
    if baselines:
        steps = [("copy_gbps", lambda: copy_gbps(case.bytes, case.sets)), ("sdpa_gbps", lambda: sdpa_gbps(case)),
                 *steps, ("write", lambda: write_gbps(case))]
    for key, step in steps:
        try:
            value = step()
        except (kernels.DoesNotFit, RuntimeError, torch.OutOfMemoryError) as exc:
            row.setdefault("note", "")
            row["note"] += f"{key}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}; "
            value = None
        finally:
            torch.cuda.empty_cache()
        if key == "write" and value is not None:
            row["write_tokens"], row["write_gbps"] = value
            row["write_copy_gbps"] = copy_gbps(value[0] * case.token_bytes // (2 if case.shape.kv_heads else 1), 4)
        elif key != "write":
            row[key] = value
    return _ratios(row)


def _ratios(row: dict[str, Any]) -> dict[str, Any]:
    copy = row.get("copy_gbps")
    for key in ("sdpa_gbps", "decode_gbps"):
        if copy and row.get(key):
            row[key.replace("_gbps", "_vs_copy")] = row[key] / copy
    if row.get("write_gbps") and row.get("write_copy_gbps"):
        row["write_vs_copy"] = row["write_gbps"] / row["write_copy_gbps"]
    return row


ORDER = [(32, 8192), (1, 32768), (8, 8192), (128, 2048), (8, 32768), (32, 32768), (128, 8192), (1, 8192),
         (8, 2048), (32, 2048), (1, 2048), (128, 32768)]  # the targets' combos first: a cut-short run keeps them


def cases(quick: bool) -> list[Case]:
    combos = [(b, c) for b, c in ORDER if not quick or (b in (1, 32) and c in (8192, 32768))]
    return [Case(s, b, c, d) for b, c in combos for s in SHAPES for d in DTYPES]


def sweep_cases(which: str = "all") -> list[Case]:
    """Tile/split variants on the shapes that decide the plan: GQA groups of 4 and 71, MLA at 16 and 128
    heads ("all"), the fp8 tiles ("fp8"), or split counts for MLA at 16 heads and mid-size GQA ("splits")."""
    llama, falcon, mla16, mla128 = SHAPES[0], SHAPES[2], SHAPES[5], SHAPES[6]
    if which == "splits":
        return [*(Case(mla16, b, c, d, splits=n) for b, c in ((32, 8192), (1, 32768)) for d in DTYPES
                  for n in (8, 16, 32, 64, 128)),
                *(Case(llama, b, c, d, splits=n) for b, c in ((8, 8192), (32, 2048)) for d in DTYPES
                  for n in (2, 4, 8, 16, 32))]
    if which == "fp8":
        return [*(Case(llama, 32, 8192, "fp8", Tile(16, t, w, st)) for t, w, st in
                  ((128, 4, 3), (64, 4, 3), (32, 4, 4), (128, 8, 3), (64, 8, 4))),
                *(Case(mla16, 32, 8192, "fp8", Tile(16, t, 8, 2)) for t in (32, 64)),
                *(Case(mla128, 32, 8192, "fp8", Tile(r, 32, 8, 2)) for r in (64, 32))]
    out = []
    for batch, ctx in ((32, 8192), (1, 32768)):
        for tokens, warps, stages in ((64, 4, 3), (128, 4, 2), (128, 8, 3), (32, 4, 4)):
            out += [Case(llama, batch, ctx, d, Tile(16, tokens, warps, stages)) for d in DTYPES]
    out += [Case(llama, b, 32768, "bf16", splits=n) for b in (1, 8) for n in (2, 8, 32, 64)]
    out += [Case(falcon, 8, 32768, "bf16", Tile(128, t, w, 2)) for t, w in ((64, 4), (64, 8), (32, 4))]
    out += [Case(mla16, 32, 8192, d, Tile(16, t, 8, 2)) for t in (16, 32, 64) for d in DTYPES]
    out += [Case(mla128, 32, 8192, d, Tile(r, t, 8, 2)) for r in (64, 32) for t in (16, 32) for d in DTYPES]
    return out


def table(rows: list[dict[str, Any]]) -> str:
    def f(v: Any, fmt: str = "{:,.0f}") -> str:
        return fmt.format(v) if isinstance(v, (int, float)) else "-"

    out = [f"{'shape':22s} {'B':>4s} {'ctx':>6s} {'dt':4s} {'copy':>6s} {'sdpa':>6s} {'%':>4s} {'kvplan':>6s} "
           f"{'%':>4s} {'write':>6s} {'%':>4s}  tile/splits/note"]
    for r in rows:
        extra = f"{r['tile'] or ''} {r['splits'] or ''} {r.get('note', '')}".strip()
        out.append(f"{r['shape'][:22]:22s} {r['batch']:>4d} {r['context']:>6d} {r['dtype']:4s} "
                   f"{f(r.get('copy_gbps')):>6s} {f(r.get('sdpa_gbps')):>6s} {f(r.get('sdpa_vs_copy'), '{:.0%}'):>4s} "
                   f"{f(r.get('decode_gbps')):>6s} {f(r.get('decode_vs_copy'), '{:.0%}'):>4s} "
                   f"{f(r.get('write_gbps')):>6s} {f(r.get('write_vs_copy'), '{:.0%}'):>4s}  {extra}")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file for every row")
    parser.add_argument("--quick", action="store_true", help="batch 1 and 32, contexts 8k and 32k only")
    parser.add_argument("--sweep", choices=("all", "fp8", "splits"), help="tile/split variants on key shapes (decode only)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_decode needs a CUDA device")
    torch.manual_seed(0)
    rows: list[dict[str, Any]] = []
    todo = sweep_cases(args.sweep) if args.sweep else cases(args.quick)
    for i, case in enumerate(todo):
        rows.append(run_case(case, baselines=not args.sweep))
        print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
        if i % 8 == 7 or i == len(todo) - 1:
            with open(args.out, "w") as fh:
                json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, fh,
                          indent=1)
    order = {s.name: i for i, s in enumerate(SHAPES)}
    print(table(sorted(rows, key=lambda r: (order.get(r["shape"], 0), r["dtype"], r["batch"], r["context"]))))


if __name__ == "__main__":
    main()
