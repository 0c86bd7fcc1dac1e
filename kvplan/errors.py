"""kvplan's error types. Every user-facing failure is a KvplanError: the CLI prints its message on
one line of stderr and exits with ``exit_code``. Anything else escaping is a bug.

Messages name library arguments (``block_size``, ``kv_budget_bytes``); ``arg`` lists the ones a
message mentions, so the CLI can say them as the flags the user typed (``--block-size``).
"""

from __future__ import annotations


class KvplanError(Exception):
    """Base class: bad input that the user can fix."""

    exit_code = 2

    def __init__(self, message: str, *, arg: str | tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.arg_names: tuple[str, ...] = (arg,) if isinstance(arg, str) else arg


class ConfigError(KvplanError):
    """A model could not be found, read or understood."""


class UnreadableConfig(ConfigError):
    """A config file that is not a JSON object at all (not UTF-8, not JSON): a damaged file, not a model's."""


class InputError(KvplanError):
    """A value or argument is invalid (size, dtype, range...)."""


class ShardingError(KvplanError):
    """The requested parallel layout does not fit the model."""


class CapacityError(KvplanError):
    """A capacity question has no answer with the given memory."""


class Refused(CapacityError):
    """An engine would refuse to start (``raise_for_refusal()``): a valid "no", exit 1 as the CLI says it.
    ``result`` is the answer that refused."""

    exit_code = 1

    def __init__(self, message: str, result: object = None) -> None:
        super().__init__(message)
        self.result = result
