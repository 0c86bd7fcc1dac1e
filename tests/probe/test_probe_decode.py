"""Decode kernels against the torch reference: every storage format, MLA at 128 heads, split-KV.

Shuffled block tables, uneven lengths, block sizes 1 to 256. Compiled on cuda:0 when visible, else in
the Triton interpreter (tests/conftest.py). Errors are ‖kernel − reference‖ / ‖reference‖ with the
probe's own tolerances; a wrong block or scale reads as an error of order 1.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from test_probe_kernels import shuffled_table  # noqa: E402

from kvplan.probe import kernels, reference  # noqa: E402
from kvplan.probe.check import TOLERANCE  # noqa: E402
from kvplan.probe.data import random_cache, random_ds_mla  # noqa: E402
from kvplan.probe.kernels.plan import Tile  # noqa: E402

LENS = [37, 5, 16, 100]  # spans blocks, shorter than a block, exactly one block, many tiles


def rel_error(got: torch.Tensor, want: torch.Tensor) -> float:
    assert got.shape == want.shape and got.isfinite().all()
    return float((got.float() - want.float()).norm() / want.float().norm())


def _pages(lens: list[int], block_size: int, extra_blocks: int, device: torch.device, seed: int):
    num_blocks = sum(-(-n // block_size) for n in lens) + extra_blocks
    table, seq_lens, _ = shuffled_table(num_blocks, lens, block_size, seed=seed, device=device)
    return num_blocks, table, seq_lens


FORMATS = [  # (quant, data dtype, quant_group)
    ("none", torch.bfloat16, 0), ("none", torch.float16, 0), ("none", torch.float8_e4m3fn, 0),
    ("none", torch.float8_e5m2, 0), ("group", torch.int8, 8), ("group", torch.uint8, 8), ("group", torch.uint8, 32),
    ("nvfp4", torch.uint8, 0), ("per_token_head", torch.int8, 0), ("per_token_head", torch.uint8, 0),
]


@pytest.mark.parametrize(("quant", "dtype", "group"), FORMATS, ids=lambda x: str(x).replace("torch.", ""))
def test_gqa_decode_every_format(quant, dtype, group, kernel_device):
    gen = torch.Generator().manual_seed(11)
    num_blocks, table, lens = _pages(LENS, 16, 3, kernel_device, seed=12)
    k, ks = random_cache((num_blocks, 16, 2), 64, quant, gen, dtype=dtype, quant_group=group or 8, device=kernel_device)
    v, vs = random_cache((num_blocks, 16, 2), 64, quant, gen, dtype=dtype, quant_group=group or 8, device=kernel_device)
    q = torch.randn(4, 8, 64, generator=gen).to(torch.float16 if dtype == torch.float16 else torch.bfloat16)
    kw = dict(quant=quant, k_scales=ks, v_scales=vs, quant_group=group, k_scale=0.7, v_scale=1.3)
    args = (q.to(kernel_device), k, v, table, lens, 0.125)
    want = reference.paged_decode(*(a.cpu() if torch.is_tensor(a) else a for a in args),
                                  **{n: (x.cpu() if torch.is_tensor(x) else x) for n, x in kw.items()})
    tol = TOLERANCE["16-bit"] if dtype.itemsize == 2 else TOLERANCE["quantized"]
    assert rel_error(kernels.paged_decode(*args, **kw).cpu(), want) <= tol
    assert rel_error(kernels.paged_decode(*args, **kw, num_splits=3).cpu(), want) <= tol  # split-KV + combine


@pytest.mark.parametrize(("num_heads", "num_kv_heads", "dk", "dv"), [
    pytest.param(8, 2, 32, 32, id="gqa"), pytest.param(4, 1, 32, 32, id="mqa"), pytest.param(3, 3, 16, 16, id="mha"),
    pytest.param(4, 2, 48, 32, id="k-v-widths-differ"), pytest.param(71, 1, 16, 16, id="falcon-71-heads"),
    pytest.param(160, 1, 16, 16, id="two-head-tiles"),
])
def test_fp32_decode_is_exact_for_any_head_layout(num_heads, num_kv_heads, dk, dv, kernel_device):
    gen = torch.Generator().manual_seed(1)
    num_blocks, table, lens = _pages([37, 5, 16], 16, 2, kernel_device, seed=2)
    k = torch.randn(num_blocks, 16, num_kv_heads, dk, generator=gen).to(kernel_device)
    v = torch.randn(num_blocks, 16, num_kv_heads, dv, generator=gen).to(kernel_device)
    q = torch.randn(3, num_heads, dk, generator=gen).to(kernel_device)
    got = kernels.paged_decode(q, k, v, table, lens, dk**-0.5)
    want = reference.paged_decode(q.cpu(), k.cpu(), v.cpu(), table.cpu(), lens.cpu(), dk**-0.5)
    assert got.shape == (3, num_heads, dv)
    assert rel_error(got.cpu(), want) <= TOLERANCE["fp32"]


@pytest.mark.parametrize("block_size", [1, 16, 64, 256])
@pytest.mark.parametrize("splits", [1, 4])
def test_block_sizes_and_uneven_splits(block_size, splits, kernel_device):
    """Tiles of 16+ tokens span many 1-token blocks or part of a 256-token one; with 4 splits of the
    longest sequence, the short ones leave whole splits empty (lse = -inf, weight 0 in the combine)."""
    gen = torch.Generator().manual_seed(block_size)
    lens = [150, 1, 17, 64]
    num_blocks, table, seq_lens = _pages(lens, block_size, 2, kernel_device, seed=block_size + 1)
    k = torch.randn(num_blocks, block_size, 2, 32, generator=gen).bfloat16().to(kernel_device)
    v = torch.randn(num_blocks, block_size, 2, 32, generator=gen).bfloat16().to(kernel_device)
    q = torch.randn(4, 8, 32, generator=gen).bfloat16().to(kernel_device)
    got = kernels.paged_decode(q, k, v, table, seq_lens, 0.2, num_splits=splits, tile=Tile(16, 32, 4, 2))
    want = reference.paged_decode(q.cpu(), k.cpu(), v.cpu(), table.cpu(), seq_lens.cpu(), 0.2)
    assert rel_error(got.cpu(), want) <= TOLERANCE["16-bit"]


def _mla_case(quant, dtype, num_heads, block_size, gen, device):
    num_blocks, table, lens = _pages([70, 9, 130], block_size, 1, device, seed=num_heads + block_size)
    if quant == "ds_mla":
        latent, scales = random_ds_mla((num_blocks, block_size), 512, 64, gen, device), None
    else:
        latent, scales = random_cache((num_blocks, block_size), 576, quant, gen, dtype=dtype, device=device)
    q = torch.randn(3, num_heads, 576, generator=gen).bfloat16().to(device)
    return q, latent, scales, table, lens


@pytest.mark.parametrize(("quant", "dtype", "num_heads", "block_size"), [
    ("none", torch.bfloat16, 128, 64), ("ds_mla", torch.uint8, 128, 64), ("none", torch.float8_e4m3fn, 16, 16),
    ("group", torch.int8, 16, 16), ("group", torch.uint8, 16, 16), ("nvfp4", torch.uint8, 16, 1),
    ("none", torch.bfloat16, 1, 256), ("none", torch.bfloat16, 20, 1),
], ids=lambda x: str(x).replace("torch.", ""))
def test_mla_decode(quant, dtype, num_heads, block_size, kernel_device):
    """DeepSeek-V3's latent (512 + 64) at up to 128 heads over 64-token blocks: the shape that ran out of
    shared memory before head tiling; every latent format, 1..256-token blocks, split or not."""
    gen = torch.Generator().manual_seed(num_heads)
    q, latent, scales, table, lens = _mla_case(quant, dtype, num_heads, block_size, gen, kernel_device)
    want = reference.paged_decode_mla(q.cpu(), latent.cpu(), 512, table.cpu(), lens.cpu(), 576**-0.5, quant=quant,
                                      latent_scales=None if scales is None else scales.cpu(), quant_group=8)
    tol = TOLERANCE["16-bit"] if quant == "none" and dtype == torch.bfloat16 else TOLERANCE["quantized"]
    for splits in (None, 3):
        got = kernels.paged_decode_mla(q, latent, 512, table, lens, 576**-0.5, quant=quant, latent_scales=scales,
                                       quant_group=8, num_splits=splits)
        assert got.shape == (3, num_heads, 512)
        assert rel_error(got.cpu(), want) <= tol


def test_a_wrong_scale_is_caught(kernel_device):
    """Scales matter: the same int4 data with the scales of other tokens decodes far from the reference."""
    gen = torch.Generator().manual_seed(5)
    num_blocks, table, lens = _pages([40, 20], 16, 0, kernel_device, seed=6)
    k, ks = random_cache((num_blocks, 16, 1), 32, "group", gen, dtype=torch.uint8, device=kernel_device)
    v, vs = random_cache((num_blocks, 16, 1), 32, "group", gen, dtype=torch.uint8, device=kernel_device)
    q = torch.randn(2, 4, 32, generator=gen).bfloat16().to(kernel_device)
    kw = dict(quant="group", quant_group=8)
    want = reference.paged_decode(q.cpu(), k.cpu(), v.cpu(), table.cpu(), lens.cpu(), 0.3, k_scales=ks.cpu(),
                                  v_scales=vs.cpu(), **kw)
    shuffled = vs.flip(1)
    got = kernels.paged_decode(q, k, v, table, lens, 0.3, k_scales=ks, v_scales=shuffled, **kw)
    assert rel_error(got.cpu(), want) > 0.1


@pytest.mark.parametrize("stages", [5, 7])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn], ids=["bf16", "fp8"])
def test_deeper_buffering_decodes_the_same(dtype, stages, kernel_device):
    """Two and three K/V tiles in flight (num_stages 5 and 7: triton pipelines the block-table load and the
    tiles it addresses) for GQA and MLA, split or not. Compiled on a GPU these are other kernels than the
    one-buffer default (the interpreter ignores num_stages: there it checks the plan's tiles run at all)."""
    gen = torch.Generator().manual_seed(stages)
    num_blocks, table, lens = _pages([150, 5, 33, 100], 16, 2, kernel_device, seed=stages + 1)
    k, _ = random_cache((num_blocks, 16, 2), 64, "none", gen, dtype=dtype, device=kernel_device)
    v, _ = random_cache((num_blocks, 16, 2), 64, "none", gen, dtype=dtype, device=kernel_device)
    q = torch.randn(4, 8, 64, generator=gen).bfloat16().to(kernel_device)
    want = reference.paged_decode(q.cpu(), k.cpu(), v.cpu(), table.cpu(), lens.cpu(), 0.125)
    tol = TOLERANCE["16-bit"] if dtype == torch.bfloat16 else TOLERANCE["quantized"]
    for splits in (None, 2):
        got = kernels.paged_decode(q, k, v, table, lens, 0.125, num_splits=splits, tile=Tile(16, 32, 4, stages))
        assert rel_error(got.cpu(), want) <= tol
    q, latent, _, table, lens = _mla_case("none", dtype, 16, 16, gen, kernel_device)
    want = reference.paged_decode_mla(q.cpu(), latent.cpu(), 512, table.cpu(), lens.cpu(), 576**-0.5)
    for splits in (None, 2):
        got = kernels.paged_decode_mla(q, latent, 512, table, lens, 576**-0.5, num_splits=splits,
                                       tile=Tile(16, 32, 8, stages))
        assert rel_error(got.cpu(), want) <= tol
