"""File operations."""

import hashlib
import io
import json
import secrets
from pathlib import Path
from typing import Any

from pyinfra import host
from pyinfra.api import FileUploadCommand, OperationError, QuoteString, StringCommand, operation
from pyinfra.facts.files import FileContents

from rocm_fleet.engine.diffs import detailing, show
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.facts.files import DirectoryExists, FileDigest, FileText
from rocm_fleet.model import paths
from rocm_fleet.model.answers import FileDigestDict
from rocm_fleet.model.changes import FileChange, file_change
from rocm_fleet.model.secrets import Secret
from rocm_fleet.operations._script import script


@operation()
def text_file(path: str, content: str = "", mode: str = "644", present: bool = True):
    """Write a small root-owned text file (temp name, then rename; its directory must exist) when
    its content or mode differs; or remove it."""
    current = read_fact(FileDigest, path=path)
    if not present:
        yield from removed(path, exists=current is not None)
        return
    digest = hashlib.sha256(content.encode()).hexdigest()
    if current is not None and (current["mode"], current["sha256"]) == (mode, digest):
        host.noop(f"{path} is up to date")
        return
    show_file(path, content, mode, current)
    yield script("text-file", path, mode, content)


def show_file(
    path: str, content: str, mode: str, digest: FileDigestDict | None, secret: bool = False
) -> None:
    """Under ``--diff``: the change from the host's ``path`` (``digest`` its ``FileDigest``;
    its text read for the diff, unless ``secret``) to ``content`` with ``mode``."""
    if not detailing():
        return
    current = None if digest is None else ""
    if digest is not None and not secret:
        current = host.get_fact(FileText, path=path)
        if current is None:  # a link: what it points at is not shown
            show([FileChange("modify", path, ("(a link on the host: not read)",))])
            return
    old_mode = digest["mode"] if digest is not None else mode
    show([file_change(path, current, content, secret=secret, modes=(old_mode, mode))])


@operation()
def uploaded_file(path: str, content: Secret | str, mode: str = "600"):
    """Write a root-owned file by upload (for secrets: never on a command line or in the output),
    its directory made if missing; it exists with ``mode`` in a fresh private directory beside it
    before any byte is written, then is renamed into place."""
    text = content.reveal() if isinstance(content, Secret) else content
    current = read_fact(FileDigest, path=path)
    digest = hashlib.sha256(text.encode()).hexdigest()
    if current is not None and (current["mode"], current["sha256"]) == (mode, digest):
        host.noop(f"{path} is up to date")
        return
    show_file(path, "", mode, current, secret=True)
    # A fresh private directory beside path (mkdir: never a name someone else made) holds the
    # file pyinfra's upload writes through (its cp follows links); the safe path rule first.
    private = f"{paths.parent(path)}/.{path.rsplit('/', 1)[-1]}.{secrets.token_hex(6)}"
    new = f"{private}/new"
    yield script("upload-start", path, mode, private)
    # As the SSH user: pyinfra's sudo upload passes through this file (a random name in its
    # temporary directory, never one derived from the path); made private first.
    temporary = host.get_temp_filename()
    yield StringCommand(
        "sh", "-c", QuoteString(f"umask 077 && rm -f {temporary} && : > {temporary}"),
        _sudo=False, _su_user=None, _doas=False,
    )  # fmt: skip
    yield FileUploadCommand(io.BytesIO(text.encode()), new, remote_temp_filename=temporary)
    yield StringCommand(
        "rm", "-f", temporary, "&&", "chmod", mode, QuoteString(new), "&&",
        "mv", "-Tf", QuoteString(new), QuoteString(path),  # a link at path replaced
        "&&", "rmdir", QuoteString(private),
    )  # fmt: skip


def stamp_is_current(stamp: str, inputs: list[str]) -> bool:
    """Whether ``stamp`` exists and no existing file of ``inputs`` changed after it (every input
    is read)."""
    stamped = read_fact(FileDigest, path=stamp)
    digests = [read_fact(FileDigest, path=path) for path in inputs]  # all read, as planned
    return stamped is not None and not any(
        digest and digest["mtime"] > stamped["mtime"] for digest in digests
    )


def removed(path: str, exists: bool):
    """The commands removing a file the deploy put there (where the safe path rule holds for
    it: no link above it someone else could point elsewhere), or a noop when it is gone."""
    if not exists:
        host.noop(f"{path} is absent")
        return
    show_removal(path)
    yield StringCommand(script("path-safe", path), "&&", "rm", "-f", path)


def show_removal(path: str) -> None:
    """Under ``--diff``: ``remove PATH``, named only (a removed file may have held a secret)."""
    if detailing():
        show([FileChange("remove", path)])


def on_host(*files: str, directories: tuple[str, ...] = ()) -> bool:
    """Whether the host holds any of ``files`` or ``directories`` (read from the survey)."""
    return any(read_fact(FileDigest, path=f) is not None for f in files) or any(
        read_fact(DirectoryExists, path=d) for d in directories
    )


def files_absent(*removals: tuple[str, str]) -> None:
    """Plan ``text_file(present=False)`` for each (name, path) the host holds; none for others."""
    for name, path in removals:
        if on_host(path):
            text_file(name=name, path=path, present=False)


@operation()
def directory_absent(path: str):
    """Remove a directory the deploy created, with everything in it (one filesystem)."""
    if not read_fact(DirectoryExists, path=path):
        host.noop(f"{path} is absent")
        return
    yield StringCommand(
        script("path-safe", path), "&&", "rm", "-rf", "--one-file-system", QuoteString(path)
    )


@operation()
def bundle_copy(bundle: str, path: str):
    """Make ``path`` on the host a copy of the local ``bundle``: upload files whose SHA-256 differs,
    remove unlisted ones, send the manifest last; noop when the manifests match
    (``OperationError``: a manifest path outside the bundle)."""
    local = Path(bundle) / paths.BUNDLE_MANIFEST
    wanted = local.read_bytes()
    remote = f"{path}/{paths.BUNDLE_MANIFEST}"
    current = read_fact(FileDigest, path=remote)
    if current is not None and current["sha256"] == hashlib.sha256(wanted).hexdigest():
        host.noop(f"{path} holds the bundle {bundle}")
        return
    files = json.loads(wanted)["files"]
    held: dict[str, Any] = {}
    if current is not None:
        held = json.loads("\n".join(host.get_fact(FileContents, path=remote) or []) or "{}")
        held = held.get("files", {})
    for relative in [*files, *held]:
        if relative.startswith("/") or ".." in relative.split("/"):
            raise OperationError(f"{bundle}: manifest path {relative!r} leaves the bundle")
    sending = sorted(p for p, e in files.items() if held.get(p, {}).get("sha256") != e["sha256"])
    stale = sorted(set(held) - set(files))
    directories = sorted({f"{path}/{p}".rsplit("/", 1)[0] for p in sending} | {path})
    yield script("directories", path, *directories)
    for relative in sending:
        yield FileUploadCommand(
            str(Path(bundle) / relative),
            f"{path}/{relative}",
            remote_temp_filename=host.get_temp_filename(),  # a random name
        )
    sums = [f"{files[p]['sha256']}  {p}" for p in sending]
    yield script("bundle-settle", path, "\n".join(sums), "\n".join(stale))
    yield FileUploadCommand(str(local), remote, remote_temp_filename=host.get_temp_filename())
