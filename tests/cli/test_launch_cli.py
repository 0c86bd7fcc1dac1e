"""`kvplan capacity -- <launch command>` and the command every answer carries (issue 24's done-when checks)."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

SAME = ("engine_version", "gpu_memory_bytes", "parallel", "kv_dtype", "weights_bytes_per_gpu", "kv_budget_bytes_per_gpu",
        "block_size", "page_bytes", "num_blocks", "kv_tokens", "max_model_len", "max_concurrency",
        "requests_at_max_model_len", "refusal", "command", "flags", "layout")


def _json(run_cli: Any, *args: str) -> dict[str, Any]:
    code, out, err = run_cli("capacity", *args)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.mark.parametrize(("plain", "command", "no_effect"), [
    (("Qwen/Qwen3-32B", "--tp", "2", "--max-model-len", "32768", "--max-num-seqs", "256"),
     "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 2 --max-model-len 32768 --enable-prefix-caching "
     "--max-num-seqs 256", "no effect on memory (vLLM 0.33.0): --enable-prefix-caching"),
    (("Qwen/Qwen3-32B", "--engine", "sglang", "--tp", "2", "--max-model-len", "32768", "--mem-fraction-static", "0.85"),
     "python -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp-size 2 --context-length 32768 "
     "--mem-fraction-static 0.85 --host 0.0.0.0 --port 30000 --enable-metrics",
     "no effect on memory (SGLang 0.5.23): --host, --port, --enable-metrics"),
    (("Qwen/Qwen3-32B", "--engine", "trtllm", "--tp", "2", "--max-model-len", "32768", "--max-num-seqs", "64"),
     "trtllm-serve Qwen/Qwen3-32B --tp_size 2 --max_seq_len 32768 --max_batch_size 64 --host 0.0.0.0 "
     "--port 8000", "no effect on memory (trtllm-serve snapshot-00209af): --host, --port"),
])
def test_a_launch_command_gives_the_plain_forms_numbers(run_cli: Any, plain: tuple[str, ...], command: str,
                                                       no_effect: str) -> None:
    by_options = _json(run_cli, *plain, "--gpu", "H100", "--json")
    by_command = _json(run_cli, "--gpu", "H100", "--json", "--", *shlex.split(command))
    assert {k: by_command[k] for k in SAME} == {k: by_options[k] for k in SAME}
    assert by_command["notes"][0] == no_effect and no_effect not in by_options["notes"]


def test_the_command_out_pasted_back_is_the_same_answer(run_cli: Any) -> None:
    first = _json(run_cli, "Qwen/Qwen3-8B", "--gpu", "L40S", "--engine", "vllm@0.19", "--max-model-len", "16k",
                  "--kv-cache-dtype", "fp8", "--json")
    assert first["command"] == ("vllm serve Qwen/Qwen3-8B --tensor-parallel-size 1 --max-model-len 16384 "
                                "--max-num-seqs 256 --gpu-memory-utilization 0.9 --kv-cache-dtype fp8")
    again = _json(run_cli, "--gpu", "L40S", "--engine", "vllm@0.19", "--json", "--", first["command"])
    assert {k: again[k] for k in SAME} == {k: first[k] for k in SAME}
    assert first["layout"] == {"tp": 1, "pp": 1, "dp": 1, "ep": 1, "dcp": 1, "nodes": 1, "gpus_per_node": 1,
                               "gpus": 1, "pools": 1}


@pytest.mark.parametrize(("args", "message"), [
    (("--", "vllm", "serve", "Qwen/Qwen3-8B", "--tensor-paralel-size", "2"),
     "vLLM 0.33.0 has no flag --tensor-paralel-size; the closest is --tensor-parallel-size"),
    (("--", "vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "lots"),
     "--max-model-len: 'lots' is not a whole number (vLLM 0.33.0)"),
    (("--engine", "vllm@0.9", "--", "vllm", "serve", "Qwen/Qwen3-8B", "--kv-cache-memory-bytes", "20G"),
     "vLLM 0.9.2 has no flag --kv-cache-memory-bytes; the closest is --kv-cache-dtype"),
    (("--", "llama-server", "-m", "x.gguf"), "not a launch command kvplan reads: 'llama-server -m x.gguf'"),
    (("--", "vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "auto"), "kvplan plans a given length"),
    (("--engine", "vllm,sglang", "--", "vllm", "serve", "Qwen/Qwen3-8B"), "give one --engine"),
])
def test_bad_commands_are_one_line_and_exit_2(run_cli: Any, args: tuple[str, ...], message: str) -> None:
    code, out, err = run_cli("capacity", "--gpu", "H100", *args)
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1, err


def test_format_yaml_is_the_manifest(run_cli: Any) -> None:
    yaml = pytest.importorskip("yaml")
    code, out, err = run_cli("capacity", "--gpu", "H100", "--format", "yaml", "--", "trtllm-serve", "Qwen/Qwen3-8B",
                             "--tp_size", "2", "--max_seq_len", "8192")
    assert code == 0, err
    data = yaml.safe_load(out)
    assert (data["model"], data["engine"], data["release"], data["gpus_per_replica"], data["replicas"]) == (
        "Qwen/Qwen3-8B", "trtllm", "trtllm@1", 2, 1)
    assert data["flags"] == {"--tp_size": 2, "--max_seq_len": 8192, "--kv_cache_free_gpu_memory_fraction": 0.9}
    assert data["min_gpu_memory_bytes"] == 85_018_542_080  # the H100-SXM's memory in kvplan's catalog


def test_fit_carries_each_setups_command(run_cli: Any) -> None:
    code, out, err = run_cli("fit", "Qwen/Qwen3-32B", "--gpu", "H100", "--max-model-len", "32k", "--concurrency",
                             "64", "--engine", "sglang", "--json")
    assert code == 0, err
    best = json.loads(out)["best"]
    pp = f" --pp-size {best['pp']}" if best["pp"] > 1 else ""
    nodes = f" --nnodes {best['nodes']}" if best["nodes"] > 1 else ""
    assert best["command"].startswith(f"python -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp-size "
                                      f"{best['tp']}{pp}{nodes} --context-length 32768 --mem-fraction-static ")
    assert best["layout"]["tp"] == best["tp"] and best["release"] == "sglang@0.5.23"
    code, out, err = run_cli("capacity", "--gpu", "H100", "--json", "--", *shlex.split(best["command"]))
    assert code == 0, err
    back = json.loads(out)
    assert back["kv_tokens"] == best["kv_tokens_per_replica"] and back["command"] == best["command"]


@pytest.mark.parametrize("plain", [
    ("meta-llama/Llama-3.1-70B", "--tp", "4", "--max-model-len", "32k", "--speculative-model",
     "meta-llama/Llama-3.2-1B", "--num-speculative-tokens", "4"),
    ("meta-llama/Llama-3.1-8B", "--max-model-len", "16k", "--max-loras", "4", "--max-lora-rank", "64",
     "--lora-target-modules", "q_proj,v_proj", "--cpu-offload-gb", "4"),
    ("deepseek-ai/DeepSeek-V3", "--tp", "8", "--max-model-len", "32k", "--speculative-method", "mtp"),
])
def test_what_shares_the_gpu_travels_through_the_command(run_cli: Any, plain: tuple[str, ...]) -> None:
    first = _json(run_cli, *plain, "--gpu", "H200", "--json")
    assert "--speculative-config" in first["flags"] or "--enable-lora" in first["flags"]
    again = _json(run_cli, "--gpu", "H200", "--json", "--", first["command"])
    same = (*SAME, "speculative", "lora", "weights_bytes_per_gpu")
    assert {k: again[k] for k in same} == {k: first[k] for k in same}


@pytest.mark.parametrize(("args", "nodes", "written"), [
    # vLLM DP 16 x TP 1 on 8-GPU nodes: 2 nodes, 8 DP ranks on each (--data-parallel-size-local)
    (("deepseek-ai/DeepSeek-V3", "--gpu", "H200", "--max-model-len", "32k", "--dp", "16", "--ep", "16"), 2,
     "--data-parallel-size-local 8"),
    # one TP 8 x PP 2 engine over two nodes
    (("meta-llama/Llama-3.1-70B", "--gpu", "H100", "--tp", "8", "--pp", "2"), 2, "--nnodes 2"),
    (("meta-llama/Llama-3.1-70B", "--gpu", "H100", "--tp", "8", "--pp", "2", "--engine", "trtllm"), 2,
     "--gpus_per_node 8"),
    # what fits one node gets no multi-node flag
    (("meta-llama/Llama-3.1-70B", "--gpu", "H100", "--tp", "8"), 1, None),
])
def test_capacity_writes_the_command_for_the_nodes_a_replica_needs(run_cli: Any, args: tuple[str, ...], nodes: int,
                                                                    written: str | None) -> None:
    first = _json(run_cli, *args, "--gpus-per-node", "8", "--json")
    assert (first["layout"]["nodes"], first["layout"]["gpus_per_node"]) == (nodes, 8)
    assert written is None or written in first["command"]
    assert "--nnodes" not in first["command"] or nodes > 1
    engine = ("--engine", "trtllm") if "trtllm" in args else ()
    again = _json(run_cli, "--gpu", first["gpu"].split("-")[0], *engine, "--json", "--", first["command"])
    assert {k: again[k] for k in SAME} == {k: first[k] for k in SAME}


def test_gpus_per_node_must_be_positive(run_cli: Any) -> None:
    code, _, err = run_cli("capacity", "meta-llama/Llama-3.1-8B", "--gpus-per-node", "0")
    assert code == 2 and err.strip() == "kvplan: error: --gpus-per-node must be positive, got 0"


# Issue 30: kvplan's options and a pasted command build one question. An option given before -- that the command
# gives otherwise is exit 2 naming both values (before: the command's silently won, `--tp 4 -- ... -tp 2` planned
# TP 2); the same value on both sides is one value.
@pytest.mark.parametrize(("before", "flags", "said"), [
    (("--tp", "4"), ("--tensor-parallel-size", "2"), ("--tensor-parallel-size 4", "--tensor-parallel-size 2")),
    (("--tp", "1"), ("--tensor-parallel-size", "2"), ("--tensor-parallel-size 1", "--tensor-parallel-size 2")),
    (("--max-model-len", "16k"), ("--max-model-len", "8192"), ("--max-model-len 16384", "--max-model-len 8192")),
    (("--kv-cache-dtype", "fp8"), ("--kv-cache-dtype", "fp8_e5m2"), ("--kv-cache-dtype fp8", "--kv-cache-dtype fp8_e5m2")),
    (("--gpu-memory-utilization", "0.8"), ("--gpu-memory-utilization", "0.85"),
     ("--gpu-memory-utilization 0.8", "--gpu-memory-utilization 0.85")),
    (("--max-num-seqs", "64"), ("--max-num-seqs", "128"), ("--max-num-seqs 64", "--max-num-seqs 128")),
    # 20 GiB = 20 × 2**30; vLLM's human_readable_int reads 10G as 10 × 2**30 (an upper-case suffix is binary)
    (("--kv-budget", "20GiB"), ("--kv-cache-memory-bytes", "10G"), ("--kv-budget 21474836480",
                                                                    "--kv-cache-memory-bytes 10737418240")),
])
def test_an_option_the_command_contradicts_is_exit_2_naming_both(run_cli: Any, before: tuple[str, ...],
                                                                  flags: tuple[str, ...], said: tuple[str, str]) -> None:
    code, out, err = run_cli("capacity", "--gpu", "H100", *before, "--", "vllm", "serve", "Qwen/Qwen3-8B", *flags)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert all(s in err for s in said) and "disagree" in err, err


def test_the_same_value_on_both_sides_is_one_value(run_cli: Any) -> None:
    command = ("--", "vllm", "serve", "Qwen/Qwen3-8B", "--tensor-parallel-size", "2", "--max-model-len", "16384",
               "--kv-cache-dtype", "bfloat16")
    alone = _json(run_cli, "--gpu", "H100", "--json", *command)
    both = _json(run_cli, "--gpu", "H100", "--json", "--tp", "2", "--max-model-len", "16k", "--kv-cache-dtype", "bf16",
                 *command)
    assert {k: both[k] for k in SAME} == {k: alone[k] for k in SAME}
    assert alone["parallel"]["tp"] == 2 and "--kv-cache-dtype bfloat16" in alone["command"]  # vLLM's name of bf16
    # an option the command leaves out still applies: the GPU, and the batch the command does not set
    more = _json(run_cli, "--gpu", "H100", "--json", "--max-num-seqs", "64", *command)
    assert more["command"].endswith("--max-num-seqs 64 --gpu-memory-utilization 0.92 --kv-cache-dtype bfloat16")


def test_a_model_before_the_command_is_the_commands_or_a_conflict(run_cli: Any) -> None:
    command = ("--", "vllm", "serve", "Qwen/Qwen3-8B", "--tensor-parallel-size", "2")
    alone = _json(run_cli, "--gpu", "H100", "--json", *command)
    same = _json(run_cli, "Qwen/Qwen3-8B", "--gpu", "H100", "--json", *command)
    assert {k: same[k] for k in SAME} == {k: alone[k] for k in SAME}
    code, out, err = run_cli("capacity", "Qwen/Qwen3-32B", "--gpu", "H100", *command)
    assert code == 2 and out == "" and "Qwen/Qwen3-32B" in err and "Qwen/Qwen3-8B" in err and "disagree" in err, err


def test_an_engine_named_must_be_the_commands(run_cli: Any) -> None:
    code, out, err = run_cli("capacity", "--gpu", "H100", "--engine", "vllm", "--", "python", "-m",
                             "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B")
    assert code == 2 and out == "" and "--engine vllm is vllm, the command is sglang's" in err, err
    plain = _json(run_cli, "--gpu", "H100", "--json", "--", "python", "-m", "sglang.launch_server", "--model-path",
                  "Qwen/Qwen3-8B")
    assert plain["engine"] == "sglang"  # no --engine: the command's engine, its newest release
