"""A pseudo-terminal for the CLI tests that need one (a real terminal width, colours a pipe would not get)."""

from __future__ import annotations

import os


def drain(leader: int) -> bytes:
    """All a pty's leader side holds once the child has exited and the follower is closed (Linux ends the read
    with EIO, other systems with an empty read); closes the leader."""
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return b"".join(chunks)
