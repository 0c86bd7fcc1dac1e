"""kvplan's command line: each command parses, calls the library, and renders the result."""

from __future__ import annotations

from kvplan.memo import long_lived

# The imports below make ~16k objects (typer, click, rich) that live as long as the process: no collection runs
# while they are made, and frozen, none scans them afterwards (2-3 ms of `kvplan size`, CONTRIBUTING.md's
# Benchmarks). main() does the same for the command's own modules.
with long_lived(freeze=True):
    import importlib
    import os
    import sys
    from functools import cache
    from typing import Annotated, Any

    import typer
    from typer.core import TyperCommand, TyperGroup

    from kvplan.errors import KvplanError

# The CLI process skips pydantic's plugin discovery (an importlib.metadata scan of every installed
# distribution, ~3% of `kvplan size`'s start-up); kvplan registers no pydantic plugin.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

# name -> (module, function). Commands are imported only when the app that runs them is built, so
# `kvplan size` neither imports nor builds the parameters of the other commands (start-up time).
COMMANDS: dict[str, tuple[str, str]] = {
    "size": ("kvplan.cli.size", "size"),
    "models": ("kvplan.cli.models", "models"),
    "capacity": ("kvplan.cli.capacity", "capacity"),
    "fit": ("kvplan.cli.fit", "fit"),
    "compare": ("kvplan.cli.compare", "compare"),
    "diff": ("kvplan.cli.diff", "diff"),
    "sweep": ("kvplan.cli.sweep", "sweep"),
    "waste": ("kvplan.cli.waste", "waste"),
    "probe": ("kvplan.cli.probe", "probe"),
    "reconcile": ("kvplan.cli.reconcile", "reconcile"),
    "report": ("kvplan.cli.report", "report"),
    "engines": ("kvplan.cli.engines", "engines"),
    "schema": ("kvplan.cli.schema", "schema"),
    "mcp": ("kvplan.cli.mcp", "mcp"),
}


COMPLETE_VAR = "_KVPLAN_COMPLETE"  # set by the shell completion script (click's protocol)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"kvplan {version('kvplan')}")
        except PackageNotFoundError:
            print("kvplan (not installed: run from a source tree)")
        raise typer.Exit()


Version = Annotated[bool, typer.Option("--version", "-V", callback=_print_version, is_eager=True,
                                       help="Print kvplan's version and exit.")]


def _switch(option: Any) -> Any:
    """--help is a switch: no value type shown beside it."""
    if option is not None:
        option.metavar = ""
    return option


def unwrapped(text: str | None) -> str | None:
    """A docstring's paragraphs each on one line: typer keeps a docstring's line breaks in the commands panel
    and past the first paragraph, so at 80 columns a sentence broke where the source did ("concurrency,⏎ the
    lines it logs"); rich wraps the joined text at the terminal's width instead."""
    if not text:
        return text
    import inspect

    return "\n\n".join(" ".join(part.split()) for part in inspect.cleandoc(text).split("\n\n"))


class Command(TyperCommand):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = unwrapped(self.help)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The compact layout of kvplan.cli.help (under 120 lines at 80 columns)."""
        from kvplan.cli.help import format_help

        format_help(self, ctx)

    def get_help_option(self, ctx: Any) -> Any:
        return _switch(super().get_help_option(ctx))


class AliasGroup(TyperGroup):
    """Parses SGLang's and trtllm-serve's spellings of a flag as kvplan's primary name (options.FLAG_ALIASES)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = unwrapped(self.help)

    def get_help_option(self, ctx: Any) -> Any:
        return _switch(super().get_help_option(ctx))

    def get_params(self, ctx: Any) -> list[Any]:
        """--version and the completion switches show no <bool> beside them, as every command's switches."""
        params: list[Any] = super().get_params(ctx)
        for param in params:
            if getattr(param, "is_flag", False):
                param.metavar = ""
        return params

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        from kvplan.cli.options import primary_flags

        return super().parse_args(ctx, primary_flags(args))


def _read_params_once() -> None:
    """typer reads each command function's parameters twice as it builds the command (for its options, then for its
    callback's names), evaluating the signature and type hints each time: the second read reuses the first (the
    same dict, which neither caller changes). Where a typer release moves the function, typer's own runs."""
    import typer.main

    read = getattr(typer.main, "get_params_from_function", None)
    if read is None or getattr(read, "kvplan", False):
        return
    typer.main.get_params_from_function = _cache_by_identity(read)  # type: ignore[attr-defined]


def _cache_by_identity(read: Any) -> Any:
    """`read(func)`, once per function object (functions compare by identity; the command functions live on)."""
    read_already: dict[Any, Any] = {}

    def read_once(func: Any) -> Any:
        try:
            found = read_already.get(func)
        except TypeError:  # an unhashable callable: read each time, as typer does
            return read(func)
        if found is None:
            found = read_already[func] = read(func)
        return found

    read_once.kvplan = True  # type: ignore[attr-defined]
    return read_once


@cache
def build_app(names: tuple[str, ...] = tuple(COMMANDS), completion: bool = True) -> typer.Typer:
    """A typer app with these commands (the full app by default). `completion` adds --install-completion and
    --show-completion to `kvplan` itself; a single command's app leaves them out (start-up time)."""
    from kvplan.cli.coerce import install

    install()  # plain option values without pydantic (start-up time)
    _read_params_once()
    app = typer.Typer(cls=AliasGroup, no_args_is_help=True, add_completion=completion, pretty_exceptions_enable=False,
                      context_settings={"help_option_names": ["-h", "--help"]})

    @app.callback()
    def kvplan(version: Version = False) -> None:
        """Exact KV-cache memory planning for LLM inference.

        Options take vLLM's names (--tensor-parallel-size, --max-model-len, --kv-cache-dtype, ...) with kvplan's
        short forms (-tp/--tp, --seq-len, --kv-dtype); SGLang's and trtllm-serve's spellings work too
        (--tp-size, --context-length, --page-size, --tp_size, --max_seq_len, ...)."""

    for name in names:
        module, function = COMMANDS[name]
        app.command(name, cls=Command)(getattr(importlib.import_module(module), function))
    return app


def __getattr__(name: str) -> Any:
    if name == "app":  # `from kvplan.cli import app`: the full app, built on first use
        return build_app()
    raise AttributeError(name)


def _app_for(argv: list[str]) -> typer.Typer:
    """Only the command being run, when the first argument names one; else the full app (help, version,
    completion, errors)."""
    if argv and argv[0] in COMMANDS and COMPLETE_VAR not in os.environ:
        return build_app((argv[0],), completion=False)
    return build_app()


def _as_typed(exc: Any, args: list[str]) -> str:
    """A usage error's message, one line, naming a rewritten flag as the user typed it too."""
    from kvplan.cli.options import primary_flags

    message = " ".join(str(exc.format_message()).split())
    for old, new in zip(args, primary_flags(args), strict=True):
        if old != new:
            typed, primary = old.partition("=")[0], new.partition("=")[0]
            message = message.replace(f"'{primary}'", f"'{primary}' (given as {typed})")
            if message.startswith(f"No such option: {primary}"):  # click names it unquoted here
                message = message.replace(primary, f"{primary} (given as {typed})", 1)
    if message.startswith("No such option: ") and (hint := _engine_hint(exc, message.split()[3].rstrip(".,"))):
        message = message.split(" (Possible options:")[0] + hint  # click's near names mislead where an engine's
    if args[:1] == ["probe"] and message.startswith("Got unexpected extra argument"):  # every other command's
        message += "; probe takes its models as --model NAME (repeatable)"            # model is positional
    return message


# An engine's knob that kvplan's options name otherwise (Spelling.flags' knobs)
OWN_NAMES = {"budget": ("--kv-budget",), "ep": ("--ep",), "lora": ("--max-loras",), "loras": ("--max-loras",),
             "speculative": ("--speculative-model",), "dp_attention": ("--dp",), "fraction": ("--gpu-memory-utilization",)}


def _engine_hint(exc: Any, name: str) -> str:
    """An engine's flag kvplan's command lacks: the option it takes for that knob, or the launch command's way."""
    from kvplan.engines import ENGINE_NAMES, get_engine
    from kvplan.launch.argv import whose_flag

    found = whose_flag(name, "")
    command = getattr(getattr(exc, "ctx", None), "command", None)
    if found is None or command is None:
        return ""
    ours = {o for p in command.params for o in getattr(p, "opts", ())}
    spellings = [get_engine(e).spelling for e in ENGINE_NAMES]
    names = [*(f for s in spellings if s is not None for f in s.flags.get(found[1], ())), *OWN_NAMES.get(found[1], ())]
    takes = next((f for f in names if f in ours), None)
    if takes is not None:
        return f"; that is {found[0]}'s flag: kvplan {command.name} takes {takes}"
    return (f"; that is {found[0]}'s flag: give it inside the launch command, after -- "
            f"(kvplan capacity -- vllm serve MODEL ...)" if "model" in {p.name for p in command.params} else "")


def main(argv: list[str] | None = None) -> int:
    """Console entry point: usage errors and KvplanErrors become one stderr line and exit 2.

    Click's exceptions are matched by shape (typer vendors its own click in recent releases).
    """
    args = (sys.argv[1:] if argv is None else argv) or ["--help"]  # bare `kvplan`: the help, exit 0
    if "--help" in args or "-h" in args:
        from kvplan.cli.help import install

        install()
    with long_lived(freeze=True):  # building the command imports modules and classes that live as long as the
        app = _app_for(args)          # process: no collection pays for them, and later ones skip them (freeze)
    try:
        code = app(args=args, standalone_mode=False, prog_name="kvplan")
    except KvplanError as exc:  # raised outside a command (the commands report their own, with their flags)
        print(f"kvplan: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:
        kind = type(exc).__name__
        if kind == "Exit":
            return int(getattr(exc, "exit_code", 0))
        if kind == "Abort":
            print("kvplan: aborted", file=sys.stderr)
            return 130
        if hasattr(exc, "format_message"):
            print(f"kvplan: error: {_as_typed(exc, args)}", file=sys.stderr)
            return 2
        raise
    return code if isinstance(code, int) else 0
