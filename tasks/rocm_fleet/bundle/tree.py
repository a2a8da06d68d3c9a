"""Writing a bundle's tree: each file atomically, confined, recorded in the manifest."""

import hashlib
from pathlib import Path
from typing import Any

from rocm_fleet.atomic import write_atomically
from rocm_fleet.upstream.manifest import confined


class Files:
    """The manifest's file table, as the bundle is made."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Any]] = {}

    def add(self, path: str, url: str, sha256: str, size: int, verified: str, why: str) -> None:
        entry = self.entries.setdefault(
            path, {"url": url, "sha256": sha256, "size": size, "verified": verified, "why": []}
        )
        if why not in entry["why"]:
            entry["why"].append(why)


def write_file(out: Path, path: str, data: bytes) -> None:
    target = confined(out, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, data)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
