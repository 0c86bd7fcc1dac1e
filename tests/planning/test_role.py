"""`capacity --role prefill|decode`: one instance of a disaggregated deployment, its transfer and its launch command.

Qwen3-8B at tp 2 (36 layers, 4 of 8 KV heads per rank × 128 × K,V × 2 B): 73,728 B per token per rank; a vLLM block
of 16 tokens holds 16 × 4 × 128 × 2 B = 16,384 B of K (or V) per layer. Rules: vLLM 0.25.0 nixl/base_worker.py:1115-1134
(one region per layer, K and V apart; num_descs = regions × blocks); SGLang 0.5.8 disaggregation/decode.py:496-499
(prompt + --num-reserved-decode-tokens 512).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvplan.engines import Settings
from kvplan.errors import InputError
from kvplan.planning.capacity import capacity

GIB = 2**30


def role(engine: str, name: str) -> Any:
    return capacity("Qwen/Qwen3-8B", engine=engine, kv_budget_bytes=(20 * GIB,), tp=2, max_model_len=32768,
                    settings=Settings.of(role=name))


def test_transfer_bytes_and_descriptors_per_request() -> None:
    r = role("vllm", "prefill").extras.role
    # 32,768 tokens × 73,728 B = 2,415,919,104 B per rank, × 2 ranks
    assert (r.transfer_bytes_per_request_per_rank, r.transfer_bytes_per_request) == (2_415_919_104, 4_831_838_208)
    # 36 layers × 2 (K, V) × ceil(32,768 / block): 147,456 at 16; 36,864 at 64 (a quarter)
    assert r.descriptors_per_request_per_rank == {16: 147_456, 32: 73_728, 64: 36_864, 128: 18_432}
    assert r.descriptor_bytes == 16_384 and r.transfer == "NixlConnector" and r.reserve_tokens_per_request == 0


def test_sglang_decode_holds_back_its_reserve() -> None:
    decode, prefill = role("sglang", "decode"), role("sglang", "prefill")
    assert decode.plan.kv_tokens == prefill.plan.kv_tokens == 291_271  # 20 GiB // 73,728 (test_host_tier.py)
    assert decode.extras.role.reserve_tokens_per_request == 512
    assert decode.extras.role.requests_at_max_len == pytest.approx(291_271 / (32_768 + 512))
    assert prefill.extras.role.requests_at_max_len == pytest.approx(291_271 / 32_768)


@pytest.mark.parametrize(("engine", "name", "flag"), [
    pytest.param("vllm", "prefill", ["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'],
                 id="vllm-prefill"),
    pytest.param("vllm", "decode", ["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'],
                 id="vllm-decode"),
    pytest.param("sglang", "prefill", ["--disaggregation-mode", "prefill"], id="sglang-prefill"),
    pytest.param("sglang", "decode", ["--disaggregation-mode", "decode"], id="sglang-decode"),
])
def test_each_role_command_pasted_back_gives_the_same_plan(run_cli: Any, engine: str, name: str,
                                                           flag: list[str]) -> None:
    args = ("capacity", "Qwen/Qwen3-8B", "--engine", engine, "--gpu", "H100", "--tp", "2", "--max-model-len", "32k",
            "--role", name, "--json")
    code, out, err = run_cli(*args)
    assert code == 0, err
    first = json.loads(out)
    written = first["command"].split(" ")
    assert " ".join(flag) in " ".join(written).replace("'", "")
    import shlex

    code, out, err = run_cli("capacity", "--gpu", "H100", "--json", "--", *shlex.split(first["command"]))
    assert code == 0, err
    again = json.loads(out)
    assert again["role"] == first["role"] and again["kv_tokens"] == first["kv_tokens"]
    assert again["command"] == first["command"]


def test_an_engine_without_a_transfer_refuses_a_role() -> None:
    with pytest.raises(InputError) as err:
        role("trtllm", "decode")
    assert err.value.arg_names == ("role",)


def test_an_unknown_role_is_bad_input() -> None:
    with pytest.raises(InputError) as err:
        Settings.of(role="both")
    assert err.value.arg_names == ("role",)
