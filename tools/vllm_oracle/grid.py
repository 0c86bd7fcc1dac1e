"""Grids of build points, and the deterministic sampling of the small grid.

small: tp {1,2,4,8} x pp {1,2} x kv dtype {auto,fp8} x block {None,16}
       x max_model_len {4096, 32768, model max} x budget {10 GiB, 40 GiB},
       max_model_len clipped to the model's maximum and de-duplicated.
       Sampling rule (see `order_small`): round-robin over the (tp, pp) pairs
       in the order (1,1) (1,2) (2,1) (2,2) (4,1) (4,2) (8,1) (8,2), taking
       each pair's points in the order of
       sha256("<org/name>|tp|pp|dtype|block|max_model_len"); points are run in
       that order until SMALL_CAP records exist. A point vLLM refuses to build
       is kept only while the model has fewer than MAX_BUILD_REFUSALS such
       records (refusals for lack of KV memory are always kept).
full:  the whole product, no cap.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .runner import BuildPoint

GIB = 2**30
TPS, PPS = (1, 2, 4, 8), (1, 2)
KV_DTYPES, BLOCK_SIZES = ("auto", "fp8"), (None, 16)
MAX_MODEL_LENS = (4096, 32768, None)  # None: the model's maximum (flag not passed)
BUDGETS = (10 * GIB, 40 * GIB)
SMALL_CAP = 40
MAX_BUILD_REFUSALS = 2


def max_model_lens(model_max: int | None) -> list[int | None]:
    """4096, 32768 and the model maximum, clipped to it, without repeats."""
    if model_max is None:
        return list(MAX_MODEL_LENS)
    wanted = [model_max if v is None else min(v, model_max) for v in MAX_MODEL_LENS]
    unique = list(dict.fromkeys(wanted))
    return [None if v == model_max else v for v in unique]


def product_points(model: str, model_dir: str, model_max: int | None) -> list[BuildPoint]:
    axes = itertools.product(TPS, PPS, KV_DTYPES, BLOCK_SIZES, max_model_lens(model_max))
    return [BuildPoint(model, model_dir, tp, pp, dtype, block, mml, BUDGETS)
            for tp, pp, dtype, block, mml in axes]


def _hash_key(point: BuildPoint) -> str:
    key = (f"{point.model}|{point.tp}|{point.pp}|{point.kv_cache_dtype}|"
           f"{point.block_size}|{point.max_model_len}")
    return hashlib.sha256(key.encode()).hexdigest()


def order_small(points: list[BuildPoint]) -> list[BuildPoint]:
    pairs: dict[tuple[int, int], list[BuildPoint]] = defaultdict(list)
    for point in sorted(points, key=_hash_key):
        pairs[(point.tp, point.pp)].append(point)
    queues = [pairs[pair] for pair in itertools.product(TPS, PPS) if pairs[pair]]
    rounds = itertools.zip_longest(*queues)
    return [point for round_ in rounds for point in round_ if point is not None]


def _is_build_refusal(record: dict[str, Any]) -> bool:
    return record["error_stage"] in ("engine_config", "model_build")


def keep_small(kept: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of `new` that the small-grid rule keeps, given `kept`."""
    refusals = sum(1 for r in kept if _is_build_refusal(r))
    if any(_is_build_refusal(r) for r in new) and refusals >= MAX_BUILD_REFUSALS:
        return []
    return new[: max(0, SMALL_CAP - len(kept))]


def points_from_file(path: Path, model_dirs: dict[str, str]) -> list[BuildPoint]:
    """Build points of an existing record file (e.g. the sample), grouped by build
    inputs with every budget they were planned with."""
    budgets: dict[tuple, list[int]] = defaultdict(list)
    for rec in json.loads(path.read_text()):
        if rec["model"] not in model_dirs:
            continue
        key = (rec["model"], rec["tp"], rec["pp"], rec["kv_cache_dtype"],
               rec["block_size"], rec["max_model_len"])
        known = budgets[key]
        if rec["available_bytes"] is not None and rec["available_bytes"] not in known:
            known.append(rec["available_bytes"])
    return [BuildPoint(m, model_dirs[m], tp, pp, d, b, mml, tuple(budget_list))
            for (m, tp, pp, d, b, mml), budget_list in budgets.items()]


def find_config_dirs(paths: Iterable[str]) -> list[Path]:
    """Each argument: a config.json, a folder holding one, or a tree of them."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw).resolve()
        if path.is_file():
            found.append(path.parent)
        elif (path / "config.json").is_file():
            found.append(path)
        else:
            found.extend(sorted(p.parent for p in path.rglob("config.json")))
    return list(dict.fromkeys(found))


def model_name(config_dir: Path) -> str:
    """'org/name' from the last two folder names, as Hugging Face ids read."""
    return f"{config_dir.parent.name}/{config_dir.name}"
