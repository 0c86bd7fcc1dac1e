"""GPU prices per GPU-hour for `kvplan fit`: `H100=2.49,H200=3.50` inline, or the text of a small file.

Files: TOML (``H100 = 2.49`` lines, at the top or under a ``[prices]`` table) or CSV (``gpu,price``
rows; a header row and ``#`` comments are skipped). A price is a number ≥ 0, with an optional
leading ``$``. GPU names are any name ``--gpu`` takes; they are resolved when fit runs.
This module parses text only (the CLI reads the file), and says which GPU types `fit` searches: those named, else
every GPU of the catalog, ranked by cost where priced (``price_notes`` says which).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from kvplan.errors import InputError
from kvplan.planning.gpus import gpu_names, lookup_gpu


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
    import csv  # only a .csv price file needs it, not every fit
    import io

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


def price_table(prices: Mapping[str, float] | None) -> dict[str, float]:
    """Prices by catalog name; a name the catalog lacks, or a price below 0 (or NaN), is refused."""
    out = {}
    for name, price in (prices or {}).items():
        if not price >= 0:  # also refuses NaN
            raise InputError(f"prices: {name}={price} is not a price per GPU-hour (a number ≥ 0)", arg="prices")
        out[lookup_gpu(name).name] = float(price)
    return out


def gpu_types(gpu: str | Sequence[str] | None, *, one: bool = False) -> tuple[tuple[str, ...], bool]:
    """Catalog names of the GPU types asked, and whether they are the whole catalog: none named, every GPU of the
    catalog (an H100 where `one`: a given GPU memory describes one GPU). Unknown or ambiguous names raise here,
    before any planning."""
    if gpu is None or (not isinstance(gpu, str) and not list(gpu)):
        return ("H100-SXM",) if one else tuple(gpu_names()), not one
    names = [gpu] if isinstance(gpu, str) else list(gpu)
    return tuple(dict.fromkeys(lookup_gpu(n).name for n in names)), False


def price_notes(gpus: Sequence[str], price: Mapping[str, float], catalog: bool) -> list[str]:
    """What the ranking rests on: which GPU types were searched, which are ranked by cost and which after them."""
    unpriced = [g for g in gpus if g not in price]
    if catalog:
        if not price:
            return [f"no --gpu: every GPU type of the catalog ({len(gpus)}) searched and ranked by GPUs; give --price "
                    "to rank by cost per hour"]
        return [f"no --gpu: every GPU type of the catalog ({len(gpus)}) searched; ranked by cost per hour where "
                f"priced ({', '.join(g for g in gpus if g in price)}), the other {len(unpriced)} after them by GPUs"]
    if price and unpriced:
        return [f"no price for {', '.join(unpriced)}: those setups rank after the priced ones"]
    return []
