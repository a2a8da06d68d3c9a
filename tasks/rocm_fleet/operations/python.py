"""Python venv and wheel operations."""

import re
import shlex
from urllib.parse import urlsplit

from packaging.requirements import Requirement
from pyinfra import host
from pyinfra.api import OperationValueError, QuoteString, StringCommand, operation
from pyinfra.facts.files import Directory, FileContents

from rocm_fleet.engine.diffs import detailing, show
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.facts.files import FileDigest, Ledger
from rocm_fleet.facts.python import VenvDistributions
from rocm_fleet.model import paths
from rocm_fleet.model.changes import PackageChange
from rocm_fleet.model.decisions import (
    normal_name,
    normal_versions,
    requirement_met,
    version_matches,
)
from rocm_fleet.model.grammar import ip_literal
from rocm_fleet.operations._script import script
from rocm_fleet.upstream.manifest import BUILD_MARK, NO_BINARY


@operation()
def venv(path: str, ledger: str | None = None, present: bool = True, created_only: bool = False):
    """Create a Python venv at ``path`` unless one exists, recording it and the parents it made in
    ``ledger``; or remove it and those parents (each only if empty), with ``created_only`` only
    a venv the ledger says this deploy created."""
    exists = read_fact(FileDigest, path=paths.venv_marker(path)) is not None
    if not present and created_only:
        if not exists:
            host.noop(f"venv {path} is absent")
            return
        made = read_fact(Ledger, path=ledger) if ledger else []  # the venv or its parent
        if path.rstrip("/") not in made and paths.parent(path.rstrip("/")) not in made:
            host.noop(f"venv {path} was not created by rocm-fleet: it stays")
            return
        yield script("venv-remove", path, ledger)
        return
    if present:
        if exists:
            host.noop(f"venv {path} exists")
            return
        if ledger:
            yield script("venv-create", path, ledger)
        else:
            yield StringCommand("python3", "-m", "venv", QuoteString(path))
        return
    recorded = (host.get_fact(FileContents, path=ledger) if ledger else None) or []
    # The venv itself is recorded too (deepest): rm -rf takes it.
    entries = [line.strip() for line in recorded if line.strip() != path.rstrip("/")]
    parents = [
        d
        for d in reversed(list(dict.fromkeys(entries)))
        if d.startswith("/") and host.get_fact(Directory, path=d)
    ]
    if not exists and not host.get_fact(Directory, path=path) and not parents:
        host.noop(f"venv {path} is absent")
        return
    yield StringCommand(script("path-safe", path), "&&", "rm", "-rf", QuoteString(path))
    if parents:
        yield StringCommand("rmdir", "--ignore-fail-on-non-empty", *map(QuoteString, parents))


@operation()
def locked_venv(
    root: str, path: str, lock: str, lock_sha256: str, stamp: str, min_python: str, protocol: int
):
    """A venv at ``path`` holding what the hash-locked ``lock`` (SHA-256 ``lock_sha256``) pins,
    made afresh unless ``stamp`` records that lock and pull ``protocol`` or newer; a python3 older
    than ``min_python`` or an older protocol fails the host, with no stamp."""
    exists = read_fact(FileDigest, path=paths.venv_marker(path)) is not None
    stamped = read_fact(Ledger, path=stamp)
    if exists and stamped[:1] == [lock_sha256] and _speaks(stamped[1:]) >= protocol:
        host.noop(f"venv {path} holds the lock {lock_sha256[:12]}")
        return
    yield script("pull-venv", root, path, lock, lock_sha256, stamp, min_python, str(protocol))


def _speaks(lines: list[str]) -> int:
    """The pull protocol a stamp's ``pull protocol N`` line records; -1 without one."""
    found = re.fullmatch(r"pull protocol ([0-9]{1,6})", lines[0]) if lines else None
    return int(found[1]) if found else -1


def venv_versions(venv_path: str) -> dict[str, str]:
    """The venv's distributions, normalised name -> version (empty: no venv)."""
    return normal_versions(read_fact(VenvDistributions, venv=venv_path))


@operation()
def pinned_wheels(
    venv_path: str,
    index_url: str,
    wanted: dict[str, str],
    requires: list[str] | None = None,
    owned: list[str] | None = None,
    proxy: dict[str, str] | None = None,
    locked: list[str] | None = None,
    ca: str | None = None,
):
    """Install ``wanted`` (name -> exact version; without a local label, any of that release) and
    ``requires`` from the ``locked`` hash-pinned lines (``OperationValueError`` without them) from
    one index, then uninstall names matching ``owned`` no longer wanted; no pip cache is kept."""
    requires = list(requires or [])
    installed = venv_versions(venv_path)
    drift = {n: v for n, v in wanted.items() if not version_matches(installed.get(n), v)}
    unmet = [r for r in requires if not requirement_met(installed, r)]
    keep = set(wanted) | {normal_name(Requirement(r).name) for r in requires}
    patterns = [re.compile(p) for p in owned or []]
    stale = sorted(
        name for name in installed
        if name not in keep and any(p.fullmatch(name) for p in patterns)
    )  # fmt: skip
    pins = [f"{n}=={v}" for n, v in sorted(wanted.items())] + requires
    if not drift and not unmet and not stale:
        host.noop(", ".join(pins) + " installed")
        return
    if detailing():
        show(
            [PackageChange("upgrade" if n in installed else "install", n, installed.get(n), v,
                           venv_path) for n, v in sorted(drift.items())]
            + [PackageChange("remove", n, installed[n], venv=venv_path) for n in stale]
        )  # fmt: skip
    if (drift or unmet) and not locked:
        raise OperationValueError(
            f"pinned_wheels: {', '.join(pins)} for {venv_path} would be "
            "installed without hashes; pass `locked` (the hash-pinned lines)"
        )
    python = QuoteString(paths.venv_python(venv_path))
    # Root runs it: only where no one else could have swapped it since preflight.
    checked = [script("path-safe", paths.venv_python(venv_path)), "&&"]
    if locked and (drift or unmet):
        environment = [QuoteString(f"{k}={v}") for k, v in sorted((proxy or {}).items())]
        plain = urlsplit(index_url)
        trusted = ["--trusted-host", QuoteString(plain.netloc)] if plain.scheme == "http" else []
        if ca:
            trusted = ["--cert", QuoteString(ca)]
            if ip_literal(plain.hostname):
                trusted.append(_legacy_certs(python))
        source = [line for line in locked if line.startswith(NO_BINARY)]
        build = [line for line in locked if line.endswith(BUILD_MARK)]
        hashed = [line for line in locked if line not in source and line not in build]
        needed = {line.split("==", 1)[0] for line in hashed}
        # Build-only requirements go to a scratch dir on PYTHONPATH, removed after.
        into_venv = [line for line in build if line.split("==", 1)[0] in needed]
        aside = [line for line in build if line.split("==", 1)[0] not in needed]

        def install(lines: list[str], *options: str | QuoteString, env=()) -> StringCommand:
            # The lines on pip's stdin: no file left on the host.
            variables = [*environment, *env]
            return StringCommand(
                *checked, "printf", QuoteString("%s\\n"), *map(QuoteString, lines), "|",
                *(["env", *variables] if variables else []),
                python, "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
                "--no-cache-dir", "--require-hashes", "--only-binary=:all:", *options,
                "--index-url", QuoteString(index_url), *trusted, "-r", "/dev/stdin",
            )  # fmt: skip

        if not source:
            yield install(hashed)
        else:
            sdist = [*map(QuoteString, source), "--no-build-isolation"]
            if into_venv:
                yield install(into_venv)  # before the sdist's build needs it
            if not aside:
                yield install(hashed, *sdist)
            else:
                backend = install(aside, "--target", '"$scratch"')
                the_set = install(hashed, *sdist, env=['PYTHONPATH="$scratch"'])
                yield StringCommand(
                    *checked, 'scratch="$(mktemp -d)"', "||", "exit", "1;", "(", backend, "&&",
                    the_set, ");", "status=$?;", 'rm -rf "$scratch";', 'exit "$status"',
                )  # fmt: skip
    if stale:
        yield _uninstall(venv_path, stale)


def _uninstall(venv_path: str, names: list[str]) -> StringCommand:
    python = paths.venv_python(venv_path)
    return StringCommand(
        script("path-safe", python), "&&", QuoteString(python), "-m", "pip", "uninstall",
        "--yes", "--no-input", "--disable-pip-version-check", *map(QuoteString, names),
    )  # fmt: skip


def _legacy_certs(python: QuoteString) -> str:
    """A shell substitution giving ``--use-deprecated=legacy-certs`` when the venv's pip is 24.2
    or later (its truststore fails on an index addressed by IP: pypa/pip#12906), else nothing."""
    probe = (
        "import pip; v = tuple(int(p) for p in pip.__version__.split('.')[:2] if p.isdigit()); "
        "print('--use-deprecated=legacy-certs' if v >= (24, 2) else '')"
    )
    return f"$({shlex.quote(python.obj)} -c {shlex.quote(probe)})"


def cuda_wheels(installed: dict[str, str]) -> list[str]:
    """The CUDA-only distributions of a venv: ``nvidia-*``, triton, and the torch family unless a
    ``+rocm`` build."""
    torch = ("torch", "torchvision", "torchaudio")
    return sorted(
        normal_name(name)
        for name, version in installed.items()
        if re.fullmatch(r"nvidia-.*|triton", normal_name(name))
        or (normal_name(name) in torch and "+rocm" not in version)
    )


@operation()
def cuda_wheels_absent(venv_path: str):
    """Uninstall the CUDA wheels (``cuda_wheels``) from a venv."""
    installed = venv_versions(venv_path)
    names = cuda_wheels(installed)
    if not names:
        host.noop(f"no CUDA wheel in {venv_path}")
        return
    if detailing():
        show([PackageChange("remove", n, installed.get(n), venv=venv_path) for n in names])
    yield _uninstall(venv_path, names)
