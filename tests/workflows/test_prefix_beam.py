"""Prefix sharing, beam search and the three allocators: hand-derived token and byte counts.

Llama-3.1-8B bf16 stores 2 (K, V) × 32 layers × 8 KV heads × 128 × 2 B = 131,072 B per token.
"""

from __future__ import annotations

import pytest

from kvplan.errors import InputError
from kvplan.workflows import Workload, allocate, beam_search, plan_workload, prefix_sharing, stored_tokens
from kvplan.workflows.models import layout_of

LLAMA8 = "meta-llama/Llama-3.1-8B"
BPT = 131_072


# The KV notes (background/kv-cache-memory-notes.md, RadixAttention): a 1,000-token shared prefix, then
# requests of 1,000, 1,000 + 200 and 1,000 + 150 tokens: 3,350 tokens stored separately, 1,350 shared.
def test_notes_radix_example_token_exact():
    assert stored_tokens(0, [1000, 1200, 1150]) == 3350
    assert stored_tokens(1000, [1000, 1200, 1150]) == 1350


def test_notes_example_paged_shares_full_blocks_only():
    # bs 16: 1,000 = 62 full blocks (992 tokens) + 8; the 8 are stored by every request with its rest:
    # 8 -> 1 block (16), 208 -> 13 blocks (208), 158 -> 10 blocks (160): 992 + 16 + 208 + 160 = 1,376.
    assert stored_tokens(1000, [1000, 1200, 1150], block_size=16) == 1376
    # unshared: cdiv(1000,16)=63, cdiv(1200,16)=75, cdiv(1150,16)=72 blocks -> 210 × 16 = 3,360
    assert stored_tokens(0, [1000, 1200, 1150], block_size=16) == 3360


def test_stored_tokens_rejects_short_request():
    with pytest.raises(InputError, match="shared prefix"):
        stored_tokens(1000, [999])


def test_prefix_sharing_library_batch32():
    # 32 requests of 1,200 tokens, 1,000 shared: exact 1,000 + 32 × 200 = 7,400;
    # paged 992 + 32 × 208 (13 blocks) = 7,648; contiguous 32 × 1,200 = 38,400.
    r = prefix_sharing(LLAMA8, max_model_len=1200, batch=32, shared_prefix_tokens=1000)
    assert [m.kv_tokens for m in r.allocators] == [38_400, 7_648, 7_400]
    assert r.by_name("paged").kv_bytes == 7_648 * BPT
    # the block table: 32 × 1 × 2 × pow2(cdiv(1200,16) = 75) = 128 × 8 B = 65,536 B
    assert r.by_name("paged").table_bytes_per_gpu == 65_536
    assert r.by_name("paged", shared=False).kv_tokens == 38_400  # 32 × 75 blocks × 16


def test_prefix_sharing_block_size_one_is_token_exact():
    r = prefix_sharing(LLAMA8, max_model_len=1200, batch=32, shared_prefix_tokens=1000, block_size=1)
    assert r.by_name("paged").kv_tokens == r.by_name("exact").kv_tokens == 7_400


def test_prefix_sharing_cli(size_json):
    out = size_json(LLAMA8, "--batch", "32", "--shared-prefix", "1000", "--seq-len", "1200")
    w = out["workload"]
    assert out["total_bytes"] == 32 * 1200 * BPT  # existing keys keep their meaning
    assert (w["kv_tokens"], w["unshared_kv_tokens"], w["allocator"]) == (7_648, 38_400, "paged")
    assert w["bytes_per_gpu"] == 7_648 * BPT + 65_536
    assert w["prefix_saving_bytes_per_gpu"] == (38_400 - 7_648) * BPT
    assert 79 < w["prefix_saving_pct"] < 81  # 30,752 / 38,400 = 80.1 %


def test_size_without_workload_options_keeps_payload(size_json):
    assert "workload" not in size_json(LLAMA8, "--seq-len", "1k")


@pytest.mark.parametrize(("prompt", "output", "expected"), [
    # right after the prompt nothing is copied: paged holds 2,048 once, contiguous 4 × 2,048
    pytest.param(2048, 0, (8192, 2048, 2048), id="after-prompt"),
    # 1,500 = 93 full blocks (1,488) + 12; each beam owns cdiv(12 + 548, 16) = 35 blocks (560):
    # paged 1,488 + 4 × 560 = 3,728; exact 1,500 + 4 × 548 = 3,692
    pytest.param(1500, 548, (8192, 3728, 3692), id="prompt1500-out548"),
    # copy on write of the partial block: 1,000 = 62 blocks + 8; one output token -> 4 × 16
    pytest.param(1000, 1, (4 * 1001, 992 + 64, 1000 + 4), id="first-token-copies-partial-block"),
])
def test_beam_search_tokens(prompt, output, expected):
    r = beam_search(LLAMA8, prompt_tokens=prompt, output_tokens=output, beam_width=4)
    assert tuple(m.kv_tokens for m in r.allocators) == expected


def test_contiguous_matches_trtllm_tensor_shape():
    # [batch×beam, 2, heads, max_seqlen, head_dim] per layer, bf16: 2×4 × 2 × 8 × 2048 × 128 × 2 B × 32 layers
    r = beam_search(LLAMA8, prompt_tokens=2048, beam_width=4, batch=2)
    assert r.by_name("contiguous").kv_bytes == 2 * 4 * 2 * 8 * 2048 * 128 * 2 * 32
    assert r.by_name("contiguous").table_bytes_per_gpu == 0


def test_beam_cli_both_allocators(size_json):
    out = size_json(LLAMA8, "--beam-width", "4", "--seq-len", "2048", "--prompt-len", "1500", "--allocator",
                    "contiguous")
    w = out["workload"]
    assert (w["prompt_tokens"], w["output_tokens"], w["beam_width"]) == (1500, 548, 4)
    assert w["bytes_per_gpu"] == 8192 * BPT
    by_name = {a["allocator"]: a for a in w["allocators"]}
    # table: 1 × 4 × 2 × pow2(cdiv(2048, 16) = 128) × 8 B = 8,192 B
    assert by_name["paged"]["total_bytes_per_gpu"] == 3728 * BPT + 8192


def test_sliding_layers_held_per_sequence(model):
    # gpt-oss-20b: 12 full + 12 sliding (W = 128) layers of 8 heads × (64 + 64) × 2 B = 2,048 B/token each.
    # 1,000 tokens: full 12 × 2,048 × 1,000 + sliding 12 × 2,048 × 128 = 27,721,728 B exact;
    # paged: full layers hold 63 blocks (1,008 tokens) -> 24,772,608 + 3,145,728, + table 2 × 64 × 8 = 1,024.
    layout = layout_of(model("openai/gpt-oss-20b"))
    w = Workload(prompt_tokens=1000)
    assert allocate(layout, w, "exact").kv_bytes == 27_721_728
    paged = allocate(layout, w, "paged")
    assert (paged.kv_bytes, paged.table_bytes_per_gpu) == (27_918_336, 1024)
    # contiguous preallocates max_seqlen but a cyclic window of 128 on sliding layers
    big = Workload(prompt_tokens=1000, max_model_len=4096)
    assert allocate(layout, big, "contiguous").kv_bytes == 24_576 * 4096 + 24_576 * 128


def test_per_gpu_with_tp_and_pp(model):
    # Llama-3.1-8B tp 2 pp 2: 4 KV heads and 16 layers per GPU -> 32,768 B/token/GPU
    layout = layout_of(model(LLAMA8), tp=2, pp=2)
    m = allocate(layout, Workload(prompt_tokens=1024), "exact")
    assert (m.kv_bytes, m.kv_bytes_per_gpu) == (1024 * BPT, 1024 * 32_768)


@pytest.mark.parametrize("args", [
    pytest.param(("--shared-prefix", "2000", "--seq-len", "1200"), id="prefix-longer-than-prompt"),
    pytest.param(("--prompt-len", "3000", "--seq-len", "2048"), id="prompt-longer-than-seq"),
    pytest.param(("--allocator", "buddy", "--seq-len", "2048"), id="unknown-allocator"),
    pytest.param(("--beam-width", "0", "--seq-len", "2048"), id="zero-beams"),
    pytest.param(("--beam-width", "2", "--dcp", "2", "--tp", "2", "--seq-len", "2048"), id="dcp"),
])
def test_workload_errors_exit_2(run_cli, args):
    code, out, err = run_cli("size", LLAMA8, *args)
    assert code == 2, out
    assert err.startswith("kvplan: error:") and "Traceback" not in err


def test_plan_workload_unshared_equals_no_prefix(model):
    layout = layout_of(model(LLAMA8))
    shared = plan_workload(layout, Workload(batch=8, prompt_tokens=500, shared_prefix_tokens=400))
    plain = plan_workload(layout, Workload(batch=8, prompt_tokens=500))
    assert shared.unshared == plain.allocators
