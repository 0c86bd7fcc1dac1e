"""`kvplan report`'s page: one self-contained HTML file drawn from the report payload.

``report_html(payload)`` reads only the typed payload ``kvplan.render.report.report_payload`` built and
embeds its JSON, so the page shows nothing the JSON does not hold. No script runs and nothing
is fetched: system fonts, inline CSS and inline SVG (``svg``, ``bars``). One module per section.
"""

from __future__ import annotations

import json

from kvplan.render.html.capacity import capacity_section
from kvplan.render.html.curves import curves_section
from kvplan.render.html.engines import memory_section
from kvplan.render.html.inputs import header, inputs_section
from kvplan.render.html.markup import esc
from kvplan.render.html.measured import measured_section, notes_section
from kvplan.render.html.sizes import size_section
from kvplan.render.html.style import CSS
from kvplan.render.payload import plain
from kvplan.render.report import ReportPayload

SECTIONS = (("inputs", "Inputs"), ("size", "Per token & sequence"), ("memory", "GPU memory"),
            ("capacity", "Capacity"), ("curves", "Curves"), ("measured", "Measured"), ("notes", "Warnings & notes"))
DATA_ID = "kvplan-report"


def embedded_json(payload: ReportPayload) -> str:
    """The payload as JSON that cannot close its <script> element ('<' written as \\u003c)."""
    return json.dumps(plain(payload), ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def report_html(payload: ReportPayload, command: str | None = None) -> str:
    """The whole page. `command` (the command line that made it) is shown, not embedded."""
    nav = "".join(f'<li><a href="#{a}">{i}. {esc(t)}</a></li>' for i, (a, t) in enumerate(SECTIONS, 1))
    sections = "".join(s(payload) for s in (inputs_section, size_section, memory_section, capacity_section,
                                             curves_section, measured_section, notes_section))
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="kvplan report"><title>KV cache plan: {esc(payload.model)}</title>'
            f"<style>{CSS}</style></head><body>{header(payload, command)}<nav><ol>{nav}</ol></nav>"
            f"<main>{sections}</main><footer class=\"inner\">Made by kvplan from the config and engine rules "
            f"named in section 1, offline. Bytes are exact integers (B); KiB, MiB, GiB are powers of 2.</footer>"
            f'<script type="application/json" id="{DATA_ID}">{embedded_json(payload)}</script></body></html>\n')
