"""GPU prices per GPU-hour for `kvplan fit`: `H100=2.49,H200=3.50` inline, or the text of a small file.

Files: TOML (``H100 = 2.49`` lines, at the top or under a ``[prices]`` table) or CSV (``gpu,price``
rows; a header row and ``#`` comments are skipped). A price is a number ≥ 0, with an optional
leading ``$``. GPU names are any name ``--gpu`` takes; they are resolved when fit runs.
This module parses text only: the CLI reads the file.
"""

from __future__ import annotations

import csv
import io
import math
import sys
from typing import Any

from kvplan.errors import InputError


def _price(name: str, value: Any) -> float:
    text = str(value).strip().removeprefix("$").strip()
    try:
        price = float(text)
    except ValueError:
        raise InputError(f"prices: {name!r} has price {value!r}; expected a number per GPU-hour like 2.49",
                         arg="prices") from None
    if price < 0 or not math.isfinite(price):
        raise InputError(f"prices: {name!r} has price {value!r}; a price is a number ≥ 0", arg="prices")
    return price


def parse_prices(text: str) -> dict[str, float]:
    """`H100=2.49,H200=3.50` -> {"H100": 2.49, "H200": 3.5}."""
    out: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise InputError(f"prices: {part.strip()!r} is not GPU=PRICE (e.g. H100=2.49)", arg="prices")
        out[name.strip()] = _price(name.strip(), value)
    return out


def prices_from_toml(text: str) -> dict[str, float]:
    if sys.version_info < (3, 11):
        raise InputError("prices: TOML files need Python 3.11; give a CSV file (gpu,price)", arg="prices")
    import tomllib  # type: ignore[import-not-found, unused-ignore]  # mypy checks as Python 3.10

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"prices: not valid TOML: {exc}", arg="prices") from None
    table = data.get("prices", data)
    if not isinstance(table, dict) or not table:
        raise InputError("prices: the TOML file holds no `GPU = price` lines", arg="prices")
    return {str(name): _price(str(name), value) for name, value in table.items()}


def prices_from_csv(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for row in csv.reader(io.StringIO(text)):
        cells = [c.strip() for c in row]
        if not any(cells) or cells[0].startswith("#"):
            continue
        if len(cells) < 2:
            raise InputError(f"prices: CSV row {','.join(row)!r} is not gpu,price", arg="prices")
        if not out and cells[1].lower() in ("price", "price_per_hour", "usd_per_hour", "$/h"):
            continue  # the header row
        out[cells[0]] = _price(cells[0], cells[1])
    if not out:
        raise InputError("prices: the CSV file holds no gpu,price rows", arg="prices")
    return out


def prices_from_file_text(text: str, suffix: str) -> dict[str, float]:
    """A price file's text, by its suffix: .toml, else CSV."""
    return prices_from_toml(text) if suffix.lower() == ".toml" else prices_from_csv(text)
