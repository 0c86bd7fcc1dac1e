"""What every command shares: error reporting, output, and the options that describe a cache."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeVar

import typer

from kvplan.errors import InputError, KvplanError
from kvplan.formulas.layers import ATTENTION_OVERRIDES, Overrides, parse_layer_ranges
from kvplan.render import to_json
from kvplan.units import parse_positive_tokens

F = TypeVar("F", bound=Callable[..., Any])


# Library argument -> the flag a user types: library errors name arguments, the CLI says flags.
FLAGS: dict[str, str] = {
    "tp": "--tensor-parallel-size", "pp": "--pipeline-parallel-size", "dcp": "--decode-context-parallel-size", "dp": "--dp", "seq_len": "--max-model-len", "batch": "--batch",
    "kv_dtype": "--kv-cache-dtype", "block_size": "--block-size", "quant_group": "--quant-group",
    "attention": "--attention", "kv_heads": "--kv-heads", "layer_types": "--layer-types", "window": "--window",
    "state_dtype": "--mamba-cache-dtype", "ssm_state_dtype": "--mamba-ssm-cache-dtype", "max_model_len": "--max-model-len", "kv_budget": "--kv-budget",
    "gpu_memory_bytes": "--gpu-mem", "overhead_bytes": "--overhead", "weights_dtype": "--weights-dtype",
    "gpu_memory_utilization": "--gpu-memory-utilization", "mem_fraction_static": "--mem-fraction-static",
    "engine": "--engine", "hybrid_kv_cache_manager": "--disable-hybrid-kv-cache-manager", "context": "--max-model-len",
    "concurrency": "--concurrency", "gpus_per_node": "--gpus-per-node", "allocator": "--allocator",
    "prompt_len": "--prompt-len", "shared_prefix": "--shared-prefix", "beam_width": "--beam-width",
    "max_seq_len": "--max-model-len", "lengths": "--lengths", "seq_lens": "--max-model-len", "batches": "--batch",
    "tps": "--tensor-parallel-size", "pps": "--pipeline-parallel-size", "kv_dtypes": "--kv-cache-dtype", "engines": "--engine", "model": "--model",
    "revision": "--revision",
    "free_gpu_memory_fraction": "--free-gpu-memory-fraction", "max_num_batched_tokens": "--max-num-batched-tokens",
    "max_num_seqs": "--max-num-seqs", "entry_point": "--entry-point", "sampler": "--sampler",
    "moe_backend": "--moe-backend", "max_lora_rank": "--max-lora-rank", "non_torch_bytes": "--non-torch",
    "gpu": "--gpu", "prices": "--price", "max_gpus": "--max-gpus", "max_replicas": "--max-replicas",
    "speculative_model": "--speculative-model", "speculative_method": "--speculative-method",
    "num_speculative_tokens": "--num-speculative-tokens", "max_loras": "--max-loras",
    "lora_target_modules": "--lora-target-modules", "max_cpu_loras": "--max-cpu-loras",
    "limit_mm_per_prompt": "--limit-mm-per-prompt", "cpu_offload_bytes": "--cpu-offload-gb",
    "kv_offloading_bytes": "--kv-offloading-size", "hicache_ratio": "--hicache-ratio",
    "lmcache_cpu_bytes": "--lmcache-cpu-size", "dtype": "--dtype", "quantization": "--quantization",
}


def error_message(exc: KvplanError) -> str:
    """A library error as the CLI prints it: the arguments it names spelled as flags."""
    message = str(exc)
    for name in exc.arg_names:
        if name in FLAGS:
            # not inside a path or an id ('/models/x', 'org/model'): those are values, not arguments
            message = re.sub(rf"(?<![\w/-]){re.escape(name)}(?![\w/-])", FLAGS[name], message)
    return message


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print one line on stderr and return the Exit to raise (a newline in, say, a file name is
    printed as a space: the error stays one line)."""
    print(f"kvplan: error: {' '.join(message.splitlines())}", file=sys.stderr)
    return typer.Exit(code)


def reports_errors(command: F) -> F:
    """KvplanError -> one stderr line, exit 2. Other exceptions are bugs and keep their traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except KvplanError as exc:
            raise fail(error_message(exc), exc.exit_code) from None

    return wrapper  # type: ignore[return-value]


def warn(notes: list[str] | tuple[str, ...]) -> None:
    for note in notes:
        if note.startswith("warning:"):
            print(f"kvplan: {note}", file=sys.stderr)


Notes = Sequence[str | tuple[str, str]]  # a note, or (whose, note): an engine's under --engine all
PIPE_WIDTH = 200  # piped or redirected output: whole rows for files and logs, not the 80 columns of no terminal


def print_notes(notes: Notes, as_json: bool) -> None:
    """Notes on stderr, each once (see kvplan.render.notes); with --json only the warnings (JSON holds the rest)."""
    if not notes:
        return
    from kvplan.render.notes import merge_notes

    labelled = [n if isinstance(n, tuple) else ("", n) for n in notes]
    if as_json:
        labelled = [(label, text) for label, text in labelled if text.startswith("warning:")]
    for line in merge_notes(labelled):
        print(f"kvplan: {line}", file=sys.stderr)


def emit(payload: Any, as_json: bool, tables: Callable[[Any], list[Any]], explain: list[str] | None = None,
         notes: Notes = ()) -> None:
    """Print the payload as JSON, or as the tables drawn from it (and the explanation); then the notes on
    stderr. Tables draw whole cells at the console's width: the terminal's, or PIPE_WIDTH when piped."""
    if as_json:
        if explain is not None and isinstance(payload, dict):
            payload = {**payload, "explain": explain}
        print(to_json(payload))
        print_notes(notes, as_json)
        return
    from rich.console import Console
    from rich.text import Text

    # A Text (an engine's own message) is never wrapped, so it can be compared with the engine's log line for line.
    console = Console(highlight=False, width=None if sys.stdout.isatty() else PIPE_WIDTH)
    for table in tables(payload):
        console.print(table, soft_wrap=isinstance(table, Text))
    for line in explain or []:
        console.print(line, markup=False)
    print_notes(notes, as_json)


def overrides(attention: str | None, kv_heads: int | None, layer_types: str | None, window: str | None,
              num_layers: int) -> Overrides | None:
    """CLI override flags -> Overrides (None when nothing is overridden)."""
    if attention is not None and attention.lower() not in ATTENTION_OVERRIDES:
        raise InputError(f"unknown --attention {attention!r}; choose one of: {', '.join(ATTENTION_OVERRIDES)}")
    if kv_heads is not None and kv_heads <= 0:
        raise InputError(f"--kv-heads must be positive, got {kv_heads}")
    if not any((attention, kv_heads, layer_types, window)):
        return None
    return Overrides(attention=attention.lower() if attention else None, kv_heads=kv_heads,
                     layer_kinds=parse_layer_ranges(layer_types, num_layers) if layer_types else (),
                     window=parse_positive_tokens(window, "--window") if window else None)


# The names a flag answers to: vLLM's first (the primary spelling where the meaning matches), then kvplan's
# short forms. SGLang's and TensorRT-LLM's spellings of the same knobs are FLAG_ALIASES, rewritten to the
# primary name before parsing (kvplan.cli.AliasGroup): accepted everywhere, kept out of --help's name column.
TP_NAMES = ("--tensor-parallel-size", "--tp")
PP_NAMES = ("--pipeline-parallel-size", "--pp")
DCP_NAMES = ("--decode-context-parallel-size", "--dcp")
KV_DTYPE_NAMES = ("--kv-cache-dtype", "--kv-dtype")
LENGTH_NAMES = ("--max-model-len", "--seq-len")
BLOCK_NAMES = ("--block-size",)
FLAG_ALIASES = {
    "-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size", "-dcp": "--decode-context-parallel-size",
    "--tp-size": "--tensor-parallel-size", "--tp_size": "--tensor-parallel-size",  # SGLang, trtllm-serve
    "--pp-size": "--pipeline-parallel-size", "--pp_size": "--pipeline-parallel-size",
    "--context-length": "--max-model-len", "--max_seq_len": "--max-model-len",  # SGLang, trtllm-serve
    "--context": "--max-model-len", "--max-seq-len": "--max-model-len",  # kvplan's older names (fit, waste)
    "--page-size": "--block-size", "--dp-size": "--dp", "--mamba-ssm-dtype": "--mamba-ssm-cache-dtype",  # SGLang
    "--kv_cache_free_gpu_memory_fraction": "--free-gpu-memory-fraction",  # trtllm-serve
    "--free_gpu_memory_fraction": "--free-gpu-memory-fraction", "--max_num_tokens": "--max-num-batched-tokens",
}


def primary_flags(args: list[str]) -> list[str]:
    """Engine spellings of a flag (`--tp-size 4`, `--context-length=32k`) -> kvplan's primary name; values
    and everything after a bare `--` are left alone."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        name, eq, value = arg.partition("=")
        out.append(FLAG_ALIASES[name] + eq + value if name in FLAG_ALIASES else arg)
    return out


KV_DTYPE_HELP = ("auto, fp32, fp16, bf16, fp8, fp8_e4m3, fp8_e5m2, int8, int4, fp8_per_token_head, "
                 "int8_per_token_head, nvfp4, fp8_ds_mla")

# Options shared by the commands that describe one cache layout.
Tp = Annotated[int, typer.Option(*TP_NAMES, help="Tensor-parallel size (-tp): splits KV heads (MLA is replicated).")]
Pp = Annotated[int, typer.Option(*PP_NAMES, help="Pipeline-parallel size (-pp): splits layers as vLLM does.")]
Dcp = Annotated[int, typer.Option(*DCP_NAMES, help="Decode-context-parallel size (-dcp): splits a sequence's "
                                  "tokens.")]
KvDtypeOpt = Annotated[str, typer.Option(*KV_DTYPE_NAMES, help=KV_DTYPE_HELP + ".")]
KvDtypes = Annotated[str, typer.Option(*KV_DTYPE_NAMES, help=KV_DTYPE_HELP + "; a comma list compares them.")]
BlockSize = Annotated[int, typer.Option(*BLOCK_NAMES, help="Tokens per block (SGLang: page; 0: no paging).")]


def length_option(text: str) -> Any:
    """The one option for a request's length, under every name an engine gives it."""
    return typer.Option(*LENGTH_NAMES, help=text + " Also --context, --context-length (SGLang).")


def batch_option(text: str, *, fit: bool = False) -> Any:
    """The number of requests held at once: `--batch` (size, compare, sweep) or `--concurrency` (fit), either name."""
    return typer.Option(*(("--concurrency", "--batch") if fit else ("--batch", "--concurrency")), help=text)


QuantGroup = Annotated[int, typer.Option("--quant-group", help="int8/int4: elements per fp16 scale.")]
ModelDtype = Annotated[str, typer.Option("--dtype", help="Model dtype as vLLM's --dtype: auto (the config's; fp32 "
                                         "served as bf16), bfloat16, float16, float32: weights and KV auto.")]
Attention = Annotated[str | None, typer.Option("--attention", help="Override the attention kind: mha|gqa|mqa|mla.")]
KvHeads = Annotated[int | None, typer.Option("--kv-heads", help="Override the number of KV heads.")]
LayerTypes = Annotated[str | None, typer.Option("--layer-types",
                                                help='Per-layer kinds, e.g. "0-15:full,16-31:sliding".')]
Window = Annotated[str | None, typer.Option("--window", help="Window (sliding) or chunk size (chunked), tokens.")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
Explain = Annotated[bool, typer.Option("--explain", help="Show each number with its formula.")]
Model = Annotated[str, typer.Argument(help="Model id (bundled, HF cache or hub), config.json, or folder.")]
Revision = Annotated[str | None, typer.Option("--revision", help="Hub revision (branch, tag or commit) of the "
                                              "model's config, from the HF cache or the hub; never the bundled copy.")]
StateDtype = Annotated[str, typer.Option("--mamba-cache-dtype", "--state-dtype", help="Linear/Mamba conv state "
                                         "dtype, and the recurrent state's unless --mamba-ssm-cache-dtype: auto (the "
                                         "model's), fp32, bf16, fp16.")]
SsmStateDtype = Annotated[str, typer.Option("--mamba-ssm-cache-dtype", "--ssm-state-dtype", help="Recurrent "
                                            "(SSM) state dtype: auto (the config's own, e.g. fp32 for Qwen3.5 "
                                            "and Nemotron-H, fp32 for KDA, else --state-dtype), fp32, bf16, fp16.")]
