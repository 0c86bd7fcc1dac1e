"""Every option of every command, defined once: its flag, its help, its help panel, and the object it builds.

An option is an ``Annotated`` alias shared by the commands that take it. The options that make one library object
are the parameters of one builder (``model_options`` and ``cache_options`` here; ``engine_options`` and
``memory_options`` in ``kvplan.cli.engine_options``, which `kvplan size` does not import); a command asks for the
object (``cache: CacheArgs``) and ``kvplan.cli.expand`` gives it the builder's options and the object built from
them. Each builder turns CLI text into the library's values and lets the object check itself, so the library and
the CLI refuse the same input with the same message.

Flags take vLLM's names. Each option declares one flag (the help shows it whole at 80 columns); the short
forms and the other engines' spellings (``--tp``, ``--tp-size``, ``--context-length``, ...) are rewritten to it
before parsing (``FLAG_ALIASES``) and named in the help text.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kvplan.cli.expand import Expand
from kvplan.dtypes import KV_DTYPE_NAMES
from kvplan.errors import InputError
from kvplan.formulas.layers import ATTENTION_OVERRIDES, Overrides, parse_layer_ranges
from kvplan.formulas.request import CacheRequest
from kvplan.units import parse_count, parse_positive_tokens

MODEL, PARALLEL, CACHE, ENGINE, MEMORY, EXTRAS, OUTPUT = (
    "Model", "Parallelism", "Cache", "Engine", "GPU memory", "Beside the cache", "Output")


def models_completed(incomplete: str) -> list[str]:
    """Shell completion: the bundled model ids that start with what was typed (case-insensitive)."""
    from kvplan.config import bundled_index

    return [name for name in bundled_index() if name.lower().startswith(incomplete.lower())]


def dtypes_completed(incomplete: str) -> list[str]:
    return [name for name in KV_DTYPE_NAMES if name.startswith(incomplete.lower())]


def option(flag: str, help: str, panel: str, metavar: str = "", **extra: Any) -> Any:
    """One option's flag, help and panel (metavar "" for a switch: no type shown)."""
    return typer.Option(flag, help=help, rich_help_panel=panel, metavar=metavar or None, show_default=False,
                        **extra)


def switch(flag: str, help: str, panel: str) -> Any:
    return typer.Option(flag, help=help, rich_help_panel=panel, metavar="", show_default=False)


# Model.
MODEL_OPTION = option("--model", "The model (also -m); probe: repeatable (default: a GQA, MQA, MLA, sliding, linear, "
                      "fp8, int4 set); reconcile: where the log names none or one kvplan cannot load.", MODEL, "MODEL",
                      autocompletion=models_completed)
ModelOrNone = Annotated[str | None, MODEL_OPTION]
ModelList = Annotated[list[str] | None, MODEL_OPTION]
Model = Annotated[str, typer.Argument(help="Model id (bundled, HF cache or hub), config.json, or folder.",
                                      show_default=False, autocompletion=models_completed)]
Revision = Annotated[str | None, option("--revision", "Hub revision (branch, tag or commit) of the config, from the "
                                        "HF cache or the hub; never the bundled copy.", MODEL, "REV")]
ModelDtype = Annotated[str, option("--dtype", "As vLLM's --dtype: auto, bfloat16, float16, float32; "
                                   "auto: the config's, fp32 served as bf16.", MODEL, "DTYPE")]

# Parallelism. (An option object is shared by the aliases that type it: one value, or a sweep's axis.)
AXIS = "; sweep: a list or a range"
TP = option("--tensor-parallel-size", f"TP size (also --tp, -tp): splits KV heads, floor, replicated past their "
            f"count; MLA is replicated{AXIS}.", PARALLEL, "N")
PP = option("--pipeline-parallel-size", f"PP size (also --pp, -pp): splits layers as vLLM does{AXIS}.", PARALLEL, "N")
Tp = Annotated[int, TP]
TpAxis = Annotated[str, TP]
TpOrNone = Annotated[int | None, TP]
Pp = Annotated[int, PP]
PpAxis = Annotated[str, PP]
PpOrNone = Annotated[int | None, PP]
Dcp = Annotated[int, option("--decode-context-parallel-size", "DCP size (also --dcp, -dcp): splits a sequence's "
                            "tokens over that many of the TP ranks.", PARALLEL, "N")]
Dp = Annotated[int, option("--data-parallel-size", "Data parallel (also --dp, -dp), as the engine runs it; vLLM "
                           "--data-parallel-size: dp engines of tp × pp GPUs each with its own KV pool; SGLang "
                           "--dp-size with --enable-dp-attention, dp attention groups inside the tp GPUs "
                           "(attention TP = tp / dp).", PARALLEL, "N")]
Ep = Annotated[int, option("--ep", "Expert-parallel ranks: vLLM --enable-expert-parallel is dp × tp; SGLang "
                           "--ep-size (dividing tp; also --ep-size, --expert-parallel-size).", PARALLEL, "N")]

# Cache.
MAX_MODEL_LEN = option("--max-model-len", f"Tokens per sequence (4096, 32k; also --seq-len, --context-length); "
                       f"default: the model's{AXIS}.", CACHE, "TOKENS")
BATCH = option("--batch", f"Sequences held at once (also --concurrency){AXIS}.", CACHE, "N")
MaxModelLen = Annotated[str | None, MAX_MODEL_LEN]
LengthAxis = Annotated[str, MAX_MODEL_LEN]
Batch = Annotated[str, BATCH]
KV_DTYPE = option("--kv-cache-dtype", f"KV dtype (also --kv-dtype): auto, bf16, fp8, int8, int4, nvfp4, ...; all: "
                  f"{', '.join(KV_DTYPE_NAMES)}; where a command compares them, a comma list or repeated (fit: or any).", CACHE, "DTYPE",
                  autocompletion=dtypes_completed)
KvDtype = Annotated[str, KV_DTYPE]
KvDtypes = Annotated[list[str] | None, KV_DTYPE]
KvDtypeOrNone = Annotated[str | None, KV_DTYPE]
BlockSize = Annotated[int | None, option("--block-size", "Tokens per block (also --page-size; 0: no paging); "
                                         "default: the engine's (size: 16).", CACHE, "TOKENS")]
QuantGroup = Annotated[int, option("--quant-group", "int8/int4 KV: elements per fp16 scale.", CACHE, "N")]
StateDtype = Annotated[str, option("--mamba-cache-dtype", "Linear/Mamba conv state dtype (also --state-dtype): "
                                   "auto, fp32, bf16, fp16; the recurrent one's too unless given.", CACHE, "DTYPE")]
SsmStateDtype = Annotated[str, option("--mamba-ssm-cache-dtype", "Recurrent state dtype (also --ssm-state-dtype): "
                                      "auto, fp32, bf16, fp16; auto: the config's own, else the conv state's.", CACHE,
                                      "DTYPE")]
Attention = Annotated[str | None, option("--attention", "Override the attention kind: mha, gqa, mqa, mla.", CACHE,
                                         "KIND")]
KvHeads = Annotated[int | None, option("--kv-heads", "Override the number of KV heads.", CACHE, "N")]
LayerTypes = Annotated[str | None, option("--layer-types", 'Override the layer kinds: "0-15:full,16-31:sliding".',
                                          CACHE, "RANGES")]
Window = Annotated[str | None, option("--window", "Override the window (sliding) or chunk (chunked), tokens.", CACHE,
                                      "TOKENS")]

# Output.
GpusPerNode = Annotated[int | None, option("--gpus-per-node", "GPUs of one node; fit: 8, and the largest TP, PP and DP "
                                    "cross nodes; capacity: the command is written for a replica over as many nodes "
                                    "as it needs.", PARALLEL, "N")]
Json = Annotated[bool, switch("--json", "Print JSON instead of tables; sweep: JSON lines, one per point; report: the "
                              "page's JSON, and the page only with -o.", OUTPUT)]
Explain = Annotated[bool, switch("--explain", "Show each number with its formula.", OUTPUT)]
Plot = Annotated[str | None, option("--plot", "Also draw a chart to this .png/.svg file (needs kvplan\\[plot]).",
                                    OUTPUT, "FILE")]


def listed(values: list[str] | None, name: str, default: str) -> tuple[str, ...]:
    """Repeated options and comma lists -> one tuple ('auto,fp8' -> ('auto', 'fp8')), each once."""
    items = [v.strip() for item in values or [default] for v in item.split(",")]
    if any(not v for v in items):
        raise InputError(f"{name} {','.join(values or [])!r} has an empty item: give a comma list like vllm,sglang",
                         arg=name)
    return tuple(dict.fromkeys(items))


def model_options(model: Model, revision: Revision = None, dtype: ModelDtype = "auto") -> Any:
    """The model, as --dtype serves it."""
    from kvplan.config import load_model, with_dtype

    return with_dtype(load_model(model, revision=revision), dtype)


def cache_options(tp: Tp = 1, pp: Pp = 1, dcp: Dcp = 1, dp: Dp = 1, ep: Ep = 1, max_model_len: MaxModelLen = None,
                  batch: Batch = "1", kv_dtype: KvDtype = "auto", block_size: BlockSize = None,
                  quant_group: QuantGroup = 8, state_dtype: StateDtype = "auto", ssm_state_dtype: SsmStateDtype = "auto",
                  attention: Attention = None, kv_heads: KvHeads = None, layer_types: LayerTypes = None,
                  window: Window = None) -> CacheRequest:
    """The cache question."""
    return CacheRequest(
        tp=tp, pp=pp, dcp=dcp, dp=dp, ep=ep, kv_dtype=kv_dtype, block_size=block_size, quant_group=quant_group,
        state_dtype=state_dtype, ssm_state_dtype=ssm_state_dtype, batch=parse_count(batch, "batch"),
        max_model_len=None if max_model_len is None else parse_positive_tokens(max_model_len, "max_model_len"),
        overrides=overrides(attention, kv_heads, layer_types, window))


def overrides(attention: str | None, kv_heads: int | None, layer_types: str | None,
              window: str | None) -> Overrides | None:
    """The override flags -> Overrides (None when nothing is overridden)."""
    if attention is not None and attention.lower() not in ATTENTION_OVERRIDES:
        raise InputError(f"unknown attention {attention!r}; choose one of: {', '.join(ATTENTION_OVERRIDES)}",
                         arg="attention")
    if kv_heads is not None and kv_heads <= 0:
        raise InputError(f"kv_heads must be positive, got {kv_heads}", arg="kv_heads")
    if not any((attention, kv_heads, layer_types, window)):
        return None
    return Overrides(attention=attention.lower() if attention else None, kv_heads=kv_heads,
                     layer_kinds=parse_layer_ranges(layer_types) if layer_types else (),
                     window=parse_positive_tokens(window, "window") if window else None)


ModelArgs = Annotated[Any, Expand(model_options)]
CacheArgs = Annotated[CacheRequest, Expand(cache_options)]


# The spellings a flag also answers to: kvplan's short forms and SGLang's and trtllm-serve's names, rewritten to
# the option's flag before parsing (kvplan.cli.AliasGroup); named in each option's help, kept out of its name column.
FLAG_ALIASES = {
    "--tp": "--tensor-parallel-size", "-tp": "--tensor-parallel-size", "--pp": "--pipeline-parallel-size",
    "-pp": "--pipeline-parallel-size", "--dcp": "--decode-context-parallel-size",
    "-dcp": "--decode-context-parallel-size", "--kv-dtype": "--kv-cache-dtype", "--seq-len": "--max-model-len",
    "--context": "--max-model-len", "--max-seq-len": "--max-model-len", "--concurrency": "--batch",
    "--state-dtype": "--mamba-cache-dtype", "--ssm-state-dtype": "--mamba-ssm-cache-dtype", "-q": "--quantization",
    "-o": "--output", "-m": "--model",
    "--tp-size": "--tensor-parallel-size", "--tp_size": "--tensor-parallel-size",  # SGLang, trtllm-serve
    "--pp-size": "--pipeline-parallel-size", "--pp_size": "--pipeline-parallel-size",
    "--context-length": "--max-model-len", "--max_seq_len": "--max-model-len",  # SGLang, trtllm-serve
    "--page-size": "--block-size", "--dp-size": "--data-parallel-size",
    "--dp": "--data-parallel-size", "-dp": "--data-parallel-size", "--ep-size": "--ep", "--expert-parallel-size": "--ep", "--mamba-ssm-dtype": "--mamba-ssm-cache-dtype",  # SGLang
    "--kv_cache_free_gpu_memory_fraction": "--free-gpu-memory-fraction",  # trtllm-serve
    "--free_gpu_memory_fraction": "--free-gpu-memory-fraction", "--max_num_tokens": "--max-num-batched-tokens",
}


def primary_flags(args: list[str]) -> list[str]:
    """Other spellings of a flag (`--tp-size 4`, `--context-length=32k`) -> the option's flag; values and
    everything after a bare `--` are left alone."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        name, eq, value = arg.partition("=")
        out.append(FLAG_ALIASES[name] + eq + value if name in FLAG_ALIASES else arg)
    return out
