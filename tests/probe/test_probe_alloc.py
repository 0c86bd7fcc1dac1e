"""The probe's allocations: engine layouts built from kvplan's specs, measured against its formulas.

Expected byte counts are derived by hand in the comments (never read back from the code); the
shape tests pin the layouts the engines use (vLLM per-layer [2, blocks, block_size, heads, dim],
MLA [blocks, block_size, 576], ppl.nn cache_layout 0-3).
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import kvplan  # noqa: E402
from kvplan.errors import InputError  # noqa: E402
from kvplan.formulas import resolve_kv_dtype  # noqa: E402
from kvplan.formulas.layers import Overrides  # noqa: E402
from kvplan.probe.allocate import CacheShape, allocate_group, kv_views  # noqa: E402
from kvplan.probe.capacity import fill_blocks  # noqa: E402
from kvplan.probe.compare import relative_error  # noqa: E402
from kvplan.probe.measure import allocate_measured, storage_bytes  # noqa: E402
from kvplan.probe.run import ProbeOptions, probe_model  # noqa: E402
from kvplan.specs import FullAttn, LinearState, MLAAttn  # noqa: E402

CPU = torch.device("cpu")
OPTS = ProbeOptions(num_blocks=8, num_seqs=3, check_kernels=False)


@pytest.mark.parametrize(("model", "kv_dtype", "expected_bytes"), [
    # Llama-3.1-8B (GQA): 32 layers × 8 blocks × 16 tokens × 8 heads × (128 + 128) × 2 B = 16,777,216
    pytest.param("meta-llama/Llama-3.1-8B", "auto", 32 * 8 * 16 * 8 * 256 * 2, id="gqa-llama31-8b-bf16"),
    # falcon-7b (MQA): 32 layers × 8 × 16 × 1 head × 128 × 2 B = 1,048,576
    pytest.param("tiiuae/falcon-7b", "auto", 32 * 8 * 16 * 1 * 128 * 2, id="mqa-falcon7b"),
    # DeepSeek-V2-Lite (MLA): 27 layers × 8 × 16 × (512 + 64) × 2 B, one latent (no ×2) = 3,981,312
    pytest.param("deepseek-ai/DeepSeek-V2-Lite", "auto", 27 * 8 * 16 * 576 * 2, id="mla-dsv2-lite"),
    # gpt-oss-20b (12 sliding + 12 full): 24 layers × 8 × 16 × 8 heads × (64 + 64) × 2 B = 6,291,456
    pytest.param("openai/gpt-oss-20b", "auto", 24 * 8 * 16 * 8 * 128 * 2, id="sliding-hybrid-gptoss20b"),
    # Qwen3-Next: 12 full layers × 8 × 16 × 2 heads × 512 × 2 B = 3,145,728, plus 36 linear layers × 3 seqs ×
    # (conv 3 × 8192 + ssm 32 × 128 × 128) × 2 B = 36 × 3 × 548,864 × 2 = 118,554,624
    pytest.param("Qwen/Qwen3-Next-80B-A3B-Thinking", "auto", 12 * 8 * 16 * 2 * 512 * 2 + 36 * 3 * 548_864 * 2,
                 id="linear-hybrid-qwen3next"),
    # fp8 stored as uint8: half of the bf16 Llama-3.1-8B figure
    pytest.param("meta-llama/Llama-3.1-8B", "fp8", 32 * 8 * 16 * 8 * 256, id="fp8-llama31-8b"),
    # int4 + one fp16 scale per 8 values: a 128-wide head = 64 B + 16 scales × 2 B = 96 B;
    # Qwen3-8B: 36 layers × 8 × 16 × 8 heads × 2 (K, V) × 96 B = 7,077,888
    pytest.param("Qwen/Qwen3-8B", "int4", 36 * 8 * 16 * 8 * 2 * 96, id="int4-scales-qwen3-8b"),
    # int8 + fp16 scale per 8: 128 + 32 = 160 B per head vector
    pytest.param("Qwen/Qwen3-8B", "int8", 36 * 8 * 16 * 8 * 2 * 160, id="int8-scales-qwen3-8b"),
    # fp8_per_token_head: 128 B per head vector + one fp32 scale per token, head, K and V
    pytest.param("Qwen/Qwen3-8B", "fp8_per_token_head", 36 * 8 * 16 * 8 * 2 * (128 + 4), id="fp8-pth-qwen3-8b"),
    # nvfp4: 64 B packed + 8 one-byte scales per 128 values
    pytest.param("Qwen/Qwen3-8B", "nvfp4", 36 * 8 * 16 * 8 * 2 * (64 + 8), id="nvfp4-qwen3-8b"),
    # fp8_ds_mla: 512 fp8 + 4 fp32 scales + 64 bf16 rope = 656 B per token per layer
    pytest.param("deepseek-ai/DeepSeek-V2-Lite", "fp8_ds_mla", 27 * 8 * 16 * 656, id="fp8-ds-mla"),
    # DeepSeek-V3.2 (sparse MLA + indexer): the indexer key is index_head_dim 128 fp8 + one fp32 scale =
    # 132 B per token beside the latent; bf16: 61 layers × 8 × 16 × (576 × 2 + 132) = 10,025,472
    pytest.param("deepseek-ai/DeepSeek-V3.2", "auto", 61 * 8 * 16 * (576 * 2 + 132), id="sparse-mla-v32-bf16"),
    # fp8 on sparse MLA is stored as fp8_ds_mla (656 B), not 576 B: 61 × 8 × 16 × (656 + 132) = 6,152,704
    pytest.param("deepseek-ai/DeepSeek-V3.2", "fp8", 61 * 8 * 16 * (656 + 132), id="sparse-mla-v32-fp8"),
    # whisper-small's decoder layer: self-attention paged (12 heads × (64 + 64) × 2 B per token) beside a
    # cross-attention cache of encoder tokens that holds no decoder token: 12 layers × 8 × 16 × 3,072 B
    pytest.param("openai/whisper-small", "auto", 12 * 8 * 16 * 12 * 128 * 2, id="self-cross-whisper-small"),
])
def test_measured_equals_hand_derived_prediction(model, kv_dtype, expected_bytes):
    result = probe_model(model, kv_dtype, OPTS, CPU)
    assert result.predicted_bytes == expected_bytes
    assert result.measured_bytes == expected_bytes
    assert result.error == 0.0 and result.passes(0.0)


def test_ppl_layouts_measure_the_same_bytes():
    # Llama-3.2-1B: 16 layers × 8 blocks × 16 × 8 heads × (64 + 64) × 2 B = 4,194,304 in every layout
    for layout in ("ppl0", "ppl1", "ppl2", "ppl3"):
        result = probe_model("meta-llama/Llama-3.2-1B", "auto", ProbeOptions(num_blocks=8, layout=layout,
                                                                              check_kernels=False), CPU)
        assert result.measured_bytes == result.predicted_bytes == 16 * 8 * 16 * 8 * 128 * 2


def _shape(spec, kv_dtype="bf16", layout="vllm", num_layers=2, **kw):
    dtype = resolve_kv_dtype(kv_dtype, "bf16")
    return CacheShape(spec=spec, num_layers=num_layers, num_blocks=5, block_size=16, num_seqs=3, kv_dtype=dtype,
                      state_dtype=resolve_kv_dtype("auto", "bf16"), layout=layout, **kw)


GQA = FullAttn(num_kv_heads=4, head_dim=64, v_head_dim=64)


def test_vllm_layout_shapes():
    layers = allocate_group(_shape(GQA), CPU)
    assert len(layers) == 2 and layers[0]["kv"].shape == (2, 5, 16, 4, 64)
    mla = allocate_group(_shape(MLAAttn(kv_lora_rank=512, qk_rope_head_dim=64)), CPU)
    assert mla[0]["latent"].shape == (5, 16, 576)


def test_k_and_v_are_separate_when_widths_differ():
    # DeepSeek-V2-Lite decompressed (--attention mha): K = 128 nope + 64 rope = 192 wide, V = 128
    layout = kvplan.build_layout(kvplan.load_model("deepseek-ai/DeepSeek-V2-Lite"),
                                 overrides=Overrides(attention="mha"))
    spec = layout.groups[0].spec_per_gpu
    layers = allocate_group(_shape(spec), CPU)
    assert layers[0]["k"].shape == (5, 16, 16, 192) and layers[0]["v"].shape == (5, 16, 16, 128)


def test_quantized_storage_and_scales():
    int4 = allocate_group(_shape(GQA, "int4"), CPU)[0]
    assert int4["kv"].dtype == torch.uint8 and int4["kv"].shape[-1] == 32  # two values per byte
    assert int4["kv_scale"].dtype == torch.float16 and int4["kv_scale"].shape[-1] == 8  # 64 / quant_group 8
    pth = allocate_group(_shape(GQA, "fp8_per_token_head"), CPU)[0]
    assert pth["kv_scale"].dtype == torch.float32 and pth["kv_scale"].shape == (2, 5, 16, 4, 1)
    assert allocate_group(_shape(GQA, "fp8"), CPU)[0]["kv"].dtype == torch.uint8


def test_linear_state_is_per_sequence():
    spec = LinearState(conv_kernel=4, conv_channels=32, num_state_heads=2, state_rows=8, state_cols=4)
    layer = allocate_group(_shape(spec, num_layers=3), CPU)
    assert len(layer) == 3
    assert layer[0]["conv"].shape == (3, 3, 32) and layer[0]["ssm"].shape == (3, 2, 8, 4)


@pytest.mark.parametrize("layout", ["ppl0", "ppl1", "ppl2", "ppl3"])
def test_ppl_views_address_each_layer_and_kv(layout):
    layers = allocate_group(_shape(GQA, layout=layout, num_layers=3), CPU)
    cache = layers[0]["cache"]
    cache.zero_()
    k, v = kv_views(layers[0], layout, 2, 16)
    assert k.shape == v.shape == (5, 16, 4, 64)
    k[3, 7, 1, 5] = 1.0
    v[3, 7, 1, 5] = 2.0
    # token slot 3 × 16 + 7 = 55, layer 2, head 1, dim 5; K at kv index 0, V at 1
    where = {"ppl0": lambda kv: (55, 2, kv, 1, 5), "ppl1": lambda kv: (2, 55, kv, 1, 5),
             "ppl2": lambda kv: (2, 1, 55, kv, 5), "ppl3": lambda kv: (kv, 2, 1, 55, 5)}[layout]
    assert cache[where(0)] == 1.0 and cache[where(1)] == 2.0 and cache.sum() == 3.0


def test_layouts_that_do_not_fit_are_refused():
    with pytest.raises(InputError, match="ppl1"):
        allocate_group(_shape(MLAAttn(kv_lora_rank=512, qk_rope_head_dim=64), layout="ppl1"), CPU)
    with pytest.raises(InputError, match="MLA"):
        allocate_group(_shape(MLAAttn(kv_lora_rank=512, qk_rope_head_dim=64), "fp8_per_token_head"), CPU)


def test_views_of_one_storage_count_once():
    base = torch.empty(10, dtype=torch.float32)
    assert storage_bytes([base, base[2:], base.view(2, 5)]) == 40


def test_a_wrong_allocation_is_caught(monkeypatch):
    """The comparison can fail: one extra block per tensor shows as a positive error."""
    import kvplan.probe.run as run

    def one_block_too_many(shape, device, alloc=None):
        from dataclasses import replace

        return allocate_measured(replace(shape, num_blocks=shape.num_blocks + 1), device, alloc)

    monkeypatch.setattr(run, "allocate_measured", one_block_too_many)
    result = probe_model("meta-llama/Llama-3.2-1B", "auto", OPTS, CPU)
    assert result.error == pytest.approx(1 / 8)  # 9 blocks measured for 8 predicted
    assert not result.passes(0.0) and result.passes(0.2)


def test_relative_error_edges():
    assert relative_error(0, 0) == 0.0 and relative_error(5, 0) == float("inf")
    assert relative_error(90, 100) == pytest.approx(-0.1)


def test_fill_blocks_stops_where_the_allocator_refuses():
    """A fake allocator with a 1 MiB limit: 1 MiB // (2 layers × one 16,384-B page) = 32 blocks."""
    live: dict[int, int] = {}
    limit = 1 << 20

    def limited(shape, dtype):
        nbytes = torch.Size(shape).numel() * torch.empty(0, dtype=dtype).element_size()
        if sum(live.values()) + nbytes > limit:
            raise torch.OutOfMemoryError("fake: out of memory")
        t = torch.empty(shape, dtype=dtype)
        import weakref

        key = id(t)
        live[key] = nbytes
        weakref.finalize(t, live.pop, key, None)
        return t

    # one page: 16 tokens × 4 heads × (64 + 64) × 2 B = 16,384 B per layer; 2 layers → 32,768 B a block
    assert fill_blocks([_shape(GQA)], CPU, chunk_blocks=1024, alloc=limited) == limit // 32_768
    assert not live  # everything was freed


def test_capacity_prediction_comes_from_kvplan_capacity():
    from kvplan.probe.capacity import kvplan_capacity_blocks

    blocks, page, _ = kvplan_capacity_blocks("Qwen/Qwen3-8B", 1, "auto", 16, 20 * 2**30)
    # one block of all 36 layers: 36 × 16 tokens × 8 heads × 256 × 2 B = 2,359,296 B; 20 GiB // that = 9,102
    assert (blocks, page) == (9_102, 2_359_296)


def test_everything_is_freed_when_the_probe_fails(monkeypatch):
    """try/finally: an error (or Ctrl-C) after allocation still drops every tensor."""
    import weakref

    import kvplan.probe.run as run

    refs = []
    real = run.allocate_measured

    def tracked(shape, device, alloc=None):
        layers, got = real(shape, device, alloc)
        refs.extend(weakref.ref(t) for layer in layers for t in layer.values())
        return layers, got

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "allocate_measured", tracked)
    monkeypatch.setattr(run, "_kernels", interrupted)
    with pytest.raises(KeyboardInterrupt):
        probe_model("openai/gpt-oss-20b", "auto", OPTS, CPU)
    assert len(refs) == 24 and all(r() is None for r in refs)  # 12 sliding + 12 full layers, all gone


@pytest.mark.parametrize("model", ["deepseek-ai/DeepSeek-V3.2", "openai/whisper-small"])
def test_composite_layers_give_their_attention_pages_to_the_decode_timing(model):
    """The GPU-only bandwidth path reads every paged group's pages: a composite layer gives its attention
    part's (it crashed on both on an H100)."""
    from kvplan.probe.run import _allocate_all, _paged_layers, probe_layout

    layout = probe_layout(kvplan.load_model(model), "auto", OPTS)
    allocated: list = []
    _allocate_all(layout, OPTS, CPU, allocated)
    assert [len(pages) for _, pages in _paged_layers(allocated)] == [layout.model.num_layers]


def test_a_composite_layer_checks_its_attention_part(monkeypatch):
    """DeepSeek-V3.2's layers hold a latent and an indexer key: the write and decode checks run on the
    latent, in the fp8_ds_mla layout vLLM's sparse backend stores for fp8."""
    from kvplan.probe import check

    seen: list[str] = []
    real = check._decode_outcome
    monkeypatch.setattr(check, "_decode_outcome", lambda *a: seen.append(a[-1]) or real(*a))
    result = probe_model("deepseek-ai/DeepSeek-V3.2", "fp8", ProbeOptions(num_blocks=8, num_seqs=2), CPU)
    assert seen == ["fp8_ds_mla"] and result.kernel_check == "pass", result.kernel_notes


def test_a_cache_larger_than_the_free_memory_is_refused_before_allocating(monkeypatch: pytest.MonkeyPatch) -> None:
    """--blocks 200000 of a 70B cache got the process killed at 23.6 GB; --blocks 100000000 was a torch traceback.
    Now the predicted bytes are checked against the device's free memory first, and the refusal says what fits."""
    from kvplan.probe import ProbeError, room

    monkeypatch.setattr(room, "free_bytes", lambda device: 4 * 2**30)
    allocated: list[Any] = []
    monkeypatch.setattr("kvplan.probe.run._allocate_all", lambda *a: allocated.append(a) or [])
    # 80,000 blocks × 32 layers × (16 tokens × 8 heads × (128 + 128) × 2 B = 65,536 B) = 156.25 GiB, plus one
    # layer's copy for the kernel check (80,000 × 65,536 B = 4.88 GiB): 161.13 GiB. Per block 2,162,688 B, so
    # int(0.9 × 4 GiB) // 2,162,688 = 1,787 blocks fit.
    with pytest.raises(ProbeError, match=r"needs 161\.13 GiB .* has 4\.00 GiB free .*: try --blocks 1,787$"):
        probe_model("meta-llama/Llama-3.1-8B", "auto", ProbeOptions(num_blocks=80_000, check_kernels=True), CPU)
    assert not allocated
