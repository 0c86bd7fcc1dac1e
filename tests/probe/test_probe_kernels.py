"""The write kernel and the probe's check helpers against the torch reference, on shuffled block tables.

On a CUDA machine the kernels run compiled on cuda:0; without one, in the interpreter (tests/conftest.py
sets TRITON_INTERPRET=1 before anything imports triton). Decode kernels: tests/test_probe_decode.py.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kvplan.probe import kernels, reference  # noqa: E402
from kvplan.probe.check import BlockPool, Outcome, check_decode, check_write, make_batch, verdict  # noqa: E402
from kvplan.probe.pages import Pages  # noqa: E402

BS = 16


def shuffled_table(num_blocks: int, seq_lens: list[int], block_size: int = BS, seed: int = 0,
                   device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Shuffled, non-contiguous blocks per sequence -> (block_table, seq_lens, slot_mapping)."""
    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(num_blocks, generator=gen).tolist()
    width = max(-(-n // block_size) for n in seq_lens)
    tables, slots = [], []
    for n in seq_lens:
        count = -(-n // block_size)
        own, perm = perm[:count], perm[count:]
        tables.append(own + [0] * (width - count))
        slots += [own[t // block_size] * block_size + t % block_size for t in range(n)]
    return (torch.tensor(tables, dtype=torch.int32, device=device),
            torch.tensor(seq_lens, dtype=torch.int32, device=device),
            torch.tensor(slots, dtype=torch.int64, device=device))


def test_shuffled_tables_are_not_contiguous():
    table, _, _ = shuffled_table(32, [40, 20])
    first = table[0].tolist()
    assert first != sorted(first) or first[1] != first[0] + 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.uint8])
def test_reshape_and_cache_matches_reference(dtype, kernel_device):
    _, _, slots = shuffled_table(12, [37, 5, 16], device=kernel_device)
    slots = torch.cat([slots, torch.tensor([-1], device=kernel_device)])  # a padding token: never written
    shape = (len(slots), 2, 24)
    src = torch.randn(shape).to(dtype) if dtype.is_floating_point else torch.randint(1, 255, shape, dtype=dtype)
    src = src.to(kernel_device)
    got = torch.zeros(12, BS, 2, 24, dtype=dtype, device=kernel_device)
    want = torch.zeros_like(got)
    kernels.reshape_and_cache(src, slots, got)
    reference.reshape_and_cache(src, slots, want)
    assert torch.equal(got, want)
    assert got.count_nonzero() == 58 * 2 * 24 or dtype.is_floating_point  # every written value lands


@pytest.mark.parametrize(("heads", "width", "tokens"), [(1, 64, 300), (8, 128, 40), (1, 576, 33), (3, 20, 7)])
def test_reshape_and_cache_many_tokens_per_program(heads, width, tokens, kernel_device):
    """Rows of every size: several tokens per program (300 one-head rows), flat rows, odd widths."""
    num_blocks = -(-tokens // BS) + 3
    _, _, slots = shuffled_table(num_blocks, [tokens], device=kernel_device)
    src = torch.randn(tokens, heads, width, device=kernel_device).to(torch.bfloat16)
    got = torch.zeros(num_blocks, BS, heads, width, dtype=torch.bfloat16, device=kernel_device)
    want = torch.zeros_like(got)
    kernels.reshape_and_cache(src, slots, got)
    reference.reshape_and_cache(src, slots, want)
    assert torch.equal(got, want)


def test_reshape_and_cache_into_a_strided_kv_view(kernel_device):
    kv = torch.zeros(2, 6, BS, 3, 8, device=kernel_device)
    _, _, slots = shuffled_table(6, [20], device=kernel_device)
    src = torch.randn(20, 3, 8, device=kernel_device)
    kernels.reshape_and_cache(src, slots, kv[1])
    assert kv[0].count_nonzero() == 0  # K untouched
    assert torch.equal(kv[1][slots // BS, slots % BS], src)


def test_reshape_and_cache_into_a_head_major_layout(kernel_device):
    """ppl2-like pages: heads outermost, so a token's heads are not contiguous (no flat rows)."""
    store = torch.zeros(3, 6 * BS, 8, device=kernel_device)  # (H, slots, W)
    cache = store.transpose(0, 1).unflatten(0, (6, BS))  # (NB, BS, H, W) view, head stride 6·16·8
    _, _, slots = shuffled_table(6, [30], device=kernel_device)
    src = torch.randn(30, 3, 8, device=kernel_device)
    kernels.reshape_and_cache(src, slots, cache)
    assert torch.equal(cache[slots // BS, slots % BS], src)


def test_reference_decode_agrees_with_dense_attention():
    """The reference itself, against attention over the sequence's K/V written contiguously by hand."""
    gen = torch.Generator().manual_seed(3)
    table, lens, slots = shuffled_table(8, [21], seed=4)
    dense_k, dense_v = torch.randn(21, 1, 8, generator=gen), torch.randn(21, 1, 8, generator=gen)
    k, v = torch.zeros(8, BS, 1, 8), torch.zeros(8, BS, 1, 8)
    k[slots // BS, slots % BS], v[slots // BS, slots % BS] = dense_k, dense_v
    q = torch.randn(1, 2, 8, generator=gen)
    scores = torch.einsum("hd,td->ht", q[0], dense_k[:, 0]) * 0.5
    want = torch.softmax(scores, dim=-1) @ dense_v[:, 0]
    torch.testing.assert_close(reference.paged_decode(q, k, v, table, lens, 0.5)[0], want)


def test_the_checks_catch_a_wrong_address(kernel_device):
    """check_decode fails when the kernel reads other blocks than the reference (a swapped table)."""
    gen = torch.Generator().manual_seed(9)
    pool = BlockPool(12, gen)
    batch = make_batch(pool, BS, kernel_device)
    k = torch.randn(12, BS, 2, 16, generator=gen).to(kernel_device)
    v = torch.randn(12, BS, 2, 16, generator=gen).to(kernel_device)
    assert check_decode(kernels, Pages(k, v), 4, batch, gen)

    class Misaddressed:
        @staticmethod
        def paged_decode(q, k, v, table, lens, scale, **kw):
            return kernels.paged_decode(q, k, v, table.flip(0), lens.flip(0), scale, **kw).flip(0)

    assert not check_decode(Misaddressed, Pages(k, v), 4, batch, gen)

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
    for name in [m for m in sys.modules if m.startswith("kvplan.probe.kernels")]:  # the package and its modules
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(kvplan.probe, "kernels")
    ops, has_triton = check.load_ops(torch.device("cpu"))
    assert ops is reference and not has_triton


def test_bandwidth_counts_bytes_moved(monkeypatch, kernel_device):
    """GB/s = bytes / seconds / 1e9, with the timer replaced by one call that 'takes' 1 ms."""
    from kvplan.probe import bench

    def one_call(fn, device, iters=20, warmup=3):
        fn()
        return 1e-3

    monkeypatch.setattr(bench, "time_s", one_call)
    cache = torch.zeros(8, BS, 2, 32, dtype=torch.bfloat16, device=kernel_device)
    # write: all 8 × 16 = 128 slots, rows of 2 × 32 × 2 B read and written: 2 × 128 × 128 B = 32,768 B in 1 ms
    assert bench.write_gbps(kernels, cache, kernel_device) == pytest.approx(32_768 / 1e-3 / 1e9)
    assert cache.count_nonzero() > 0  # the kernel really ran
    # decode: batch 4 over 8 blocks -> 8 // 4 = 2 shuffled blocks per sequence, each full (32 tokens)
    gbps = bench.decode_gbps(kernels, bench.Pages(cache, cache), 4, kernel_device, batch=4)
    # 4 sequences × 2 blocks × 16 tokens × 2 heads × (32 + 32) × 2 B = 32,768 B in 1 ms
    assert gbps == pytest.approx(32_768 / 1e-3 / 1e9)
    assert bench.peak_gbps(torch.device("cpu")) is None
