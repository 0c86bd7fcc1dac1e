"""A launch command read as the engine release's own parser reads it (kvplan.launch.argv, .command, .tables)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.launch.argv import human_int, parse_args, resolve, spelled
from kvplan.launch.command import is_command, read_command, words_of
from kvplan.launch.tables import flag_table, releases, table_release

DATA = Path(__file__).resolve().parent.parent / "data" / "launch_abbreviations.json"
ORACLE = json.loads(DATA.read_text())


def _cases() -> list[tuple[str, str, str, str]]:
    return [(engine, release, typed, outcome) for engine in ("vllm", "sglang")
            for release, prefixes in ORACLE[engine].items() for typed, outcome in prefixes.items()]


@pytest.mark.parametrize(("engine", "release", "typed", "outcome"), _cases())
def test_a_prefix_resolves_as_the_release_parser_resolved_it(engine: str, release: str, typed: str,
                                                             outcome: str) -> None:
    # The oracle is each release's own argparse parser asked to parse the prefix (tests/data/launch_abbreviations.json).
    table = flag_table(engine, release)
    name, _ = spelled(typed, table)
    if outcome in ("ambiguous", "unrecognized"):
        with pytest.raises(InputError, match="ambiguous" if outcome == "ambiguous" else "has no flag"):
            resolve(name, table)
    else:
        assert resolve(name, table).name == outcome


def test_every_kvplan_release_of_the_three_engines_has_a_table() -> None:
    assert table_release("vllm") == ("vllm", "0.33.0")
    assert table_release("vllm@0.19") == ("vllm", "0.19.0")
    assert table_release("sglang@0.5.2") == ("sglang", "0.5.2")
    assert table_release("sglang@0.4") == ("sglang", "0.4.0.post2")  # the 0.4 row is 0.4.0's: its last patch read
    assert table_release("sglang@0.5.6") == ("sglang", "0.5.6.post2")
    assert table_release("trtllm@0.20") == ("trtllm", "0.18.2")  # the nearest release whose options were read
    assert table_release("trtllm") == ("trtllm", "snapshot-00209af")
    assert len(releases("vllm")) == 29 and len(releases("sglang")) == 34
    with pytest.raises(InputError, match="no launch flags"):
        table_release("vllm@0.7")  # a V0 row: no parser of it was read


def test_vllm_reads_underscores_dotted_keys_and_human_numbers() -> None:
    table = flag_table("vllm", "0.33.0")
    given, positional = parse_args(["Qwen/Qwen3-8B", "--max_model_len", "32k", "--kv-cache-memory-bytes", "40G",
                                    "--speculative-config.method", "mtp", "-O3"], table)
    assert positional == ["Qwen/Qwen3-8B"]
    values = {g.dest: g.value for g in given}
    assert values["max_model_len"] == 32_000 and values["kv_cache_memory_bytes"] == 40 * 2**30
    assert values["speculative_config"] == {"method": "mtp"} and str(values["optimization_level"]) == "3"
    assert (human_int("25.6k"), human_int("32K"), human_int("1M")) == (25_600, 32_768, 2**20)


def test_sglang_and_trtllm_rewrite_nothing() -> None:
    with pytest.raises(InputError, match=r"SGLang 0\.5\.23 has no flag --tp_size"):
        parse_args(["--tp_size", "2"], flag_table("sglang", "0.5.23"))
    with pytest.raises(InputError, match="has no flag --tp-size; that is SGLang's flag; trtllm-serve's is --tp_size"):
        parse_args(["--tp-size", "2"], flag_table("trtllm", "snapshot-00209af"))
    with pytest.raises(InputError, match="has no flag --max_seq"):  # click: no abbreviations
        parse_args(["--max_seq", "2"], flag_table("trtllm", "snapshot-00209af"))


def test_wrong_values_are_one_line_naming_the_flag() -> None:
    table = flag_table("vllm", "0.19.0")
    with pytest.raises(InputError, match=r"--tensor-parallel-size: 'two' is not a whole number \(vLLM 0.19.0\)"):
        parse_args(["--tensor-parallel-size", "two"], table)
    with pytest.raises(InputError, match="invalid choice 'fp9'"):  # 0.19 still lists the choices
        parse_args(["--kv-cache-dtype", "fp9"], table)
    with pytest.raises(InputError, match="takes no value"):
        parse_args(["--enforce-eager=1"], table)
    with pytest.raises(InputError, match="expects a value"):
        parse_args(["--max-model-len"], table)


def test_entry_points_and_continuations() -> None:
    text = "VLLM_USE_V1=1 vllm serve Qwen/Qwen3-8B \\\n  --tensor-parallel-size 2 \\\n  --max-model-len 8192"
    assert words_of([text])[:3] == ["VLLM_USE_V1=1", "vllm", "serve"]
    command = read_command([text])
    assert (command.engine, command.model, command.notes) == ("vllm", "Qwen/Qwen3-8B",
                                                              ("environment not read: VLLM_USE_V1=1",))
    api = read_command(["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen3-8B"])
    assert (api.entry, api.model) == ("api_server", "Qwen/Qwen3-8B")
    with pytest.raises(InputError, match="give --model"):
        read_command(["python", "-m", "vllm.entrypoints.openai.api_server", "Qwen/Qwen3-8B"])
    sgl = read_command(["sglang", "serve", "--model-path", "Qwen/Qwen3-8B", "--tp-size", "2"])
    assert (sgl.engine, sgl.table.release, sgl.model) == ("sglang", "0.5.23", "Qwen/Qwen3-8B")
    with pytest.raises(InputError, match=r"sglang serve exists from 0\.5\.5"):
        read_command(["sglang", "serve", "--model-path", "Qwen/Qwen3-8B"], "sglang@0.5.2")
    trt = read_command(["trtllm-serve", "serve", "Qwen/Qwen3-8B", "--tp_size", "2"])
    assert (trt.engine, trt.model) == ("trtllm", "Qwen/Qwen3-8B")
    with pytest.raises(InputError, match="is vllm, the command is sglang's"):
        read_command(["sglang", "serve", "--model-path", "x"], "vllm@0.19")


def test_a_model_with_a_space_is_a_model_not_a_command() -> None:
    assert not is_command(["/models/my model/config.json"])
    assert is_command(["vllm serve x"]) and is_command(["python", "-m", "x"])


def test_the_executables_known_before_any_engine_loads_are_the_spellings() -> None:
    # is_command tells a model id from a command with EXECUTABLES, without importing every engine (issue 33,
    # start-up); the engines' spellings are what it stands for.
    from kvplan.launch.command import _executables
    from kvplan.launch.words import EXECUTABLES

    assert _executables() == EXECUTABLES
    assert all(is_command([name]) for name in EXECUTABLES) and not is_command(["meta-llama/Llama-3.1-8B"])
