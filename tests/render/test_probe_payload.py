"""`kvplan probe --capacity`'s object in the probe payload, on any machine: the check itself needs CUDA
(tests/gpu), its payload and its note do not."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kvplan.render.payload import plain
from kvplan.render.probe import capacity_check_payload, probe_payload, probe_tables


def test_the_capacity_check_keys_and_note() -> None:
    pytest.importorskip("torch")
    from kvplan.probe.capacity import CapacityCheck

    check = CapacityCheck(model="m", free_bytes=80 * 2**30, block_bytes=2 * 2**20, allocated_blocks=40_900,
                          formula_blocks=40_960, capacity_blocks=40_950, capacity_page_bytes=2 * 2**20, note="n")
    payload = replace(probe_payload("cuda:0", [], 0.0), skipped=(), capacity=capacity_check_payload(check))
    data = plain(payload)
    # error = (allocated - kvplan's blocks) / kvplan's blocks = (40,900 - 40,950) / 40,950
    assert data["capacity"] == {"model": "m", "free_bytes": 80 * 2**30, "block_bytes": 2 * 2**20,
                                "allocated_blocks": 40_900, "formula_blocks": 40_960, "capacity_blocks": 40_950,
                                "capacity_page_bytes": 2 * 2**20, "error": -50 / 40_950, "note": "n"}
    assert list(data) == ["device", "tolerance", "peak_gbps", "bandwidth_note", "results", "ok", "skipped", "capacity"]
    notes = [str(t) for t in probe_tables(payload)[1:]]
    assert notes == ["capacity: 40,900 blocks allocated in 85,899,345,920 B free; kvplan: 40950, free // block: "
                     "40,960 (n)"]
