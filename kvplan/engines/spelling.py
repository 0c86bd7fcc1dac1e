"""How an engine's launch command says kvplan's question, as data (``Engine.spelling``): its entry points, the flags
that carry each knob, its names of KV dtypes, and how its parser reads an argument list. ``kvplan.launch`` reads a
pasted command and writes one with it; nothing there asks for an engine by its name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from kvplan.records import Record

# How a parser reads option strings: vLLM's FlexibleArgumentParser (``--a_b`` is ``--a-b``, ``--json.key`` sets one key,
# ``-O3``; argparse's abbreviations), argparse (abbreviations), click (exact names only).
Parser = Literal["flexible", "argparse", "click"]


class EntryPoint(Record):
    """One way the engine is launched: its words before the arguments, and what that entry point does differently."""

    name: str  # serve | api_server | launch_server
    words: tuple[str, ...]  # the executable and its subcommand (vllm serve), or the module after `python -m`
    module: bool = False  # `python -m MODULE` (words[0] is the module)
    first: str = ""  # the first release that has it ("": every release kvplan reads)
    positional_model: str | None = ""  # the first release that takes the model as a positional ("": every one;
    # None: none, the model is a flag)
    model_flag: str = ""  # the flag that must name the model ("": a positional or the model option)
    model_flag_why: str = ""  # why a positional model is not taken there
    model_option: str = ""  # the option that names the model where a positional is not taken yet
    serve_only_dropped: bool = False  # the module's parser lacks `serve`'s own options (vLLM's api_server)
    own_flags: tuple[str, ...] = ()  # flags the entry point takes itself (one value each), no server flags
    subcommand: str = ""  # an optional subcommand before the model (trtllm-serve's DefaultGroup `serve`)
    subcommand_absent_in: str = ""  # the release whose command has no such subcommand


class Spelling(Record):
    """The launch command of an engine: read (``reads``: parser dest -> the question's part, field and the value's
    conversion) and written (``flags``: knob -> its flags, the first the release has is written)."""

    label: str  # how a note names the engine's command (vLLM 0.33.0, trtllm-serve snapshot)
    entry_points: tuple[EntryPoint, ...]
    written_entry: tuple[str, ...]  # the words a written command starts with, before the model
    parser: Parser
    flags: Mapping[str, tuple[str, ...]]
    # Given by every engine ({} for none), never a default factory: that has the records compile __init__ from source
    reads: Mapping[str, tuple[str, str, str]]
    kv_dtypes: Mapping[str, str]  # kvplan's KV dtype name -> the engine's
    yaml_keys: Mapping[str, str]  # knob -> its key in the engine's YAML config, where the command has no flag for it
    data_parallel: Literal["engines", "attention", "none"] = "none"  # what its --data-parallel-size plans: dp
    # engines of tp × pp GPUs (vLLM), DP attention inside the TP group with a switch (SGLang), nothing
    expert_parallel: Literal["switch", "size", "unplanned"] = "unplanned"  # EP as a switch (vLLM: dp × tp), a size,
    # or a size kvplan carries into the command written but does not plan (TensorRT-LLM)
    nodes: Literal["nnodes", "gpus_per_node"] = "nnodes"  # how a replica over nodes is said
    table_match: Literal["exact", "last_patch"] = "exact"  # Engine.launch_release names the parser's release, or a
    # minor whose last patch release was read
