"""Make vLLM 0.33.0 importable on a CPU-only machine that pretends to be an H100.

`install()` must run before anything under `vllm` (other than `vllm.platforms`)
is imported. Nothing here changes a planning formula: the fakes only answer
"what GPU is this" (an H100 80GB HBM3, compute capability 9.0) and keep the
CUDA-only kernels and streams from being touched while layers are constructed.
"""

from __future__ import annotations

import glob
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Callable
from typing import Any

H100_NAME = "NVIDIA H100 80GB HBM3"
H100_TOTAL_MEMORY = 85_520_809_984  # 81,559 MiB, as nvidia-smi / NVML report it
H100_CAPABILITY = (9, 0)
H100_SMS = 132
HOST_MEMORY = 2 * 2**40  # a DGX H100 host's 2 TiB (releases before 0.19 check swap space against it)

# torch.ops namespaces the CUDA wheel registers from its compiled extensions.
KERNEL_NAMESPACES = (
    "_C", "_C_cache_ops", "_moe_C", "_C_custom_ar", "_C_cuda_utils", "_qutlass_C",
    "_flashmla_C", "_flashmla_extension_C", "_flashkda_C", "_vllm_fa2_C",
    "_vllm_fa3_C", "deep_gemm", "torchvision",
)

# The few kernel queries that run at import/construction time, answered as
# vLLM's own CUDA build answers them (argument: capability as an int, 90).
KERNEL_ANSWERS: dict[str, Callable[..., Any]] = {
    "cutlass_scaled_mm_supports_fp8": lambda cap: cap >= 89,
    "cutlass_scaled_mm_supports_block_fp8": lambda cap: cap >= 90,
    "cutlass_scaled_mm_supports_fp4": lambda cap: cap >= 100,
    # the bundled DeepGEMM initialises itself on import (third_party/deep_gemm)
    "init": lambda *args, **kwargs: None,
    "shutdown": lambda *args, **kwargs: None,
    "get_mk_alignment_for_contiguous_layout": lambda: 128,
}


class KernelStub:
    """A torch.ops entry that exists (hasattr is True) but refuses to run."""

    def __init__(self, namespace: str, name: str) -> None:
        self.namespace, self.name = namespace, name

    def __getattr__(self, attr: str) -> KernelStub:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return KernelStub(self.namespace, f"{self.name}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.name in KERNEL_ANSWERS:
            return KERNEL_ANSWERS[self.name](*args, **kwargs)
        raise RuntimeError(
            f"torch.ops.{self.namespace}.{self.name} is a CUDA kernel; "
            "the CPU oracle cannot run it"
        )


class KernelNamespace:
    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    def __getattr__(self, attr: str) -> KernelStub:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return KernelStub(self.namespace, attr)


class NoCudaObject:
    """Stand-in for torch.cuda.Stream / Event created in layer constructors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, attr: str) -> Callable[..., None]:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return lambda *args, **kwargs: None


def _set_environment() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Empty CUDA_VISIBLE_DEVICES makes vLLM accept Triton with no active GPU
    # driver (vllm/triton_utils/importing.py), as on a real H100 host.
    os.environ["CUDA_VISIBLE_DEVICES"] = ""


def _stub_compiled_extensions() -> None:
    """Register an empty module for every compiled vLLM extension (*.so)."""
    root = _vllm_root()
    for path in glob.glob(os.path.join(root, "**", "*.so"), recursive=True):
        relative = os.path.relpath(path, os.path.dirname(root))
        name = relative.split(".")[0].replace(os.sep, ".")
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        sys.modules.setdefault(name, module)


def _vllm_root() -> str:
    spec = importlib.util.find_spec("vllm")
    assert spec is not None and spec.origin is not None, "vllm is not installed"
    return os.path.dirname(spec.origin)


def _stub_torch_kernels() -> None:
    import torch
    import torch.library

    for namespace in KERNEL_NAMESPACES:
        setattr(torch.ops, namespace, KernelNamespace(namespace))
    real_load_library = torch.ops.load_library
    root = _vllm_root()

    def load_library(path: str) -> None:  # vLLM's own CUDA libraries: skip
        if not os.path.abspath(str(path)).startswith(root):
            real_load_library(path)

    torch.ops.load_library = load_library
    real_register_fake = torch.library.register_fake

    def register_fake(op: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(op, str) and op.split("::")[0] in KERNEL_NAMESPACES:
            return args[0] if args else (lambda fn: fn)
        return real_register_fake(op, *args, **kwargs)

    torch.library.register_fake = register_fake
    torch.library.impl_abstract = register_fake


def _stub_torch_cuda() -> None:
    import torch
    import torch.cuda

    properties = types.SimpleNamespace(
        name=H100_NAME, major=H100_CAPABILITY[0], minor=H100_CAPABILITY[1],
        total_memory=H100_TOTAL_MEMORY, multi_processor_count=H100_SMS,
        is_integrated=False, L2_cache_size=50 * 2**20,
    )
    torch.cuda.Stream = NoCudaObject  # type: ignore[misc,assignment]
    torch.cuda.Event = NoCudaObject  # type: ignore[misc,assignment]
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_properties = lambda device=0: properties
    torch.cuda.get_device_capability = lambda device=0: H100_CAPABILITY
    torch.cuda.get_device_name = lambda device=0: H100_NAME
    torch.cuda.empty_cache = lambda: None
    torch.cuda.graph_pool_handle = lambda: None  # 0.10's compile backend takes a pool at model build
    torch.accelerator.empty_cache = lambda: None  # type: ignore[assignment]


def _install_h100_platform() -> None:
    import torch
    import vllm.platforms as platforms
    from vllm.platforms.cuda import CudaPlatformBase
    from vllm.platforms.interface import DeviceCapability

    class FakeH100Platform(CudaPlatformBase):
        """vLLM's CUDA platform, with NVML/torch.cuda answers of one H100."""

        @classmethod
        def get_device_capability(cls, device_id: int = 0) -> DeviceCapability:
            return DeviceCapability(*H100_CAPABILITY)

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return H100_NAME

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return H100_TOTAL_MEMORY

        @classmethod
        def is_fully_connected(cls, device_ids: list[int]) -> bool:
            return True

        @classmethod
        def device_count(cls) -> int:
            # Enough GPUs for any grid point (a 16-GPU run is two 8-GPU nodes
            # with --nnodes 2, which plans the KV cache the same way).
            return 64

        @classmethod
        def current_device(cls) -> torch.device:
            return torch.device("meta")

    platforms._current_platform = FakeH100Platform()


def _count_devices() -> None:
    """Releases before 0.33 count GPUs with cuda_device_count_stateless() (config/parallel.py), which
    reads CUDA_VISIBLE_DEVICES; answer as the platform does."""
    import importlib

    for name in ("vllm.utils.torch_utils", "vllm.utils"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "_cuda_device_count_stateless"):
            module._cuda_device_count_stateless = lambda *args: 64


def _host_memory() -> None:
    """Releases before 0.19 refuse a swap space (4 GiB per GPU) above 70% of the host's memory
    (config/cache.py `Too large swap space`); answer as an 8-GPU H100 host, not this machine."""
    import importlib

    for name in ("vllm.utils.mem_utils", "vllm.utils", "vllm.config.cache"):
        module = sys.modules.get(name)
        if module is None and name != "vllm.config.cache":
            try:
                module = importlib.import_module(name)
            except ImportError:
                continue
        if module is not None and hasattr(module, "get_cpu_memory"):
            module.get_cpu_memory = lambda: HOST_MEMORY


def _inspect_models_in_process() -> None:
    """vLLM inspects model classes in a fresh interpreter (to keep CUDA out of
    the parent); that interpreter would not have these fakes, so run it here."""
    import vllm.model_executor.models.registry as registry

    registry._run_in_subprocess = lambda fn: fn()


def install() -> None:
    """Apply every fake, once, before vLLM's modules are imported."""
    if getattr(install, "done", False):
        return
    _set_environment()
    _stub_compiled_extensions()
    _stub_torch_kernels()
    _stub_torch_cuda()
    _install_h100_platform()
    _count_devices()
    _host_memory()
    _inspect_models_in_process()
    install.done = True  # type: ignore[attr-defined]
