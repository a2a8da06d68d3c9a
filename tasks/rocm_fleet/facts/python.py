"""Python facts: what torch sees in a venv, which distributions the venv holds, torch's build."""

import ast
import json
import re
from typing import TypedDict

from pyinfra.api import FactBase

from rocm_fleet import assets as files
from rocm_fleet.facts._shell import ABSENT, RC_PREFIX, quote, split_rc

_TORCH_MARKER = "__torch_json="


class TorchDevice(TypedDict):
    index: int
    name: str
    arch: str | None
    arch_full: str | None


class TorchInfoDict(TypedDict):
    torch: str | None
    hip: str | None
    cuda: str | None
    available: bool | None
    device_count: int | None
    devices: list[TorchDevice] | None
    matmul: str | None
    error: str | None
    device_error: str | None


class TorchInfo(FactBase[TorchInfoDict | None]):
    """What PyTorch in ``python`` sees: versions, devices, a 64x64 matmul on cuda:0 (``"ok"``), or
    ``error`` (import failed, crash, 300s timeout, or not run: a directory above it breaks the
    safe path rule); None when the interpreter does not exist."""

    tool_timeout = 300

    def command(self, python: str) -> str:
        # Root runs it: only where no one else could have swapped it (the safe path rule).
        py = quote(python)
        return (
            f"{files.text('scripts/safe-path.sh')}\n"
            f"if (safe_path {py}) 2>&1; then if command -v {py} >/dev/null 2>&1; then "
            f"timeout {self.tool_timeout} {py} -c {quote(files.text('scripts/torch-info.py'))} "
            "</dev/null 2>&1; "
            f'echo "{RC_PREFIX}$?"; else echo {ABSENT}; fi; else echo {RC_PREFIX}126; fi'
        )

    def process(self, output: list[str]) -> TorchInfoDict | None:
        lines, rc = split_rc(output)
        if rc is None and any(line.strip() == ABSENT for line in lines):
            return None
        found = next((line for line in reversed(lines) if line.startswith(_TORCH_MARKER)), "")
        try:
            data = json.loads(found[len(_TORCH_MARKER) :])
        except ValueError:
            data = None
        if isinstance(data, dict):
            return data  # type: ignore[return-value]
        tail = " | ".join(line.strip() for line in lines if line.strip())
        reason = {124: "timed out", 126: "not run"}.get(rc or 0, f"exited with {rc}")
        error = f"python {reason}" + (f": {tail[-500:]}" if tail else "")
        return dict.fromkeys(TorchInfoDict.__annotations__) | {"error": error}  # type: ignore[return-value]


class VenvDistributions(FactBase[dict[str, str] | None]):
    """A venv's distributions, name -> version, from ``*.dist-info`` names; None: no venv."""

    def command(self, venv: str) -> str:
        root = quote(venv.rstrip("/") or "/")
        return (
            f'found=; for d in {root}/lib/python3*/site-packages; do [ -d "$d" ] || continue; '
            'found=1; echo __site; for i in "$d"/*.dist-info; do [ -d "$i" ] && echo "${i##*/}"; '
            f'done; done; [ -n "$found" ] || echo {ABSENT}'
        )

    def process(self, output: list[str]) -> dict[str, str] | None:
        if any(line.strip() == ABSENT for line in output):
            return None
        dists = {}
        for line in output:
            if line.strip() == "__site":
                continue
            name, _, version = line.strip().removesuffix(".dist-info").partition("-")
            if name and version:
                dists[name] = version
        return dists


_BUILD_LINE = re.compile(r"^(hip|cuda)\s*(?::[^=]*)?=\s*(.+?)\s*$")


class TorchBuildStrings(FactBase[dict[str, str | None] | None]):
    """torch's ``hip`` and ``cuda`` from ``torch/version.py`` read as text; None: no torch."""

    def command(self, venv: str) -> str:
        root = quote(venv.rstrip("/") or "/")
        # grep -E '^(hip|cuda)[ :=]' as builtins (a small file), __torch after a match
        return (
            f'for f in {root}/lib/python3*/site-packages/torch/version.py; do [ -r "$f" ] '
            '|| continue; _t=; while IFS= read -r _line || [ -n "$_line" ]; do case $_line in '
            '"hip "* | hip:* | hip=* | "cuda "* | cuda:* | cuda=*) printf "%s\\n" "$_line"; '
            '_t=1 ;; esac; done 2>/dev/null <"$f"; [ -z "$_t" ] || echo __torch; done; true'
        )

    def process(self, output: list[str]) -> dict[str, str | None] | None:
        if not any(line.strip() == "__torch" for line in output):
            return None
        result: dict[str, str | None] = {"hip": None, "cuda": None}
        for line in output:
            match = _BUILD_LINE.match(line.strip())
            if match:
                try:
                    value = ast.literal_eval(match.group(2))
                except (ValueError, SyntaxError):
                    continue
                result[match.group(1)] = str(value) if value is not None else None
        return result
