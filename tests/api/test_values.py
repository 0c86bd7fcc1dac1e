"""The public functions take the CLI's names and value forms, and refuse a wrong type with an InputError naming the
keyword and the type it takes (issue 32: each call below ended in an AttributeError or TypeError from inside)."""

from __future__ import annotations

from typing import Any

import pytest

import kvplan

QWEN, LLAMA = "Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B"

WRONG = [  # (call, the keyword named, words of the type it takes)
    pytest.param(lambda: kvplan.capacity(None, gpu="H100"), "model", "a model id (str)", id="capacity-None"),
    pytest.param(lambda: kvplan.capacity(123, gpu="H100"), "model", "got int 123", id="capacity-int"),
    pytest.param(lambda: kvplan.capacity({"model_type": "llama"}, gpu="H100"), "model", "got dict", id="capacity-dict"),
    pytest.param(lambda: kvplan.kv_cache(None), "model", "a model id (str)", id="kv_cache-None"),
    pytest.param(lambda: kvplan.capacity(QWEN, gpu=["H100", "H200"]), "gpu", "must be a str, got list",
                 id="gpu-list"),
    pytest.param(lambda: kvplan.sweep([LLAMA], max_model_len=None), "max_model_len", "an int, a list",
                 id="sweep-length-None"),
    pytest.param(lambda: kvplan.capacity(QWEN, tp=2.5), "tp", "an int", id="tp-float"),
    pytest.param(lambda: kvplan.capacity(QWEN, tp="two"), "tp", "an int", id="tp-text"),
    pytest.param(lambda: kvplan.kv_cache(QWEN, max_model_len=[4096]), "max_model_len", "token count",
                 id="length-list"),
    pytest.param(lambda: kvplan.capacity(QWEN, gpu_memory_bytes=80.5), "gpu_memory_bytes", "a size like",
                 id="memory-float"),
    pytest.param(lambda: kvplan.capacity(QWEN, gpu_memory_utilization="most"), "gpu_memory_utilization",
                 "a float", id="utilization-text"),
    pytest.param(lambda: kvplan.capacity(QWEN, enforce_eager="maybe"), "enforce_eager", "a bool", id="eager-text"),
    pytest.param(lambda: kvplan.capacity_all(QWEN, engine=[1, 2]), "engine", "a list of str", id="engines-ints"),
    pytest.param(lambda: kvplan.fit(QWEN, max_model_len="32k", prices=3.5), "prices", "a mapping",
                 id="prices-float"),
    pytest.param(lambda: kvplan.reconcile(None), "log", "the log's text", id="reconcile-None"),
]


@pytest.mark.parametrize(("call", "keyword", "expected"), WRONG)
def test_a_wrong_type_is_an_input_error_naming_the_keyword(call: Any, keyword: str, expected: str) -> None:
    with pytest.raises(kvplan.InputError) as refused:
        call()
    assert keyword in refused.value.arg_names and str(refused.value).startswith(keyword), str(refused.value)
    assert expected in str(refused.value)


def test_a_typo_names_the_closest_keyword() -> None:
    with pytest.raises(kvplan.InputError, match="capacity\\(\\) takes no keyword 'tensr_parallel_size'; did you "
                                                "mean 'tensor_parallel_size'"):
        kvplan.capacity(QWEN, tensr_parallel_size=2)


def test_a_keyword_given_twice_is_refused() -> None:
    with pytest.raises(kvplan.InputError, match="tp given twice"):
        kvplan.capacity(QWEN, tp=2, tensor_parallel_size=2)


def test_the_issue_example_works() -> None:
    asked = kvplan.capacity("Qwen/Qwen3-8B", gpu="H100", tensor_parallel_size=2, max_model_len="32k")
    python = kvplan.capacity("Qwen/Qwen3-8B", gpu="H100", tp=2, max_model_len=32768)
    assert (asked.tp, asked.max_model_len) == (2, 32768)
    assert asked.plan.kv_tokens == python.plan.kv_tokens > 0


CLI_FORMS = [  # (the CLI's form, the Python value): the same answer
    pytest.param({"kv_budget": "20GiB"}, {"kv_budget_bytes": 20 * 2**30}, id="kv-budget"),
    pytest.param({"gpu_mem": "79GiB"}, {"gpu_memory_bytes": 79 * 2**30}, id="gpu-mem"),
    pytest.param({"kv_cache_dtype": "fp8"}, {"kv_dtype": "fp8"}, id="kv-cache-dtype"),
    pytest.param({"tp": "2", "max_model_len": "8k"}, {"tp": 2, "max_model_len": 8192}, id="text-numbers"),
    pytest.param({"gpu_memory_utilization": "0.8"}, {"gpu_memory_utilization": 0.8}, id="fraction-text"),
    pytest.param({"enforce_eager": "true"}, {"enforce_eager": True}, id="switch-text"),
    pytest.param({"cpu_offload_gb": 4}, {"cpu_offload_bytes": 4 * 2**30}, id="cpu-offload-gb"),
    pytest.param({"cpu_offload_bytes": "4"}, {"cpu_offload_bytes": 4 * 2**30}, id="cpu-offload-bare-gib"),
    pytest.param({"context_length": "4k", "tp_size": 2}, {"max_model_len": 4096, "tp": 2}, id="sglang-names"),
]


@pytest.mark.parametrize(("cli", "python"), CLI_FORMS)
def test_the_cli_forms_give_the_python_answer(cli: dict[str, Any], python: dict[str, Any]) -> None:
    one, other = kvplan.capacity(QWEN, gpu="H100", **cli), kvplan.capacity(QWEN, gpu="H100", **python)
    assert one.plan == other.plan and one.kv_budget_bytes_per_gpu == other.kv_budget_bytes_per_gpu


def test_capacity_all_takes_all_and_lists() -> None:
    every = kvplan.capacity_all(QWEN, gpu="H100", engine="all")
    from kvplan.engines import ENGINE_NAMES

    assert [r.engine.split("@")[0] for r in every] == [e.split("@")[0] for e in ENGINE_NAMES]
    two = kvplan.capacity_all(QWEN, gpu="H100", engine="vllm,sglang", kv_dtype=["auto", "fp8"])
    assert len(two) == 4
    assert two[0].plan.kv_tokens == kvplan.capacity(QWEN, gpu="H100").plan.kv_tokens


def test_one_engine_only_in_capacity() -> None:
    with pytest.raises(kvplan.InputError, match="capacity_all"):
        kvplan.capacity(QWEN, engine="vllm,sglang")


def test_a_model_id_alone_is_one_model_of_a_sweep() -> None:
    """It used to iterate the characters of the id ("unknown model 'm'")."""
    one = kvplan.sweep(LLAMA, max_model_len=4096)
    assert [layout.model.model_id for layout in one.layouts] == [LLAMA]


def test_a_sweep_axis_is_one_value_a_list_or_the_cli_text() -> None:
    assert kvplan.sweep([LLAMA], max_model_lens=4096).max_model_lens == (4096,)  # used to be a TypeError
    assert kvplan.sweep([LLAMA], max_model_len="4k..16k").max_model_lens == (4096, 8192, 16384)
    listed = kvplan.sweep([LLAMA], max_model_len=[4096], tp="1,2", batch=[1, 8])
    assert {(r["tp"], r["batch"]) for r in listed.dicts()} == {(1, 1), (1, 8), (2, 1), (2, 8)}


def test_fit_takes_the_gpus_as_text() -> None:
    text = kvplan.fit(QWEN, gpu="H100,L40S", max_model_len="32k", concurrency=16)
    python = kvplan.fit(QWEN, gpu=["H100", "L40S"], max_model_len=32768, batch=16)
    assert text.best == python.best and text.verdict == "fits"


def test_a_verdict_and_an_exception_for_scripts() -> None:
    starts = kvplan.capacity(QWEN, gpu="H100")
    assert (starts.verdict, starts.raise_for_refusal()) == ("starts", starts)
    # Llama-3.1-70B in bf16 is 131 GiB of weights: no room for a cache on one 80 GB H100
    refuses = kvplan.capacity("meta-llama/Llama-3.1-70B", gpu="H100")
    assert refuses.verdict == "refuses" and refuses.refusal is not None
    with pytest.raises(kvplan.Refused) as refused:
        refuses.raise_for_refusal()
    assert refused.value.result is refuses and refused.value.exit_code == 1
    assert isinstance(refused.value, kvplan.CapacityError)


def test_warnings_are_the_warning_notes() -> None:
    long = kvplan.kv_cache(LLAMA, max_model_len=10**6)
    assert any("exceeds the model's max length" in w for w in long.warnings)
    assert all(not w.startswith("warning:") for w in long.warnings)


def test_a_request_keeps_its_values_under_default_keywords() -> None:
    asked = kvplan.CapacityRequest(model=kvplan.load_model(QWEN), cache=kvplan.CacheRequest(tp=2))
    assert kvplan.capacity(asked, gpu="H100").tp == 2
    assert kvplan.capacity(asked, gpu="H100", tp=4).tp == 4


def test_diff_takes_the_cli_forms() -> None:
    from kvplan.workflows.diff import diff as sides

    typed = kvplan.diff(QWEN, engine="vllm@0.25,vllm@0.29", gpu="H100", max_model_len="32k")
    asked = kvplan.CapacityRequest(model=kvplan.load_model(QWEN), cache=kvplan.CacheRequest(max_model_len=32768),
                                   memory=kvplan.Memory(gpu="H100"))
    plain = sides(asked, engines=("vllm@0.25", "vllm@0.29"))
    assert (typed.a.plan, typed.b.plan) == (plain.a.plan, plain.b.plan)
    with pytest.raises(kvplan.InputError, match="diff compares two setups"):
        kvplan.diff(QWEN, gpu="H100")


def test_reconcile_stays_the_function_after_its_package_is_imported() -> None:
    import subprocess
    import sys

    code = ("import kvplan.reconcile.parse, kvplan\n"  # Python binds kvplan.reconcile to the subpackage here
            "assert kvplan.reconcile.__module__ == 'kvplan.api.workflows', kvplan.reconcile")
    subprocess.run([sys.executable, "-c", code], check=True)
