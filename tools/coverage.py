"""Write docs/coverage.md: every architecture of vLLM's newest registry and what kvplan does with it.

    python tools/coverage.py           # rewrite docs/coverage.md
    python tools/coverage.py --check   # exit 1 if docs/coverage.md is not what the rules give today

Reads kvplan's data, never a hand-kept list of results: the registry by release (kvplan/engines/vllm/registry.json),
the architectures kvplan refuses with their reason (kvplan.config.aliases.UNMODELLED_ARCHITECTURES), the vLLM records
kvplan's tests reproduce (tests/data/vllm-oracle*/: the architectures of the configs they were made from), and the
family rules checked by hand-derived tests only (RULE_TESTS below: the architecture, the test that checks it).
Statuses: exact (vLLM's records of a config of it are reproduced), by rule (a family rule with hand-derived tests),
generic (sized from the config's attention fields where they are present; no family rule, not checked), refused
(kvplan names the reason), served until (vLLM's newest release refuses it; kvplan follows the registry by release).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvplan.config.aliases import UNMODELLED_ARCHITECTURES  # noqa: E402
from kvplan.engines.vllm.served import newest, registry  # noqa: E402

DOC = ROOT / "docs" / "coverage.md"
DATA = ROOT / "tests" / "data"
# Family rules with hand-derived tests and no vLLM record (vLLM cannot build them on CPU, or no config was found).
RULE_TESTS = {
    "KimiLinearForCausalLM": "tests/engines/test_vllm_kinds.py", "KimiK3ForConditionalGeneration":
    "tests/config/test_transformers_oracle.py (layers against transformers; KDA + MLA as Kimi-Linear)",
    "Zamba2ForCausalLM": "tests/config/test_kinds.py",
    "MiniCPM3ForCausalLM": "tests/config/test_kinds.py", "Cohere2ForCausalLM": "tests/config/test_kinds.py",
    "DeciLMForCausalLM": "tests/config/test_kinds.py", "AliceAIForCausalLM": "tests/engines/test_vllm_families.py",
    "MiniMaxM3SparseForCausalLM": "tests/engines/test_vllm_families.py",
    "MiniMaxM3SparseForConditionalGeneration": "tests/engines/test_vllm_families.py",
    "MiMoV2ForCausalLM": "tests/engines/test_vllm_families.py (MiMo-V2-Flash's rules, the same model file)",
    # MTP drafters (speculative_method mtp): their modules, KV layers and weights (kvplan.config.mtp)
    **{arch: "tests/planning/test_mtp.py" for arch in (
        "DeepSeekMTPModel", "DeepseekV32MTPModel", "DeepSeekV4MTPModel", "Glm4MoeMTPModel", "Qwen3NextMTP", "Qwen3_5MTP",
        "Qwen3_5MoeMTP", "MiMoV2MTPModel", "NemotronHMTPModel", "Exaone4_5_MTP")},
}
NOTES = {
    "MllamaForConditionalGeneration": "sized on the V0 rows 0.6.4-0.8-v0 (tests/engines/test_vllm_families.py)",
    "MiniMaxM1ForCausalLM": "kvplan size: a (heads, D, D) lightning state", "RWForCausalLM": "kvplan size: MQA / GQA",
}


def _architectures(config: object) -> list[str]:
    archs = config.get("architectures") if isinstance(config, dict) else None
    return [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []


def records() -> dict[str, Counter[str]]:
    """architecture -> {model: planned or refused records kvplan's tests reproduce}."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for folder in ("vllm-oracle", "vllm-oracle-defaults", "vllm-oracle-frontier"):
        for path in sorted((DATA / folder).glob("*.json")):
            doc = json.loads(path.read_text())
            config = doc["config"] if isinstance(doc["config"], dict) else json.loads((ROOT / doc["config"]).read_text())
            checked = sum(1 for r in doc["records"] if "num_blocks" in r or r.get("error_stage") == "planning")
            for arch in _architectures(config):
                if checked:
                    out[arch][doc["model"]] += checked
    return out


def status(arch: str, found: dict[str, Counter[str]]) -> tuple[str, str]:
    served = registry()[arch]
    if arch in UNMODELLED_ARCHITECTURES:
        return "refused", f"{UNMODELLED_ARCHITECTURES[arch]} (served from {served.first})"
    if served.refused_from:
        return "served until", f"vLLM {newest()} refuses it: supported until v{served.says_last}. {NOTES.get(arch, '')}"
    if arch in found:
        return "exact", ", ".join(f"{m} ({n})" for m, n in sorted(found[arch].items()))
    if arch in RULE_TESTS:
        return "by rule", RULE_TESTS[arch]
    return "generic", ""


def releases(arch: str) -> str:
    s = registry()[arch]
    first = s.first or "≤0.8.0"
    if s.refused_from:
        return f"{first} - {s.says_last}"
    if s.kind == "transformers":
        return f"Transformers backend from {s.transformers_from}"
    tail = f" (Transformers backend from {s.transformers_from})" if s.transformers_from else ""
    return f"{first} on{tail}"


def render() -> str:
    found = records()
    table = registry()
    order = ("exact", "by rule", "generic", "refused", "served until")
    rows = sorted(((status(a, found), a) for a in table), key=lambda r: (order.index(r[0][0]), r[1]))
    counts = Counter(s for (s, _), _ in rows)
    lines = [
        "# Coverage: every architecture of vLLM's registry",
        "",
        f"Generated by `python tools/coverage.py` from vLLM's registry by release (vLLM {newest()} and the releases "
        "before it), the architectures kvplan refuses, the vLLM records kvplan's tests reproduce and the family "
        "rules checked by hand-derived tests. Do not edit by hand: `tests/test_coverage_doc.py` fails until the file "
        "is regenerated.",
        "",
        f"{len(rows)} architectures: " + ", ".join(f"{counts[k]} {k}" for k in order) + ".",
        "",
        "- **exact**: vLLM's own records of a config of it (its planning code run on CPU, or its spec classes and "
        "planning functions) are reproduced number for number; the column lists the models and their records.",
        "- **by rule**: a family rule read from vLLM's model file, checked by the hand-derived tests named.",
        "- **generic**: kvplan sizes a config of it from its attention fields (num_key_value_heads, head_dim, windows, "
        "...) where present, with no family rule; not checked against vLLM. A config that lacks the fields is refused "
        "naming them.",
        "- **refused**: kvplan names what vLLM builds that it does not model, and the release vLLM serves it from.",
        "- **served until**: vLLM's newest release refuses it; kvplan refuses it there too, and sizes it for the "
        "releases that serve it where it has their rows.",
        "",
        "| architecture | kind | vLLM serves it | kvplan | checked by / why |",
        "|---|---|---|---|---|",
    ]
    for (state, detail), arch in rows:
        lines.append(f"| {arch} | {table[arch].kind} | {releases(arch)} | {state} | {detail.strip()} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    text = render()
    if parser.parse_args().check:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print(f"out of date: {DOC}", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
