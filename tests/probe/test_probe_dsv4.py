"""DeepSeek-V4's caches in the probe: allocated as vLLM 0.33 pages them, predicted from kvplan's engine rule.

Derivation (vLLM 0.33; the hand figures below are never read back from the code). Each part of a layer has one
page per block id: its block's tokens // tokens_per_state entries × the entry's bytes, rounded up to 576 B with
fp8_ds_mla and 512 B with bf16 rows (v1/kv_cache_interface.py:270-275, :590-603, :719-726). Blocks: the
compressed latent and the indexer key take the cache block (256 when none is given), the sliding latent 64
(v1/attention/backends/mla/sparse_swa.py:85), the compressor states 4 at ratio 4 and 8 at ratio 128
(models/deepseek_v4/compressor.py:163-172). Entries: a latent is 584 B in fp8_ds_mla (448 fp8 NoPE + 64 bf16
RoPE × 2 B + 8 B UE8M0 scales, models/deepseek_v4/attention.py:880-882) or 512 × 2 = 1,024 B in bf16; a
compressor state is 2 · coff · head_dim fp32 (coff 2 at ratio 4, 1 at 128; compressor.py:276-281): 8,192 B
(512, ratio 4), 4,096 B (512, ratio 128), 2,048 B (128, ratio 4); the indexer key 128 fp8 + 4 B scale = 132 B
(attention.py:1024-1030).

DeepSeek-V4-Flash: 43 decoder layers = 2 sliding-only + 21 ratio-4 (latent, sliding, compressor, indexer,
indexer compressor) + 20 ratio-128 (latent, sliding, compressor).

fp8_ds_mla, block 256 (576-byte pages):
  sliding      64 × 584 = 37,376  -> 65 × 576 = 37,440
  latent r4    64 × 584 = 37,376  -> 37,440
  latent r128   2 × 584 =  1,168  ->  3 × 576 =  1,728
  state 512 r4  4 × 8,192 = 32,768 -> 57 × 576 = 32,832;  state 512 r128  8 × 4,096 = 32,768 -> 32,832
  indexer r4   64 × 132 =  8,448  -> 15 × 576 =  8,640;  state 128 r4    4 × 2,048 =  8,192 -> 15 × 576 = 8,640
  ratio-4 layer: 37,440 + 37,440 + 32,832 + 8,640 + 8,640 = 124,992; ratio-128 layer: 1,728 + 37,440 + 32,832 = 72,000
  one block id: 2 × 37,440 + 21 × 124,992 + 20 × 72,000 = 4,139,712
bf16, block 512 (512-byte pages):
  sliding 64 × 1,024 = 65,536; latent r4 128 × 1,024 = 131,072; latent r128 4 × 1,024 = 4,096;
  states 32,768 (512, both ratios) and 8,192 (128, r4); indexer 128 × 132 = 16,896 (= 33 × 512)
  ratio-4 layer: 131,072 + 65,536 + 32,768 + 16,896 + 8,192 = 254,464; ratio-128: 4,096 + 65,536 + 32,768 = 102,400
  one block id: 2 × 65,536 + 21 × 254,464 + 20 × 102,400 = 7,522,816
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from kvplan.errors import InputError  # noqa: E402
from kvplan.formulas import CacheRequest, resolve_kv_dtype  # noqa: E402
from kvplan.probe.allocate import CacheShape, allocate_group  # noqa: E402
from kvplan.probe.measure import storage_bytes  # noqa: E402
from kvplan.probe.run import ProbeOptions, probe_model  # noqa: E402
from kvplan.specs import Composite, CompressedMLA, CompressorState, IndexerCache, SlidingMLA  # noqa: E402

CPU = torch.device("cpu")
FLASH = "deepseek-ai/DeepSeek-V4-Flash"
FP8_BLOCK_ID_BYTES = 4_139_712  # fp8_ds_mla at block 256 (module docstring)
BF16_BLOCK_ID_BYTES = 7_522_816  # bf16 at block 512 (module docstring)


@pytest.mark.parametrize(("kv_dtype", "block_size", "num_blocks", "expected_bytes"), [
    pytest.param("auto", None, 8, 8 * FP8_BLOCK_ID_BYTES, id="auto-8-blocks"),  # auto is fp8_ds_mla: 33,117,696
    pytest.param("fp8", None, 3, 3 * FP8_BLOCK_ID_BYTES, id="fp8-3-blocks"),  # 12,419,136
    pytest.param("bf16", 512, 3, 3 * BF16_BLOCK_ID_BYTES, id="bf16-block512-3-blocks"),  # 22,568,448
])
def test_dsv4_flash_measured_equals_hand_derived_prediction(kv_dtype, block_size, num_blocks, expected_bytes):
    opts = ProbeOptions(num_blocks=num_blocks, cache=CacheRequest(block_size=block_size), check_kernels=False)
    result = probe_model(FLASH, kv_dtype, opts, CPU)
    assert result.predicted_bytes == expected_bytes
    assert result.measured_bytes == expected_bytes
    assert result.block_size == (block_size or 256) and result.passes(0.0)


RATIO4_LAYER = Composite(parts=(CompressedMLA(head_dim=512, rope_dim=64, ratio=4),
                                SlidingMLA(head_dim=512, rope_dim=64, window=128),
                                CompressorState(head_dim=512, ratio=4), IndexerCache(head_dim=128, ratio=4),
                                CompressorState(head_dim=128, ratio=4)))


def test_a_ratio4_layer_holds_vllms_rows_in_aligned_pages():
    """[blocks, entries, cell] per part, each block's page padded to 576 B (fp8_ds_mla), as in the docstring."""
    dtype = resolve_kv_dtype("fp8_ds_mla", "bf16")
    shape = CacheShape(spec=RATIO4_LAYER, num_layers=1, num_blocks=5, block_size=256, num_seqs=1, kv_dtype=dtype,
                       state_dtype=dtype)
    (layer,) = allocate_group(shape, CPU)
    shapes = {name: tuple(t.shape) for name, t in layer.items()}
    assert shapes == {"0.rows": (5, 64, 584), "1.rows": (5, 64, 584), "2.rows": (5, 4, 8192), "3.rows": (5, 64, 132),
                      "4.rows": (5, 4, 2048)}
    assert [t.stride(0) for t in layer.values()] == [37_440, 37_440, 32_832, 8_640, 8_640]
    assert storage_bytes(layer.values()) == 5 * 124_992


def test_a_block_vllm_refuses_is_bad_input(run_cli):
    """vLLM 0.33 pages the latent and the indexer in multiples of 256 tokens (v1/worker/utils.py:551-558)."""
    with pytest.raises(InputError, match="multiple of 256, not 16"):
        probe_model(FLASH, "auto", ProbeOptions(num_blocks=2, cache=CacheRequest(block_size=16)), CPU)
    code, _, err = run_cli("probe", "--device", "cpu", "-m", FLASH, "--block-size", "100")
    assert code == 2 and "multiple of 256, not 100" in err


def test_the_kernel_check_names_each_part_it_cannot_read(run_cli):
    code, out, err = run_cli("probe", "--device", "cpu", "-m", FLASH, "--blocks", "2", "--json")
    assert code == 0, err
    (row,) = json.loads(out)["results"]
    assert row["predicted_bytes"] == row["measured_bytes"] == 2 * FP8_BLOCK_ID_BYTES
    assert row["kernel_check"] == "skipped" and row["block_size"] == 256
    notes = "\n".join(row["kernel_notes"])
    for kind in ("compressed_mla", "sliding_mla", "compressor", "indexer"):
        assert f"{kind} part: no kernel here reads DeepSeek-V4's {kind} pages" in notes
    assert "no paged tokens" not in notes
