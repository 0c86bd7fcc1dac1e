"""The report page's stylesheet and colours: system fonts only (nothing is fetched), tables that
scroll sideways on a phone, charts that scale to the column, and a print layout for PDF."""

from __future__ import annotations

ENGINE_COLORS = {"vllm": "#2563eb", "sglang": "#d97706", "trtllm": "#059669", "hf": "#9333ea"}
OTHER_COLORS = ("#0891b2", "#be123c", "#4d7c0f", "#7c2d12")
DASHES = ("", "7 4", "2 3", "10 3 2 3")  # one per KV dtype
TERM_COLORS = {"weights": "#475569", "fraction": "#cbd5e1", "kv": "#16a34a"}
OVERHEAD_COLORS = ("#f59e0b", "#ef4444", "#8b5cf6", "#ec4899", "#14b8a6", "#a16207")


def engine_color(engine: str, index: int = 0) -> str:
    return ENGINE_COLORS.get(engine, OTHER_COLORS[index % len(OTHER_COLORS)])


CSS_TEMPLATE = """
:root { --fg: #1f2933; --muted: #5b6777; --line: #dde2e8; --soft: #f4f6f9; --accent: #1d4ed8; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; color: var(--fg); background: #fff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
.inner, main { max-width: 1180px; margin: 0 auto; padding: 0 24px; }
header { background: #0f172a; color: #f1f5f9; padding: 26px 0 22px; }
header h1 { font-size: 26px; line-height: 1.25; margin: 0 0 4px; font-weight: 650; overflow-wrap: anywhere; }
header .sub { color: #cbd5e1; margin: 0; }
header .cmd { display: block; margin: 12px 0 0; padding: 8px 12px; border-radius: 6px; background: #1e293b;
  color: #e2e8f0; white-space: pre-wrap; overflow-wrap: anywhere; }
.glance { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 170px), 1fr)); gap: 10px;
  margin-top: 16px; }
.card { background: #1e293b; border-radius: 8px; padding: 9px 13px; }
.card .k { font-size: 12px; color: #94a3b8; text-transform: uppercase; letter-spacing: .04em; }
.card .v { font-size: 20px; font-weight: 620; font-variant-numeric: tabular-nums; }
.card .s { font-size: 13px; color: #cbd5e1; font-variant-numeric: tabular-nums; }
nav { background: var(--soft); border-bottom: 1px solid var(--line); }
nav ol { max-width: 1180px; margin: 0 auto; padding: 9px 24px; display: flex; flex-wrap: wrap; gap: 2px 18px;
  list-style: none; font-size: 14px; }
nav a { color: var(--accent); text-decoration: none; }
section { padding: 24px 0 10px; border-bottom: 1px solid var(--line); }
h2 { font-size: 21px; margin: 0 0 4px; }
h2 .n { color: var(--muted); font-weight: 500; margin-right: 7px; }
h3 { font-size: 15.5px; margin: 20px 0 6px; }
p { max-width: 92ch; }
p.lead { color: var(--muted); margin: 0 0 12px; }
.cols { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 420px), 1fr)); gap: 4px 36px; }
dl.kv { display: grid; grid-template-columns: minmax(9em, max-content) 1fr; gap: 5px 16px; margin: 6px 0 12px; }
dl.kv dt { color: var(--muted); }
dl.kv dd { margin: 0; overflow-wrap: anywhere; }
.wrap { overflow-x: auto; margin: 6px 0 14px; -webkit-overflow-scrolling: touch; }
table { border-collapse: collapse; font-size: 13.5px; font-variant-numeric: tabular-nums; }
th, td { padding: 5px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
thead th { background: var(--soft); font-weight: 600; }
td.n, th.n { text-align: right; }
table.wide, .charts table { font-size: 12.5px; }
table.wide th, table.wide td, .charts th, .charts td { padding: 4px 6px; }
@@CHART_CARDS@@tbody th { font-weight: 500; color: var(--muted); }
tr.total td { font-weight: 600; border-top: 2px solid #94a3b8; }
tr.sub td { color: var(--muted); font-style: italic; }
tr.mine td { background: #eef4ff; }
.u { display: block; color: var(--muted); font-size: 12px; }
.formula { white-space: nowrap; }
code, pre, .mono, .formula { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  font-size: 12.5px; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
pre.log { background: #0f172a; color: #e2e8f0; padding: 9px 12px; border-radius: 6px; margin: 4px 0 12px; }
pre.plain { background: var(--soft); padding: 9px 12px; border-radius: 6px; margin: 4px 0 12px; }
.logtitle { font-weight: 600; font-size: 13.5px; margin-top: 10px; }
.badge { display: inline-block; padding: 0 6px; border-radius: 4px; font-size: 12px; border: 1px solid var(--line);
  white-space: nowrap; }
.badge.est { background: #fff7e6; border-color: #f3c36b; color: #8a5300; }
.badge.exact { background: #ecfdf3; border-color: #a6e3bd; color: #0f7b3f; }
.ok { color: #0f7b3f; font-weight: 600; }
.bad { color: #b42318; font-weight: 600; }
.warn { background: #fff7e6; border-left: 4px solid #f59e0b; padding: 8px 14px 8px 30px; margin: 8px 0; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 480px), 1fr)); gap: 18px 32px; }
figure { margin: 8px 0 6px; min-width: 0; }
figcaption { font-weight: 600; font-size: 14.5px; margin-bottom: 2px; }
figure svg { display: block; width: 100%; height: auto; max-width: 760px; }
figure.wide svg { max-width: 900px; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; font-size: 12.5px;
  fill: #374151; }
svg text.label { font-size: 13px; fill: #1f2933; font-weight: 600; }
svg text.value { font-size: 12px; font-weight: 600; }
svg text.in { fill: #fff; font-size: 15px; font-weight: 600; }
svg text.in.dark { fill: #1f2933; }
svg .grid { stroke: #e5e7eb; }
svg .axis { stroke: #9ca3af; }
.bars { max-width: 920px; margin: 6px 0 4px; }
.bar { margin: 4px 0 12px; }
.bartitle { display: flex; justify-content: space-between; gap: 12px; font-size: 14px; font-weight: 600; }
.bartitle .mark { color: var(--muted); font-weight: 500; white-space: nowrap; }
.bar svg { display: block; width: 100%; height: 28px; max-width: none; }
.legend { display: flex; flex-wrap: wrap; gap: 3px 16px; font-size: 13px; margin: 4px 0 8px; }
.sw { display: inline-block; width: 20px; height: 11px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.sw.line { height: 0; border-top: 3px solid; border-radius: 0; vertical-align: 3px; }
details summary { cursor: pointer; color: var(--accent); margin: 6px 0; }
footer { color: var(--muted); font-size: 13px; padding: 18px 0 30px; }
@media (max-width: 640px) {
  body { font-size: 14.5px; }
  .inner, main, nav ol { padding-left: 14px; padding-right: 14px; }
  header h1 { font-size: 21px; }
  dl.kv { grid-template-columns: 1fr; gap: 0; }
  dl.kv dt { color: var(--fg); font-weight: 600; margin-top: 7px; }
  table { font-size: 13px; }
  .wrap { overflow-x: visible; }
@@PHONE_CARDS@@  .formula { white-space: normal; }
  tr.total td { border-top: none; }
  svg text { font-size: 16px; }
  svg text.label { font-size: 16px; }
  svg text.value { font-size: 15px; }
  svg text.in { display: none; }
}
@media print {
  @page { margin: 12mm; }
  body { font-size: 10pt; }
  header { background: none; color: #000; padding: 0 0 8px; border-bottom: 2px solid #000; }
  header .sub, .card .s, .card .k { color: #333; }
  header .cmd { background: #f1f5f9; color: #000; }
  .card { background: none; border: 1px solid #cbd5e1; }
  nav { display: none; }
  .inner, main { max-width: none; padding: 0; }
  .wrap { overflow: visible; }
  table { font-size: 8.5pt; }
  th, td { padding: 2px 5px; }
  thead th, td.n, tbody td:first-child, .formula { white-space: normal; }
@@PRINT_CARDS@@
  figure, pre, tr, .card { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
  pre.log { background: #f1f5f9; color: #000; border: 1px solid #cbd5e1; }
  a { color: inherit; text-decoration: none; }
}
"""


def cards(table: str) -> str:
    """Rules that lay each row of `table` out as a card of "header: value" lines (a phone; paper)."""
    return f"""  {table}, {table} tbody, {table} tr, {table} td {{ display: block; width: 100%; }}
  {table} thead {{ display: none; }}
  {table} tr {{ border-bottom: 2px solid #c5ccd6; padding: 5px 0 7px; break-inside: avoid; }}
  {table} td {{ display: flex; justify-content: space-between; gap: 14px; border: none; padding: 1px 2px;
    text-align: right; white-space: normal; }}
  {table} td::before {{ content: attr(data-label); color: var(--muted); text-align: left; }}
  {table} td[data-label=""] {{ font-weight: 600; text-align: left; }}
  {table} td[data-label=""]::before {{ content: none; }}
  {table} td > div {{ min-width: 0; overflow-wrap: anywhere; }}
  {table} td:has(> div:empty) {{ display: none; }}
"""


# A chart's numbers sit in half the page: a wide table of them is laid out as cards there, at any width.
CSS = (CSS_TEMPLATE.replace("@@PHONE_CARDS@@", cards("table.cards")).replace("@@PRINT_CARDS@@", cards("table.wide"))
       .replace("@@CHART_CARDS@@", cards(".charts table.wide").replace("\n  ", "\n").lstrip()))
