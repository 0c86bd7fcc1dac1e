"""Compile the probe's kernels for a GPU target on any machine (no GPU needed) and report resources.

    python benchmarks/kernel_report.py [--arch 90]

Runs each wrapper on CPU tensors with the launch intercepted: the arguments it would pass are
compiled ahead of time (triton.compile for cuda:<arch>), and the shared memory, registers, spills,
software-pipelined copies and tensor-core instructions are printed. Needs triton's bundled ptxas.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
from collections.abc import Callable
from typing import Any

os.environ.pop("TRITON_INTERPRET", None)

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from kvplan.probe import kernels
from kvplan.probe.data import random_cache
from kvplan.probe.kernels import combine, decode, mla, plan, write

H100 = plan.Device(sms=132, smem_bytes=232448)
_TYPES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32", torch.int8: "i8", torch.uint8: "u8",
          torch.int32: "i32", torch.int64: "i64", torch.float8_e4m3fn: "fp8e4nv", torch.float8_e5m2: "fp8e5"}


def _signature(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any], dict[Any, Any]]:
    names = fn.arg_names
    values = dict(zip(names, args, strict=False)) | {k: v for k, v in kwargs.items() if k in names}
    sig, consts, attrs = {}, {}, {}
    for i, name in enumerate(names):
        v = values[name]
        if name in kwargs and i >= len(args):
            sig[name], consts[name] = "constexpr", v
        elif isinstance(v, torch.Tensor):
            sig[name] = "*" + _TYPES[v.dtype]
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif isinstance(v, bool):
            sig[name] = "i1"
        elif isinstance(v, int):
            sig[name] = "i64" if abs(v) >= 2**31 else "i32"
            if v % 16 == 0 and v != 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            sig[name] = "fp32"
    return sig, consts, attrs


def _resources(cubin: bytes, ptxas_log: str = "") -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
        out = subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
    m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+)", out)
    return f"regs {m.group(1)} stack {m.group(2)}" if m else out.strip()[-80:]


class Intercept:
    def __init__(self, fn: Any, arch: int, rows: list[str], label: str) -> None:
        self.fn, self.arch, self.rows, self.label = fn, arch, rows, label
        self.arg_names = fn.arg_names

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        def run(*args: Any, **kwargs: Any) -> None:
            opts = {k: kwargs.pop(k) for k in ("num_warps", "num_stages") if k in kwargs}
            sig, consts, attrs = _signature(self.fn, args, kwargs)
            src = ASTSource(fn=self.fn, signature=sig, constexprs=consts, attrs=attrs)
            c = triton.compile(src, target=GPUTarget("cuda", self.arch, 32), options=opts)
            ttgir, ptx = c.asm["ttgir"], c.asm["ptx"]
            tags = [t for t, k in (("wgmma", "wgmma"), ("mma.sync", "mma.sync"), ("cp.async", "cp.async")) if k in ptx]
            self.rows.append(f"{self.label:48s} grid {tuple(grid)!s:18s} {opts} smem {c.metadata.shared:>6} "
                             f"{_resources(c.asm['cubin'])} async_copies {ttgir.count('async_copy_global_to_local')} "
                             f"{' '.join(tags)}")
        return run


def report(arch: int, cases: list[tuple[str, Callable[[], object]]]) -> list[str]:
    rows: list[str] = []
    plan.device_limits = lambda device: H100  # type: ignore[assignment]
    originals = (decode._gqa_kernel, mla._mla_kernel, combine._combine_kernel, write._write_kernel)
    for label, case in cases:
        decode._gqa_kernel = Intercept(originals[0], arch, rows, label)  # type: ignore[assignment]
        mla._mla_kernel = Intercept(originals[1], arch, rows, label)  # type: ignore[assignment]
        combine._combine_kernel = Intercept(originals[2], arch, rows, label + " combine")  # type: ignore[assignment]
        write._write_kernel = Intercept(originals[3], arch, rows, label)  # type: ignore[assignment]
        try:
            case()
        except Exception as exc:  # report and go on: one shape that does not compile is a finding
            rows.append(f"{label:48s} FAILED {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
    return rows


def _gqa(hq: int, hkv: int, d: int, quant: str, dtype: torch.dtype, batch: int, ctx: int, bs: int = 16,
         tile: plan.Tile | None = None) -> Callable[[], object]:
    gen = torch.Generator().manual_seed(0)
    nb = 8
    k, ks = random_cache((nb, bs, hkv), d, quant, gen, dtype=dtype)
    v, vs = random_cache((nb, bs, hkv), d, quant, gen, dtype=dtype)
    q = torch.randn(batch, hq, d).bfloat16()
    table = torch.zeros(batch, ctx // bs, dtype=torch.int32)
    lens = torch.full((batch,), ctx, dtype=torch.int32)
    return lambda: kernels.paged_decode(q, k, v, table, lens, d**-0.5, quant=quant, k_scales=ks, v_scales=vs,
                                        quant_group=8, tile=tile)


def _mla(h: int, quant: str, dtype: torch.dtype, batch: int, ctx: int, bs: int = 64,
         tile: plan.Tile | None = None) -> Callable[[], object]:
    gen = torch.Generator().manual_seed(0)
    c, cs = random_cache((8, bs), 576, quant, gen, dtype=dtype)
    q = torch.randn(batch, h, 576).bfloat16()
    table = torch.zeros(batch, ctx // bs, dtype=torch.int32)
    lens = torch.full((batch,), ctx, dtype=torch.int32)
    return lambda: kernels.paged_decode_mla(q, c, 512, table, lens, 576**-0.5, quant=quant, latent_scales=cs,
                                            quant_group=8, tile=tile)


def _write(heads: int, width: int, tokens: int) -> Callable[[], object]:
    cache = torch.empty(64, 16, heads, width, dtype=torch.bfloat16)
    src = torch.randn(tokens, heads, width).bfloat16()
    return lambda: kernels.reshape_and_cache(src, torch.zeros(tokens, dtype=torch.int64), cache)


CASES: list[tuple[str, Callable[[], object]]] = [
    ("llama8b bf16 b32 8k", _gqa(32, 8, 128, "none", torch.bfloat16, 32, 8192)),
    ("llama8b bf16 b1 32k (split)", _gqa(32, 8, 128, "none", torch.bfloat16, 1, 32768)),
    ("llama8b fp8 b32 8k", _gqa(32, 8, 128, "none", torch.float8_e4m3fn, 32, 8192)),
    ("falcon mqa bf16 b8 8k", _gqa(71, 1, 64, "none", torch.bfloat16, 8, 8192)),
    ("gpt-oss 64/8 d64 bf16", _gqa(64, 8, 64, "none", torch.bfloat16, 8, 8192)),
    ("llama8b int8 group", _gqa(32, 8, 128, "group", torch.int8, 8, 8192)),
    ("llama8b int4 group", _gqa(32, 8, 128, "group", torch.uint8, 8, 8192)),
    ("llama8b nvfp4", _gqa(32, 8, 128, "nvfp4", torch.uint8, 8, 8192)),
    ("llama8b fp8 per-token-head", _gqa(32, 8, 128, "per_token_head", torch.uint8, 8, 8192)),
    ("dsv3 mla bf16 h16 b32", _mla(16, "none", torch.bfloat16, 32, 8192)),
    ("dsv3 mla bf16 h128 b32", _mla(128, "none", torch.bfloat16, 32, 8192)),
    ("dsv3 mla fp8 h128 b32", _mla(128, "none", torch.float8_e4m3fn, 32, 8192)),
    ("write llama8b", _write(8, 128, 4096)),
    ("write falcon", _write(1, 64, 4096)),
]

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=90)
    for row in report(parser.parse_args().arch, CASES):
        print(row)
