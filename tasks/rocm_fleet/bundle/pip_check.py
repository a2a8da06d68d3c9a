"""A host's pip resolves a bundle's wheel set to the bundled files only."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from rocm_fleet.upstream.dist_files import is_sdist
from rocm_fleet.upstream.manifest import BundleError, bundle_path, confined
from rocm_fleet.upstream.python_target import interpreter_tag, manylinux_platforms


def pip_check(wheel_set: dict[str, Any], out: Path) -> None:
    """BundleError unless pip resolves the set against the bundle's pages to bundled files."""
    _check_pip()
    if any(is_sdist(pin["path"].rsplit("/", 1)[-1]) for pin in wheel_set["pins"].values()):
        # pip needs --only-binary=:all: with --python-version: the resolution decides.
        return
    index = confined(out, bundle_path(wheel_set["index_url"].rstrip("/") + "/index.html")).parent
    python = wheel_set["python"]
    abi = interpreter_tag(python)
    platforms = [a for p in manylinux_platforms(wheel_set["glibc"]) for a in ("--platform", p)]
    with tempfile.TemporaryDirectory(prefix="rocm-fleet-pip-") as tmp:
        report = Path(tmp) / "report.json"
        result = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--isolated", "--dry-run",
             "--ignore-installed", "--quiet", "--disable-pip-version-check", "--no-cache-dir",
             "--only-binary=:all:", "--python-version", python, "--implementation", "cp",
             "--abi", abi, *platforms, "--index-url", index.as_uri(), "--report", str(report),
             *wheel_set["requirements"]],
            capture_output=True, text=True, check=False,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "LANG": "C.UTF-8"},
        )  # fmt: skip
        if result.returncode != 0:
            errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
            raise BundleError(
                f"pip can't install {' '.join(wheel_set['requirements'])} for Python {python} "
                f"from the bundle: {' '.join(errors) or result.stderr[-500:]}"
            )
        picked = json.loads(report.read_text())["install"]
    bundled = {pin["path"] for pin in wheel_set["pins"].values()}
    for item in picked:
        url = item["download_info"]["url"]
        path = os.path.relpath(url2pathname(urlsplit(url).path), out.resolve())
        if path not in bundled:
            raise BundleError(f"pip would install {path} for Python {python}, not resolved")


# pip accepts --platform/--abi with --dry-run (no --target) from 23.3 on.
PIP_AT_LEAST = (23, 3)


def _check_pip() -> None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("pip")
    except PackageNotFoundError:
        found = "none"
    numbers = tuple(int(n) for n in re.findall(r"\d+", found)[:2])
    if numbers < PIP_AT_LEAST:
        wanted = ".".join(map(str, PIP_AT_LEAST))
        raise BundleError(
            f"the pip beside rocm-fleet ({sys.executable}) is {found}; the bundle needs pip "
            f">= {wanted}: run `{sys.executable} -m pip install 'pip>={wanted}'`"
        )
