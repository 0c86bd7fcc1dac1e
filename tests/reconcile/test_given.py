"""reconcile takes what capacity takes (issue 29): an engine release, the scheduler, cache, speculative and memory
options. A flag fills in what the log does not print; one that contradicts the log is refused (exit 2, naming both).
And what a log alone allows: an HF-cache path read as its hub id, tokens from the printed concurrency, one engine's
start-up at a time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvplan.engines import Settings
from kvplan.errors import InputError
from kvplan.planning.capacity import capacity
from kvplan.reconcile import Options, parse_log, reconcile
from kvplan.reconcile.models import hub_id, name_candidates
from kvplan.reconcile.rules import vllm_rules
from kvplan.reconcile.vllm import from_concurrency
from kvplan.render.capacity import capacity_payload
from kvplan.render.engine_logs import engine_log_lines

DATA = Path(__file__).resolve().parent.parent / "data"
LOGS = DATA / "logs"
# DeepSeek-V4-Flash, vLLM 0.25.0, TP 2 on RTX PRO 6000s, fp8 KV, 1M context, 64 seqs, 4,096 batched tokens, MTP x2
DSV4 = LOGS / "vllm-v0250-deepseek-v4-flash-tp2-mtp2-fp8kv-rtxpro6000.log"
GIB = 2**30


def dsv4(without: tuple[str, ...] = ()) -> str:
    """The DeepSeek-V4 log, less the lines holding any of `without` (a capture that starts later shows less)."""
    return "".join(line for line in DSV4.read_text().splitlines(keepends=True) if not any(w in line for w in without))


def checks(run_cli: Any, log: str | Path, *args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = run_cli("reconcile", str(log), "--json", *args)
    return code, json.loads(out) if code in (0, 1) else {}, err


def check(payload: dict[str, Any], quantity: str) -> dict[str, Any]:
    return next(c for c in payload["checks"] if c["quantity"] == quantity)


# -------------------------------------------------------------------------------------------- the release

def test_a_release_is_taken(run_cli: Any) -> None:
    # before: exit 2 "unknown --engine 'vllm@0.25'; reconcile reads vllm, sglang and trtllm logs"
    code, payload, err = checks(run_cli, DSV4, "--engine", "vllm@0.25")
    assert code in (0, 1), err
    assert payload["engine_row"] == "vllm@0.25.0" or payload["engine_row"].startswith("vllm@0.25")
    code, _, err = checks(run_cli, DSV4, "--engine", "vllm@0.24")
    assert code == 2 and "--engine vllm@0.24 (given) disagrees with the log's version 0.25.0" in err
    code, _, err = checks(run_cli, DSV4, "--engine", "sglang")
    assert code == 2 and "it is a vLLM log" in err


def test_a_release_gives_the_rules_where_the_log_prints_no_version() -> None:
    # the 0.27.1 Qwen3-32B capture without its "vllm 0.27.1" header: its print sites place it (0.26-0.27), and
    # --engine vllm@0.27 names the row; a note says where the release came from
    text = (LOGS / "vllm-v0271-qwen3-32b-tp2-rtxpro6000.log").read_text().replace("vllm 0.27.1\n", "")
    log = parse_log(text)
    assert log.version is None
    result = reconcile(log, Options(engine="vllm@0.27", model="Qwen/Qwen3-32B"))
    assert result.profile == "vllm@0.27" and result.log.version == "0.27"
    assert "release 0.27 from engine vllm@0.27 (the log prints no version)" in result.notes
    assert result.ok


# -------------------------------------------------------------------- scheduler settings: reconcile = capacity

def test_reconcile_and_capacity_agree_on_the_same_run(run_cli: Any) -> None:
    """The issue's 29%: capacity asked without the run's scheduler settings (1,478,421 tokens on 10.29 GiB) against
    reconcile, which read max_num_batched_tokens 4096 and max_num_seqs 64 from the log (1.90M): DeepSeek-V4's
    sliding reservation follows max_num_batched_tokens. Given the same inputs, the two give the same tokens."""
    code, payload, err = checks(run_cli, DSV4)
    assert code in (0, 1), err
    tokens = check(payload, "kv_tokens")
    asked = ["capacity", "deepseek-ai/DeepSeek-V4-Flash", "--engine", "vllm@0.25", "--tp", "2", "--kv-cache-dtype",
             "fp8", "--max-model-len", "1048576", "--kv-budget", "10.29GiB", "--json"]
    drafted = not any("cannot plan the log's mtp" in n for n in payload["notes"])
    spec = ["--speculative-method", "mtp", "--num-speculative-tokens", "2"] if drafted else []
    same = json.loads(run_cli(*asked, "--max-num-seqs", "64", "--max-num-batched-tokens", "4096", *spec)[1])
    assert tokens["kvplan_min"] <= same["kv_tokens"] <= tokens["kvplan_max"]
    bare = json.loads(run_cli(*asked, *spec)[1])  # the scheduler's defaults instead of the run's
    assert same["kv_tokens"] / bare["kv_tokens"] > 1.25


def test_scheduler_flags_fill_in_what_the_log_does_not_print(run_cli: Any, tmp_path: Path) -> None:
    # the same run captured from the engine core on: no non-default args, no scheduler line
    cut = tmp_path / "dsv4-core.log"
    cut.write_text(dsv4(without=("non-default args", "max_num_batched_tokens=")))
    whole = check(checks(run_cli, DSV4)[1], "kv_tokens")
    bare = check(checks(run_cli, cut)[1], "kv_tokens")
    flagged = check(checks(run_cli, cut, "--max-num-batched-tokens", "4096", "--max-num-seqs", "64")[1], "kv_tokens")
    assert (flagged["kvplan_min"], flagged["kvplan_max"]) == (whole["kvplan_min"], whole["kvplan_max"])
    assert bare["kvplan_max"] < whole["kvplan_min"]  # the defaults (8,192 batched tokens) reserve more per request


@pytest.mark.parametrize(("flag", "said"), [
    (["--max-num-seqs", "128"], "--max-num-seqs 128 (given) disagrees with the log's 64"),
    (["--max-num-batched-tokens", "8k"], "--max-num-batched-tokens 8192 (given) disagrees with the log's 4096"),
    (["--tp", "1"], "--tensor-parallel-size 1 (given) disagrees with the log's 2"),
    (["--max-model-len", "32k"], "--max-model-len 32768 (given) disagrees with the log's 1048576"),
    (["--kv-cache-dtype", "auto"], "--kv-cache-dtype auto (given) disagrees with the log's fp8"),
    (["--gpu-memory-utilization", "0.9"], "--gpu-memory-utilization 0.9 (given) disagrees with the log's 0.95"),
    (["--kv-budget", "10GiB"], "--kv-budget 10.00 GiB (given) disagrees with the log's 10.29 GiB (TP0)"),
    (["--num-speculative-tokens", "1"], "--num-speculative-tokens 1 (given) disagrees with the log's 2"),
])
def test_a_flag_that_contradicts_the_log_is_refused(run_cli: Any, flag: list[str], said: str) -> None:
    code, _, err = checks(run_cli, DSV4, *flag)
    assert code == 2 and err.count("\n") == 1 and said in err


@pytest.mark.parametrize("flag", [["--max-num-seqs", "64"], ["--tp", "2"], ["--max-model-len", "1M"],
                                  ["--kv-cache-dtype", "fp8"], ["--kv-budget", "10.29GiB"], ["--gpu", "RTX-PRO-6000"]])
def test_a_flag_that_repeats_the_log_changes_nothing(run_cli: Any, flag: list[str]) -> None:
    assert checks(run_cli, DSV4, *flag)[1]["checks"] == checks(run_cli, DSV4)[1]["checks"]


def test_a_memory_fraction_fills_in_for_sglang(run_cli: Any, tmp_path: Path) -> None:
    # SGLang 0.4.1 docs log, mem_fraction_static=0.88 printed: cut it out and give it as a flag, the same answer
    name = LOGS / "sglang-v041-llama31-8b-h100-docs.log"
    cut = tmp_path / "sglang.log"
    cut.write_text(name.read_text().replace("mem_fraction_static=0.88, ", ""))
    skipped = checks(run_cli, cut)[1]
    assert any(s["quantity"] == "kv_tokens" and "mem_fraction_static is not logged" in s["reason"]
               for s in skipped["skipped"])
    flagged = check(checks(run_cli, cut, "--mem-fraction-static", "0.88")[1], "kv_tokens")
    assert flagged == check(checks(run_cli, name)[1], "kv_tokens") and flagged["match"]
    code, _, err = checks(run_cli, name, "--mem-fraction-static", "0.8")
    assert code == 2 and "--mem-fraction-static 0.8 (given) disagrees with the log's 0.88" in err


def test_the_gpu_memory_gives_sglang_its_default_fraction(run_cli: Any) -> None:
    # the LoRA docs log prints neither the fraction nor the GPU: --gpu-mem lets the release's default be taken
    name = LOGS / "sglang-v058-llama31-8b-lora-h100-docs.log"
    assert not [c for c in checks(run_cli, name, "--model", "meta-llama/Llama-3.1-8B-Instruct")[1]["checks"]
                if c["quantity"] == "kv_tokens"]
    flagged = checks(run_cli, name, "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu-mem", "80GiB")[1]
    assert "default" in check(flagged, "kv_tokens")["explanation"]


def test_the_kv_dtype_and_weights_flags_reach_the_numbers(run_cli: Any) -> None:
    # the nightly fragments print neither: fp8 KV halves the bytes per token (the blocks no longer match the log's
    # bf16 run), fp8 weights halve the linear layers (the weights no longer match the 15.0 GiB loaded)
    log = LOGS / "vllm-nightly-llama31-8b-a100-80gb-fragments.log"
    base = checks(run_cli, log, "--model", "meta-llama/Llama-3.1-8B")[1]
    fp8 = checks(run_cli, log, "--model", "meta-llama/Llama-3.1-8B", "--kv-cache-dtype", "fp8")[1]
    assert check(fp8, "kv_tokens")["kvplan"] > 1.9 * check(base, "kv_tokens")["kvplan"]
    int4 = checks(run_cli, log, "--model", "meta-llama/Llama-3.1-8B", "--weights-dtype", "fp8")[1]
    assert not check(int4, "weights_bytes")["match"] and "with fp8 weights" in check(int4, "weights_bytes")["explanation"]


def test_speculative_flags_reach_the_recomputation() -> None:
    # DeepSeek-R1 with its MTP layer as the drafter: its KV layer joins the pool, so the lines capacity writes for
    # that run are recomputed only when reconcile is told of the drafter too
    question = {"tp": 8, "kv_budget_bytes": (40 * GIB,), "max_model_len": 32768}
    lines = engine_log_lines(capacity_payload(capacity("deepseek-ai/DeepSeek-R1", engine="vllm", **question,
                                                       speculative_method="mtp")))
    log = parse_log("\n".join(lines), "vllm")
    common: dict[str, Any] = {"model": "deepseek-ai/DeepSeek-R1", "tp": 8, "max_model_len": 32768}
    drafted = reconcile(log, Options(**common, settings=Settings.of(speculative_method="mtp")))
    assert drafted.ok
    assert not reconcile(log, Options(**common)).ok


def test_a_log_naming_its_speculative_config_plans_it_or_says_why_not() -> None:
    # the V4 log names SpeculativeConfig(method='mtp', ..., num_spec_tokens=2): read as the run's settings; where
    # kvplan cannot plan that drafter the rest is planned and a note says so
    log = parse_log(DSV4.read_text())
    assert (log.setting("speculative_method"), log.setting("num_speculative_tokens")) == ("mtp", "2")
    result = reconcile(log)
    planned = not any("cannot plan the log's mtp" in n for n in result.notes)
    assert planned or any("its drafter's weights and KV layers are not counted" in n for n in result.notes)


# ------------------------------------------------------------------------------------- what the log alone says

def test_an_hf_cache_path_is_read_as_its_hub_id(run_cli: Any, tmp_path: Path) -> None:
    # before: exit 2 "the log names '/root/.cache/huggingface/hub/models--deepseek-ai--...', which kvplan cannot load"
    cut = tmp_path / "dsv4-path.log"
    cut.write_text(dsv4(without=("non-default args", "api_utils.py", "arg_utils.py")))
    assert parse_log(cut.read_text()).setting("model").startswith("/root/.cache/huggingface/hub/models--")
    code, payload, err = checks(run_cli, cut)
    assert code in (0, 1), err
    assert payload["model"] == "deepseek-ai/DeepSeek-V4-Flash"
    path = "/data/hf/hub/models--meta-llama--Llama-3.1-8B-Instruct/snapshots/0e9e39f249a16976918f6564b8830bc894c89659"
    assert hub_id(path) == hub_id(path + "/") == "meta-llama/Llama-3.1-8B-Instruct"
    assert name_candidates(path)[1] == ("meta-llama/Llama-3.1-8B-Instruct", None)
    assert hub_id("/models/Llama-3.1-8B-Instruct") is None


def test_tokens_are_recomputed_from_the_printed_concurrency() -> None:
    """vLLM 0.21 on prints tokens = int(concurrency × max_model_len) (0.25.0 v1/core/kv_cache_utils.py:1798) and the
    concurrency as %.2f: without a budget to plan from, the tokens are checked against the concurrency's rounding.
    The V4 log: 1.90x ± 0.005 × 1,048,576 = 1,987,051-1,997,537 ∋ 1,993,100 (before: not recomputed)."""
    result = reconcile(parse_log(dsv4(without=("Available KV cache memory",))))
    tokens = next(c for c in result.checks if c.quantity == "kv_tokens")
    assert (tokens.low, tokens.high, tokens.match) == (1987051, 1997537, True)


def test_the_concurrency_rounding_holds_on_every_collected_log() -> None:
    # every 0.21+ log that prints both numbers: the logged tokens lie within what the printed concurrency allows
    seen = 0
    for path in sorted(LOGS.glob("vllm-*.log")):
        log = parse_log(path.read_text())
        rules, _ = vllm_rules(log)
        for record, number in ((r, n) for r, n in log.numbers("kv_tokens") if r.kind == "kv_size"):
            found = from_concurrency(log, record, number, rules, None)  # type: ignore[arg-type]
            if found is not None:
                seen += 1
                assert found.match, (path.name, number.text)
    assert seen >= 11


def test_a_log_with_two_engines_is_refused(run_cli: Any, tmp_path: Path) -> None:
    """Two real logs concatenated (before: read as SGLang without a word). Which lines belong to which start-up
    cannot be told apart reliably (two servers may write one file; vLLM's kv_cache_dtype pattern matches SGLang's
    server_args), so none is guessed: exit 2, naming both engines and where their KV numbers are."""
    both = tmp_path / "both.log"
    vllm = (LOGS / "vllm-v0102-qwen3-235b-a22b-fp8-tp8-l40s.log").read_text()
    both.write_text(vllm + (LOGS / "sglang-v058-qwen25-0.5b-h100-docs.log").read_text())
    for args in ([], ["--engine", "vllm"], ["--engine", "sglang"]):
        code, _, err = checks(run_cli, both, *args)
        assert code == 2 and err.count("\n") == 1, args
        assert "two engines' start-ups" in err and "vLLM (KV numbers on lines" in err and "SGLang (KV numbers on" in err
    with pytest.raises(InputError, match="two engines"):
        parse_log(both.read_text())
    assert parse_log(vllm).engine == "vllm"  # each alone is read


def test_the_drafter_is_part_of_the_loaded_weights() -> None:
    # vLLM loads the drafter inside the block "Model loading took" measures (0.25.0 v1/worker/gpu_model_runner.py:
    # 5219-5235): with MTP asked, the weights figure kvplan compares holds the draft's weights term too
    from kvplan.reconcile.estimate import loaded_weights
    from kvplan.reconcile.inputs import build_inputs

    log = parse_log("Model loading took 700.0 GiB memory and 1.0 seconds\nAvailable KV cache memory: 40.0 GiB\n",
                    "vllm@0.25")
    common: dict[str, Any] = {"model": "deepseek-ai/DeepSeek-R1", "tp": 8, "max_model_len": 32768,
                              "engine": "vllm@0.25"}
    bare = loaded_weights(build_inputs(log, Options(**common)))
    drafted = build_inputs(log, Options(**common, settings=Settings.of(speculative_method="mtp")))
    draft = capacity("deepseek-ai/DeepSeek-R1", engine="vllm@0.25", tp=8, max_model_len=32768, gpu="H100",
                     speculative_method="mtp").overhead
    assert bare is not None and draft is not None and draft.draft_weights_bytes > 0
    assert loaded_weights(drafted) == bare + draft.draft_weights_bytes
