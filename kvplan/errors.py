"""kvplan's error types. Every user-facing failure is a KvplanError: the CLI prints its
message on one line of stderr and exits 2. Anything else escaping is a bug."""

from __future__ import annotations


class KvplanError(Exception):
    """Base class: bad input that the user can fix."""

    exit_code = 2


class ConfigError(KvplanError):
    """A model could not be found, read or understood."""


class InputError(KvplanError):
    """A command-line value or argument is invalid (size, dtype, range...)."""


class ShardingError(KvplanError):
    """The requested parallel layout does not fit the model."""


class CapacityError(KvplanError):
    """A capacity question has no answer with the given memory."""
