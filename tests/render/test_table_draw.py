"""kvplan.render.table_draw draws a table segment for segment as rich's Table does, on every kind of console."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.segment import Segment

from kvplan.render.table_draw import DrawnTable, drawable, merged
from kvplan.render.tables import Table

SHAPES = {
    "summary": ([("", "left"), ("vllm", "right")], [("version", "vLLM 0.33"), ("GPU memory", "85,018 (79.18 GiB)"),
                                                      ("decode step ≥ (memory bound)", "21.75 ms (14 req.)")]),
    "budget": ([("term", "left"), ("bytes", "right"), ("GiB", "right"), ("", "left")],
               [("weights", "35,278,831,616", "32.86", "exact"), ("= KV budget", "39", "36.93", "")]),
    "one row": ([("kind", "left"), ("layers (GPU)", "right")], [("full", "80 (80)")]),
    "header only": ([("a", "left"), ("b", "right")], []),
    "wide": ([("模型", "left"), ("n", "right")], [("数据", "1"), ("x", "全角")]),
    "markup-like": ([("[b]", "left")], [("[gpu_worker.py:462]",)]),
}


def _drawn(table: Table) -> DrawnTable:
    widths = table.column_widths()
    assert drawable(table.columns, table.rows, widths)
    return DrawnTable(table.columns, table.rows, widths)


def _runs(segments: list[Segment]) -> list[Segment]:
    """Segments as the console writes them: a run of unstyled ones is the same text as one segment."""
    assert not any(s.control for s in segments)
    return list(merged((s.text, s.style) for s in segments))


def _table(shape: str) -> Table:
    columns, rows = SHAPES[shape]
    table = Table()
    for header, justify in columns:
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*row)
    return table


CONSOLES = {
    "plain": {}, "terminal": {"force_terminal": True, "color_system": "truecolor"},
    "standard": {"force_terminal": True, "color_system": "standard"}, "no color": {"force_terminal": True, "no_color": True},
    "256, unsafe box": {"force_terminal": True, "color_system": "256", "safe_box": False},
    "legacy windows": {"force_terminal": True, "legacy_windows": True},
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("console", CONSOLES)
def test_drawn_as_rich_draws_it(shape: str, console: str) -> None:
    table = _table(shape)
    outputs = []
    for renderable in (table.rich_table(titled=False), _drawn(table)):
        out = io.StringIO()
        con = Console(file=out, width=120, highlight=False, emoji=False, **CONSOLES[console])  # type: ignore[arg-type]
        segments = _runs(list(con.render(renderable, con.options)))
        con.print(renderable)
        outputs.append((segments, out.getvalue()))
    assert outputs[0] == outputs[1]


def test_ascii_only_consoles_get_rich_s_substitute_box() -> None:
    table = _table("budget")
    outputs = []
    for renderable in (table.rich_table(titled=False), _drawn(table)):
        con = Console(file=io.StringIO(), width=120)
        options = con.options.copy()
        options.encoding = "ascii"  # a console that cannot write the box characters
        outputs.append(_runs(list(con.render(renderable, options))))
    assert outputs[0] == outputs[1] and "+" in "".join(s.text for s in outputs[1])


@pytest.mark.parametrize(("cells", "ok"), [(("a\tb",), False), (("two\nlines",), False), ((" lead",), False),
                                          (("trail ",), False), (("\x1b[1m",), False), (("fine",), True)])
def test_cells_rich_would_change_are_left_to_rich(cells: tuple[str, ...], ok: bool) -> None:
    table = Table()
    table.add_column("h")
    table.add_row(*cells)
    assert drawable(table.columns, table.rows, table.column_widths()) is ok


def test_wrapping_centred_or_empty_columns_are_left_to_rich() -> None:
    for add in ({"wrap": True}, {"justify": "center"}):
        table = Table()
        table.add_column("h", **add)  # type: ignore[arg-type]
        table.add_row("x")
        assert not drawable(table.columns, table.rows, table.column_widths())
    table = Table()
    table.add_column("")
    table.add_row("")
    assert not drawable(table.columns, table.rows, table.column_widths())


@pytest.mark.parametrize("model", ["meta-llama/Llama-3.1-70B", "deepseek-ai/DeepSeek-V3"])
def test_capacity_s_tables_print_as_rich_prints_them(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from kvplan.planning.capacity import capacity
    from kvplan.render.capacity import capacity_payload
    from kvplan.render.capacity_tables import capacity_tables

    payload = capacity_payload(capacity(model, engine="vllm", gpu="H100", tp=4, max_model_len=32768))
    tables = [t for t in capacity_tables(payload) if isinstance(t, Table)]
    assert len(tables) >= 3 and all(drawable(t.columns, t.rows, t.column_widths()) for t in tables)

    def printed(console: str, width: int) -> str:
        out = io.StringIO()
        con = Console(file=out, width=width, highlight=False, emoji=False, **CONSOLES[console])  # type: ignore[arg-type]
        for table in capacity_tables(payload):
            con.print(table)
        return out.getvalue()

    cases = [(console, width) for console in CONSOLES for width in (60, 100, 200)]
    drawn = [printed(*case) for case in cases]
    monkeypatch.setattr("kvplan.render.table_draw.drawable", lambda *args: False)  # every table rich's own
    assert drawn == [printed(*case) for case in cases]
