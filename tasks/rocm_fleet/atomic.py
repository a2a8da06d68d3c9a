"""The one writer of the controller's local files: whole or not at all, no link followed."""

import contextlib
import os
from pathlib import Path
from secrets import token_hex


def write_atomically(
    path: Path, data: str | bytes, mode: int = 0o644, *, exclusive: bool = False
) -> None:
    """``path`` holding ``data``, replaced whole (a link at ``path`` replaced, not followed);
    ``exclusive``: FileExistsError when something is there. On failure ``path`` is unchanged."""
    content = data.encode() if isinstance(data, str) else data
    directory = path.parent
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):  # temporary names drawn before giving up (a taken one passed over)
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
