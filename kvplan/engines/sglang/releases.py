"""SGLang's releases: the row type (``row.py``) and the rows (``rows.py``), imported from one place."""

from __future__ import annotations

from kvplan.engines.sglang.row import FractionRule, Method, PrefillGraphs, SglangRelease, SwaPool, Tier
from kvplan.engines.sglang.rows import MINORS, NEWEST, RELEASES, ROWS, release_for

__all__ = ["MINORS", "NEWEST", "RELEASES", "ROWS", "FractionRule", "Method", "PrefillGraphs", "SglangRelease", "SwaPool",
           "Tier", "release_for"]
