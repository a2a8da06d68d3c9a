"""The one writer of the controller's local files: whole or not at all, no link followed."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from secrets import token_hex

# A name taken by someone else (a planted link, a crash's leftover) is passed over; this
# many in a row means someone is taking every name we draw.
ATTEMPTS = 100


def write_atomically(
    path: Path, data: str | bytes, mode: int = 0o644, *, exclusive: bool = False
) -> None:
    """``path`` holding ``data`` (text as UTF-8): a reader sees the old file or the new one,
    never half of one, also after a crash.

    The data goes to a new file beside ``path`` (a random name, created with O_CREAT|O_EXCL|
    O_NOFOLLOW and ``mode`` from its first byte, umask or not: 0o600 for anything secret),
    is fsynced, renamed over ``path``, and the directory is fsynced. A name taken at the
    temporary name (a planted link) is never opened: another name is drawn. A link at
    ``path`` is replaced by the file, not followed (rename acts on the directory entry):
    refusing would let whoever planted it stop the write, following it would write where
    they chose. With ``exclusive``, the file is linked into place instead, and only where
    nothing (not even a link) is at ``path``: FileExistsError otherwise, so of writers
    racing, the first wins. On any failure the temporary file is removed and ``path`` is
    unchanged."""
    content = data.encode() if isinstance(data, str) else data
    directory = path.parent
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(ATTEMPTS):
        temporary = directory / f".{path.name}.{token_hex(6)}"
        try:
            descriptor = os.open(temporary, flags, mode)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"{directory}: no free temporary name for {path.name}")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            os.fchmod(stream.fileno(), mode)  # the umask may have narrowed it
            stream.write(content)
            stream.flush()
            os.fsync(stream.fileno())
        if exclusive:
            os.link(temporary, path, follow_symlinks=False)
            os.unlink(temporary)
        else:
            os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    directory_descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory_descriptor)
    finally:
        os.close(directory_descriptor)
