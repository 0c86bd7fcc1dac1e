"""Run each build point in a forked child of the (already imported) parent.

A fork is cheap (vLLM and torch are imported once) and isolates the global
state a model build leaves behind: parallel groups, the forward context,
`logger.*_once` caches, backend-selection caches.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import sys
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection
from typing import Any

from .runner import BuildPoint, base_record, run_point

_FORK = multiprocessing.get_context("fork")
Job = tuple[BuildPoint, Any, Connection]
PointFn = Callable[[BuildPoint, bool], Any]


def _child(fn: PointFn, point: BuildPoint, verbose: bool, conn: Connection) -> None:
    before = set(sys.modules)
    try:
        result = fn(point, verbose)
    except BaseException:  # report, never hang the parent
        result = [{**base_record(point), "error": traceback.format_exc(limit=3),
                   "error_stage": "oracle"}]
    conn.send((result, [name for name in sys.modules if name not in before]))
    conn.close()
    os._exit(0)  # skip atexit hooks and thread joins left by the build


def warm_imports(names: list[str]) -> None:
    """Import in the parent what a build imported, so later forks start warm
    (importing vLLM's model, MoE and kernel modules is most of a build's time)."""
    for name in names:
        if name not in sys.modules:
            with contextlib.suppress(Exception):  # a module that fails here failed in the child too
                importlib.import_module(name)


def _start(fn: PointFn, point: BuildPoint, verbose: bool) -> Job:
    receiver, sender = _FORK.Pipe(duplex=False)
    process = _FORK.Process(target=_child, args=(fn, point, verbose, sender), daemon=True)
    process.start()
    sender.close()
    return point, process, receiver


def _collect(job: Job, timeout: float) -> list[dict[str, Any]]:
    point, process, receiver = job
    try:
        if receiver.poll(timeout):
            result, loaded = receiver.recv()
            warm_imports(loaded)
            return result
        reason = f"timed out after {timeout:.0f} s"
    except EOFError:
        reason = "died without a result"
    finally:
        process.join(5)
        if process.is_alive():
            process.kill()
    return [{**base_record(point), "error": f"oracle child {reason} "
             f"(exit code {process.exitcode})", "error_stage": "oracle"}]


def run_in_order(points: Iterable[BuildPoint], jobs: int = 1, verbose: bool = False,
                 timeout: float = 1800.0, fn: PointFn = run_point,
                 ) -> Iterator[tuple[BuildPoint, Any]]:
    """Yield (point, records) in input order, with up to `jobs` children running.
    Closing the generator early kills the children still running."""
    todo = iter(points)
    running: deque[Job] = deque()
    try:
        for point in todo:
            running.append(_start(fn, point, verbose))
            if len(running) >= jobs:
                break
        while running:
            job = running.popleft()
            records = _collect(job, timeout)
            following = next(todo, None)
            if following is not None:
                running.append(_start(fn, following, verbose))
            yield job[0], records
    finally:
        for _, process, _ in running:
            process.kill()
