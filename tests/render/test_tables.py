"""kvplan.render.tables.Table: a rich table while it fits whole, a stacked layout below that width."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from kvplan.render.notes import merge_notes, summarize_skipped
from kvplan.render.tables import Table, pack


def draw(table: Table, width: int) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width, highlight=False).print(table)
    return buf.getvalue()


def sample() -> Table:
    table = Table(title="two models")
    for name, justify in (("model", "left"), ("B/token", "right"), ("GiB/GPU", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    table.add_row("meta-llama/Llama-3.1-70B", "327,680", "1.25")
    table.add_row("deepseek-ai/DeepSeek-V3", "70,272", "2.14")
    return table


def test_min_width_is_the_rich_table_with_every_cell_whole() -> None:
    # widest cells 24, 7, 7 (headers "B/token", "GiB/GPU") + 2 padding each + 4 borders = 24+7+7 + 6 + 4 = 48
    table = sample()
    assert table.min_width() == 48
    at_min = draw(table, 48)
    assert "┏" in at_min and "…" not in at_min and "327,680" in at_min and "meta-llama/Llama-3.1-70B" in at_min
    assert max(len(line) for line in at_min.splitlines()) == 48


def test_one_column_narrower_stacks_and_keeps_every_value() -> None:
    out = draw(sample(), 47)
    assert "┏" not in out and "…" not in out
    assert "model: meta-llama/Llama-3.1-70B" in out
    assert "B/token: 327,680 · GiB/GPU: 1.25" in out


@pytest.mark.parametrize("width", [20, 30, 47])
def test_stacked_items_are_never_split(width: int) -> None:
    out = draw(sample(), width)
    for item in ("B/token: 327,680", "GiB/GPU: 1.25", "B/token: 70,272", "GiB/GPU: 2.14"):
        assert any(item in line for line in out.splitlines()), (item, out)


def test_a_prose_column_wraps_between_words_and_numbers_stay_whole() -> None:
    table = Table(title="checks")
    table.add_column("quantity")
    table.add_column("kvplan", justify="right")
    table.add_column("why", wrap=True)
    table.add_row("num_blocks", "5,054-5,070", "min over 2 worker budgets (3.09 GiB) // 655,360-B blocks " * 3)
    # the why column may shrink to its longest word ("655,360-B"): the table stays a table
    assert table.min_width() == 2 + 10 + 2 + 11 + 2 + 9 + 4
    out = draw(table, 50)
    assert "┏" in out and "…" not in out and "5,054-5,070" in out and out.count("655,360-B") == 3


def test_stack_by_columns_gives_one_block_per_column() -> None:
    table = Table(title="capacity", stack="columns")
    table.add_column("")
    table.add_column("vllm", justify="right")
    table.add_column("sglang", justify="right")
    table.add_row("KV tokens", "259,856", "137,065")
    table.add_row("blocks", "18,289", "123,359")
    out = draw(table, 20)
    assert "vllm\n  KV tokens: 259,856\n  blocks: 18,289" in out
    assert "sglang\n  KV tokens: 137,065\n  blocks: 123,359" in out


def test_a_cell_under_an_empty_header_continues_the_item_before() -> None:
    table = Table()
    for name in ("", "whole model (B)", "", "per GPU (B)", ""):
        table.add_column(name)
    table.add_row("total", "1,342,177,280", "1.25 GiB", "335,544,320", "320.00 MiB")
    table.add_row("total, all 4 GPUs", "1,342,177,280", "1.25 GiB", "", "")
    out = draw(table, 50)
    assert "total\n  whole model (B): 1,342,177,280 (1.25 GiB)\n  per GPU (B): 335,544,320 (320.00 MiB)" in out
    assert "total, all 4 GPUs\n  whole model (B): 1,342,177,280 (1.25 GiB)\n" in out


def test_pack() -> None:
    assert pack(["a: 1", "b: 2", "c: 3"], 11) == ["a: 1 · b: 2", "c: 3"]
    assert pack(["a very long item"], 5) == ["a very long item"]  # alone on its line, never cut


def test_rows_must_match_the_columns() -> None:
    with pytest.raises(ValueError):
        sample().add_row("only one cell")


def test_notes_shared_by_every_engine_are_said_once() -> None:
    notes = [(e, "config has no torch_dtype; assuming bf16") for e in ("vllm", "sglang", "trtllm", "hf")]
    assert merge_notes(notes) == ["config has no torch_dtype; assuming bf16"]


def test_notes_that_differ_in_numbers_become_one_line() -> None:
    notes = [("vllm", "overhead is an estimate (2.03 GiB); pass the budget"),
             ("sglang", "overhead is an estimate (0.50 GiB); pass the budget"),
             ("sglang", "page size 1; the pool holds N + 1 slots")]
    assert merge_notes(notes) == ["overhead is an estimate (vllm 2.03, sglang 0.50 GiB); pass the budget",
                                  "sglang: page size 1; the pool holds N + 1 slots"]


def test_notes_of_one_answer_keep_their_text() -> None:
    assert merge_notes([("", "a"), ("", "b"), ("", "a")]) == ["a", "b"]
    # one label, two notes of one shape: both, as they are (bf16 and H100 are words, not numbers)
    assert merge_notes([("", "skipped tp=3: x"), ("", "skipped tp=6: x")]) == ["skipped tp=3: x", "skipped tp=6: x"]


def test_skipped_notes_are_summarized() -> None:
    notes = ["warning: long", *(f"skipped M tp={t}: no" for t in range(300))]
    lines = summarize_skipped(notes)
    assert lines[0] == "warning: long" and len(lines) == 2
    assert lines[1].startswith("skipped 300 combinations that cannot run, e.g. M tp=0: no; M tp=1: no; M tp=2: no")
    assert lines[1].endswith("and 297 more")
    assert summarize_skipped(["skipped a", "skipped b"]) == ["skipped a", "skipped b"]


def test_brackets_in_a_title_header_or_cell_are_drawn_as_written() -> None:
    """A log line's `[gpu_worker.py:462]` or an explain line's `[full]` is text, not rich markup (which would drop
    it), in the rich table as in the stacked layout."""
    table = Table(title="rules [vLLM 0.19]")
    table.add_column("where [file]")
    table.add_row("INFO [gpu_worker.py:462] Available KV cache memory: [full] [bold]27.93[/bold] GiB")
    for width in (200, 40):
        out = " ".join(draw(table, width).split())
        assert "rules [vLLM 0.19]" in out and "[file]" in out
        assert "[gpu_worker.py:462]" in out and "[full]" in out and "[bold]27.93[/bold]" in out
