"""SGLang's release rows (kvplan/engines/sglang/releases.py), each step against numbers derived by hand from that
release's code (the derivation beside each). G is the GPU's nvidia-smi total: H100 81,559 MiB, H200 143,771,
RTX 4090 24,564. GiB = 2**30.
"""

from __future__ import annotations

from typing import Any

import pytest
from plan_helpers import GIB, plan

from kvplan import load_model
from kvplan.engines import REGISTRY, Device, Request, Settings, get_engine
from kvplan.engines.sglang import SglangEngine, fraction
from kvplan.engines.sglang.releases import MINORS, ROWS, release_for
from kvplan.errors import InputError
from kvplan.planning.capacity import capacity

H100 = Device(name="H100-SXM", memory_bytes=85_018_542_080, smi_memory_mib=81559)
H200 = Device(name="H200", memory_bytes=150_110_940_774, smi_memory_mib=143771)
RTX4090 = Device(name="RTX-4090", memory_bytes=25_383_469_383, smi_memory_mib=24564)
LLAMA = "meta-llama/Llama-3.1-8B"


def _f(release: str, name: str = LLAMA, device: Device = H100, settings: Settings | None = None, **cache: Any) -> float:
    """The release's default mem_fraction_static for a request (the model's own max_model_len unless given)."""
    m = load_model(name)
    req = Request.of(m, device=device, settings=settings or Settings(), **cache)
    found = get_engine(f"sglang@{release}").resolve(req).settings.sglang.mem_fraction_static
    assert found is not None
    return found


def test_every_minor_is_a_name_and_maps_to_its_step() -> None:
    names = {n.removeprefix("sglang@") for n in REGISTRY if n.startswith("sglang@")}
    assert names == {*MINORS, "0.4", "0.5"}
    keys = [tuple(int(p) for p in r.key.split(".")) for r in ROWS]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    for v in MINORS:
        engine = get_engine(f"sglang@{v}")
        assert isinstance(engine, SglangEngine) and engine.version == f"SGLang {v}"
        below = [r for r in ROWS if tuple(int(p) for p in r.key.split(".")) <= tuple(int(p) for p in v.split("."))]
        assert engine.release is below[-1] is release_for(v)
    assert release_for("0.5.0") is None and release_for("0.4.11") is None  # not on PyPI / not a release


def test_each_row_names_what_changed_and_where_it_was_read() -> None:
    for row in ROWS:
        assert row.changes and row.source.startswith(row.key), row.key


@pytest.mark.parametrize("key", [r.key for r in ROWS])
def test_h100_default_fraction_at_tp_1_2_4_8(key: str) -> None:
    step = tuple(int(p) for p in key.split("."))
    if step < (0, 4, 7):
        # 0.4.0-0.4.4 table by tp; 0.4.5: G 81,559 <= 81,920 keeps the table; 0.4.6: the table on tp·pp
        expected = [0.88, 0.87, 0.85, 0.81]
    elif step < (0, 5, 3):
        # reserved (9.5 + tp/2) GiB = 10,240 / 10,752 / 11,776 / 13,824 MiB; round((81,559 − r) / 81,559, 3)
        expected = [0.874, 0.868, 0.856, 0.831]
    elif step < (0, 5, 10):
        # 512 + 1.5 × 8,192 + 2 × max_bs (256 at tp < 4, else 512) + 1,024 × tp / 8 = 13,440 / 13,568 / 14,336 /
        # 14,848 MiB (over the 10 GiB floor)
        expected = [0.835, 0.834, 0.824, 0.818]
    else:
        # + 8 MiB × 58 prefill capture sizes up to 8,192 = 464: 13,904 / 14,032 / 14,800 / 15,312 MiB
        expected = [0.830, 0.828, 0.819, 0.812]
    assert [_f(key, tp=tp) for tp in (1, 2, 4, 8)] == expected


@pytest.mark.parametrize(("key", "tp1", "tp8"), [
    # 0.4.4: G ignored; 0.4.5: G > 81,920: (143,771 − 13,312) / 143,771, unrounded, at any tp
    pytest.param("0.4.4", 0.88, 0.81, id="0.4.4-table"),
    pytest.param("0.4.5", 130459 / 143771, 130459 / 143771, id="0.4.5-minus-13GiB"),
    # 0.4.6: 0.88 above 80 GiB, then min(0.88 + 49,152 × 0.12 / 143,771, (143,771 − 18,432) / 143,771)
    pytest.param("0.4.6", 125339 / 143771, 125339 / 143771, id="0.4.6-boost-capped"),
    # 0.4.7: tier 100-160 GiB: (12 + tp/2) GiB = 12,800 / 16,384 MiB -> 0.911 / 0.886
    pytest.param("0.4.7", 0.911, 0.886, id="0.4.7-tiers"),
    # 0.5.3: 13,440 / 14,848 MiB (as on the H100: same chunked and max_bs tier) -> 0.907 / 0.897
    pytest.param("0.5.3", 0.907, 0.897, id="0.5.3-reserve"),
    # 0.5.10: + 464 MiB of prefill graphs -> 13,904 / 15,312 -> 0.903 / 0.893
    pytest.param("0.5.10", 0.903, 0.893, id="0.5.10-prefill-graphs"),
])
def test_h200_default_fraction(key: str, tp1: float, tp8: float) -> None:
    assert _f(key, device=H200, tp=1) == pytest.approx(tp1, abs=0) and _f(key, device=H200, tp=8) == tp8


@pytest.mark.parametrize(("key", "expected"), [
    # RTX 4090 tp 1 (20-35 GiB tier, no 10 GiB floor below 60 GiB):
    # 0.5.3: 512 + 1.5 × 2,048 + 2 × 16 + 128 = 3,744 -> round(20,820 / 24,564, 3) = 0.848
    pytest.param("0.5.3", 0.848, id="0.5.3-max-bs-16"),
    # 0.5.4: decode max_bs 24: 3,760 -> 0.847
    pytest.param("0.5.4", 0.847, id="0.5.4-max-bs-24"),
    # 0.5.10: + 8 × 42 capture sizes up to 2,048 = 336: 4,096 -> 0.833
    pytest.param("0.5.10", 0.833, id="0.5.10-graphs"),
    # 0.5.20: chunked 4,096, max_bs 48: 512 + 6,144 + 96 + 128 + 8 × 50 sizes up to 4,096 = 7,280 -> 0.704
    pytest.param("0.5.20", 0.704, id="0.5.20-chunked-4096"),
])
def test_rtx4090_tier(key: str, expected: float) -> None:
    assert _f(key, device=RTX4090) == expected


def test_chunked_prefill_and_decode_graph_defaults_by_tier() -> None:
    l4 = Device(name="L4", memory_bytes=23_675_600_896, smi_memory_mib=23034)
    # 0.4.3 on an L4 (23,034 MiB < 25,000): chunked 2,048, decode max_bs 80 at tp 4 (the QwQ-32B log's settings)
    rel = SglangEngine("0.4.3").release
    assert fraction.tier(rel, 23034).chunked == 2048 and fraction.tier(rel, 23034).max_bs[1] == 80
    m = load_model(LLAMA)
    assert SglangEngine("0.4.3").resolve(Request.of(m, tp=4, device=l4)).settings.sglang.chunked_prefill_size == 2048
    # 0.4.7: below 35 GiB 2,048; 0.5.20: 4,096 (the 20-35 GiB tier)
    assert [fraction.tier(SglangEngine(k).release, 24564).chunked for k in ("0.4.7", "0.5.19", "0.5.20")] == [
        2048, 2048, 4096]


@pytest.mark.parametrize(("what", "keys", "expected", "cache"), [
    # pp 2 (tp 1): 512 + 12,288 + 512 + 256 = 13,568 without prefill graphs (0.834), + 464 with them (0.828).
    # 0.5.10's piecewise graphs and 0.5.19's breakable default are off under PP; 0.5.15-0.5.18 keep them
    pytest.param("pp", ("0.5.10", "0.5.15", "0.5.18", "0.5.19"), [0.834, 0.828, 0.828, 0.834], {"pp": 2}, id="pp"),
    # DP attention, tp 2 dp 2: 0.5.2 (9.5 + 1) GiB + 4 GiB = 14,848 -> 0.818; 0.5.16: 512 + 12,288 + 512 + 256 +
    # 3 × 256 × 2 = 15,104 -> 0.815 (graphs off); 0.5.17 keeps them: + 464 = 15,568 -> 0.809
    pytest.param("dp", ("0.5.2", "0.5.16", "0.5.17"), [0.818, 0.815, 0.809], {"tp": 2, "dp": 2}, id="dp-attention"),
])
def test_what_turns_prefill_graphs_off(what: str, keys: tuple[str, ...], expected: list[float],
                                       cache: dict[str, int]) -> None:
    assert [_f(k, **cache) for k in keys] == expected


def test_mla_prefill_graph_reserve_by_release() -> None:
    # DeepSeek-V2-Lite tp 1: 13,440 + a flat 1,536 MiB for MLA = 14,976 -> 0.816; 0.5.15-0.5.17's breakable graphs
    # are off for (non-DSA) MLA -> 13,440 -> 0.835; 0.5.18 keeps them again
    lite = "deepseek-ai/DeepSeek-V2-Lite"
    assert [_f(k, lite) for k in ("0.5.14", "0.5.15", "0.5.17", "0.5.18")] == [0.816, 0.835, 0.835, 0.816]


def test_disable_cuda_graph_by_release() -> None:
    # enforce_eager (--disable-cuda-graph): no effect on 0.5.13's reserve (0.830); 0.5.14 drops the prefill graphs
    # (13,440 -> 0.835); 0.5.15 also the decode term: 512 + 12,288 + 128 = 12,928 -> 0.841
    eager = Settings.of(enforce_eager=True)
    assert [_f(k, settings=eager) for k in ("0.5.13", "0.5.14", "0.5.15")] == [0.830, 0.835, 0.841]


def test_draft_reserve_by_release() -> None:
    # EAGLE (Llama-3.2-1B head), H100 tp 1. 0.5.9: 13,440 + 2,048 after the floor = 15,488 -> 0.810; 0.5.10: graphs
    # off for a draft, + 4,096 = 17,536 -> 0.785; 0.5.11: graphs back on: 13,904 + 4,096 = 18,000 -> 0.779;
    # 0.5.14: no reserve (the draft sits in the cell): 13,904 -> 0.830
    s = Settings.of(speculative_model="meta-llama/Llama-3.2-1B", speculative_method="eagle", num_speculative_tokens=3)
    found = [capacity(LLAMA, engine=f"sglang@{k}", gpu="H100", settings=s).settings.sglang.mem_fraction_static
             for k in ("0.5.9", "0.5.10", "0.5.11", "0.5.14")]
    assert found == [0.810, 0.785, 0.779, 0.830]


def test_context_length_caps_the_prefill_graphs_in_0513_to_0516() -> None:
    # tp 2 with an explicit max_model_len 4,096: 50 capture sizes up to 4,096 (400 MiB) -> 13,968 -> 0.829 in
    # 0.5.13-0.5.16; 0.5.12 and 0.5.17 capture up to chunked 8,192 (464) -> 14,032 -> 0.828
    assert [_f(k, tp=2, max_model_len=4096) for k in ("0.5.12", "0.5.13", "0.5.16", "0.5.17")] == [
        0.828, 0.829, 0.829, 0.828]


def test_llama2_prefill_graphs_stop_at_4096() -> None:
    # Llama-2-7b tp 2, 0.5.10: sizes up to 4,096 (50 × 8 = 400): 512 + 12,288 + 512 + 256 + 400 = 13,968 -> 0.829
    assert _f("0.5.10", "meta-llama/Llama-2-7b-hf", tp=2) == 0.829


def test_max_running_requests_caps_the_decode_graphs_from_0522() -> None:
    # max_num_seqs 64 (--max-running-requests): 0.5.22 caps the default max_bs 256 -> 64:
    # 512 + 12,288 + 128 + 128 + 464 = 13,520 -> 0.834; 0.5.21 keeps 256 -> 0.830
    s = Settings.of(max_num_seqs=64)
    assert [_f(k, settings=s) for k in ("0.5.21", "0.5.22")] == [0.830, 0.834]


def test_multimodal_models_keep_prefill_graphs_only_where_allowlisted() -> None:
    # Qwen3.5-9B (vision factor 0.95 × clamp(1 − 0.1 × (27 × 1,152² / (24 × 1,024²) − 1)) ... see vlm_factor):
    # 0.5.15 no graphs for a vision model: 0.835 × factor; 0.5.16 allowlists Qwen3.5: 0.830 × factor
    from kvplan.engines.sglang.extras import vlm_factor

    factor = vlm_factor(load_model("Qwen/Qwen3.5-9B"))
    assert [_f(k, "Qwen/Qwen3.5-9B") for k in ("0.5.15", "0.5.16")] == [0.835 * factor, 0.830 * factor]
    # Gemma-3 is never allowlisted: 0.835 × its factor in 0.5.10 and 0.5.23; 0.4.7 had no vision factor yet
    gemma = "google/gemma-3-27b-it"
    g = vlm_factor(load_model(gemma))
    assert [_f(k, gemma) for k in ("0.4.7", "0.4.9", "0.5.10", "0.5.23")] == [0.874, 0.874 * g, 0.835 * g, 0.835 * g]


def test_prefill_graphs_off_by_architecture() -> None:
    # NemotronH: 0.5.17's breakable list turns them off, 0.5.16 and 0.5.18 keep them (not MLA, no vision tower);
    # Kimi-Linear (KDA): off from 0.5.20. The reason is named.
    rel = {k: SglangEngine(k).release for k in ("0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20")}
    nemotron = Request.of(load_model("nvidia/Nemotron-H-56B-Base-8K"))
    assert [fraction.prefill_graphs_off(rel[k], nemotron) for k in ("0.5.16", "0.5.17", "0.5.18")] == [
        None, "architecture NemotronHForCausalLM", None]
    kimi = Request.of(load_model("moonshotai/Kimi-Linear-48B-A3B-Instruct"))
    assert fraction.prefill_graphs_off(rel["0.5.19"], kimi) is None
    assert fraction.prefill_graphs_off(rel["0.5.20"], kimi) == "KDA linear attention"


def test_explicit_cuda_graph_max_bs_enters_the_reserve() -> None:
    # 0.5.8, H100 tp 1, --cuda-graph-max-bs 4: 512 + 12,288 + 8 + 128 = 12,936 -> round(68,623 / 81,559, 3) = 0.841
    # (the Feb-2026 documentation run's mem_fraction_static, test_engine_logs_by_release)
    assert _f("0.5.8", settings=Settings.of(cuda_graph_max_bs=4)) == 0.841


@pytest.mark.parametrize(("key", "line"), [
    pytest.param("0.4.0", None, id="0.4.0-no-line"),
    # (327,680 + 1 pad slot) × 32 layers × 8 heads × 128 × 2 B = 20.0002 GiB per K and V
    pytest.param("0.4.1", "KV Cache is allocated. K size: 20.00 GB, V size: 20.00 GB.", id="0.4.1-sizes"),
    pytest.param("0.4.3", "KV Cache is allocated. #tokens: 327680, K size: 20.00 GB, V size: 20.00 GB", id="0.4.3"),
    pytest.param("0.5.13", "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 327680, K size: 20.00 GB, "
                           "V size: 20.00 GB", id="0.5.13-dtype"),
])
def test_the_pool_line_by_release(model: Any, key: str, line: str | None) -> None:
    # cell 32 × 8 × 256 × 2 B = 131,072 in every release; N = 40 GiB // 131,072 = 327,680
    p = plan(model, LLAMA, f"sglang@{key}", 40 * GIB)
    assert p.kv_tokens == 327_680 and p.log_lines == ((line,) if line else ())


def test_page_size_from_044(model: Any) -> None:
    # 0.4.4: N rounded down to the page and the pool padded by one page: 40 GiB // 131,072 = 327,680 = 5,120 × 64;
    # a budget 100,000 B short gives 327,679 -> 327,616 (5,119 pages)
    p = plan(model, LLAMA, "sglang@0.4.4", 40 * GIB - 100_000, block_size=64)
    assert (p.kv_tokens, p.num_blocks, p.block_size) == (327_616, 5_119, 64)
    assert any("N + 64 slots" in n for n in p.notes)
    with pytest.raises(InputError, match="no --page-size"):
        plan(model, LLAMA, "sglang@0.4.3", 40 * GIB, block_size=64)


def test_dp_attention_heads_by_release(model: Any) -> None:
    # tp 8 dp 8. 0.4.0 splits heads over tp: max(1, 8 // 8) = 1 head: 32 × 1 × 256 × 2 B = 16,384 -> 2,621,440;
    # 0.4.1 over the attention TP size 8 // 8 = 1: all 8 heads, 131,072 B -> 327,680 (each DP rank its own pool)
    assert plan(model, LLAMA, "sglang@0.4.0", 40 * GIB, tp=8, dp=8).kv_tokens == 2_621_440
    assert plan(model, LLAMA, "sglang@0.4.1", 40 * GIB, tp=8, dp=8).kv_tokens == 327_680
    with pytest.raises(InputError, match="DP size to tp"):  # 0.4.0-0.4.3 force dp = tp
        plan(model, LLAMA, "sglang@0.4.3", 40 * GIB, tp=8, dp=4)
    assert plan(model, LLAMA, "sglang@0.4.4", 40 * GIB, tp=8, dp=4).kv_tokens == 40 * GIB // (32 * 4 * 256 * 2)


def test_v_head_dim_enters_the_cell_from_057() -> None:
    # a Llama-3.1-8B-shaped test config with head_dim 192 and v_head_dim 128: before 0.5.7 the cell counts
    # 2 × head_dim: 32 × 8 × 384 × 2 B = 196,608; from 0.5.7 head_dim + v_head_dim: 32 × 8 × 320 × 2 B = 163,840
    from kvplan.config.hf import normalize
    from kvplan.planning.capacity import plan_request

    raw = {**load_model(LLAMA).raw, "head_dim": 192, "v_head_dim": 128}
    m = normalize(raw, model_id="test/llama-v128", source="test")
    req = Request.of(m, max_model_len=8192)
    assert plan_request(req, (40 * GIB,), "sglang@0.5.6").kv_tokens == 40 * GIB // 196_608
    assert plan_request(req, (40 * GIB,), "sglang@0.5.7").kv_tokens == 40 * GIB // 163_840


@pytest.mark.parametrize(("key", "blocks", "full", "swa"), [
    # gpt-oss-20b, page 64, 40 GiB; cell 24 × 8 × 64 × 2 × 2 B = 49,152: N = 873,813 -> 873,792 (13,653 pages)
    pytest.param("0.4.10", 13_653, 873_792, None, id="0.4.10-no-pool"),  # gpt-oss not in 0.4.9's window classes
    # 0.5.1: full = int(873,792 × 24 / (0.8 × 12 + 12)) = 970,879 (float), swa = int(× 0.8) = 776,703, no page rounding
    pytest.param("0.5.1", 13_653, 970_879, 776_703, id="0.5.1-layer-tokens"),
    pytest.param("0.5.7", 13_653, 873_792, None, id="0.5.7-mimo-only"),
    # 0.5.8: the same split, each rounded down to 64: 970,816 and 776,640
    pytest.param("0.5.8", 13_653, 970_816, 776_640, id="0.5.8-paged"),
    # 0.5.9: int(873,792 × 49,152 / (24,576 + 0.8 × 24,576)) = 970,879 (float) -> 970,816 / 776,640
    pytest.param("0.5.9", 13_653, 970_816, 776_640, id="0.5.9-memory-weighted"),
    # 0.5.11: N = full = 40 GiB // (24,576 + 0.8 × 24,576) = 970,903 -> 970,880 (15,170 pages); swa = int(970,880 ×
    # 0.8) = 776,704
    pytest.param("0.5.11", 15_170, 970_880, 776_704, id="0.5.11-from-the-budget"),
])
def test_gpt_oss_sliding_pool_by_release(model: Any, key: str, blocks: int, full: int, swa: int | None) -> None:
    p = plan(model, "openai/gpt-oss-20b", f"sglang@{key}", 40 * GIB, block_size=64)
    assert (p.num_blocks, p.kv_tokens) == (blocks, full)
    pools = [n for n in p.notes if n.startswith("sliding window memory pool")]
    assert pools == ([f"sliding window memory pool: full_layer_tokens={full}, swa_layer_tokens={swa}"] if swa else [])


def test_gemma2_has_the_sliding_pool_only_in_049_to_056(model: Any) -> None:
    # 42 layers (21 sliding) × 8 × 256 × 2 × 2 B = 344,064: N = 40 GiB // that = 124,830; 0.4.9-0.5.6 (the class has
    # a window): full = int(124,830 × 42 / (0.8 × 21 + 21)) = 138,700, swa = 110,960; 0.4.7 and 0.5.7: every layer full
    found = {k: plan(model, "google/gemma-2-9b-it", f"sglang@{k}", 40 * GIB, max_model_len=8192).kv_tokens
             for k in ("0.4.7", "0.4.9", "0.5.6", "0.5.7", "0.5.23")}
    assert found == {"0.4.7": 124_830, "0.4.9": 138_700, "0.5.6": 138_700, "0.5.7": 124_830, "0.5.23": 124_830}


def test_mamba_state_pool_by_release(model: Any) -> None:
    # Qwen3-Next-80B tp 4: cell 12 full-attention layers × max(1, 2 // 4) head × 256 × 2 × 2 B = 12,288; state 9,879,552 B
    # per request. 0.5.1: no state pool (refused); 0.5.2: 512 slots first: (40 GiB − 512 × 9,879,552) // 12,288 =
    # 3,083,605; 0.5.3: the state takes 0.9 / 1.9 of the budget: int(40 GiB / 1.9) // 12,288 = 1,839,607
    name = "Qwen/Qwen3-Next-80B-A3B-Thinking"
    with pytest.raises(InputError, match="no pool for Mamba"):
        plan(model, name, "sglang@0.5.1", 40 * GIB, tp=4, max_model_len=32768)
    assert plan(model, name, "sglang@0.5.2", 40 * GIB, tp=4, max_model_len=32768).kv_tokens == 3_083_605
    assert plan(model, name, "sglang@0.5.3", 40 * GIB, tp=4, max_model_len=32768).kv_tokens == 1_839_607


def test_multimodal_reservation_from_0518(model: Any) -> None:
    # Gemma-3-4B-it gives 100 MiB of the pool's budget to the embedding cache in 0.5.18 (not in 0.5.17); every layer
    # is full in both (Gemma-3 is not in the sliding-pool allowlist)
    cell = plan(model, "google/gemma-3-4b-it", "sglang@0.5.17", 40 * GIB, max_model_len=8192).page_bytes
    assert plan(model, "google/gemma-3-4b-it", "sglang@0.5.17", 40 * GIB, max_model_len=8192).kv_tokens == 40 * GIB // cell
    after = plan(model, "google/gemma-3-4b-it", "sglang@0.5.18", 40 * GIB, max_model_len=8192).kv_tokens
    assert after == (40 * GIB - 100 * 2**20) // cell == 307_651  # cell 139,264 B


@pytest.mark.parametrize(("key", "dtype", "ok"), [
    ("0.4.0", "fp8_e5m2", True), ("0.4.0", "fp8", False), ("0.4.1", "fp8", True), ("0.5.3", "bf16", False),
    ("0.5.4", "bf16", True), ("0.5.4", "nvfp4", True), ("0.5.23", "int8", False), ("0.5.23", "fp16", False),
])
def test_kv_cache_dtypes_by_release(model: Any, key: str, dtype: str, ok: bool) -> None:
    if ok:
        assert plan(model, LLAMA, f"sglang@{key}", 40 * GIB, kv_dtype=dtype).kv_tokens > 0
    else:
        with pytest.raises(InputError, match="--kv-cache-dtype takes") as err:
            plan(model, LLAMA, f"sglang@{key}", 40 * GIB, kv_dtype=dtype)
        assert err.value.arg_names == ("kv_dtype",)


def test_speculative_methods_by_release(model: Any) -> None:
    s = Settings.of(speculative_model="meta-llama/Llama-3.2-1B", speculative_method="draft_model", num_speculative_tokens=3)
    with pytest.raises(InputError, match="takes speculative_method eagle, eagle3, mtp, not draft_model"):
        capacity(LLAMA, engine="sglang@0.5.1", kv_budget_bytes=(40 * GIB,), settings=s)
    assert capacity(LLAMA, engine="sglang@0.5.2", kv_budget_bytes=(40 * GIB,), settings=s).plan.kv_tokens > 0


def test_pp_before_046_is_refused_and_046_sizes_each_stage(model: Any) -> None:
    with pytest.raises(InputError, match="no pipeline parallelism"):
        plan(model, LLAMA, "sglang@0.4.5", (40 * GIB, 40 * GIB), pp=2)
    p = plan(model, LLAMA, "sglang@0.4.6", (40 * GIB, 20 * GIB), pp=2)
    # 16 layers per stage: 65,536 B per token: 655,360 and 327,680; the smaller is shown, each stage named
    assert p.kv_tokens == 327_680 and any("stages ['655,360', '327,680']" in n for n in p.notes)


def test_the_refusal_by_release(model: Any) -> None:
    # a budget below one cell: "Not enough memory" (0.4-0.5.9), naming the fraction from 0.5.10
    s = Settings.of(mem_fraction_static=0.5)
    found = {k: plan(model, LLAMA, f"sglang@{k}", 100, settings=s).refusal.message for k in ("0.5.9", "0.5.10", "0.5.14")}
    assert found["0.5.9"] == "Not enough memory. Please try to increase --mem-fraction-static."
    assert found["0.5.10"] == found["0.5.14"] == f"{found['0.5.9']} Current value: mem_fraction_static=0.5"
    # weights above the fraction (rest ≤ 0): 0.5.14 on says the weights leave nothing
    m = load_model(LLAMA)
    req = Request.of(m, settings=s, max_model_len=8192)
    assert SglangEngine("0.5.13").no_memory(req).message == found["0.5.10"]
    assert SglangEngine("0.5.14").no_memory(req).message.startswith(
        "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5")


def test_kvplan_engines_lists_each_minor_with_its_step() -> None:
    from kvplan.engines.listing import engine_releases

    found = {r.name: r for r in engine_releases(["sglang"])}
    assert list(found) == [f"sglang@{v}" for v in MINORS]  # oldest first, every minor once
    step = found["sglang@0.5.10"].changes[0]
    assert "prefill piecewise CUDA graphs" in step.rule and step.source.startswith("0.5.10.post1 server_args.py:1078")
    assert found["sglang@0.5.5"].changes[0].rule.startswith("no rule kvplan follows changed")
    assert found["sglang@0.5.23"].newest and "sglang@0.5" in found["sglang@0.5.23"].aliases
    trt = [r.name for r in engine_releases(["trtllm"])]
    assert trt == ["trtllm@0.20", "trtllm@1", "trtllm@1.1", "trtllm@1.2"]
