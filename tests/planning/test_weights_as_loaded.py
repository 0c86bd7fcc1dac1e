"""Weights as vLLM loads them (issue #29): the rotary caches per RoPE configuration, AWQ zero points as the
release's kernel keeps them on each GPU, a config's tensors from its model_type's own table at its sizes (no
Llama-shaped guess), and the weights term labelled an estimate where an input is one.

Hand derivations in the comments. The logged figures are "Model loading took" lines of public start-up logs
(source named beside each), compared with every term that line measures (kinds weights and weights_extra).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from kvplan import capacity
from kvplan.config import bundled_index, load_model
from kvplan.config.hf import normalize
from kvplan.config.model import ModelConfig
from kvplan.engines.base import LoadRule, term_bytes
from kvplan.planning.weights import param_count, weights_source
from kvplan.planning.weights.derived import derived_table
from kvplan.planning.weights.loaded import awq_terms
from kvplan.planning.weights.rotary import rope_caches
from kvplan.planning.weights.wna16 import machete_zero_point_bytes

GIB = 2**30
DATA = Path(__file__).resolve().parents[1] / "data"
PHI_2 = DATA / "phi-2.config.json"  # microsoft/phi-2's config.json: search-index file id 32214795158, the dict of
# get_phi2_untrained (it cites huggingface.co/microsoft/phi-2/blob/main/config.json), values unchanged, as JSON
# AutoAWQ's quantization_config (Qwen/Qwen2.5-7B-Instruct-AWQ, Qwen2.5-14B-Instruct-AWQ, Llama-3-70B-Instruct-AWQ)
AWQ = {"bits": 4, "group_size": 128, "modules_to_not_convert": None, "quant_method": "awq", "version": "gemm",
       "zero_point": True}


def _tool() -> Any:
    """tools/weight_tensors.py, the script that records the tables (torch and transformers)."""
    spec = importlib.util.spec_from_file_location("weight_tensors_tool", DATA.parents[1] / "tools" / "weight_tensors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def config(model_id: str, **changes: Any) -> ModelConfig:
    """A bundled config with some keys changed (None removes a key), read as a local file would be."""
    raw = json.loads(bundled_index()[model_id].read_text())
    raw = {k: v for k, v in {**raw, **changes}.items() if v is not None}
    return normalize(raw, model_id=f"{model_id} (changed)", source="config.json")


# Qwen/Qwen2.5-7B-Instruct-AWQ: Qwen2.5-7B-Instruct's config (the same dimensions, 32,768 positions) in fp16 with
# AutoAWQ's quantization_config, as the AWQ repository publishes it.
QWEN25_7B_AWQ = ("Qwen/Qwen2.5-7B-Instruct", {"torch_dtype": "float16", "quantization_config": AWQ})


def loaded_gib(model: ModelConfig | str, engine: str, **options: Any) -> float:
    """The terms "Model loading took" measures: the checkpoint's tensors and what the load adds (weights_extra)."""
    result = capacity(model, engine=engine, **options)
    return term_bytes(tuple(t for t in result.budget_terms if t.kind in ("weights", "weights_extra"))) / GIB


# --------------------------------------------------------------------------------------------- rotary caches


@pytest.mark.parametrize(("model_id", "per_model", "expected"), [
    # Gemma-3 builds two caches (models/gemma3.py:154-169): global layers linear × 8 -> 131,072 × 8 = 1,048,576
    # positions × 256 × 2 B = 536,870,912; sliding layers unscaled 131,072 × 256 × 2 B = 67,108,864
    ("google/gemma-3-4b-it", False, [(1048576, 256, 2), (131072, 256, 2)]),
    # Llama-4: llama3 scaling keeps max_position_embeddings, 10,485,760 × 128 × 2 B = 2,684,354,560 (2.5 GiB)
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", False, [(10485760, 128, 2)]),
    # longrope: short (original 4,096) and long (131,072) caches concatenated, rotary 96
    ("microsoft/Phi-3.5-mini-instruct", False, [(135168, 96, 2)]),
    # YaRN in fp32 (gpt-oss): 4,096 × 32 = 131,072 positions × 64 × 4 B
    ("openai/gpt-oss-20b", False, [(131072, 64, 4)]),
    # DeepSeek YaRN: 4,096 × 40 = 163,840 positions × qk_rope_head_dim 64 × 2 B
    ("deepseek-ai/DeepSeek-V3", False, [(163840, 64, 2)]),
    # M-RoPE: max_position × 4 (mrope.py:238), Qwen2.5-VL keeps × 4 on 0.32 as well
    ("Qwen/Qwen2.5-VL-7B-Instruct", False, [(512000, 128, 2)]),
    ("Qwen/Qwen2.5-VL-7B-Instruct", True, [(512000, 128, 2)]),
    # Qwen3-VL: × 4 up to 0.31, × 1 from 0.32 (models/qwen3_vl.py:1818-1825)
    ("Qwen/Qwen3-VL-32B-Instruct", False, [(1048576, 128, 2)]),
    ("Qwen/Qwen3-VL-32B-Instruct", True, [(262144, 128, 2)]),
    # Qwen3.5: partial_rotary_factor 0.25 inside rope_parameters -> rotary 256 × 0.25 = 64
    ("Qwen/Qwen3.5-9B", False, [(1048576, 64, 2)]),
    ("Qwen/Qwen3.5-9B", True, [(262144, 64, 2)]),
    # Gemma-4: full-attention layers at global_head_dim 512, proportional (rotary = the whole head, gemma4_rope.py);
    # sliding layers 256, default
    ("google/gemma-4-26B-A4B", False, [(262144, 512, 2), (262144, 256, 2)]),
])
def test_rope_caches(model: Any, model_id: str, per_model: bool, expected: list[tuple[int, int, int]]) -> None:
    found = rope_caches(model(model_id), mrope_per_model=per_model)
    assert sorted((c.positions, c.rotary_dim, c.width) for c in found) == sorted(expected)


def test_linear_and_dynamic_scaling_multiply_the_positions() -> None:
    # linear_scaling_rope.py:90, dynamic_ntk_scaling_rope.py:56: 8,192 × 4 = 32,768 positions × 128 × 2 B
    for kind in ("linear", "dynamic"):
        m = config("meta-llama/Llama-3.1-8B", max_position_embeddings=8192,
                   rope_scaling={"rope_type": kind, "factor": 4.0})
        assert [c.bytes for c in rope_caches(m)] == [32768 * 128 * 2]


def test_mrope_factor_is_a_release_rule() -> None:
    # Qwen3-VL-32B: 262,144 × 4 × 128 × 2 B = 268,435,456 on 0.31; × 1 = 67,108,864 on 0.32
    rotary = {e: next(t.bytes for t in capacity("Qwen/Qwen3-VL-32B-Instruct", engine=e, gpu="H200", tp=2,
                                                  max_model_len=32768).budget_terms if t.name == "rotary cos/sin cache")
              for e in ("vllm@0.31", "vllm@0.32")}
    assert rotary == {"vllm@0.31": 268435456, "vllm@0.32": 67108864}


# --------------------------------------------------------------------------------------------- AWQ kernels


def test_machete_zero_points_hand_derived() -> None:
    # Qwen2.5-7B, per layer (out × in/128 groups): q 3,584 × 28 + k, v 512 × 28 each + o 3,584 × 28
    # + gate, up 18,944 × 28 each + down 3,584 × 148 = 1,820,672 groups; × 28 layers = 50,978,816; fp16 zero
    # (16 bits) instead of 4: + 1.5 B each = 76,468,224
    m = config(QWEN25_7B_AWQ[0], **QWEN25_7B_AWQ[1])
    assert machete_zero_point_bytes(m, 1, 0, 28) == 76468224
    # tp 2: every matrix halves (q 1,792, k/v 256 rows; o, down half the groups per row) -> 38,234,112
    assert machete_zero_point_bytes(m, 2, 0, 28) == 38234112
    # pp: the layers of one stage only (14 of 28)
    assert machete_zero_point_bytes(m, 1, 14, 14) == 76468224 // 2


@pytest.mark.parametrize(("engine", "gpu", "expected"), [
    ("vllm@0.18", "H100", None),  # before 0.19 AWQ takes Marlin on every GPU (awq_marlin.py, no kernel choice)
    ("vllm@0.19", "H100", 76468224),  # 0.19 awq_marlin.py:392-405 chooses: Machete on sm90
    ("vllm@0.31", "H200", 76468224),
    ("vllm@0.19", "A100-80G", None),  # sm80: Marlin, zeros kept at 4 bits
    ("vllm@0.19", "B200", None),  # sm100: Machete requires exactly capability 90 (machete.py:35)
])
def test_awq_kernel_by_release_and_gpu(engine: str, gpu: str, expected: int | None) -> None:
    m = config(QWEN25_7B_AWQ[0], **QWEN25_7B_AWQ[1])
    terms = {t.name: t for t in capacity(m, engine=engine, gpu=gpu, max_model_len=4096).budget_terms}
    found = terms.get("AWQ zero points, Machete")
    assert (found.bytes if found else None) == expected
    assert found is None or not found.exact  # the 0.31 H200 log has 0.11 GiB more on this path (pinned below)


def test_awq_kernel_unknown_is_an_estimate() -> None:
    # a Device without a compute capability (the library's own Request; every catalog GPU has one): Marlin assumed
    m = config(QWEN25_7B_AWQ[0], **QWEN25_7B_AWQ[1])
    (unknown,) = awq_terms(m, LoadRule(awq_kernel=None), 1, 0, 28)
    assert unknown.bytes == 0 and not unknown.exact and "compute capability is unknown" in unknown.source
    assert list(awq_terms(m, LoadRule(awq_kernel="marlin"), 1, 0, 28)) == []
    assert list(awq_terms(m, None, 1, 0, 28)) == []  # engines without load rules (SGLang, TensorRT-LLM)


@pytest.mark.parametrize(("model_id", "changes", "engine", "options", "logged"), [
    # vLLM 0.19.0, "Using MarlinLinearKernel for AWQMarlinLinearMethod" (a consumer GPU, not named): "Model loading
    # took 5.2 GiB" (search-index file id 53268049166); any non-sm90 GPU takes Marlin: 5.188 + rotary 0.008
    (*QWEN25_7B_AWQ, "vllm@0.19", {"gpu": "RTX-4090"}, 5.2),
    # vLLM 0.15.1, Qwen2.5-14B-Instruct-AWQ (32,768 positions), Marlin (before 0.19): 9.38 GiB (file id 32564182754)
    ("Qwen/Qwen2.5-14B", {"torch_dtype": "float16", "quantization_config": AWQ, "max_position_embeddings": 32768},
     "vllm@0.15", {"gpu": "RTX-3090"}, 9.38),
    # vLLM 0.16.0, Meta-Llama-3-70B-Instruct-AWQ (Llama 3: 8,192 positions, no rope scaling) at TP 2 on L40S,
    # awq_marlin: 18.55 GiB per rank (file id 10876549642)
    ("meta-llama/Llama-3.1-70B-Instruct", {"torch_dtype": "float16", "quantization_config": AWQ,
                                           "max_position_embeddings": 8192, "rope_scaling": None},
     "vllm@0.16", {"gpu": "L40S", "tp": 2}, 18.55),
])
def test_awq_on_marlin_against_logs(model_id: str, changes: dict[str, Any], engine: str, options: dict[str, Any],
                                    logged: float) -> None:
    found = loaded_gib(config(model_id, **changes), engine, max_model_len=4096, **options)
    assert found == pytest.approx(logged, rel=0.01)


@pytest.mark.xfail(strict=True, reason=(
    "vLLM 0.31.0 on an H200 ('Using MacheteLinearKernel for AutoAWQMarlinLinearMethod', file id 70347757402) logged "
    "5.38 GiB; kvplan 5.267 (-2.1%): the checkpoint 5.188 + rotary 0.008 + Machete's fp16 zero points 0.071. The "
    "same checkpoint on Marlin (0.19, 5.2 GiB) matches to 0.1%; the other 0.11 GiB is not found in 0.31's load path "
    "(auto_awq.py _convert_awq_to_standard_format, machete.py process_weights_after_loading keep no second copy) "
    "and could not be measured (no GPU)"))
def test_awq_on_machete_against_the_0_31_h200_log() -> None:
    m = config(QWEN25_7B_AWQ[0], **QWEN25_7B_AWQ[1])
    assert loaded_gib(m, "vllm@0.31", gpu="H200", max_model_len=4096, gpu_memory_utilization=0.3) == \
        pytest.approx(5.38, rel=0.01)


def test_machete_term_against_the_0_31_log_error_is_pinned() -> None:
    # 5.188162804 + 0.0078125 + 0.071217 = 5.267 GiB: -2.1% of 5.38; a change that moves it re-pins the xfail above
    m = config(QWEN25_7B_AWQ[0], **QWEN25_7B_AWQ[1])
    found = loaded_gib(m, "vllm@0.31", gpu="H200", max_model_len=4096, gpu_memory_utilization=0.3)
    assert 100 * (found - 5.38) / 5.38 == pytest.approx(-2.1, abs=0.05)


# --------------------------------------------------------------------------------------------- other logged runs


@pytest.mark.parametrize(("model_id", "engine", "options", "logged"), [
    # vLLM 0.11.0 (gpu_model_runner.py:2653), RTX 4080 16 GB: "Model loading took 8.5834 GiB" (file id 47625275442);
    # 8.0095 GiB of tensors (vision tower included) + two rotary caches 0.5625 = 8.572 (-0.13%); before 8.07 (-6%)
    ("google/gemma-3-4b-it", "vllm@0.11", {"gpu_memory_bytes": 16 * GIB, "max_model_len": 8192}, 8.5834),
    # As issue #29 quotes a vLLM 0.19 H100 start-up (8.58 GiB; the log itself was not located)
    ("google/gemma-3-4b-it", "vllm@0.19", {"gpu": "H100"}, 8.58),
    # As issue #29 quotes a TP 4 start-up (53.12 GiB; the log itself was not located): 50.60 GiB of tensors per
    # rank + the 2.5 GiB rotary cache of 10,485,760 positions = 53.10 (-0.04%); the issue compared the first alone
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "vllm@0.19", {"gpu": "H100", "tp": 4, "max_model_len": 32768},
     53.12),
])
def test_weights_as_loaded_against_logged_figures(model_id: str, engine: str, options: dict[str, Any],
                                                  logged: float) -> None:
    assert loaded_gib(model_id, engine, **options) == pytest.approx(logged, rel=0.01)


# --------------------------------------------------------------------------------------------- derived tables


def test_phi_2_from_its_own_model_type_not_a_llama_formula() -> None:
    # phi-2 (no table of its own: type:phi's table is phi-1's sizes): embed + lm_head (with its bias) 51,200 × 2,560
    # × 2 + 51,200; per layer q/k/v/dense 4 × (2,560² + 2,560) + fc1 10,240 × 2,560 + 10,240 + fc2 2,560 × 10,240
    # + 2,560 + one LayerNorm 2 × 2,560 = 78,671,360; × 32 + final LayerNorm 5,120 = 2,779,683,840 parameters
    m = load_model(str(PHI_2))
    count = param_count(m)
    assert count.total == 2779683840 and not count.estimate
    assert count.source.startswith("tensor table of type:phi at this config's sizes")
    assert weights_source(m)[0]  # exact: the class's own tensors at the config's sizes


def test_phi_2_against_its_logged_weights() -> None:
    # 2,779,683,840 × 2 B (fp16) = 5.1776 GiB + rotary 2,048 × 32 × 2 B: -0.24% of the 5.19 GiB issue #29 quotes
    # for a vLLM start-up from a local phi-2 folder (the log itself was not located); the Llama-shaped formula
    # gave 6.74 (+30%: a gated third MLP matrix phi-2 does not have)
    assert loaded_gib(str(PHI_2), "vllm@0.19", gpu="A100-80G") == pytest.approx(5.19, rel=0.01)


@pytest.mark.parametrize("changes", [
    {},  # phi-2 itself
    {"num_key_value_heads": 8, "intermediate_size": 6144, "vocab_size": 50304, "num_hidden_layers": 5},
])
def test_a_derived_table_equals_a_fresh_meta_device_build(changes: dict[str, Any]) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    raw = {**json.loads(PHI_2.read_text()), **changes}
    t = _tool()
    t._quiet()
    built = t.table("phi-2", dict(raw))
    derived = derived_table(raw)
    assert not isinstance(built, str) and derived is not None
    assert derived.num_layers == built["num_layers"] and derived.tied == built["tied"]
    assert [(r.pattern, r.shape, r.count, r.layers) for r in derived.rows] == \
        [(p, tuple(s), c, tuple(range(built["num_layers"])) if layers else ()) for p, _, _, s, c, layers, _, _
         in built["tensors"]]


def test_a_llama_with_an_omitted_head_dim_follows_its_sources() -> None:
    # head_dim left out: LlamaConfig computes hidden / heads = 3,072 / 16 = 192; q rows 16 × 192 = 3,072,
    # k/v rows 4 × 192 = 768 (scaling.json "computed": head_dim ~ hidden_size / num_attention_heads)
    raw = {"model_type": "llama", "hidden_size": 3072, "num_attention_heads": 16, "num_key_value_heads": 4,
           "intermediate_size": 8192, "num_hidden_layers": 3, "vocab_size": 32000}
    table = derived_table(raw)
    assert table is not None
    shapes = {r.pattern.rsplit(".", 2)[-2]: r.shape for r in table.rows}
    assert shapes["q_proj"] == (3072, 3072) and shapes["k_proj"] == (768, 3072) and table.num_layers == 3


@pytest.mark.parametrize("changes", [
    {"qk_layernorm": True},  # adds q/k LayerNorms: not a change of sizes
    {"tie_word_embeddings": True},  # drops the lm_head
    {"architectures": ["PhiForSequenceClassification"]},  # another class than the table's
])
def test_no_derived_table_when_the_structure_differs(changes: dict[str, Any]) -> None:
    raw = {**json.loads(PHI_2.read_text()), **changes}
    assert derived_table(raw) is None


def test_a_getattr_key_the_default_does_not_list_stops_the_derivation() -> None:
    # Qwen3-MoE reads head_dim by getattr (hidden / heads when absent): a config naming it is not scaled
    raw = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_attention_heads": 32, "head_dim": 128}
    assert derived_table(raw) is None


# --------------------------------------------------------------------------------------------- estimate labels


@pytest.mark.parametrize(("changes", "exact", "note"), [
    ({"quantization_config": AWQ}, True, None),
    ({"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True,
                              "desc_act": False}}, False, "g_idx"),
    ({"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True,
                              "bnb_4bit_use_double_quant": True}}, False, "absmax"),
])
def test_the_weights_term_is_exact_only_when_the_format_is_counted(changes: dict[str, Any], exact: bool,
                                                                   note: str | None) -> None:
    m = config("Qwen/Qwen2.5-7B-Instruct", torch_dtype="float16", **changes)
    weights = next(t for t in capacity(m, engine="vllm", gpu="H100").budget_terms if t.kind == "weights")
    assert weights.exact is exact
    assert note is None or note in weights.source


def test_a_config_no_table_or_type_explains_stays_an_estimate() -> None:
    # a phi config with q/k LayerNorms: no table, no derived table -> kvplan's Llama-shaped formula, not exact
    raw = {**json.loads(PHI_2.read_text()), "qk_layernorm": True}
    m = normalize(raw, model_id="phi-2-qk", source="config.json")
    assert not weights_source(m)[0] and param_count(m).estimate
