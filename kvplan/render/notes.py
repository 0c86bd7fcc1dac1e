"""Notes printed beside an answer: each said once.

A command's notes are (label, text) pairs: the label says whose note it is (an engine under
``capacity --engine all``; empty for a single answer). ``merge_notes`` prints a text that several
labels share once, naming the labels only when not all of them share it, and folds notes that differ
only in their numbers (``overhead is an estimate (2.03 GiB)`` per engine) into one line that gives
each label's number. ``summarize_skipped`` shortens a sweep's hundreds of "skipped ..." notes to a
count and a few examples. JSON output keeps every note as it was; this is for people.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# A number standing alone (2.03, 137,065), not the digits inside a word (bf16, fp8, H100).
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")
SKIPPED_EXAMPLES = 3


def _merge_numbers(group: list[tuple[str, str]]) -> str:
    """Notes of one shape (same words, other numbers) -> one text: a number all share stays, the others
    become `label number, label number`."""
    words = NUMBER.split(group[0][1])
    numbers = [NUMBER.findall(text) for _, text in group]
    out = words[0]
    for i, word in enumerate(words[1:]):
        values = [n[i] for n in numbers]
        out += values[0] if len(set(values)) == 1 else ", ".join(f"{label} {v}" for (label, _), v in
                                                                  zip(group, values, strict=True))
        out += word
    return out


def _prefix(labels: list[str], everyone: list[str]) -> str:
    return "" if not labels[0] or labels == everyone else ", ".join(labels) + ": "


def merge_notes(labelled: Sequence[tuple[str, str]]) -> list[str]:
    """(label, note) pairs -> the lines to print, in order of first appearance, each once."""
    everyone = list(dict.fromkeys(label for label, _ in labelled))
    shapes: dict[str, list[tuple[str, str]]] = {}
    for label, text in dict.fromkeys(labelled):
        shapes.setdefault(NUMBER.sub("#", text), []).append((label, text))
    lines = []
    for group in shapes.values():
        labels = [label for label, _ in group]
        texts = list(dict.fromkeys(text for _, text in group))
        if len(texts) == 1:
            lines.append(_prefix(labels, everyone) + texts[0])
        elif len(set(labels)) == len(labels) and len(labels) > 1:
            lines.append(_prefix(labels, everyone) + _merge_numbers(group))
        else:  # one label with several notes of a shape: each as it is
            lines += [(f"{label}: " if label else "") + text for label, text in group]
    return lines


def summarize_skipped(notes: Sequence[str], examples: int = SKIPPED_EXAMPLES) -> list[str]:
    """Notes starting with "skipped" -> one line (how many, and a few of them); other notes unchanged."""
    skipped = [n for n in notes if n.startswith("skipped")]
    rest = [n for n in notes if not n.startswith("skipped")]
    if len(skipped) <= examples:
        return [*rest, *skipped]
    shown = "; ".join(s.removeprefix("skipped ") for s in skipped[:examples])
    return [*rest, f"skipped {len(skipped):,} combinations that cannot run, e.g. {shown}; "
                   f"and {len(skipped) - examples:,} more"]
