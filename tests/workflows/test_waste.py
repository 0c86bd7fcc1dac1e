"""`kvplan waste`: preallocation vs paging vs exact for a list of lengths, and the length specs."""

from __future__ import annotations

import json
import math

import pytest

from kvplan.errors import InputError
from kvplan.workflows import waste
from kvplan.workflows.lengths import lengths_from, read_lengths, spec_lengths

LLAMA8 = "meta-llama/Llama-3.1-8B"
BPT = 131_072  # Llama-3.1-8B bf16: 2 × 32 × 8 × 128 × 2 B


@pytest.fixture
def lengths_file(tmp_path):
    path = tmp_path / "lengths.txt"
    path.write_text("100\n# a comment\n4k\n\n2000  # trailing comment\n")
    return path


def test_read_lengths_skips_comments_and_blank_lines(lengths_file):
    assert read_lengths(lengths_file) == (100, 4096, 2000)


def test_waste_library(lengths_file):
    # contiguous: 3 × 4,096 = 12,288 tokens; paged: 112 (7 blocks) + 4,096 + 2,000 (125 blocks) = 6,208;
    # exact: 6,196. Table: 3 sequences × 2 × pow2(cdiv(4096, 16) = 256) × 8 B = 12,288 B.
    r = waste(LLAMA8, lengths=read_lengths(lengths_file), max_model_len=4096)
    contiguous, paged, exact = r.rows
    assert [row.memory.kv_tokens for row in r.rows] == [12_288, 6_208, 6_196]
    assert paged.memory.total_bytes_per_gpu == 6_208 * BPT + 12_288
    assert exact.waste_bytes_per_gpu == 0 and exact.waste_pct == 0
    # (12,288 − 6,196) / 12,288 = 49.58 %
    assert contiguous.waste_pct == pytest.approx(100 * (12_288 - 6_196) / 12_288)


def test_waste_cli_json(run_cli, lengths_file):
    code, out, err = run_cli("waste", LLAMA8, "--max-seq-len", "4096", "--lengths", str(lengths_file), "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert (payload["num_sequences"], payload["max_tokens"], payload["min_tokens"]) == (3, 4096, 100)
    by_name = {a["allocator"]: a for a in payload["allocators"]}
    assert by_name["contiguous"]["total_bytes_per_gpu"] == 12_288 * BPT
    assert by_name["exact"]["total_bytes_per_gpu"] == 6_196 * BPT


def test_waste_cli_table_with_spec(run_cli):
    code, out, err = run_cli("waste", LLAMA8, "--max-model-len", "4k", "--lengths", "fixed:1000:10")
    assert code == 0, err
    assert "contiguous" in out and "waste %" in out
    # contiguous waste: (4,096 − 1,000) / 4,096 = 75.6 %
    assert "75.6%" in out


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param("uniform:100..400:4", (100, 200, 300, 400), id="uniform"),
    pytest.param("fixed:512:3", (512, 512, 512), id="fixed"),
    pytest.param("normal:1000,100:1", (1000,), id="normal-median"),
    pytest.param("lognormal:800,1.0:1", (800,), id="lognormal-median"),
    pytest.param("uniform:1..10000:2", (1, 4096), id="clamped-to-max"),
])
def test_spec_lengths(spec, expected):
    assert spec_lengths(spec, 4096) == expected


def test_lognormal_quantiles_are_symmetric_in_log():
    # quantiles 1/6 and 5/6 sit at median × e^(∓σz): their product is median²
    low, mid, high = spec_lengths("lognormal:800,1.0:3", 100_000)
    assert mid == 800
    assert math.isclose(low * high, 800 * 800, rel_tol=0.01)
    assert low < mid < high


@pytest.mark.parametrize("text", ["nope", "uniform:400..100:4", "normal:1000:5", "fixed:10:0", "weird:1:2",
                                  "normal:-5,2:3"])
def test_bad_specs(text):
    with pytest.raises(InputError):
        lengths_from(text, 4096)


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(("--max-seq-len", "1000", "--lengths", "fixed:2000:2"), None, id="clamped-spec-ok"),
    pytest.param(("--max-seq-len", "0", "--lengths", "fixed:10:2"), "--max-model-len", id="zero-max"),
])
def test_waste_cli_edges(run_cli, args, message):
    code, _, err = run_cli("waste", LLAMA8, *args)
    if message is None:
        assert code == 0, err
    else:
        assert code == 2 and message in err


def test_waste_cli_length_over_max_in_file(run_cli, lengths_file):
    code, _, err = run_cli("waste", LLAMA8, "--max-seq-len", "1000", "--lengths", str(lengths_file))
    assert code == 2 and "exceeds --max-model-len" in err


def test_waste_bad_file_line(run_cli, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("100\nabc\n")
    code, _, err = run_cli("waste", LLAMA8, "--max-seq-len", "4k", "--lengths", str(path))
    assert code == 2 and "bad.txt:2" in err


def test_cli_help_names_the_same_specs():
    # kvplan/cli/waste.py keeps its own copy so that start-up does not import the workflows package
    from kvplan.cli.waste import SPEC_HELP as CLI_SPEC_HELP
    from kvplan.workflows.lengths import SPEC_HELP

    assert CLI_SPEC_HELP == SPEC_HELP
