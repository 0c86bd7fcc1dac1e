"""GPU catalog: memory as the engines see it, and peak memory bandwidth.

``memory_bytes`` is the total that ``torch.cuda.get_device_properties(i).total_memory`` (and
``torch.cuda.mem_get_info()[1]``, vLLM's ``total_gpu_memory``) reports: the figure vLLM and SGLang
multiply by their memory fraction. It is smaller than the marketing size and than nvidia-smi's
"Total" (the driver keeps a reserve), and it moves by a few MiB with the driver, ECC and MIG
settings: ``--gpu-mem`` overrides it.

How a figure became bytes: the public readings (issue logs, notebooks; cited per row) are GiB with 2–3 decimals
(2**30 bytes). Drivers hand out memory in whole MiB, so ``_mib(gib)`` rounds ``gib × 1024`` to the
nearest MiB and multiplies by 2**20; a 2-decimal reading is then exact to about ±5 MiB. Where a GPU
has several readings, the value two sources agree on wins (else the torch one); ``source`` names the
row used. Bandwidth is the vendor's data-sheet peak (decimal TB/s or GB/s), cited per row.

This module is pure data plus lookup; it is not a probe (see kvplan.probe for measuring).
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from functools import lru_cache

from kvplan.errors import InputError
from kvplan.records import Record
from kvplan.units import GIB, parse_bytes

MIB = 1024**2
TB_PER_S = 10**12
GB_PER_S = 10**9


class Gpu(Record, kw_only=False):
    """One catalog GPU: its memory as the engines read it, its peak bandwidth, and where the numbers come from."""

    name: str
    memory_bytes: int  # torch total_memory / vLLM total_gpu_memory, whole MiB
    bandwidth_bytes_per_s: int  # vendor peak, decimal units
    source: str  # where memory_bytes comes from (a public reading), and how it was read
    smi_memory_mib: int | None = None  # nvidia-smi memory.total (SGLang's G); None: no public reading
    compute_capability: tuple[int, int] | None = None  # as vLLM reads it (CUDA's; ROCm gfx9xy -> (9, x))
    unified_memory: bool = False  # CPU and GPU share the memory: what the OS leaves free bounds the budget

    def with_memory(self, memory_bytes: int, source: str = "gpu_memory_bytes") -> Gpu:
        """The same GPU with a user-given memory size (``--gpu-mem``); the catalog's nvidia-smi reading goes with it."""
        return replace(self, memory_bytes=memory_bytes, source=source, smi_memory_mib=None)


def _mib(gib: float) -> int:
    """A GiB reading -> bytes, rounded to a whole MiB (drivers allocate in MiB)."""
    return round(gib * 1024) * MIB


# nvidia-smi totals (smi_memory_mib): the public readings of the same rows' sources list (google/gvisor#10413 and
# modal-labs/modal-client#2797 for H100 81559, A100 40960/81920, L40S 46068, L4 23034, A10G 23028, T4 15360;
# NVIDIA/gpu-admin-tools#4 H100 NVL 95830; vllm-project/vllm#7553 RTX 4090 24564; noonghunna/club-3090#390
# RTX 3090 24576; unidentified public files for H200 143771, RTX 5090 32607, GH200 97871, B200 183359, V100).
# Bandwidth sources (vendor data sheets, peak): NVIDIA H100 Tensor Core GPU datasheet (SXM 3.35 TB/s,
# PCIe 2 TB/s, NVL 3.9 TB/s); H200 datasheet (4.8 TB/s); A100 datasheet (40GB 1,555 GB/s, 80GB SXM
# 2,039 GB/s); L40S datasheet (864 GB/s); L4 datasheet (300 GB/s); A10 datasheet (600 GB/s; AWS
# lists A10G at 600 GB/s as well); GeForce RTX 4090/3090/5090 spec pages (1,008 / 936 / 1,792 GB/s);
# GH200 datasheet (HBM3 4 TB/s, HBM3e 4.9 TB/s); HGX B200 spec (8 TB/s per GPU); AMD Instinct MI300X (5.3 TB/s) and MI325X (6 TB/s) data sheets;
# T4 datasheet (320 GB/s); V100 datasheet (SXM2 900 GB/s).
GPUS: dict[str, Gpu] = {g.name: g for g in (
    Gpu("H100-SXM", _mib(79.18), 3350 * GB_PER_S,
        "vLLM total_gpu_memory 79.18 GiB (vllm-project/vllm#23192; same in llm-d-planner empirical results)", smi_memory_mib=81559, compute_capability=(9, 0)),
    # nvidia-smi reads 81559 MiB on both the SXM and the PCIe card, so the SXM torch figure stands in.
    Gpu("H100-PCIe", _mib(79.18), 2000 * GB_PER_S,
        "H100 SXM's 79.18 GiB (vllm-project/vllm#23192): nvidia-smi reads 81559 MiB on both cards", smi_memory_mib=81559, compute_capability=(9, 0)),
    Gpu("H100-NVL", _mib(93.02), 3900 * GB_PER_S, "torch 93.02 GiB (vllm-project/vllm#16712)", smi_memory_mib=95830, compute_capability=(9, 0)),
    # 139.80 GiB: two readings (torch and vLLM) agree; vllm-project/vllm#34553 has 139.81.
    Gpu("H200", _mib(139.80), 4800 * GB_PER_S, "torch/vLLM 139.8 GiB (two public readings agree; vllm-project/vllm#34553 has 139.81)", smi_memory_mib=143771, compute_capability=(9, 0)),
    Gpu("A100-40G", _mib(39.557), 1555 * GB_PER_S,
        "torch 39.557 GiB (unslothai/notebooks Gemma3_(27B)_A100 @ bdda2efc; vllm#8731 has 39.56)", smi_memory_mib=40960, compute_capability=(8, 0)),
    Gpu("A100-80G", _mib(79.15), 2039 * GB_PER_S, "torch 79.15 GiB (vllm-project/vllm#4408 and #8903)", smi_memory_mib=81920, compute_capability=(8, 0)),
    Gpu("L40S", _mib(44.53), 864 * GB_PER_S, "torch 44.53 GiB (vllm-project/vllm#15598)", smi_memory_mib=46068, compute_capability=(8, 9)),
    Gpu("L4", _mib(22.05), 300 * GB_PER_S, "torch 22.05 GiB (vllm-project/vllm#20214; vLLM log in #33297)", smi_memory_mib=23034, compute_capability=(8, 9)),
    Gpu("A10G", _mib(22.184), 600 * GB_PER_S, "torch 22.184 GiB (unslothai/notebooks Llama3.2_(1B)-RAFT @ bdda2efc)", smi_memory_mib=23028, compute_capability=(8, 6)),
    Gpu("A10", _mib(21.99), 600 * GB_PER_S, "torch 21.99 GiB (vllm-project/vllm#16128)", compute_capability=(8, 6)),
    Gpu("RTX-4090", _mib(23.64), 1008 * GB_PER_S, "torch 23.64 GiB (vllm-project/vllm#16896)", smi_memory_mib=24564, compute_capability=(8, 9)),
    Gpu("RTX-3090", _mib(23.56), 936 * GB_PER_S,
        "torch 23.56 GiB (noonghunna/club-3090 docs/CLIFFS.md @ 4a29ab57; vLLM log in wtdcode/vllm-backport#34)", smi_memory_mib=24576, compute_capability=(8, 6)),
    # 31.84 GiB = nvidia-smi's 32607 MiB; vllm#40291's 31.35 is likely a display-attached card.
    Gpu("RTX-5090", _mib(31.84), 1792 * GB_PER_S, "torch 31.84 GiB (vllm-project/vllm#23050)", smi_memory_mib=32607, compute_capability=(12, 0)),
    # GH200 comes with 96 GB HBM3 or 144 GB HBM3e. The 96 GB part has only an nvidia-smi reading
    # (97871 MiB, which on other GPUs sits 250-900 MiB above torch's figure); the 144 GB one a vLLM log.
    Gpu("GH200", 97871 * MIB, 4000 * GB_PER_S, "nvidia-smi 97871 MiB (a public reading, repository not identified; no torch reading)", smi_memory_mib=97871, compute_capability=(9, 0)),
    Gpu("GH200-144G", _mib(142.5), 4900 * GB_PER_S, "vLLM total_gpu_memory 142.5 GiB (vllm-project/vllm#35313)", compute_capability=(9, 0)),
    Gpu("B200", _mib(178.36), 8000 * GB_PER_S, "torch 178.36 GiB (a public reading, repository not identified)", smi_memory_mib=183359, compute_capability=(10, 0)),
    Gpu("MI300X", _mib(191.98), 5300 * GB_PER_S, "torch 191.98 GiB (a public reading, repository not identified)", compute_capability=(9, 4)),
    Gpu("MI325X", _mib(255.98), 6000 * GB_PER_S, "torch 255.98 GiB (vllm-project/vllm#41962)", compute_capability=(9, 4)),
    Gpu("T4", _mib(14.748), 320 * GB_PER_S,
        "torch 14.748 GiB (unslothai/notebooks CodeGemma_(7B) @ bdda2efc; vLLM log 14.74 in Qwen3_(4B)-GRPO)", smi_memory_mib=15360, compute_capability=(7, 5)),
    # No public torch reading for V100: nvidia-smi's non-round total (16160 / 32510 MiB) is used,
    # which on other GPUs sits 250-900 MiB above torch's figure. Pass --gpu-mem when it matters.
    Gpu("V100-16G", 16160 * MIB, 900 * GB_PER_S, "nvidia-smi 16160 MiB (public readings, repository not identified; no torch reading)", smi_memory_mib=16160, compute_capability=(7, 0)),
    Gpu("V100-32G", 32510 * MIB, 900 * GB_PER_S, "nvidia-smi 32510 MiB (a public reading, repository not identified; no torch reading)", smi_memory_mib=32510, compute_capability=(7, 0)),
    # The GPUs of 2026, each reading cited in its row. Compute capability: vllm-project/vllm#30630
    # and public `nvidia-smi --query-gpu=compute_cap` tables (B300, GB300 10.3), a public probe log (RTX PRO 6000
    # Server sm_120), vLLM 0.33 engine/arg_utils.py:2961-2963 (GB10 12.1), vLLM platforms/rocm.py:236-252 (gfx950 ->
    # (9, 5)); GB200 (10.0), H20 / H800 (9.0) and A800 (8.0) by their architecture.
    Gpu("B300", _mib(267.69), 8000 * GB_PER_S,
        "vLLM 'Free memory on device (267.08/267.69 GiB)' in a public DeepSeek-V4 serving log, and a torch OOM on "
        "eight B300s (public files, repositories not identified); bandwidth: HGX B300 spec 'up to 8 TB/s'",
        smi_memory_mib=275040, compute_capability=(10, 3)),
    Gpu("GB200", _mib(184.31), 8000 * GB_PER_S,
        "torch 184.31 GiB 'total capacity' on GB200 (two public files, repositories not identified); bandwidth: "
        "B200's 8 TB/s (estimate: the NVL72 per-GPU figure was not looked up)",
        smi_memory_mib=189471, compute_capability=(10, 0)),
    Gpu("GB300", _mib(276.50), 8000 * GB_PER_S,
        "torchtitan 'NVIDIA GB300 with 276.50GiB memory' (public files); bandwidth: GB300 NVL72 576 TB/s over 72 GPUs",
        smi_memory_mib=284208, compute_capability=(10, 3)),
    # No name-attributed torch reading for the RTX PRO 6000 (unattributed OOMs say 94.97 GiB): nvidia-smi's 97887 MiB,
    # the same on the Server, Workstation and Max-Q cards, stands in, as for GH200.
    Gpu("RTX-PRO-6000", 97887 * MIB, 1792 * GB_PER_S,
        "nvidia-smi 97887 MiB (public dumps of all three variants; no torch reading attributed to the card)",
        smi_memory_mib=97887, compute_capability=(12, 0)),
    Gpu("H20", 97871 * MIB, 4000 * GB_PER_S,
        "nvidia-smi 97871 MiB (two public dumps of NVIDIA H20; no torch reading); bandwidth 4.0 TB/s, 96 GB HBM3",
        smi_memory_mib=97871, compute_capability=(9, 0)),
    Gpu("H800", _mib(79.18), 3350 * GB_PER_S,
        "H100 SXM's 79.18 GiB: nvidia-smi reads 81559 MiB on both (three public H800 dumps; no torch reading); "
        "bandwidth: H100 SXM's (estimate)", smi_memory_mib=81559, compute_capability=(9, 0)),
    Gpu("A800", _mib(79.15), 2039 * GB_PER_S,
        "A100 80 GB's 79.15 GiB: nvidia-smi reads 81920 MiB on both (public A800-SXM4-80GB dumps; no torch reading); "
        "bandwidth: A100 80 GB SXM's (estimate)", smi_memory_mib=81920, compute_capability=(8, 0)),
    Gpu("MI355X", _mib(287.98), 8000 * GB_PER_S,
        "vLLM 'Free memory on device cuda:4 (126.77/287.98 GiB)' and a HIP OOM 'total capacity of 287.98 GiB' "
        "(public files); bandwidth 8 TB/s", compute_capability=(9, 5)),
    Gpu("MI350X", _mib(287.98), 8000 * GB_PER_S,
        "MI355X's 287.98 GiB (estimate: the same 288 GB HBM3E; no MI350X reading found); bandwidth 8 TB/s",
        compute_capability=(9, 5)),
    # DGX Spark: 128 GB LPDDR5X shared with the CPU. torch reports what the OS leaves (119.61-119.70 GiB on three
    # public GB10 systems); vLLM 0.33 takes the budget as total × utilization but refuses to start when the OS has
    # less than that available (utils/mem_utils.py:132-151, v1/worker/utils.py:724-770).
    Gpu("DGX-Spark", _mib(119.70), 273 * GB_PER_S,
        "torch 'total capacity of 119.70 GiB' on GB10 (public file; 119.61-119.70 GiB across systems); bandwidth "
        "273 GB/s", compute_capability=(12, 1), unified_memory=True),
)}

# Normalized alias -> catalog name. Keys are what _normalize() leaves: lower case, letters and
# digits only, vendor words dropped, "80gb" -> "80g". The torch device names are rows here too.
ALIASES: dict[str, str] = {
    "h100": "H100-SXM", "h10080g": "H100-SXM", "h100sxm": "H100-SXM", "h100sxm5": "H100-SXM",
    "h100sxm80g": "H100-SXM", "h10080ghbm3": "H100-SXM", "h100sxm580g": "H100-SXM",
    "h100pcie": "H100-PCIe", "h100pcie80g": "H100-PCIe", "h10080gpcie": "H100-PCIe",
    "h100nvl": "H100-NVL", "h100nvl94g": "H100-NVL", "h10094g": "H100-NVL",
    "h200": "H200", "h200141g": "H200", "h200sxm": "H200", "h200sxm141g": "H200",
    "a10040g": "A100-40G", "a100sxm440g": "A100-40G", "a100pcie40g": "A100-40G",
    "a10080g": "A100-80G", "a100sxm480g": "A100-80G", "a100pcie80g": "A100-80G",
    "a10080gpcie": "A100-80G",
    "l40s": "L40S", "l40s48g": "L40S", "l4": "L4", "l424g": "L4",
    "a10g": "A10G", "a10g24g": "A10G", "a10": "A10", "a1024g": "A10",
    "4090": "RTX-4090", "rtx4090": "RTX-4090", "rtx409024g": "RTX-4090", "409024g": "RTX-4090",
    "3090": "RTX-3090", "rtx3090": "RTX-3090", "rtx309024g": "RTX-3090", "309024g": "RTX-3090",
    "5090": "RTX-5090", "rtx5090": "RTX-5090", "rtx509032g": "RTX-5090", "509032g": "RTX-5090",
    "gh200": "GH200", "gh20096g": "GH200", "gh200480g": "GH200", "gh200144g": "GH200-144G",
    "gh200624g": "GH200-144G",
    "b200": "B200", "b200180g": "B200", "b200192g": "B200",
    "mi300x": "MI300X", "mi300x192g": "MI300X", "mi325x": "MI325X", "mi325x256g": "MI325X",
    "t4": "T4", "t416g": "T4",
    "b300": "B300", "b300sxm6ac": "B300", "b300288g": "B300", "gb200": "GB200", "gb300": "GB300",
    "rtxpro6000": "RTX-PRO-6000", "rtxpro6000blackwell": "RTX-PRO-6000", "rtxpro6000blackwellserveredition":
    "RTX-PRO-6000", "rtxpro6000blackwellworkstationedition": "RTX-PRO-6000", "rtxpro6000blackwellmaxq": "RTX-PRO-6000",
    "rtxpro6000blackwellmaxqworkstationedition": "RTX-PRO-6000", "rtxpro600096g": "RTX-PRO-6000",
    "h20": "H20", "h2096g": "H20", "h800": "H800", "h80080g": "H800", "h800sxm": "H800",
    "a800": "A800", "a80080g": "A800", "a800sxm480g": "A800",
    "mi355x": "MI355X", "mi350x": "MI350X", "dgxspark": "DGX-Spark", "gb10": "DGX-Spark", "spark": "DGX-Spark",
    "v10016g": "V100-16G", "v100sxm216g": "V100-16G", "v100pcie16g": "V100-16G",
    "v10032g": "V100-32G", "v100sxm232g": "V100-32G", "v100pcie32g": "V100-32G",
}
# Names are normalized with string methods: the regular expressions they replaced cost ~0.5 ms to compile in a
# fresh process, more than every lookup a command makes.
_VENDOR_WORDS = ("nvidia", "amd", "geforce", "tesla", "instinct", "radeon")  # dropped from the front, repeatedly
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _normalize(name: str) -> str:
    """Lowercase letters and digits, vendor words dropped from the front, "80gb" -> "80g"."""
    key = name.lower()
    if not (key.isascii() and key.isalnum()):  # already letters and digits: most catalog names and aliases are
        key = "".join(c for c in key if c in _KEY_CHARS)
    while key.startswith(_VENDOR_WORDS):
        key = key[len(next(w for w in _VENDOR_WORDS if key.startswith(w))):]
    return _gb_to_g(key)


def _gb_to_g(key: str) -> str:
    """Each "gb" right after a digit -> "g", left to right (``re.sub(r"(\\d)gb", r"\\1g", key)``)."""
    if "gb" not in key:
        return key
    out, i = [], 0
    while i < len(key):
        if key[i].isdecimal() and key.startswith("gb", i + 1):
            out.append(key[i] + "g")
            i += 3
        else:
            out.append(key[i])
            i += 1
    return "".join(out)


def gpu_names() -> list[str]:
    """Catalog names, in catalog order."""
    return list(GPUS)


def size_variants(name: str) -> list[str]:
    """Catalog names that are `name` plus a memory size: A100 -> [A100-40G, A100-80G]."""
    stem = _normalize(name)
    return [n for key, n in _normalized() if _sized(key, stem)]


def _sized(key: str, stem: str) -> bool:
    """`key` is `stem`, digits and "g" (``re.fullmatch(re.escape(stem) + r"\\d+g", key)``)."""
    size = key[len(stem):-1]
    return key.startswith(stem) and key.endswith("g") and len(key) > len(stem) + 1 and size.isdecimal()


@lru_cache(maxsize=1)
def _normalized() -> tuple[tuple[str, str], ...]:
    """(normalized key, catalog name) of each catalog entry, in catalog order (the catalog is constant: built once)."""
    return tuple((_normalize(n), n) for n in GPUS)


@lru_cache(maxsize=1)
def _canonical() -> dict[str, str]:
    """Each catalog name's normalized key."""
    return dict(_normalized())


@lru_cache(maxsize=512)  # a name resolves the same way every time; fit asks for each GPU type once per setup
def lookup_gpu(name: str) -> Gpu:
    """`H100`, `h100-80g`, `NVIDIA H100 80GB HBM3`, `rtx4090`, `4090` -> the catalog entry.

    A name the catalog holds in several memory sizes (A100: 40 and 80 GB; V100: 16 and 32 GB) is
    ambiguous and refused with the candidates. H100 is not: H100-SXM and H100-PCIe are both 80 GB,
    and "H100" means the SXM part, the common one (H100 NVL has its own name). A catalog name
    itself (GH200 = the 96 GB part) is never ambiguous.
    """
    key = _normalize(name)
    canonical = _canonical()
    variants = [] if key in canonical else size_variants(name)
    if len(variants) > 1:
        raise InputError(f"GPU {name!r} is ambiguous: the catalog has it in {len(variants)} memory sizes "
                         f"({', '.join(variants)}); name one of them", arg="gpu")
    hit = canonical.get(key) or ALIASES.get(key)
    if hit is None:
        raise InputError(f"unknown GPU {name!r}; {_suggest(name)} (or give its memory with gpu_memory_bytes, e.g. "
                         "79GiB)", arg="gpu_memory_bytes")
    return GPUS[hit]


def _suggest(name: str) -> str:
    key = _normalize(name)
    keys = {**{_normalize(n): n for n in GPUS}, **ALIASES}
    close = difflib.get_close_matches(key, list(keys), n=6, cutoff=0.5)
    names = list(dict.fromkeys(keys[c] for c in close))[:3]
    return f"closest: {', '.join(names)}" if names else f"known GPUs: {', '.join(GPUS)}"


def parse_gpu_memory(text: str | int) -> int:
    """`79GiB`, `80GB`, `85018951680` -> bytes; refuses sizes under 1 GiB (`80` is not 80 GiB)."""
    value = parse_bytes(text)
    if value < GIB:
        raise InputError(f"gpu_memory_bytes {text!r} is under 1 GiB; give a unit, e.g. 79GiB or 80GB",
                         arg="gpu_memory_bytes")
    return value
