"""Run-3 launch plans against deeper K/V buffering on the rows that missed the targets, in one process.

    python benchmarks/bench_variants.py --out variants.json [--budget-s 170]

Each row (shape × batch × context × dtype of bench_decode) gets its pages once, the copy ceiling once,
then the decode GB/s of several tiles: ``old`` (the tile h100-run3 measured: one K/V tile in flight),
``new`` (the planner when run: in h100-run4 that was the first draft, three tiles in flight for fp8 and
MQA; the plan that came out of it keeps two, the ``…/5`` columns) and alternates. Each variant's output on the first input set is compared
with the old tile's (relative error, also a check of the pipelined code on the GPU). Rows run in
priority order and the JSON is rewritten after each, so a cut-short run keeps the important rows.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, replace
from typing import Any

import bench_decode
import torch
from bench_decode import DTYPES, SHAPES, Case, _pages, copy_gbps, graph_time_s

from kvplan.probe import kernels
from kvplan.probe.kernels import plan
from kvplan.probe.kernels.plan import Tile

GB = 1e9
LLAMA, L70, FALCON, GPTOSS, MLA16, MLA128 = (SHAPES[i] for i in (0, 1, 2, 3, 5, 6))
ROWS = [  # (shape, batch, context, dtype), most important first
    *((LLAMA, b, c, "fp8") for b, c in ((8, 8192), (32, 2048), (1, 32768))),
    *((L70, b, c, "fp8") for b, c in ((1, 32768), (8, 8192), (32, 2048), (32, 8192), (128, 2048), (8, 32768))),
    *((MLA16, b, c, d) for d in DTYPES for b, c in ((1, 32768), (8, 8192), (32, 8192), (128, 2048))),
    *((FALCON, b, c, d) for d in DTYPES for b, c in ((8, 32768), (128, 32768), (1, 32768))),
    *((L70, b, c, "bf16") for b, c in ((1, 32768), (8, 8192), (32, 2048), (128, 2048))),
    *((GPTOSS, b, c, "fp8") for b, c in ((8, 8192), (32, 8192), (1, 32768))),
    *((MLA128, 32, 8192, d) for d in DTYPES),
    *((LLAMA, b, c, "bf16") for b, c in ((32, 8192), (1, 32768), (8, 8192))),  # controls that met the targets
    (LLAMA, 32, 8192, "fp8"), (FALCON, 32, 8192, "bf16"),
]


def variants(case: Case) -> dict[str, Tile]:
    """old (run 3), new (the planner now) and alternates for one row."""
    s, device = case.shape, plan.device_limits(torch.device(bench_decode.DEVICE))
    cache_bytes = DTYPES[case.dtype].itemsize
    if s.kv_heads == 0:
        old = plan.mla_tiles(s.q_heads, 512, 64, cache_bytes, 2, device, depth=1)[0]
        new = plan.mla_tiles(s.q_heads, 512, 64, cache_bytes, 2, device)[0]
        alts = [replace(old, stages=5), replace(old, stages=7), replace(old, tokens=32, stages=7),
                replace(old, tokens=32, warps=4, stages=7)] if s.q_heads <= 16 else [replace(old, stages=5),
                                                                                  replace(old, tokens=16, stages=7)]
    else:
        group = s.q_heads // s.kv_heads
        old = plan.gqa_tiles(group, s.head_dim, s.head_dim, cache_bytes, 2, device, depth=1)[0]
        new = plan.gqa_tiles(group, s.head_dim, s.head_dim, cache_bytes, 2, device)[0]
        alts = [replace(old, stages=5), replace(old, stages=7), replace(old, warps=12 - old.warps, stages=7),
                replace(old, tokens=old.tokens // 2, stages=7)]
    out = {"old": old, "new": new}
    for t in alts:
        if t not in out.values():
            out[f"{t.rows}/{t.tokens}/{t.warps}/{t.stages}"] = t
    return out


def time_tiles(case: Case, tiles: dict[str, Tile]) -> dict[str, Any]:
    """GB/s and relative error against the old tile's output, per tile, over the same pages."""
    pages, blocks = _pages(case)
    dev = bench_decode.DEVICE
    lens = torch.full((case.batch,), case.context, dtype=torch.int32, device=dev)
    tables = [(r * blocks + torch.randperm(blocks, device=dev)).view(case.batch, -1).int() for r in range(case.sets)]
    qs = [torch.randn(case.batch, case.shape.q_heads, pages.q_width, device=dev).bfloat16() for _ in tables]

    def call(tile: Tile, r: int) -> torch.Tensor:
        if pages.mla_rank:
            return kernels.paged_decode_mla(qs[r], pages.k, 512, tables[r], lens, 0.1, tile=tile)
        return kernels.paged_decode(qs[r], pages.k, pages.v, tables[r], lens, 0.1, tile=tile)

    out: dict[str, Any] = {}
    ref = call(tiles["old"], 0)
    for name, tile in tiles.items():
        try:
            got = call(tile, 0)
            err = float((got - ref).norm() / ref.norm()) if got.isfinite().all() else float("nan")
            gbps = case.bytes / graph_time_s([lambda r=r, t=tile: call(t, r) for r in range(case.sets)]) / GB
            out[name] = {"tile": asdict(tile), "gbps": gbps, "err_vs_old": err}
        except (kernels.DoesNotFit, RuntimeError) as exc:
            out[name] = {"tile": asdict(tile), "note": f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"}
    return out


def line(row: dict[str, Any]) -> str:
    cells = []
    for name, v in row["variants"].items():
        t = v["tile"]
        what = f"{v['gbps']:,.0f} ({v['gbps'] / row['copy_gbps']:.0%}, err {v['err_vs_old']:.0e})" if "gbps" in v else v["note"]
        cells.append(f"{name}[{t['rows']}/{t['tokens']}/{t['warps']}/{t['stages']}] {what}")
    return (f"{row['shape'][:20]:20s} {row['batch']:>4d} {row['context']:>6d} {row['dtype']:4s} "
            f"copy {row['copy_gbps']:,.0f} | " + " | ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--budget-s", type=float, default=170.0, help="stop starting rows after this long")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_variants needs a CUDA device")
    torch.manual_seed(0)
    start, rows = time.monotonic(), []
    for shape, batch, context, dtype in ROWS:
        if time.monotonic() - start > args.budget_s:
            print(f"budget spent: {len(rows)} of {len(ROWS)} rows", file=sys.stderr)
            break
        case = Case(shape, batch, context, dtype)
        row = {"shape": shape.name, "batch": batch, "context": context, "dtype": dtype,
               "copy_gbps": copy_gbps(case.bytes, case.sets), "variants": time_tiles(case, variants(case))}
        rows.append(row)
        torch.cuda.empty_cache()
        print(line(row), file=sys.stderr, flush=True)
        with open(args.out, "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, fh, indent=1)
    print("\n".join(line(r) for r in rows))


if __name__ == "__main__":
    main()
