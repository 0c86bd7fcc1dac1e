"""Every vLLM minor from 0.8 to 0.33 as a row, and the budget each row gives, term by term.

The rules are the releases' own code, read by diffing extracted wheels (each row's ``changes`` names the
file:line of the first release that has the rule). Expected sizes
carry their derivation; GiB = 2**30. Vocabularies and widths: Llama-3.1-8B hidden 4,096, vocab 128,256;
Qwen3-8B hidden 4,096, vocab 151,936; an H100 has 132 SMs.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from kvplan.engines import REGISTRY, VLLM_RELEASES, get_engine
from kvplan.engines.version import Version
from kvplan.engines.vllm.rows import MAMBA_ALL_MODE
from kvplan.engines.vllm.rows_late import NEWEST, RELEASES, V1_ROWS
from kvplan.errors import InputError
from kvplan.planning.capacity import capacity

GIB = 2**30
H100_BYTES = 85_018_542_080  # the catalog's 79.18 GiB


def test_every_minor_from_0_8_to_the_newest_is_a_row() -> None:
    # the newest is the last V1 row, and the bare `vllm` plans with it; every minor from 0.8 up to it has a row
    minors = [f"0.{n}" for n in range(8, Version.parse(NEWEST).parts[1] + 1)]
    assert NEWEST == V1_ROWS[-1].key == REGISTRY["vllm"][2] and len(minors) >= 26
    assert set(minors) <= set(RELEASES)
    assert set(VLLM_RELEASES) == set(RELEASES)  # the registry's list is the rows'


@pytest.mark.parametrize(("name", "key"), [
    ("vllm@0.19.1", "0.19"), ("vllm@0.19.1rc1.dev5", "0.19"), ("vllm@v0.24.0", "0.24"), ("vllm@0.14", "0.14"),
    ("vllm@0.9.0", "0.9.0"), ("vllm@0.9.1", "0.9"), ("vllm@0.9.2", "0.9"), ("vllm@0.8.0", "0.8.0"),
    ("vllm@0.8.4", "0.8"), ("vllm@0.10.2", "0.10"), ("vllm@0.33.0+cu128", "0.33"), ("vllm@0.26.0rc2", "0.26"),
])
def test_versions_map_to_their_minor(name: str, key: str) -> None:
    assert get_engine(name).release.key == key  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["vllm@0.34", "vllm@0.5.4", "vllm@1.0"])
def test_a_release_kvplan_has_no_row_for_is_refused_naming_the_known_ones(name: str) -> None:
    with pytest.raises(InputError, match=r"unknown engine .*vllm@0\.19.*vllm@0\.14"):
        get_engine(name)


@pytest.mark.parametrize("row", V1_ROWS, ids=lambda r: r.key)
def test_every_v1_row_cites_its_release_code(row: Any) -> None:
    assert re.match(r"\d+\.\d+\.\d+(\.\d+)? v1/worker/gpu_worker\.py determine_available_memory:\d+-\d+", row.source)
    assert row.changes and all(re.search(r"\.py:\d+", c.source) and re.match(r"\d+\.\d+\.\d+(\.\d+)? ", c.source)
                               for c in row.changes)  # each rule: the release read and a file:line in it


# (first release that has the rule, the rule's value before it, from it)
RULES = [
    ("gpu_memory_utilization", "0.20", 0.9, 0.92),  # 0.20.0 config/cache.py:66
    ("usable_rounding", "0.14", "floor", "ceil"),  # 0.14.0 v1/worker/utils.py:253-272
    ("graph_estimate", "0.18", "none", "logged"), ("graph_estimate", "0.20", "logged", "subtracted"),
    ("tp_comm", "0.11", "all", "lazy"), ("tp_comm", "0.26", "lazy", "none"),
    ("sampler", "0.17", "sort", "triton"), ("sampler", "0.21", "triton", "flashinfer+triton"),
    ("legacy_token_log", "0.21", True, False), ("one_line_log", "0.28", False, True),
    ("async_scheduling", "0.14", False, True), ("mxfp4_backend", "0.12", "marlin", "triton"),
    ("persistent_sampler_buffers", "0.27", False, True), ("refusal_null_block", "0.29", False, True),
    ("in_flight", "0.26", "one", "batches"),
    ("mamba_align_mode", "0.15", False, True),  # 0.15.0 model_executor/models/config.py:332-338
    ("hybrid_prefix_caching", "0.28", False, True),  # 0.28.0 engine/arg_utils.py:2650, config/model.py:2072-2074
    ("mamba_all_mode_architectures", "0.12", frozenset(), MAMBA_ALL_MODE),  # 0.12.0 models/config.py:292-312
    ("mamba_all_mode_architectures", "0.28", MAMBA_ALL_MODE, frozenset()),  # 0.28.0 models/config.py:602-604
    ("hybrid_block_legacy", "0.29", True, False),  # 0.29.0 platforms/interface.py:883-916
    ("mamba_checkpoint_mixers", "0.32", frozenset(), frozenset({"mamba2"})),  # 0.32.0 mamba_mixer2.py:1100-1108
    ("mamba_checkpoint_mixers", "0.33", frozenset({"mamba2"}), frozenset({"mamba2", "gdn"})),
    ("start_check", "0.14", "layers", "model_first_group"),  # 0.14.0 v1/core/kv_cache_utils.py:1514-1523
    ("start_check", "0.17", "model_first_group", "first_group"),  # 0.17.0 v1/core/kv_cache_utils.py:1572-1577
    ("start_check", "0.19", "first_group", "groups"),  # 0.19.0 v1/core/kv_cache_utils.py:1358-1367
    ("block_size_from_groups", "0.18", False, True),  # 0.18.0 v1/engine/core.py:271-275
    ("mla_block_forced", "0.18", 64, None), ("group_size_ratio", "0.12", None, 1.25),
    ("group_size_ratio", "0.18", 1.25, 1.5), ("absolute_peak", "0.9", True, False),
]


@pytest.mark.parametrize(("field", "first", "before", "after"), RULES, ids=[f"{r[0]}-{r[1]}" for r in RULES])
def test_each_rule_starts_at_its_first_release(field: str, first: str, before: Any, after: Any) -> None:
    keys = [r.key for r in V1_ROWS]
    i = keys.index(first)
    assert getattr(V1_ROWS[i - 1], field) == before and getattr(V1_ROWS[i], field) == after


def activation(t: dict[str, Any]) -> Any:
    return next(v for k, v in t.items() if k.startswith("activation peak"))


def terms(name: str, engine: str, **kw: Any) -> dict[str, Any]:
    r = capacity(name, engine=engine, gpu=kw.pop("gpu", "H100"), max_model_len=kw.pop("max_model_len", 8192), **kw)
    return {t.name: t for t in r.budget_terms}


def test_0_19_terms_of_the_issue_command() -> None:
    """Llama-3.1-8B, H100, vllm@0.19, u 0.95, 8,192 tokens: the sampler is 0.17's Triton top-k/top-p over
    min(1,024 seqs, 8,192 tokens) rows, no CUDA-graph term (estimated but not subtracted before 0.20)."""
    r = capacity("meta-llama/Llama-3.1-8B", engine="vllm@0.19", gpu="H100", gpu_memory_utilization=0.95,
                 max_model_len=8192)
    t = {t.name: t for t in r.budget_terms}
    # full hidden 8,192 × 4,096 × 2 + rows and rand_like 2 × 1,024 × 4,096 × 2 + 1,024 × 128,256 × 14 B
    # + the kept Triton rows min(132 SMs, 1,024) × 128,256 × 4 B = 1,990,283,264 B (1.85 GiB; logged 1.89)
    expected = 8192 * 4096 * 2 + 2 * 1024 * 4096 * 2 + 1024 * 128256 * 14 + 132 * 128256 * 4
    assert t["activation peak (sampler)"].bytes == expected
    assert "CUDA graphs" not in t and "non-torch growth after the snapshot" in t
    assert r.kv_budget_bytes_per_gpu[0] == math.ceil(H100_BYTES * 0.95) - sum(x.bytes for x in r.budget_terms)


@pytest.mark.parametrize(("engine", "per_logit", "kept"), [
    ("vllm@0.16", 38, 0),  # sort
    ("vllm@0.17", 14, 132),  # Triton: bf16 2 + fp32 4 + softmax 4 + noise 4, and 132 kept fp32 rows
    ("vllm@0.21", 15, 132),  # two passes: the FlashInfer pass (15) is the larger
])
def test_sampler_path_by_release(engine: str, per_logit: int, kept: int) -> None:
    t = terms("meta-llama/Llama-3.1-8B", engine)
    expected = 8192 * 4096 * 2 + 2 * 1024 * 4096 * 2 + 1024 * 128256 * per_logit + kept * 128256 * 4
    assert t["activation peak (sampler)"].bytes == expected


def test_graph_estimate_subtracted_from_0_20() -> None:
    assert "CUDA graphs" not in terms("meta-llama/Llama-3.1-8B", "vllm@0.19")
    assert "CUDA graphs" in terms("meta-llama/Llama-3.1-8B", "vllm@0.20")
    assert "CUDA graphs" not in terms("meta-llama/Llama-3.1-8B", "vllm@0.20", enforce_eager=True)


def test_model_runner_v2_by_release_and_model() -> None:
    """0.22: Qwen3ForCausalLM (dense) on MRV2: its default sampler pass (fp32 + Gumbel, 6 B/logit, one row copy),
    its penalty state not counted (0.27 counts it), its graph estimate 0 (0.29 on); Llama on V1 until 0.23."""
    q22 = terms("Qwen/Qwen3-8B", "vllm@0.22")
    # full hidden 8,192 × 4,096 × 2 + 1,024 rows × 4,096 × 2 + 1,024 × 151,936 × 6
    assert q22["activation peak (sampler)"].bytes == 8192 * 4096 * 2 + 1024 * 4096 * 2 + 1024 * 151936 * 6
    assert "persistent sampler buffers" not in q22 and "CUDA graphs" not in q22
    assert "persistent sampler buffers" in terms("Qwen/Qwen3-8B", "vllm@0.27")
    assert "CUDA graphs" in terms("Qwen/Qwen3-8B", "vllm@0.29")
    llama22, llama23 = terms("meta-llama/Llama-3.1-8B", "vllm@0.22"), terms("meta-llama/Llama-3.1-8B", "vllm@0.23")
    assert "flashinfer+triton" in activation(llama22).source and "gumbel" in activation(llama23).source


def test_moe_models_stay_on_v1_until_0_29_unless_listed() -> None:
    assert "(flashinfer+triton)" in activation(terms("Qwen/Qwen3-30B-A3B", "vllm@0.28")).source
    assert "(bf16)" in activation(terms("Qwen/Qwen3-30B-A3B", "vllm@0.29")).source  # MRV2's 0.28-0.32 pass


def test_scheduler_tiers_by_release() -> None:
    def defaults(engine: str, gpu: str) -> tuple[int | None, int | None]:
        s = capacity("meta-llama/Llama-3.1-8B", engine=engine, gpu=gpu, max_model_len=4096).settings
        assert s is not None
        return s.max_num_batched_tokens, s.max_num_seqs

    assert defaults("vllm@0.8.0", "L4") == (2048, 1024)  # 0.8.0: 1024 sequences on every GPU
    assert defaults("vllm@0.8.0", "H100") == (8192, 1024)  # the tier by device name
    assert defaults("vllm@0.8", "A100-80G") == (8192, 1024)  # 0.8.5: by memory, A100 included
    assert defaults("vllm@0.9.0", "A100-80G") == (2048, 256)  # 0.9.0 excludes the A100
    assert defaults("vllm@0.27", "B200") == (8192, 1024) and defaults("vllm@0.28", "B200") == (16384, 1024)


def test_tp_communicator_by_release_and_gpu() -> None:
    """0.10 (snapshot before the distributed init): 1.33 GiB per TP group on an NVSwitch GPU, 0.13 elsewhere;
    0.11-0.25: the profile's TP communicator, 2.13 on an NVSwitch GPU; 0.26: none."""
    assert terms("meta-llama/Llama-3.1-8B", "vllm@0.10", tp=2)["NCCL buffers (1 process group(s))"].bytes == \
        int(1.33 * GIB)
    assert terms("meta-llama/Llama-3.1-8B", "vllm@0.10", tp=2, gpu="L40S")["NCCL buffers (1 process group(s))"].bytes \
        == int(0.13 * GIB)
    assert terms("meta-llama/Llama-3.1-8B", "vllm@0.24", tp=2)["TP communicator created in the profile run"].bytes \
        == int(2.13 * GIB)
    assert terms("meta-llama/Llama-3.1-8B", "vllm@0.24", tp=2, gpu="A100-80G")[
        "TP communicator created in the profile run"].bytes == int(0.13 * GIB)


@pytest.mark.parametrize(("engine", "block"), [
    ("vllm@0.11", 64), ("vllm@0.17", 64), ("vllm@0.18", 16),  # FlashMLA's 64 forced on Hopper before 0.18
])
def test_hopper_mla_block_by_release(engine: str, block: int) -> None:
    r = capacity("deepseek-ai/DeepSeek-V2-Lite", engine=engine, gpu="H100", max_model_len=4096)
    assert r.plan.block_size == block


def test_mla_block_multiples_kept_from_0_12() -> None:
    given = {e: capacity("deepseek-ai/DeepSeek-V2-Lite", engine=e, gpu="H100", max_model_len=4096,
                         block_size=128).plan.block_size for e in ("vllm@0.11", "vllm@0.12")}
    assert given == {"vllm@0.11": 64, "vllm@0.12": 128}  # 0.11 platforms/cuda.py:161-167; 0.12 :150-252


def test_token_line_by_release() -> None:
    """gpt-oss-20b, 40 GiB: 0.20 prints num_blocks // 2 groups × 16 (two lines); 0.21 int(concurrency × len);
    0.28 one line."""
    lines = {e: capacity("openai/gpt-oss-20b", engine=e, kv_budget_bytes=40 * GIB, max_model_len=131072).plan.log_lines
             for e in ("vllm@0.20", "vllm@0.21", "vllm@0.28")}
    assert len(lines["vllm@0.20"]) == 2 and len(lines["vllm@0.21"]) == 2 and len(lines["vllm@0.28"]) == 1
    blocks = 40 * GIB // (12 * 32768)  # 24 layers in 2 groups of 12: one block id = 12 pages of 32,768 B
    assert lines["vllm@0.20"][0] == f"GPU KV cache size: {blocks // 2 * 16:,} tokens"
    assert lines["vllm@0.21"][0] != lines["vllm@0.20"][0]
