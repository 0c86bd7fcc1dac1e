"""Parsing the collected start-up logs (tests/data/logs, each with its source in the .json beside
it): the engine, version, settings and every KV number, hand-listed from the log text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from parsed_logs import PARSED

from kvplan.errors import InputError
from kvplan.reconcile import parse_log
from kvplan.reconcile.formats import FORMATS
from kvplan.reconcile.parse import StartupLog, logical_lines
from kvplan.reconcile.rules import placed, vllm_rules
from kvplan.reconcile.sites import placement

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"


def load(name: str) -> StartupLog:
    return parse_log((LOGS / f"{name}.log").read_text())


def texts(log: StartupLog, name: str) -> list[str]:
    return [n.text for _, n in log.numbers(name)]


# log -> (engine, version, settings it states, numbers: name -> the printed texts in log order)
CASES: dict[str, tuple[str, str | None, dict[str, str], dict[str, list[str]]]] = {
    "vllm-v064dev-llama31-8b-131k-conc031": (
        "vllm", "0.6.4.dev26+g92d86da2.d20241017",
        {"model": "meta-llama/Llama-3.1-8B-Instruct", "tp": "1", "max_model_len": "131072", "dtype": "bfloat16",
         "kv_dtype": "auto", "max_num_batched_tokens": "512"},
        {"weights": ["14.9888"], "num_blocks": ["2575"], "num_cpu_blocks": ["2048"], "max_concurrency": ["0.31"],
         "kv_tokens": ["41200"]}),
    "vllm-v064dev-llama31-8b-40k": (
        "vllm", "0.6.4.dev26+g92d86da2.d20241017", {"max_model_len": "40960"},
        {"weights": ["14.9888"], "num_blocks": ["2575"], "max_concurrency": ["1.01"]}),
    "vllm-v066-internvl3-78b-tp8-l40s": (
        "vllm", "0.6.6.post1", {"model": "/models/internvl3-78b", "tp": "8", "max_model_len": "8192"},
        {"total": ["44.39", "44.39"], "requested": ["40.84", "40.84"], "used_weights": ["21.67", "21.67"],
         "used_non_torch": ["0.36", "0.36"], "used_activation": ["15.73", "15.73"], "kv_budget": ["3.09", "3.09"],
         "num_blocks": ["5065"], "num_cpu_blocks": ["6553"], "max_concurrency": ["9.89"]}),
    "vllm-v084-deepseek-r1-tp16-h20": (
        "vllm", None, {},
        {"kv_tokens": ["335,360", "335,360", "335,168", "352,576", "352,832", "335,168", "352,576"],
         "max_concurrency": ["2556.75", "2430.14", "2430.14", "2428.75", "2554.90", "2556.75", "2428.75"]}),
    "vllm-v0102-qwen3-235b-a22b-fp8-tp8-l40s": (
        "vllm", "0.10.2",
        {"model": "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "tp": "8", "pp": "1", "max_model_len": "32768",
         "quantization": "fp8", "swap_space": "0.0", "max_num_batched_tokens": "2048"},
        {"kv_tokens": ["238,208", "237,392", "237,344", "237,520", "238,256", "237,344", "237,392", "237,520"],
         "max_concurrency": ["7.27", "7.24", "7.24", "7.25", "7.27", "7.24", "7.24", "7.25"],
         "num_blocks": ["14834"], "used_non_torch": ["0.21", "0.21", "0.18", "0.21", "0.17", "0.21", "0.21", "0.21"],
         "kv_budget": ["10.64", "10.64", "10.65", "10.68", "10.68", "10.64", "10.64", "10.65", "11423138508",
                       "11431527116", "11465081548", "11425235660", "11467178700", "11423138508", "11431527116",
                       "11425235660"]}),
    "vllm-v0110-granite-4.0-micro-l40s": (
        "vllm", "0.11.0", {"model": "ibm-granite/granite-4.0-micro", "max_model_len": "131072", "quantization": "fp8"},
        {"weights": ["3.4244"], "kv_budget": ["35.34"], "kv_tokens": ["463,136"], "max_concurrency": ["3.53"],
         "cuda_graph": ["0.72"]}),
    "vllm-v013-deepseek-v32-tp8-pp4": (
        "vllm", None, {}, {"kv_tokens": ["1,214,464"], "max_concurrency": ["7.41"], "max_model_len": ["163,840"]}),
    "vllm-v0152-qwen3-coder-30b-fp8-pp2-refusal": (
        "vllm", None, {},
        {"max_model_len": ["262144"], "kv_needed": ["24.0"], "kv_available": ["3.18"],
         "estimated_max_model_len": ["34736"]}),
    "vllm-v017-qwen3-4b-rtx5080-refusal": (
        "vllm", None, {},
        {"kv_needed": ["5.62"], "kv_available": ["4.89"], "estimated_max_model_len": ["35600"]}),
    "vllm-v019-qwen35-27b-hybrid": (
        "vllm", None, {}, {"kv_tokens": ["290,864"], "max_concurrency": ["33.04"]}),
    "vllm-v0260-lfm25-1.2b-sm90": (
        "vllm", "0.26.0",
        {"model": "/model", "served_model_name": "LFM2.5-1.2B-Instruct", "kv_dtype": "fp8", "block_size": "16",
         "gpu_memory_utilization": "0.95", "dtype": "float16"},
        {"weights": ["0.88"], "cuda_graph": ["0.58"], "kv_budget": ["13.33"], "kv_tokens": ["2,324,244"],
         "max_concurrency": ["70.93"], "padding_layers": ["2", "2"]}),
    "vllm-nightly-llama31-8b-a100-80gb-fragments": (
        "vllm", None, {},
        {"weights": ["15.0"], "kv_budget": ["56.21"], "kv_tokens": ["460,496"], "max_concurrency": ["3.51"]}),
    "sglang-dev-qwen35-9b-tp2-rtx4090": (
        "sglang", None, {"kv_dtype": "bfloat16", "max_model_len": "262144"},
        {"avail_before": ["22.93", "22.93"], "avail_after": ["14.08", "14.08"], "weights": ["8.85", "8.85"],
         "kv_tokens": ["327310", "327310"], "k_size": ["2.50", "2.50"], "mamba_slots": ["186", "186"],
         "ssm_state": ["4.38", "4.38"], "max_total_num_tokens": ["327310"]}),
    "sglang-qwen3-235b-a22b-fp8-tp4-h100": (
        "sglang", None, {}, {"kv_tokens": ["367404"], "k_size": ["8.23"], "v_size": ["8.23"]}),
    "sglang-v058-qwen25-0.5b-h100-docs": (
        "sglang", None,
        {"model": "qwen/qwen2.5-0.5b-instruct", "mem_fraction_static": "0.841", "max_total_tokens": "20480",
         "page_size": "1", "tp": "1", "kv_dtype": "bfloat16"},
        {"avail_before": ["78.43"], "avail_after": ["77.45"], "weights": ["0.98"], "kv_tokens": ["20480"],
         "k_size": ["0.12"], "max_total_num_tokens": ["20480"], "available_gpu_mem": ["76.95"]}),
    "sglang-v058post1-kimi-k25-tp8-mi355x": (
        "sglang", None, {"model": "moonshotai/Kimi-K2.5", "tp": "8", "mem_fraction_static": "0.8260405859375"},
        {"avail_after": ["210.38", "209.96", "210.08", "210.02", "209.96", "210.10", "210.10", "209.98"],
         "kv_tokens": ["2454421"] * 8, "kv_size": ["160.63"] * 8}),
    "trtllm-0.12.0dev-llama2-7b-fp8-h100-docs": (
        "trtllm", "0.12.0.dev2024073000",
        {"model": "meta-llama/Llama-2-7b-hf", "kv_dtype": "FP8", "tp": "1", "free_gpu_memory_fraction": "0.99",
         "block_size": "64", "max_model_len": "4098"},
        {"total": ["79.10"], "available": ["63.62"], "num_blocks": ["4607"], "kv_size": ["62.99"],
         "kv_tokens": ["294848"]}),
    "trtllm-0.19.0-llama31-8b-fp8-rtx5090": (
        "trtllm", "0.19.0", {"block_size": "32"},
        {"available": ["17.83"], "num_blocks": ["8219"], "kv_size": ["16.05"], "kv_tokens": ["263008"]}),
    "trtllm-1.2.0rc2-qwen3-8b-fp8-pytorch": (
        "trtllm", "1.2.0rc2", {"block_size": "32", "max_model_len": "9193"},
        {"num_blocks": ["257", "1444"], "kv_tokens": ["8224", "46208"], "kv_size": ["0.56", "3.17"],
         "blocks_per_sequence": ["288", "288"]}),
    "trtllm-1.3.0rc7-kimi-k25-nvfp4-tp8-b300": (
        "trtllm", None, {"max_model_len": "262144"},
        {"num_blocks": ["158543"], "kv_tokens": ["5073376"], "kv_size": ["166.02"]}),
}


CASES.update(PARSED)


def test_every_collected_log_is_a_case() -> None:
    assert {p.stem for p in LOGS.glob("*.log")} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_parse_extracts_the_logged_numbers(name: str) -> None:
    engine, version, settings, numbers = CASES[name]
    log = load(name)
    assert (log.engine, log.version) == (engine, version)
    assert {k: log.setting(k) for k in settings} == settings
    assert {k: texts(log, k) for k in numbers} == numbers


def test_sizes_carry_their_printed_precision() -> None:
    # "15.0" from vLLM's round(x, 2) is 15.00 ± 0.005 GiB, not 15.0 ± 0.05
    weights = load("vllm-nightly-llama31-8b-a100-80gb-fragments").numbers("weights")[0][1]
    assert (weights.unit, weights.decimals) == ("GiB", 2)
    low, high = weights.bytes_range()
    assert (float(low), float(high)) == (14.995 * 2**30, 15.005 * 2**30)
    exact = load("vllm-v0102-qwen3-235b-a22b-fp8-tp8-l40s").of_kind("breakdown_v1")[0].get("kv_budget")
    assert exact is not None and exact.unit == "B" and exact.bytes_range() == (11423138508, 11423138508)


def test_workers_are_named_from_the_prefix() -> None:
    log = load("vllm-v0102-qwen3-235b-a22b-fp8-tp8-l40s")
    assert [r.worker for r in log.of_kind("available")] == ["TP6", "TP2", "TP7", "TP0", "TP4", "TP5", "TP1", "TP3"]
    assert {r.worker for r in log.of_kind("kv_size")} == {None}  # the engine core prints them
    assert [r.worker for r in load("vllm-v066-internvl3-78b-tp8-l40s").of_kind("breakdown_v0")] == [None, "pid 534"]
    assert load("sglang-v058post1-kimi-k25-tp8-mi355x").of_kind("kv_pool")[0].worker == "TP6"


def test_print_sites_are_read_from_the_line() -> None:
    assert load("vllm-v084-deepseek-r1-tp16-h20").records[0].source == "kv_cache_utils.py:637"
    assert load("vllm-v066-internvl3-78b-tp8-l40s").of_kind("gpu_blocks_v0")[0].source == \
        "distributed_gpu_executor.py:57"


def test_one_combined_line_is_one_record() -> None:
    record, = load("vllm-nightly-llama31-8b-a100-80gb-fragments").of_kind("kv_size")
    assert [n.name for n in record.numbers] == ["kv_tokens", "max_model_len", "max_concurrency"]
    assert not load("vllm-nightly-llama31-8b-a100-80gb-fragments").of_kind("concurrency")


@pytest.mark.parametrize("engine", sorted(FORMATS))
def test_every_number_pattern_matches_a_collected_log(engine: str) -> None:
    """No line shape in the table is a guess: each matches a line of a real log (wrapped records joined), or, where
    no collected log shows it, the line the engine's own format string prints (`example`, with its source)."""
    lines = [line for p in LOGS.glob("*.log") for _, line in logical_lines(p.read_text())]
    unused = [p.regex.pattern[:50] for p in FORMATS[engine].numbers
              if not any(p.regex.search(x) for x in ([p.example] if p.example else lines))]
    assert not unused
    assert all(p.site for p in FORMATS[engine].numbers if p.example)


@pytest.mark.parametrize(("text", "engine"), [
    ("INFO 10-18 10:08:52 gpu_executor.py:122] # GPU blocks: 2575, # CPU blocks: 2048", "vllm"),
    ("[2026-02-04 11:30:29] KV Cache is allocated. #tokens: 20480, K size: 0.12 GB, V size: 0.12 GB", "sglang"),
    ("[TensorRT-LLM][INFO] Number of blocks in KV cache primary pool: 4607", "trtllm"),
])
def test_engine_recognized_from_one_line(text: str, engine: str) -> None:
    assert parse_log(text).engine == engine


@pytest.mark.parametrize("text", ["", "hello\nworld", "\x00\xff garbage", "INFO starting server on port 8000"])
def test_no_engine_is_one_error_naming_the_engine_option(text: str) -> None:
    with pytest.raises(InputError, match="no vLLM, SGLang or TensorRT-LLM start-up line") as err:
        parse_log(text)
    assert err.value.arg_names == ("engine",)


def test_forced_engine_must_be_one_reconcile_reads() -> None:
    with pytest.raises(InputError, match="unknown engine 'hf'"):
        parse_log("anything", engine="hf")
    assert parse_log("anything", engine="TensorRT-LLM").engine == "trtllm"


def test_settings_first_pattern_wins() -> None:
    # SGLang prints kv_cache_dtype='auto' in server_args, then the resolved dtype: the resolved one is used
    log: Any = load("sglang-v058-qwen25-0.5b-h100-docs")
    assert log.setting("kv_dtype") == "bfloat16"
    assert re.search(r"kv_cache_dtype='auto'", (LOGS / "sglang-v058-qwen25-0.5b-h100-docs.log").read_text())


def test_colour_codes_are_stripped_and_wrapped_records_joined() -> None:
    # a terminal capture hard-wrapped at ~129-147 columns: "Available KV cache me" / "mory: 11.03 GiB"
    log = load("vllm-v01011-qwen2-7b-tp2-ray2node-util05-a100-40gb")
    first, = (r for r in log.of_kind("available") if r.worker == "pid 374 @10.254.6.219")
    assert (first.line, first.get("kv_budget").text) == (23, "11.03")  # type: ignore[union-attr]
    assert texts(log, "num_blocks") == ["25809"]  # "num_gpu_blocks is:" / " 25809"
    # ESC[1;36m colour codes around the process prefix (gpt-oss TP4 over Ray)
    ray = load("vllm-v01011-gpt-oss-120b-tp4-ray-util08-a100-80gb")
    assert {r.worker for r in ray.of_kind("available")} == {"pid 345 @10.42.9.225", "pid 345 @10.42.11.243"}
    # an author's wrapping, continued on indented lines: one combined 0.28 record
    record, = load("vllm-v0280-qwen25-7b-awq-runpod").of_kind("kv_size")
    assert [n.text for n in record.numbers] == ["251,344", "8,192", "30.68"]


def test_a_line_starting_a_record_is_never_joined() -> None:
    text = "INFO 01-01 00:00:00 [a.py:1] " + "x" * 120 + "\nINFO 01-01 00:00:01 [b.py:2] y\n    [2026-01-01 00:00:00] z\n"
    assert [n for n, _ in logical_lines(text)] == [1, 2, 3]
    assert logical_lines("\x1b[1;36m(APIServer pid=1)\x1b[0;0m INFO a\n   b")[0][1] == "(APIServer pid=1) INFO a b"


@pytest.mark.parametrize(("name", "releases"), [
    ("vllm-v084-deepseek-r1-tp16-h20", ("0.8.5",)),  # an unread 0.8.4 prints 0.8.5's sites
    ("vllm-v092dev-deepseek-v2-lite-tp2-pp2-eager-l4", ("0.9.2",)),  # gpu_worker.py:233 (a dev build's) unplaced
    ("vllm-v0101-gpt-oss-120b-h100-negative-kv", ("0.10.1.1",)),
    ("vllm-v013-deepseek-v32-tp8-pp4", ("0.14.0",)),
    ("vllm-v019-qwen35-27b-hybrid", ("0.19.0",)),
    ("vllm-v0191dev-glm51-fp8-tp8-h200", ("0.19.0",)),  # a 0.19.1 dev build: one 0.20 site, three 0.19 ones
    ("vllm-v0271-qwen25-0.5b-rtx4090-wsl", ("0.27.0",)),
    ("vllm-v0280-qwen25-7b-awq-runpod", ("0.28.0",)),
    ("vllm-v084-qwen3-4b-10k-rtx2060-12gb", ("0.8.0", "0.8.5", "0.9.0")),  # V0 sites of two releases: a range
])
def test_the_release_is_placed_by_the_print_sites(name: str, releases: tuple[str, ...]) -> None:
    log = load(name)
    assert log.version is None
    found = placement(log.sites)
    assert found is not None and found.releases == releases


def test_the_rules_say_which_release_they_assumed() -> None:
    rules, why = vllm_rules(load("vllm-v092dev-deepseek-v2-lite-tp2-pp2-eager-l4"))
    assert rules.releases == "0.9.2-0.10.1" and "print site of 0.9.2" in why and "gpu_worker.py:233 (unplaced)" in why
    assert placed(load("vllm-v0641-qwen25-32b-awq-4k-a6000")) == ((0, 6, 4), "no version printed: V0 wording of vLLM 0.6.4")
    assert placed(load("vllm-v071-llama31-8b-131k-refusal-a10"))[0] == (0, 7)  # "# CUDA blocks", no bracketed sites
    rules, why = vllm_rules(load("vllm-v017-qwen3-4b-rtx5080-refusal"))  # nothing to place it by
    assert "assumed 0.12-0.20" in why


def test_warnings_that_change_the_arithmetic_are_settings() -> None:
    assert load("vllm-v0101-gpt-oss-120b-h100-negative-kv").setting("moe_backend") == "marlin"
    assert load("vllm-v0190-qwen35-9b-l40s").setting("graph_estimate") == "off"  # 0.19: logged, not subtracted
    assert load("vllm-v0220-qwen25-7b-48gb").setting("graph_estimate") == "on"
    hybrid = parse_log("(EngineCore pid=1) WARNING 01-01 00:00:00 [kv_cache_utils.py:1176] Hybrid KV cache manager is "
                       "disabled for this hybrid model, This means we do not enable any optimizations for saving KV "
                       "cache memory\nGPU KV cache size: 1,024 tokens")
    assert hybrid.setting("hybrid_kv_cache_manager") == "off"


def test_prefix_caching_is_a_setting() -> None:
    # a hybrid's Mamba states are paged by it (align mode, 0.15 on): the engine config line's resolved value
    assert load("vllm-v0260-lfm25-1.2b-sm90").setting("prefix_caching") == "True"  # 'enable_prefix_caching': True
    assert load("vllm-v0190-qwen35-9b-l40s").setting("prefix_caching") == "False"  # enable_prefix_caching=False
    flags = parse_log("INFO 01-01 00:00:00 [utils.py:1] non-default args: {} vllm serve m --no-enable-prefix-caching")
    assert flags.setting("prefix_caching") == "False"
    assert parse_log("vllm serve m --enable-prefix-caching --enforce-eager").setting("prefix_caching") == "True"
