"""kvplan's KV budget and weights against what real vLLM V1 start-up logs print ("Available KV cache memory",
"Model loading took"), release by release.

    PYTHONPATH=$PWD python tools/log_budgets.py [--json]

The inputs are tests/data/logs/budget-inputs-vllm.json, read from each log's sidecar (the logs and sidecars are
in the same folder): the release row, the model (a bundled config, or a stand-in of the same dimensions), the GPU's
total (logged, else the catalog's for the GPU the log names), the settings the log states, and the logged budget
per PP stage and weights. Logs whose inputs are incomplete are listed with what they lack. For each log: the
logged budget, kvplan's, and the error in % of usable memory (total × gpu_memory_utilization, the release's
rounding), with kvplan's weights and with the weights the log prints in their place ("rules": the release's
budget rules alone, apart from the weights formats). Worst stage per log; median and worst per release.

Weights: kvplan's weights as loaded (the terms "Model loading took" measures: WEIGHT_KINDS) against the logged figure,
in % of it, for every entry that prints one: the budget entries ("logs") and the logs whose budget inputs are
incomplete but whose weights line and settings are known ("weights_only"). A known miss carries "weights_miss" (the
reason) and "weights_error_pct" (the error measured when it was pinned).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvplan import capacity
from kvplan.engines.base import term_bytes
from kvplan.engines.vllm.releases import release
from kvplan.errors import KvplanError

GIB = 2**30
INPUTS = Path(__file__).resolve().parents[1] / "tests" / "data" / "logs" / "budget-inputs-vllm.json"
WEIGHT_KINDS = ("weights", "weights_extra", "lora", "draft_weights")  # what "Model loading took" measures


def inputs() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(INPUTS.read_text())
    return data


@dataclass(frozen=True, kw_only=True)
class Row:
    log: dict[str, Any]
    usable_bytes: int
    logged_bytes: tuple[int, ...]  # per PP stage the log prints
    kvplan_bytes: tuple[int, ...]
    weights_delta_bytes: int | None  # kvplan's weights (as "Model loading took" counts them) − the logged ones

    def _worst(self, shift: int) -> float:
        errors = [100 * (k - shift - g) / self.usable_bytes for k, g in zip(self.kvplan_bytes, self.logged_bytes, strict=True)]
        return max(errors, key=abs)

    @property
    def error_pct(self) -> float:
        return self._worst(0)

    @property
    def rules_error_pct(self) -> float | None:
        return None if self.weights_delta_bytes is None else self._worst(-self.weights_delta_bytes)


def options(log: dict[str, Any]) -> dict[str, Any]:
    out = dict(log["options"])
    if "gpu_memory_gib" in out:
        out["gpu_memory_bytes"] = round(out.pop("gpu_memory_gib") * 1024) * 2**20  # whole MiB (planning.gpus)
    return out


def measure(log: dict[str, Any]) -> Row:
    util = log["gpu_memory_utilization"]
    result = capacity(log["model"], engine=f"vllm@{log['release']}", gpu_memory_utilization=util, **options(log))
    total, row = result.gpu_memory_bytes or 0, release(log["release"])
    usable = math.ceil(total * util) if row.usable_rounding == "ceil" else int(total * util)
    logged = tuple(int(g * GIB) for g in log["available_gib"])
    ours = term_bytes(tuple(t for t in result.budget_terms if t.kind in WEIGHT_KINDS))
    weights = None if log["weights_gib"] is None else int(log["weights_gib"] * GIB)
    return Row(log=log, usable_bytes=usable, logged_bytes=logged,
               kvplan_bytes=result.kv_budget_bytes_per_gpu[:len(logged)],
               weights_delta_bytes=None if weights is None else ours - weights)


def measured(logs: list[dict[str, Any]]) -> tuple[list[Row], dict[str, str]]:
    """The rows kvplan plans, and log -> the error of each run it refuses (a pinned miss says why)."""
    rows, refused = [], {}
    for log in logs:
        try:
            rows.append(measure(log))
        except KvplanError as err:
            refused[log["id"]] = f"{type(err).__name__}: {err}"
    return rows, refused


def weights_error(log: dict[str, Any]) -> float | str:
    """(kvplan's weights as loaded − the logged ones) in % of the logged; the error's text where kvplan refuses."""
    util = {"gpu_memory_utilization": log["gpu_memory_utilization"]} if "gpu_memory_utilization" in log else {}
    try:
        result = capacity(log["model"], engine=f"vllm@{log['release']}", **util, **options(log))
    except KvplanError as err:
        return f"{type(err).__name__}: {err}"
    ours = term_bytes(tuple(t for t in result.budget_terms if t.kind in WEIGHT_KINDS))
    logged = int(log["weights_gib"] * GIB)
    return 100 * (ours - logged) / logged


def weighed(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every entry that prints its weights: the budget entries and the weights-only ones."""
    return [log for log in (*data["logs"], *data["weights_only"]) if log["weights_gib"] is not None]


def weights_table(data: dict[str, Any]) -> list[str]:
    lines = ["", f"{'weights: log':56} {'release':7} {'logged GiB':>10} {'error %':>9}  pinned miss"]
    for log in weighed(data):
        err = weights_error(log)
        shown = f"{err:+9.2f}" if isinstance(err, float) else f"{'refused':>9}"
        lines.append(f"{log['id']:56} {log['release']:7} {log['weights_gib']:10.2f} {shown}  {log.get('weights_miss', '')}")
    return lines


def table(rows: list[Row], refused: dict[str, str], incomplete: dict[str, str]) -> list[str]:
    lines = [f"{'log':56} {'release':7} {'logged GiB':>12} {'kvplan GiB':>12} {'error %':>8} {'rules %':>8}"]
    for r in rows:
        rules = "-" if r.rules_error_pct is None else f"{r.rules_error_pct:+.2f}"
        lines.append(f"{r.log['id']:56} {r.log['release']:7} {','.join(f'{b / GIB:.2f}' for b in r.logged_bytes):>12}"
                     f" {','.join(f'{b / GIB:.2f}' for b in r.kvplan_bytes):>12} {r.error_pct:+8.2f} {rules:>8}")
    lines.append("")
    for rel in dict.fromkeys(r.log["release"] for r in rows):
        errs = [abs(r.error_pct) for r in rows if r.log["release"] == rel]
        rules = [abs(e) for r in rows if r.log["release"] == rel and (e := r.rules_error_pct) is not None]
        lines.append(f"vllm@{rel}: {len(errs)} log(s), |error| median {statistics.median(errs):.2f}% worst "
                     f"{max(errs):.2f}%" + (f"; logged weights: median {statistics.median(rules):.2f}% worst "
                                            f"{max(rules):.2f}%" if rules else ""))
    misses = [r for r in rows if abs(r.error_pct) > 1]
    lines += ["", f"over 1% of usable: {len(misses)} of {len(rows)}",
              *(f"  {r.log['id']}: {r.log.get('miss', 'NO REASON RECORDED')}" for r in misses),
              "", f"refused by kvplan: {len(refused)}", *(f"  {k}: {v}" for k, v in refused.items()),
              "", "left out (inputs incomplete):", *(f"  {k}: {v}" for k, v in incomplete.items())]
    return lines


def main(argv: list[str]) -> int:
    data = inputs()
    rows, refused = measured(data["logs"])
    if "--json" in argv:
        print(json.dumps([{"log": r.log["id"], "release": r.log["release"], "usable_bytes": r.usable_bytes,
                           "logged_bytes": r.logged_bytes, "kvplan_bytes": r.kvplan_bytes,
                           "error_pct_of_usable": round(r.error_pct, 3),
                           "rules_error_pct_of_usable": None if r.rules_error_pct is None else round(r.rules_error_pct, 3),
                           "miss": r.log.get("miss")} for r in rows]
                         + [{"log": log["id"], "release": log["release"], "weights_gib": log["weights_gib"],
                             "weights_error_pct": weights_error(log), "weights_miss": log.get("weights_miss")}
                            for log in weighed(data)], indent=1))
    else:
        print("\n".join(table(rows, refused, data["incomplete"]) + weights_table(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
