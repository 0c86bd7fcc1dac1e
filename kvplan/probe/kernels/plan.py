"""Launch plans for the decode kernels: tile sizes from the device's limits, split-KV from its SM count.

No triton here: a plan is plain numbers, so it is unit-tested without a GPU. The kernels' wrappers
try the candidates in order and drop one that the device refuses (``OutOfResources``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

MAX_SPLITS = 128  # the combine kernel holds one score per split in a tile


@dataclass(frozen=True, slots=True)
class Device:
    sms: int  # streaming multiprocessors (programs that run at once, at one per SM)
    smem_bytes: int  # shared memory one program may take (the opt-in limit)


CPU = Device(sms=1, smem_bytes=1 << 30)  # the interpreter: one program at a time, no shared-memory limit


def device_limits(device: torch.device) -> Device:
    """SM count and per-block shared memory of a CUDA device (CPU: the interpreter's)."""
    if device.type != "cuda":
        return CPU
    props = torch.cuda.get_device_properties(device)
    smem = getattr(props, "shared_memory_per_block_optin", 0) or 48 * 1024
    return Device(sms=int(props.multi_processor_count), smem_bytes=int(smem))


@dataclass(frozen=True, slots=True)
class Tile:
    rows: int  # query heads per program (>= 16: tl.dot's smallest M)
    tokens: int  # tokens per loop iteration (may span several blocks, or part of one)
    warps: int
    stages: int


@dataclass(frozen=True, slots=True)
class Splits:
    count: int
    tokens: int  # tokens per split, a multiple of the tile's tokens


def pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def plan_splits(programs: int, max_tokens: int, tile_tokens: int, device: Device, *,
                forced: int | None = None) -> Splits:
    """Split each sequence's tokens (flash-decoding) so the grid fills the GPU: at least 2 programs per SM
    with splits down to 256 tokens, and up to 8 per SM (more loads in flight) with splits of >= 1024
    tokens; each split writes a partial output that the combine reads back, so shorter splits cost.
    `forced` fixes the count (tests, tuning). Measured on an H100: benchmarks/results/h100-run1..3."""
    max_tokens, programs = max(max_tokens, 1), max(programs, 1)
    if forced is not None:
        count = forced
    else:
        fill = min(-(-2 * device.sms // programs), max_tokens // max(256, tile_tokens))
        more = min(-(-8 * device.sms // programs), max_tokens // max(1024, tile_tokens))
        count = max(fill, more)
    count = max(1, min(count, MAX_SPLITS))
    per_split = -(-max_tokens // count)
    per_split = -(-per_split // tile_tokens) * tile_tokens
    return Splits(-(-max_tokens // per_split), per_split)


def buffers(stages: int) -> int:
    """K/V tiles in flight per program for triton's num_stages. The tiles' addresses come from the block
    table, loaded in the same loop, and triton 3.6's pipeliner splits the stages between the two load
    levels: ceil((stages - 2) / 2) tile buffers (3 or 4 stages: one tile; 5: two; 7: three), at least one."""
    return max(1, -(-(stages - 2) // 2))


def deepest(stage_bytes: int, fixed_bytes: int, device: Device, depth: int) -> int | None:
    """num_stages for `depth` tile buffers, or fewer where shared memory (fixed_bytes: what the program
    holds besides the buffers) takes fewer; None when not even one buffer fits."""
    for n in range(depth, 0, -1):
        if n * stage_bytes + fixed_bytes <= device.smem_bytes:
            return 2 * n + 1
    return None


def gqa_tiles(group: int, dk: int, dv: int, cache_bytes: int, dot_bytes: int, device: Device, *,
              dequant: bool = False, depth: int | None = None) -> list[Tile]:
    """Candidates for a GQA/MQA program (all query heads of one KV head), preferred first: the largest
    token tile whose stage (K + V as stored) is at most 64 KB (tiles that convert fp8/int data also hold
    the converted copy). 8 warps for wide tiles and for element-wise dequantization (group scales, packed
    4-bit), which spills registers with 4. Tiles in flight (`depth`), as measured on an H100
    (benchmarks/results/h100-run4): two for fp8 caches (+8-14 % on Llama-8B) and for MQA's 128-row
    tiles (+12-24 % on Falcon-7B); one for 16-bit GQA, whose 64 KB tile already fills the SM (two: -3-21 %)."""
    rows = min(max(16, pow2(group)), 128)
    width = pow2(dk) + pow2(dv)
    depth = depth or (2 if cache_bytes == 1 or rows >= 64 else 1)
    out = []
    for tokens in (64, 32, 16) if rows >= 64 else (128, 64, 32, 16):
        stage = tokens * width * cache_bytes
        if stage > 64 * 1024 and tokens > 16:
            continue
        converted = tokens * width * dot_bytes if cache_bytes != dot_bytes else 0
        stages = deepest(stage, converted + rows * (pow2(dk) + tokens) * dot_bytes, device, depth)
        if stages:
            wide = dequant or rows >= 64 or (cache_bytes >= 2 and tokens * width * dot_bytes >= 64 * 1024)
            out.append(Tile(rows, tokens, 8 if wide else 4, stages))
    return out or [Tile(rows, 16, 4, 1)]


def short_splits(tiles: list[Tile], split_tokens: int) -> list[Tile]:
    """GQA tiles with one buffer when each split holds at most two of them: there a second buffer lost
    6 % (Llama-70B TP8 fp8 at 8 × 8k and 32 × 2k: 256-token splits of two 128-token tiles, h100-run4)."""
    return [replace(t, stages=min(t.stages, 3)) if split_tokens <= 2 * t.tokens else t for t in tiles]


def mla_tiles(num_heads: int, rank: int, rope: int, cache_bytes: int, dot_bytes: int, device: Device, *,
              depth: int | None = None) -> list[Tile]:
    """Candidates for MLA: heads per program × tokens per iteration that fit in shared memory, 8 warps
    (a rank-512 accumulator is 64 fp32 registers per thread per 16 heads; 4 warps spill at 32+ heads).
    Two latent tiles in flight for 16-bit latents (+8-18 % at 16 heads, +14 % at 128 on an H100) and for
    64-head tiles (fp8: +7 %); one for fp8 latents at 16 heads (two: -2-4 %): benchmarks/results/h100-run4."""
    width = pow2(rank) + pow2(rope)
    out = []
    for rows, tokens in ((64, 32), (64, 16), (32, 32), (32, 16), (16, 64), (16, 32), (16, 16)):
        if rows > max(16, pow2(num_heads)):
            continue
        converted = tokens * width * dot_bytes if cache_bytes != dot_bytes else 0
        stages = deepest(tokens * width * cache_bytes, converted + rows * (width + tokens) * dot_bytes, device,
                         depth or (2 if cache_bytes >= 2 or rows >= 64 else 1))
        if stages:  # one buffer: num_stages 2, the setting runs 1-3 measured
            out.append(Tile(rows, tokens, 8, 2 if stages == 3 else stages))
    return out or [Tile(16, 16, 8, 1)]
