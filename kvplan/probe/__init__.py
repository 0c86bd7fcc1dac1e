"""`kvplan probe`: allocate real caches from kvplan's own specs and measure its error.

Importing this package is free: torch is imported only by ``require_torch()`` and the submodules
(allocate, measure, check, kernels, ...), which the CLI imports inside the command.
"""

from __future__ import annotations

from types import ModuleType

from kvplan.errors import KvplanError

INSTALL_HINT = "pip install 'kvplan[probe]'"


class ProbeError(KvplanError):
    """The probe cannot run here (no torch, no CUDA device, a layout that does not fit)."""


def require_torch() -> ModuleType:
    """Import torch, or explain how to install it."""
    try:
        import torch
    except ImportError:
        raise ProbeError(f"kvplan probe needs torch (and triton for the kernel check): {INSTALL_HINT}") from None
    return torch
