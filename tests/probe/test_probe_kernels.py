"""The Triton kernels in interpreter mode against the torch reference, on shuffled block tables.

TRITON_INTERPRET must be set before triton is imported, so it is set at the top of this module.
Shapes are tiny: the interpreter runs every program in Python.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kvplan.probe import kernels, reference  # noqa: E402
from kvplan.probe.check import BlockPool, Outcome, check_decode, check_write, make_batch, verdict  # noqa: E402

BS = 16


def _table(num_blocks: int, seq_lens: list[int], seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Shuffled, non-contiguous blocks per sequence -> (block_table, seq_lens, slot_mapping)."""
    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(num_blocks, generator=gen).tolist()
    width = max(-(-n // BS) for n in seq_lens)
    tables, slots = [], []
    for n in seq_lens:
        count = -(-n // BS)
        own, perm = perm[:count], perm[count:]
        tables.append(own + [0] * (width - count))
        slots += [own[t // BS] * BS + t % BS for t in range(n)]
    return (torch.tensor(tables, dtype=torch.int32), torch.tensor(seq_lens, dtype=torch.int32),
            torch.tensor(slots, dtype=torch.int64))


def test_shuffled_tables_are_not_contiguous():
    table, _, _ = _table(32, [40, 20])
    first = table[0].tolist()
    assert first != sorted(first) or first[1] != first[0] + 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.uint8])
def test_reshape_and_cache_matches_reference(dtype):
    _, _, slots = _table(12, [37, 5, 16])
    slots = torch.cat([slots, torch.tensor([-1])])  # a padding token: never written
    shape = (len(slots), 2, 24)
    src = torch.randn(shape).to(dtype) if dtype.is_floating_point else torch.randint(0, 255, shape, dtype=dtype)
    got = torch.zeros(12, BS, 2, 24, dtype=dtype)
    want = torch.zeros_like(got)
    kernels.reshape_and_cache(src, slots, got)
    reference.reshape_and_cache(src, slots, want)
    assert torch.equal(got, want)
    assert got.count_nonzero() > 0


def test_reshape_and_cache_into_a_strided_kv_view():
    kv = torch.zeros(2, 6, BS, 3, 8)
    _, _, slots = _table(6, [20])
    src = torch.randn(20, 3, 8)
    kernels.reshape_and_cache(src, slots, kv[1])
    assert kv[0].count_nonzero() == 0  # K untouched
    assert torch.equal(kv[1][slots // BS, slots % BS], src)


@pytest.mark.parametrize(("num_heads", "num_kv_heads", "dk", "dv"), [
    pytest.param(8, 2, 32, 32, id="gqa"),
    pytest.param(4, 1, 32, 32, id="mqa"),
    pytest.param(3, 3, 16, 16, id="mha"),
    pytest.param(4, 2, 48, 32, id="k-v-widths-differ"),
    pytest.param(70, 1, 16, 16, id="mqa-two-head-tiles"),
])
def test_paged_decode_matches_sdpa(num_heads, num_kv_heads, dk, dv):
    gen = torch.Generator().manual_seed(1)
    table, lens, _ = _table(10, [37, 5, 16], seed=2)
    k = torch.randn(10, BS, num_kv_heads, dk, generator=gen)
    v = torch.randn(10, BS, num_kv_heads, dv, generator=gen)
    q = torch.randn(3, num_heads, dk, generator=gen)
    got = kernels.paged_decode(q, k, v, table, lens, dk**-0.5)
    want = reference.paged_decode(q, k, v, table, lens, dk**-0.5)
    assert got.shape == (3, num_heads, dv)
    torch.testing.assert_close(got, want, atol=2e-3, rtol=2e-3)


def test_reference_decode_agrees_with_dense_attention():
    """The reference itself, against attention over the sequence's K/V written contiguously by hand."""
    gen = torch.Generator().manual_seed(3)
    table, lens, slots = _table(8, [21], seed=4)
    dense_k, dense_v = torch.randn(21, 1, 8, generator=gen), torch.randn(21, 1, 8, generator=gen)
    k, v = torch.zeros(8, BS, 1, 8), torch.zeros(8, BS, 1, 8)
    k[slots // BS, slots % BS], v[slots // BS, slots % BS] = dense_k, dense_v
    q = torch.randn(1, 2, 8, generator=gen)
    scores = torch.einsum("hd,td->ht", q[0], dense_k[:, 0]) * 0.5
    want = torch.softmax(scores, dim=-1) @ dense_v[:, 0]
    torch.testing.assert_close(reference.paged_decode(q, k, v, table, lens, 0.5)[0], want)


def test_mla_latent_decode_reads_v_from_the_same_pages():
    gen = torch.Generator().manual_seed(5)
    table, lens, _ = _table(6, [30, 3], seed=6)
    latent = torch.randn(6, BS, 48, generator=gen)  # kv_lora_rank 32 + rope 16
    q = torch.randn(2, 4, 48, generator=gen)
    got = kernels.paged_decode_mla(q, latent, 32, table, lens, 0.2)
    want = reference.paged_decode_mla(q, latent, 32, table, lens, 0.2)
    assert got.shape == (2, 4, 32)
    torch.testing.assert_close(got, want, atol=2e-3, rtol=2e-3)


def test_fp8_cache_decodes_through_a_float8_view():
    gen = torch.Generator().manual_seed(7)
    table, lens, _ = _table(5, [20], seed=8)
    pages = torch.randn(2, 5, BS, 1, 16, generator=gen).to(torch.float8_e4m3fn).view(torch.uint8)
    k, v = pages[0].view(torch.float8_e4m3fn), pages[1].view(torch.float8_e4m3fn)
    q = torch.randn(1, 2, 16, generator=gen)
    torch.testing.assert_close(kernels.paged_decode(q, k, v, table, lens, 0.25),
                               reference.paged_decode(q, k, v, table, lens, 0.25), atol=2e-3, rtol=2e-3)


def test_the_checks_catch_a_wrong_address():
    """check_decode fails when the kernel reads other blocks than the reference (a swapped table)."""
    gen = torch.Generator().manual_seed(9)
    pool = BlockPool(12, gen)
    batch = make_batch(pool, BS, torch.device("cpu"))
    k, v = torch.randn(12, BS, 2, 16, generator=gen), torch.randn(12, BS, 2, 16, generator=gen)
    assert check_decode(kernels, k, v, 4, batch, gen)

    class Misaddressed:
        @staticmethod
        def paged_decode(q, k, v, table, lens, scale):
            return kernels.paged_decode(q, k, v, table.flip(0), lens.flip(0), scale).flip(0)

    assert not check_decode(Misaddressed, k, v, 4, batch, gen)

    class DropsWrites:
        @staticmethod
        def reshape_and_cache(src, slots, cache):
            kernels.reshape_and_cache(src[1:], slots[1:], cache)

    assert check_write(kernels, k, batch, None, gen)
    assert not check_write(DropsWrites, k, batch, None, gen)


def test_batches_use_distinct_shuffled_blocks_from_one_pool():
    gen = torch.Generator().manual_seed(10)
    pool = BlockPool(16, gen)
    first, second = make_batch(pool, BS, torch.device("cpu")), make_batch(pool, BS, torch.device("cpu"))
    used = [b for batch in (first, second) for row, n in zip(batch.block_table.tolist(), batch.seq_lens.tolist(), strict=True)
            for b in row[: -(-n // BS)]]
    assert len(used) == len(set(used))  # no block handed out twice while the pool lasts
    assert first.seq_lens.tolist() == [35, 5, 16]  # 2 × 16 + 3 tokens over 3 blocks, a short one, a full block


def test_verdict():
    assert verdict([Outcome("pass", "a"), Outcome("skipped", "b")], True) == "pass"
    assert verdict([Outcome("pass", "a"), Outcome("fail", "b")], True) == "fail"
    assert verdict([Outcome("pass", "a")], False) == "skipped"
    assert verdict([Outcome("skipped", "a")], True) == "skipped"


def test_without_triton_the_reference_runs_and_the_check_is_skipped(monkeypatch):
    import sys

    import kvplan.probe
    from kvplan.probe import check

    monkeypatch.setitem(sys.modules, "triton", None)  # `import triton` now raises ImportError
    monkeypatch.delitem(sys.modules, "kvplan.probe.kernels")
    monkeypatch.delattr(kvplan.probe, "kernels")
    ops, has_triton = check.load_ops(torch.device("cpu"))
    assert ops is reference and not has_triton


def test_bandwidth_counts_bytes_moved(monkeypatch):
    """GB/s = bytes / seconds / 1e9, with the timer replaced by one call that 'takes' 1 ms."""
    from kvplan.probe import bench

    def one_call(fn, device, iters=20, warmup=3):
        fn()
        return 1e-3

    monkeypatch.setattr(bench, "time_s", one_call)
    cpu = torch.device("cpu")
    cache = torch.zeros(8, BS, 2, 32, dtype=torch.bfloat16)
    # write: all 8 × 16 = 128 slots, rows of 2 × 32 × 2 B read and written: 2 × 128 × 128 B = 32,768 B in 1 ms
    assert bench.write_gbps(kernels, cache, cpu) == pytest.approx(32_768 / 1e-3 / 1e9)
    assert cache.count_nonzero() > 0  # the kernel really ran
    # decode: batch 4 over 8 blocks -> 8 // 4 = 2 shuffled blocks per sequence, each full (32 tokens)
    gbps = bench.decode_gbps(kernels, cache, cache, 4, cpu, batch=4)
    # 4 sequences × 2 blocks × 16 tokens × 2 heads × (32 + 32) × 2 B = 32,768 B in 1 ms
    assert gbps == pytest.approx(32_768 / 1e-3 / 1e9)
    assert bench.peak_gbps(cpu) is None
