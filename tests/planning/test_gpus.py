"""GPU catalog: figures against ../shared/reference/gpus.md, aliases, errors, --gpu-mem parsing."""

from __future__ import annotations

import pytest

from kvplan.errors import InputError, KvplanError
from kvplan.planning.gpus import GPUS, Gpu, lookup_gpu, parse_gpu_memory

GIB = 2**30
MIB = 2**20


@pytest.mark.parametrize(
    ("name", "gib"),
    [
        # (catalog name, the gpus.md torch/vLLM reading it must reproduce to the printed precision)
        pytest.param("H100-SXM", 79.18, id="h100-vllm-79.18"),
        pytest.param("H100-NVL", 93.02, id="h100nvl-torch-93.02"),
        pytest.param("H200", 139.8, id="h200-139.8"),
        pytest.param("A100-40G", 39.557, id="a100-40g-39.557"),
        pytest.param("A100-80G", 79.15, id="a100-80g-79.15"),
        pytest.param("L40S", 44.53, id="l40s-44.53"),
        pytest.param("L4", 22.05, id="l4-22.05"),
        pytest.param("A10G", 22.184, id="a10g-22.184"),
        pytest.param("A10", 21.99, id="a10-21.99"),
        pytest.param("RTX-4090", 23.64, id="4090-23.64"),
        pytest.param("RTX-3090", 23.56, id="3090-23.56"),
        pytest.param("RTX-5090", 31.84, id="5090-31.84"),
        pytest.param("GH200-144G", 142.5, id="gh200-144g-vllm-142.5"),
        pytest.param("B200", 178.36, id="b200-178.36"),
        pytest.param("MI300X", 191.98, id="mi300x-191.98"),
        pytest.param("MI325X", 255.98, id="mi325x-255.98"),
        pytest.param("T4", 14.748, id="t4-14.748"),
        # the GPUs of 2026 (research note gpus.md, readings marked C there)
        pytest.param("B300", 267.69, id="b300-267.69"),
        pytest.param("GB200", 184.31, id="gb200-184.31"),
        pytest.param("GB300", 276.5, id="gb300-276.50"),
        pytest.param("MI355X", 287.98, id="mi355x-287.98"),
        pytest.param("DGX-Spark", 119.7, id="gb10-119.70"),
    ],
)
def test_memory_reproduces_the_reading(name: str, gib: float) -> None:
    gpu = GPUS[name]
    decimals = len(str(gib).split(".")[1])
    assert round(gpu.memory_bytes / GIB, decimals) == gib
    assert gpu.memory_bytes % MIB == 0  # whole MiB, as drivers report


def test_memory_is_below_nvidia_smi_total() -> None:
    # torch's total excludes the driver's reserve, so it sits under nvidia-smi's "Total" (gpus.md):
    # H100 81559 MiB, A100-80G 81920 MiB, L4 23034 MiB, T4 15360 MiB, RTX 4090 24564 MiB.
    smi_mib = {"H100-SXM": 81559, "A100-80G": 81920, "L4": 23034, "T4": 15360, "RTX-4090": 24564,
               "B300": 275040, "GB200": 189471, "GB300": 284208}
    for name, mib in smi_mib.items():
        assert GPUS[name].memory_bytes < mib * MIB, name
        assert GPUS[name].memory_bytes > 0.95 * mib * MIB, name


def test_every_entry_has_a_compute_capability() -> None:
    # CUDA's compute capability (vLLM reads it for backends and KV dtypes); ROCm's gfx942/gfx950 as vLLM maps them
    # (platforms/rocm.py:236-252); only the unified-memory machine is marked so
    assert all(gpu.compute_capability for gpu in GPUS.values())
    assert {n: GPUS[n].compute_capability for n in ("H100-SXM", "A100-80G", "L40S", "B200", "B300", "GB300",
                                                     "RTX-PRO-6000", "DGX-Spark", "MI300X", "MI355X", "T4")} == {
        "H100-SXM": (9, 0), "A100-80G": (8, 0), "L40S": (8, 9), "B200": (10, 0), "B300": (10, 3), "GB300": (10, 3),
        "RTX-PRO-6000": (12, 0), "DGX-Spark": (12, 1), "MI300X": (9, 4), "MI355X": (9, 5), "T4": (7, 5)}
    assert [g.name for g in GPUS.values() if g.unified_memory] == ["DGX-Spark"]


def test_every_entry_is_sourced_and_sane() -> None:
    for gpu in GPUS.values():
        assert gpu.source, gpu.name
        assert 8 * GIB < gpu.memory_bytes < 300 * GIB, gpu.name
        assert 100e9 <= gpu.bandwidth_bytes_per_s <= 10e12, gpu.name


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("H100", "H100-SXM"), ("h100", "H100-SXM"), ("H100-80G", "H100-SXM"), ("H100-SXM", "H100-SXM"),
        ("H100 80GB", "H100-SXM"), ("NVIDIA H100 80GB HBM3", "H100-SXM"),  # torch's device name
        ("H100-PCIe", "H100-PCIe"), ("h100_pcie", "H100-PCIe"), ("H100-NVL", "H100-NVL"),
        ("H200", "H200"), ("A100-80G", "A100-80G"), ("A100-40G", "A100-40G"),
        ("A100-40GB", "A100-40G"), ("NVIDIA A100-SXM4-80GB", "A100-80G"), ("NVIDIA A100-SXM4-40GB", "A100-40G"),
        ("L40S", "L40S"), ("l4", "L4"), ("A10G", "A10G"), ("A10", "A10"),
        ("RTX 4090", "RTX-4090"), ("4090", "RTX-4090"), ("rtx4090", "RTX-4090"),
        ("NVIDIA GeForce RTX 4090", "RTX-4090"), ("RTX-3090", "RTX-3090"), ("3090", "RTX-3090"),
        ("rtx5090", "RTX-5090"), ("GH200", "GH200"), ("GH200 480GB", "GH200"),
        ("GH200-144GB", "GH200-144G"), ("B200", "B200"), ("MI300X", "MI300X"), ("AMD Instinct MI300X", "MI300X"),
        ("mi325x", "MI325X"), ("T4", "T4"), ("Tesla T4", "T4"), ("V100-16G", "V100-16G"), ("V100-32GB", "V100-32G"),
        ("NVIDIA B300 SXM6 AC", "B300"), ("NVIDIA GB200", "GB200"), ("GB300", "GB300"), ("NVIDIA H20", "H20"),
        ("NVIDIA H800", "H800"), ("NVIDIA A800-SXM4-80GB", "A800"), ("AMD Instinct MI355X", "MI355X"),
        ("MI350X", "MI350X"), ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000"),
        ("RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX-PRO-6000"), ("DGX Spark", "DGX-Spark"),
        ("NVIDIA GB10", "DGX-Spark"),
    ],
)
def test_aliases(alias: str, name: str) -> None:
    assert lookup_gpu(alias).name == name


@pytest.mark.parametrize(("name", "variants"), [("A100", "A100-40G, A100-80G"), ("a100", "A100-40G, A100-80G"),
                                                ("NVIDIA A100", "A100-40G, A100-80G"), ("V100", "V100-16G, V100-32G")])
def test_a_name_sold_in_several_memory_sizes_is_ambiguous(name: str, variants: str) -> None:
    # A100 comes with 40 or 80 GB, V100 with 16 or 32 GB: the name alone does not give the memory.
    with pytest.raises(InputError) as err:
        lookup_gpu(name)
    assert "ambiguous" in str(err.value) and variants in str(err.value)
    assert err.value.arg_names == ("gpu",)


def test_h100_is_not_ambiguous() -> None:
    # SXM and PCIe are both 80 GB (79.18 GiB as torch reports it); H100 NVL has its own name.
    assert lookup_gpu("H100").name == "H100-SXM"
    assert lookup_gpu("H100").memory_bytes == lookup_gpu("H100-PCIe").memory_bytes


@pytest.mark.parametrize(("typo", "suggested"), [("H10", "H100"), ("A1000", "A100"), ("rtx 490", "RTX-4090")])
def test_unknown_gpu_names_close_matches(typo: str, suggested: str) -> None:
    with pytest.raises(InputError) as err:
        lookup_gpu(typo)
    message = str(err.value)
    # the library names its argument; the CLI says the flag (tests/cli/test_cli_errors.py)
    assert repr(typo) in message and suggested in message and "gpu_memory_bytes" in message
    assert "\n" not in message
    assert err.value.arg_names == ("gpu_memory_bytes",)


def test_unknown_gpu_without_close_match_lists_the_catalog() -> None:
    with pytest.raises(KvplanError, match="known GPUs: H100-SXM"):
        lookup_gpu("TPU-v5e-pod")


def test_gpu_is_frozen_and_overridable() -> None:
    gpu = lookup_gpu("H100")
    with pytest.raises(AttributeError):
        gpu.memory_bytes = 1  # type: ignore[misc]
    custom = gpu.with_memory(79 * GIB)
    # a user-given memory size keeps the GPU's compute capability (its backends), not its nvidia-smi reading
    assert custom == Gpu("H100-SXM", 79 * GIB, gpu.bandwidth_bytes_per_s, "gpu_memory_bytes", compute_capability=(9, 0))
    assert lookup_gpu("H100").memory_bytes != 79 * GIB  # the catalog is untouched


@pytest.mark.parametrize(
    ("text", "expected"),
    [("79GiB", 79 * GIB), ("80GB", 80 * 10**9), ("12.5GiB", 12 * GIB + GIB // 2), ("85018542080", 85018542080),
     (85018542080, 85018542080)],
)
def test_parse_gpu_memory(text: str | int, expected: int) -> None:
    assert parse_gpu_memory(text) == expected


@pytest.mark.parametrize("text", ["80", "0", "512MiB", "lots", "-5GiB", "1.5"])
def test_parse_gpu_memory_refuses(text: str) -> None:
    with pytest.raises(InputError):
        parse_gpu_memory(text)
