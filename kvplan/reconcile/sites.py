"""Which vLLM release printed a log, from the ``[file.py:line]`` of its lines.

Every vLLM logger call prints the file and line of the call, and those move from release to release.
``print_sites.json`` (package data, built by tools/compact_print_sites.py from each release's Python) holds,
for the calls below, the releases in which each ``file.py:line`` carries that call. A log line whose message
is one of these calls narrows the releases to those; the lines together give the range. Sites no release read
has (development or vendor builds, unread patch releases) are left out, as are sites that contradict the
others (the majority of the sites wins); both are said in the evidence. Only releases from 0.8.0 print bracketed sites.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

# label (print_sites.json) -> what the message of that logger call looks like
LABELS: dict[str, re.Pattern[str]] = {label: re.compile(pattern) for label, pattern in {
    "version line": r"vLLM API server version|LLM engine \(v",
    "Chunked prefill is enabled": r"^Chunked prefill is enabled",
    "KV cache dtype": r"data type to store kv cache",
    "init engine": r"^init engine \(profile, create kv cache, warmup model\)",
    "Block size forced/changed": r"kv cache block size to",
    "V0 # GPU/CUDA/cuda blocks": r"^# \w+ blocks: \d+, # CPU blocks",
    "Maximum concurrency": r"^Maximum concurrency for",
    "GPU KV cache size": r"^GPU KV cache size: [\d,]+ tokens$",
    "GPU KV cache size + Maximum concurrency (one line)": r"KV cache size: [\d,]+ tokens, Maximum concurrency",
    "Starting to load model": r"^Starting to load model",
    "Model loading took": r"^Model loading took",
    "Graph capturing finished": r"^Graph capturing finished",
    "Overriding num_gpu_blocks": r"^Overriding num_gpu_blocks",
    "Loading weights took": r"^Loading weights took",
    "num_gpu_blocks is": r"num_gpu_blocks is:",
    "Available KV cache memory": r"^Available KV cache memory",
    "Add N padding layers": r"^Add \d+ padding layers",
    "Hybrid KV cache manager message": r"[Hh]ybrid [Kk][Vv] cache manager",
    "Setting attention block size (mamba hybrid)": r"Setting attention block size to",
    "Padding mamba page size": r"^Padding mamba page size",
    "Free memory on device (V1 memory breakdown)": r"^Free memory on device",
    "Free memory on device (V1 memory breakdown) [debug]": r"^Free memory on device",
    "Multiplying the GPU KV cache size (dcp/cp)": r"^Multiplying the GPU KV cache size",
    "CUDA graph memory estimate": r"CUDA graph memory profiling|^Estimated (?:\w+ )?CUDA graph memory|"
                                  r"^Profiling CUDA graph memory",
    "Memory profiling takes (V0 breakdown: total_gpu_memory x gpu_memory_utilization ...)":
        r"^Memory profiling takes [\d.]+ seconds$|^the current vLLM instance can use|^model weights take",
    "Memory profiling takes (str(profile_result)) [debug]": r"^Memory profiling takes [\d.]+ seconds\. Total",
    "max_model_len message": r"^Using max model len",
}.items()}


@dataclass(frozen=True, slots=True)
class Placement:
    releases: tuple[str, ...]  # the releases read that print every placed line where the log shows it
    evidence: tuple[str, ...]  # the sites that placed it; "(unplaced)" and "(contradicts)" ones are marked


@lru_cache(maxsize=1)
def table() -> tuple[tuple[str, ...], dict[str, dict[str, frozenset[str]]]]:
    """(releases, label -> site -> releases) from print_sites.json."""
    data = json.loads((Path(__file__).with_name("print_sites.json")).read_text())
    releases = tuple(data["releases"])
    return releases, {label: {site: frozenset(releases[i] for i in _indices(spans)) for site, spans in sites.items()}
                      for label, sites in data["sites"].items()}


def _indices(spans: str) -> list[int]:
    out: list[int] = []
    for part in spans.split(","):
        low, _, high = part.partition("-")
        out += range(int(low), int(high or low) + 1)
    return out


def releases_of(site: str, message: str) -> frozenset[str] | None:
    """The releases whose logger call at `site` prints this message (None: no recognized call)."""
    _, sites = table()
    found = [sites.get(label, {}).get(site) for label, pattern in LABELS.items() if pattern.search(message)]
    known = [f for f in found if f is not None]
    if not known:
        return frozenset() if found else None
    return frozenset().union(*known)


def placement(lines: tuple[tuple[str, str], ...]) -> Placement | None:
    """The releases most recognized `(site, message)` lines of a log agree on (a development build between two
    releases shows sites of both: the majority wins), with the sites that said so."""
    order, _ = table()
    found = {site: f for site, message in dict.fromkeys(lines) if (f := releases_of(site, message)) is not None}
    votes = {r: sum(r in f for f in found.values()) for r in order}
    most = max(votes.values(), default=0)
    if not most:
        return None
    chosen = frozenset(r for r, n in votes.items() if n == most)
    evidence = [site if f & chosen else f"{site} ({'contradicts' if f else 'unplaced'})" for site, f in found.items()]
    return Placement(releases=tuple(r for r in order if r in chosen), evidence=tuple(evidence))
