"""
Custom pyinfra facts for AMD ROCm + PyTorch GPU nodes.

Every fact here runs a POSIX ``sh`` command (dash on Debian) that always exits 0:
pyinfra marks a host failed when a fact command exits non-zero, and most of the
tools probed here exit non-zero for states we want to *report* (no GPU, Secure Boot
unsupported, key not enrolled ...). Where a tool's exit status matters it is printed
as a trailer line ``__rc=N`` and parsed back. Missing tools/files are reported with
an ``__absent`` / ``__missing`` marker line instead of relying on ``requires_command``,
because ``rocminfo`` usually lives in ``/opt/rocm/bin`` (not on ``PATH``) and pyinfra
turns a missing ``requires_command`` binary into a warning during execute.

Only ``TorchInfo`` and ``PythonDistVersions`` need Python on the remote host.
All return values are plain JSON-serialisable dicts/lists/strings.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import re
import shlex
import weakref
from typing import Any, TypedDict

from pyinfra.api import FactBase
from pyinfra.api.exceptions import FactProcessError
from typing_extensions import override

ROCM_PATH = "/opt/rocm"

_RC_PREFIX = "__rc="
_ABSENT = "__absent"
_MISSING = "__missing"
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _quote(value: str) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"expected a non-empty string, got {value!r}")
    return shlex.quote(value)


def _strip_ansi(line: str) -> str:
    return _ANSI_RE.sub("", line)


def _split_rc(output: list[str]) -> tuple[list[str], int | None]:
    """Remove the ``__rc=N`` trailer (the last one wins) and return (lines, rc)."""
    lines = [_strip_ansi(line) for line in output]
    rc = None
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].startswith(_RC_PREFIX):
            try:
                rc = int(lines[index][len(_RC_PREFIX) :].strip())
            except ValueError:
                continue
            lines = lines[:index] + lines[index + 1 :]
            break
    return lines, rc


def _text(lines: list[str]) -> str:
    return "\n".join(line.rstrip() for line in lines).strip()


def gfx_from_target_version(value: int) -> str | None:
    """
    Decode a KFD ``gfx_target_version`` as ``rocm_agent_enumerator`` does:
    major = v // 10000, minor = (v // 100) % 100 and stepping = v % 100, the last two
    printed as one hex digit each. ``110000`` -> ``gfx1100``, ``90010`` -> ``gfx90a``,
    ``90402`` -> ``gfx942``. ``0`` (a CPU node) -> ``None``.
    """
    if value <= 0:
        return None
    major, minor, stepping = value // 10000, (value // 100) % 100, value % 100
    return f"gfx{major}{minor:x}{stepping:x}"


def _pci_bdf(location_id: int, domain: int | None = None) -> str:
    """``location_id``/``BDFID`` is bus << 8 | device << 3 | function."""
    bdf = f"{location_id >> 8:02x}:{(location_id >> 3) & 0x1F:02x}.{location_id & 0x7:x}"
    return bdf if domain is None else f"{domain:04x}:{bdf}"


# ---------------------------------------------------------------------------------------
# rocminfo
# ---------------------------------------------------------------------------------------


class RocmGpu(TypedDict):
    name: str
    marketing_name: str | None
    uuid: str | None
    vendor: str | None
    node: int | None
    chip_id: str | None
    compute_units: int | None
    pci_bdf: str | None
    apu: bool
    isa: list[str]


class RocmAgentsDict(TypedDict):
    status: str
    rc: int | None
    message: str
    gpus: list[RocmGpu]


def _int_prefix(value: str | None) -> int | None:
    match = re.match(r"\s*(\d+)", value or "")
    return int(match.group(1)) if match else None


def _hex_suffix(value: str | None) -> str | None:
    match = re.search(r"\((0x[0-9a-fA-F]+)\)", value or "")
    return match.group(1).lower() if match else None


def _parse_rocminfo_agents(lines: list[str]) -> list[RocmGpu]:
    agents: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    section = None
    previous = ""
    for raw in lines:
        line = raw.rstrip()
        stripped = line.strip()
        if previous == "*******" and re.fullmatch(r"Agent \d+", stripped):
            current = {"fields": {}, "isa": [], "memory": ""}
            agents.append(current)
            section = None
        previous = stripped
        if current is None or ":" not in stripped:
            continue
        label, _, value = stripped.partition(":")
        value = value.strip()
        indent = len(line) - len(line.lstrip(" "))
        if indent <= 2:
            section = label
            current["fields"].setdefault(label, value)
        elif section == "ISA Info" and label == "Name" and value:
            current["isa"].append(value)

    gpus: list[RocmGpu] = []
    for agent in agents:
        fields = agent["fields"]
        if fields.get("Device Type") != "GPU":
            continue
        bdfid = _int_prefix(fields.get("BDFID"))
        gpus.append(
            {
                "name": fields.get("Name", ""),
                "marketing_name": fields.get("Marketing Name") or None,
                "uuid": fields.get("Uuid") or None,
                "vendor": fields.get("Vendor Name") or None,
                "node": _int_prefix(fields.get("Node")),
                "chip_id": _hex_suffix(fields.get("Chip ID")),
                "compute_units": _int_prefix(fields.get("Compute Unit")),
                "pci_bdf": _pci_bdf(bdfid) if bdfid else None,
                "apu": "APU" in fields.get("Memory Properties", "").split(),
                "isa": agent["isa"],
            },
        )
    return gpus


class RocmAgents(FactBase[RocmAgentsDict | None]):
    """
    GPU agents reported by ``rocminfo`` (``/opt/rocm/bin/rocminfo``, else ``rocminfo``
    on ``PATH``); CPU agents are ignored. Returns ``None`` when rocminfo is not
    installed, otherwise:

    .. code:: python

        {
            "status": "ok",  # | "not_loaded" | "no_access" | "error"
            "rc": 0,  # rocminfo's exit status (124 = killed by the timeout)
            "message": "ROCk module version 6.8.5 is loaded",
            "gpus": [
                {
                    "name": "gfx1100",
                    "marketing_name": "Radeon RX 7900 XTX",
                    "uuid": "GPU-fff29e921a701d68",  # "GPU-XX" on APUs
                    "vendor": "AMD",
                    "node": 1,  # KFD topology node
                    "chip_id": "0x744c",  # PCI device id
                    "compute_units": 96,
                    "pci_bdf": "0d:00.0",  # from BDFID, no PCI domain
                    "apu": False,  # "Memory Properties: APU" (rocminfo >= 6.2)
                    "isa": ["amdgcn-amd-amdhsa--gfx1100"],
                },
            ],
        }

    ``not_loaded``: "ROCk module is NOT loaded/live" (amdgpu/KFD missing, no GPU).
    ``no_access``: "Unable to open /dev/kfd read-write" (user not in ``render``/``video``).
    ``error``: any other non-zero exit; ``message`` holds the tail of the output.
    """

    tool_timeout = 120

    @override
    def command(self) -> str:
        return (
            f"if [ -x {ROCM_PATH}/bin/rocminfo ]; then R={ROCM_PATH}/bin/rocminfo; "
            "elif command -v rocminfo >/dev/null 2>&1; then R=rocminfo; else R=; fi; "
            f'if [ -z "$R" ]; then echo {_ABSENT}; '
            f'else timeout {self.tool_timeout} "$R" </dev/null 2>&1; echo "{_RC_PREFIX}$?"; fi'
        )

    @override
    def process(self, output: list[str]) -> RocmAgentsDict | None:
        lines, rc = _split_rc(output)
        if rc is None:
            if any(line.strip() == _ABSENT for line in lines):
                return None
            raise FactProcessError(f"rocminfo output without exit status: {_text(lines)!r}")

        nonempty = [line.strip() for line in lines if line.strip()]
        message = nonempty[0] if nonempty else ""
        status = "ok"
        gpus: list[RocmGpu] = []

        not_loaded = [line for line in nonempty if line.startswith("ROCk module is NOT")]
        kfd = [
            i
            for i, line in enumerate(nonempty)
            if line.startswith("Unable to open /dev/kfd") and "Permission denied" in line
        ]
        if not_loaded:
            status, message = "not_loaded", not_loaded[0]
        elif kfd:
            status, message = "no_access", " ".join(nonempty[kfd[0] : kfd[0] + 2])
        elif rc != 0:
            status = "error"
            tail = nonempty[-3:]
            message = " | ".join(tail) if tail else f"rocminfo exited with {rc}"
            if rc == 124:
                message = f"rocminfo timed out after {self.tool_timeout}s" + (
                    f" | {message}" if tail else ""
                )
        else:
            gpus = _parse_rocminfo_agents(lines)
        return {"status": status, "rc": rc, "message": message, "gpus": gpus}


# ---------------------------------------------------------------------------------------
# /opt/rocm/.info/version
# ---------------------------------------------------------------------------------------


class RocmVersion(FactBase[str | None]):
    """
    Installed ROCm version from ``<rocm_path>/.info/version`` (default ``/opt/rocm``),
    e.g. ``"6.4.3-128"``; ``None`` when the file does not exist.
    """

    @override
    def command(self, rocm_path: str = ROCM_PATH) -> str:
        path = _quote(rocm_path.rstrip("/") + "/.info/version")
        return f"! test -e {path} || cat {path}"

    @override
    def process(self, output: list[str]) -> str | None:
        for line in output:
            if line.strip():
                return line.strip()
        return None


# ---------------------------------------------------------------------------------------
# Python / torch in a venv
# ---------------------------------------------------------------------------------------

_TORCH_MARKER = "__torch_json="
_TORCH_SCRIPT = """\
import json
r = dict(torch=None, hip=None, cuda=None, available=None, device_count=None,
         devices=None, matmul=None, error=None, device_error=None)
def err(e):
    return ("%s: %s" % (type(e).__name__, e)).strip()
try:
    import torch
except BaseException as e:
    r["error"] = err(e)
else:
    r["torch"] = str(torch.__version__)
    r["hip"] = getattr(torch.version, "hip", None)
    r["cuda"] = getattr(torch.version, "cuda", None)
    try:
        r["available"] = bool(torch.cuda.is_available())
        n = r["device_count"] = int(torch.cuda.device_count())
        r["devices"] = []
        for i in range(n):
            full = getattr(torch.cuda.get_device_properties(i), "gcnArchName", None) or None
            r["devices"].append(dict(index=i, name=torch.cuda.get_device_name(i),
                                     arch=full.split(":")[0] if full else None, arch_full=full))
    except Exception as e:
        r["device_error"] = err(e)
    if r["available"] and r["device_count"]:
        try:
            a = torch.ones(64, 64, device="cuda:0")
            s = (a @ a).sum().item()
            r["matmul"] = "ok" if s == 64 ** 3 else "wrong result: %r" % (s,)
        except Exception as e:
            r["matmul"] = err(e)
print("__torch_json=" + json.dumps(r))
"""


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


def _python_command(python: str, body: str, timeout: int) -> str:
    py = _quote(python)
    return (
        f"if command -v {py} >/dev/null 2>&1; then "
        f'timeout {timeout} {py} {body} </dev/null 2>&1; echo "{_RC_PREFIX}$?"; '
        f"else echo {_ABSENT}; fi"
    )


def _find_json(lines: list[str], marker: str) -> Any:
    for line in reversed(lines):
        if line.startswith(marker):
            return json.loads(line[len(marker) :])
    return None


def _python_json(output: list[str], marker: str) -> tuple[Any, list[str], int | None]:
    """(JSON after ``marker`` or None, the lines, exit status) of a ``_python_command``;
    ``_ABSENT`` in place of the JSON when the interpreter doesn't exist."""
    lines, rc = _split_rc(output)
    if rc is None and any(line.strip() == _ABSENT for line in lines):
        return _ABSENT, lines, rc
    try:
        return _find_json(lines, marker), lines, rc
    except ValueError:
        return None, lines, rc


class TorchInfo(FactBase[TorchInfoDict | None]):
    """
    What PyTorch in a given interpreter (typically a venv's ``bin/python``) sees.
    Runs ``<python> -c <script>`` (killed after 300s) and never fails the host.
    Returns ``None`` when the interpreter does not exist, otherwise (keys always present):

    .. code:: python

        {
            "torch": "2.9.1+rocm6.4",
            "hip": "6.4.43484",  # torch.version.hip, None on CUDA/CPU builds
            "cuda": None,  # torch.version.cuda
            "available": True,  # torch.cuda.is_available()
            "device_count": 1,
            "devices": [
                {"index": 0, "name": "AMD Radeon RX 7900 XTX",
                 "arch": "gfx1100", "arch_full": "gfx1100"},  # gcnArchName, split on ":"
            ],
            "matmul": "ok",  # ones(64,64) @ ones(64,64) on cuda:0; else error text; None if
                             # no device
            "error": None,  # "ModuleNotFoundError: No module named 'torch'" when torch does
                            # not import (all other keys None), or the output's tail when
                            # the interpreter crashed / timed out before printing its line
            "device_error": None,  # exception raised while querying the devices
        }
    """

    tool_timeout = 300

    @override
    def command(self, python: str) -> str:
        return _python_command(python, f"-c {_quote(_TORCH_SCRIPT)}", self.tool_timeout)

    @override
    def process(self, output: list[str]) -> TorchInfoDict | None:
        data, lines, rc = _python_json(output, _TORCH_MARKER)
        if data is _ABSENT:
            return None
        if isinstance(data, dict):
            return data  # type: ignore[return-value]
        tail = " | ".join(line.strip() for line in lines if line.strip())
        reason = "timed out" if rc == 124 else f"exited with {rc}"
        error = f"python {reason}" + (f": {tail[-500:]}" if tail else "")
        return {
            "torch": None,
            "hip": None,
            "cuda": None,
            "available": None,
            "device_count": None,
            "devices": None,
            "matmul": None,
            "error": error,
            "device_error": None,
        }


_DISTS_MARKER = "__dists_json="
_DISTS_SCRIPT = """\
import json, sys
from importlib import metadata
r = {}
for n in sys.argv[1:]:
    try:
        r[n] = metadata.version(n)
    except metadata.PackageNotFoundError:
        r[n] = None
if len(sys.argv) == 1:
    r = {d.metadata["Name"]: d.version for d in metadata.distributions() if d.metadata["Name"]}
print("__dists_json=" + json.dumps(r))
"""


class PythonDistVersions(FactBase[dict[str, str | None] | None]):
    """
    Installed versions of Python distributions in an interpreter's environment, read
    with ``importlib.metadata`` (needs Python >= 3.8). Exists because pyinfra's
    ``pip.PipPackages`` regex cuts local version labels, so ``torch==2.9.1+rocm6.4``
    comes back as ``2.9.1`` and a CUDA or CPU wheel cannot be told from a ROCm one.
    Returns ``None`` when the interpreter does not exist; a missing distribution maps
    to ``None``; with no ``names``, every installed distribution:

    .. code:: python

        {"torch": "2.9.1+rocm6.4", "torchvision": "0.24.1+rocm6.4", "torchaudio": None}
    """

    tool_timeout = 120

    @override
    def command(self, python: str, names: list[str] | tuple[str, ...] = ()) -> str:
        if isinstance(names, str):
            raise TypeError("names must be a list of distribution names")
        args = " ".join(_quote(name) for name in names)
        body = f"-c {_quote(_DISTS_SCRIPT)} {args}"
        return _python_command(python, body, self.tool_timeout)

    @override
    def process(self, output: list[str]) -> dict[str, str | None] | None:
        data, lines, rc = _python_json(output, _DISTS_MARKER)
        if data is _ABSENT:
            return None
        if not isinstance(data, dict):
            raise FactProcessError(
                f"could not read distribution versions (rc={rc}): {_text(lines)[-500:]!r}",
            )
        return data


# ---------------------------------------------------------------------------------------
# Secure Boot / MOK
# ---------------------------------------------------------------------------------------


class SecureBootDict(TypedDict):
    state: str
    shim_validation_disabled: bool
    setup_mode: bool
    message: str


class SecureBoot(FactBase[SecureBootDict]):
    """
    Secure Boot state from ``mokutil --sb-state`` (stdout+stderr; its exit status is
    ignored: 0 for both enabled and disabled, 1/255 for the no-EFI cases).

    .. code:: python

        {
            "state": "enabled",  # | "disabled" | "no_efi" | "unsupported" | "absent"
                                 # | "unknown"
            "shim_validation_disabled": False,  # "SecureBoot validation is disabled in shim"
            "setup_mode": False,  # "Platform is in Setup Mode" (no PK, nothing enforced)
            "message": "SecureBoot enabled",  # mokutil's text, "" when absent
        }

    ``no_efi``: "EFI variables are not supported on this system" (legacy BIOS boot).
    ``unsupported``: "This system doesn't support Secure Boot" (EFI without the variable,
    many VMs). ``absent``: mokutil is not installed.
    """

    @staticmethod
    def default() -> SecureBootDict:
        return {
            "state": "unknown",
            "shim_validation_disabled": False,
            "setup_mode": False,
            "message": "",
        }

    @override
    def command(self) -> str:
        return (
            "if command -v mokutil >/dev/null 2>&1; then "
            f'mokutil --sb-state </dev/null 2>&1; echo "{_RC_PREFIX}$?"; '
            f"else echo {_ABSENT}; fi"
        )

    @override
    def process(self, output: list[str]) -> SecureBootDict:
        lines, rc = _split_rc(output)
        result = self.default()
        if rc is None and any(line.strip() == _ABSENT for line in lines):
            result["state"] = "absent"
            return result
        text = _text(lines)
        lowered = text.lower()
        result["message"] = text
        result["shim_validation_disabled"] = "validation is disabled in shim" in lowered
        result["setup_mode"] = "setup mode" in lowered
        if "efi variables are not supported" in lowered:
            result["state"] = "no_efi"
        elif "doesn't support secure boot" in lowered:
            result["state"] = "unsupported"
        elif re.search(r"^secureboot enabled$", lowered, re.MULTILINE):
            result["state"] = "enabled"
        elif re.search(r"^secureboot disabled$", lowered, re.MULTILINE):
            result["state"] = "disabled"
        return result


class MokKeyStateDict(TypedDict):
    state: str
    message: str


class MokKeyState(FactBase[MokKeyStateDict]):
    """
    Whether a certificate (e.g. ``/var/lib/dkms/mok.pub``) is a Machine Owner Key,
    from ``mokutil --test-key <path>``. Parses the text only: the exit codes were
    inverted between mokutil releases.

    .. code:: python

        {
            "state": "enrolled",  # "... is already enrolled" (or "... is already in db")
            # | "pending"        "... is already in the enrollment request" (reboot into
            #                    MokManager still needed)
            # | "not_enrolled"   "... is not enrolled"
            # | "blocked"        "... is blocked in dbx / MokListX" (newer mokutil)
            # | "missing"        the certificate file does not exist
            # | "absent"         mokutil is not installed (checked first)
            # | "unknown"        anything else, e.g. no EFI, not a valid certificate
            "message": "/var/lib/dkms/mok.pub is already enrolled",
        }
    """

    @staticmethod
    def default() -> MokKeyStateDict:
        return {"state": "unknown", "message": ""}

    @override
    def command(self, path: str) -> str:
        cert = _quote(path)
        return (
            f"if ! command -v mokutil >/dev/null 2>&1; then echo {_ABSENT}; "
            f"elif ! test -e {cert}; then echo {_MISSING}; "
            f'else mokutil --test-key {cert} </dev/null 2>&1; echo "{_RC_PREFIX}$?"; fi'
        )

    @override
    def process(self, output: list[str]) -> MokKeyStateDict:
        lines, rc = _split_rc(output)
        markers = {line.strip() for line in lines}
        if rc is None and _ABSENT in markers:
            return {"state": "absent", "message": ""}
        if rc is None and _MISSING in markers:
            return {"state": "missing", "message": ""}
        text = _text(lines)
        if "is already in the enrollment request" in text:
            state = "pending"
        elif "is not enrolled" in text:
            state = "not_enrolled"
        elif "is already enrolled" in text or "is already in db" in text:
            state = "enrolled"
        elif re.search(r"is blocked in (dbx|MokListX)", text):
            state = "blocked"
        else:
            state = "unknown"
        return {"state": state, "message": text}


# ---------------------------------------------------------------------------------------
# sysfs: PCI devices and KFD topology
# ---------------------------------------------------------------------------------------


# "class" is a keyword, hence the functional TypedDict syntax.
PciGpu = TypedDict("PciGpu", {"slot": str, "device": str, "class": str, "driver": "str | None"})


class PciGpus(FactBase[list[PciGpu]]):
    """
    AMD display controllers and accelerators from ``/sys/bus/pci/devices``: vendor
    ``0x1002`` with PCI class ``0x03xxxx`` (display: Radeon, iGPU) or ``0x12xxxx``
    (processing accelerator: Instinct). HDMI audio functions etc. are skipped. Works
    without any driver loaded; ``driver`` is the bound kernel driver or ``None``.

    .. code:: python

        [
            {"slot": "0000:03:00.0", "device": "0x744c", "class": "0x030000",
             "driver": "amdgpu"},
        ]
    """

    default = list

    @override
    def command(self) -> str:
        return (
            "for d in /sys/bus/pci/devices/*; do "
            '[ -r "$d/vendor" ] && [ -r "$d/class" ] || continue; '
            'read -r v < "$d/vendor"; [ "$v" = 0x1002 ] || continue; '
            'read -r c < "$d/class"; '
            'case "$c" in 0x03*|0x12*) ;; *) continue ;; esac; '
            'read -r id < "$d/device"; '
            'drv=-; if [ -e "$d/driver" ]; then drv=$(readlink "$d/driver"); fi; '
            'echo "${d##*/} $id $c ${drv##*/}"; '
            "done"
        )

    @override
    def process(self, output: list[str]) -> list[PciGpu]:
        gpus: list[PciGpu] = []
        for line in output:
            parts = line.split()
            if len(parts) != 4:
                continue
            slot, device, pci_class, driver = parts
            gpus.append(
                {
                    "slot": slot,
                    "device": device.lower(),
                    "class": pci_class.lower(),
                    "driver": None if driver == "-" else driver,
                },
            )
        return gpus


class KfdNode(TypedDict):
    node: int
    gfx: str
    gfx_target_version: int
    device_id: str | None
    slot: str | None
    drm_render_minor: int | None
    simd_count: int | None
    properties: dict[str, int]


class KfdNodes(FactBase[list[KfdNode] | None]):
    """
    GPU nodes of the KFD (amdgpu compute) topology, read from
    ``/sys/class/kfd/kfd/topology/nodes/*/properties``, so it needs no ROCm userspace.
    CPU nodes (``gfx_target_version 0``) are skipped. ``None`` when
    ``/sys/class/kfd/kfd/topology/nodes`` does not exist (amdgpu/KFD not loaded).
    ``gfx`` is decoded like ``rocm_agent_enumerator`` (see ``gfx_from_target_version``).

    .. code:: python

        [
            {
                "node": 1,
                "gfx": "gfx1100",
                "gfx_target_version": 110000,
                "device_id": "0x744c",
                "slot": "0000:03:00.0",  # from domain + location_id, matches PciGpus
                "drm_render_minor": 128,  # /dev/dri/renderD128
                "simd_count": 192,
                "properties": {"cpu_cores_count": 0, "simd_count": 192, ...},  # all ints
            },
        ]
    """

    path = "/sys/class/kfd/kfd/topology/nodes"

    @override
    def command(self) -> str:
        return (
            f"if [ -d {self.path} ]; then echo __kfd; "
            f"for d in {self.path}/*; do "
            '[ -r "$d/properties" ] || continue; '
            'echo "__node=${d##*/}"; cat "$d/properties"; '
            "done; fi"
        )

    @override
    def process(self, output: list[str]) -> list[KfdNode] | None:
        if not any(line.strip() == "__kfd" for line in output):
            return None
        nodes: dict[int, dict[str, int]] = {}
        current: dict[str, int] | None = None
        for line in output:
            line = line.strip()
            if line.startswith("__node="):
                try:
                    current = nodes.setdefault(int(line[len("__node=") :]), {})
                except ValueError:
                    current = None
                continue
            parts = line.split()
            if current is not None and len(parts) == 2 and parts[1].lstrip("-").isdigit():
                current[parts[0]] = int(parts[1])

        result: list[KfdNode] = []
        for node_id in sorted(nodes):
            props = nodes[node_id]
            gfx = gfx_from_target_version(props.get("gfx_target_version", 0))
            if gfx is None:
                continue
            location = props.get("location_id")
            device_id = props.get("device_id")
            result.append(
                {
                    "node": node_id,
                    "gfx": gfx,
                    "gfx_target_version": props["gfx_target_version"],
                    "device_id": f"0x{device_id:04x}" if device_id else None,
                    "slot": (_pci_bdf(location, props.get("domain", 0)) if location else None),
                    "drm_render_minor": props.get("drm_render_minor"),
                    "simd_count": props.get("simd_count"),
                    "properties": props,
                },
            )
        return result


# ---------------------------------------------------------------------------------------
# Distribution (for mapping Debian releases to AMD's apt suites)
# ---------------------------------------------------------------------------------------


class DistroReleaseDict(TypedDict):
    id: str | None
    id_like: list[str]
    version_id: str | None
    codename: str | None
    point_release: str | None
    pretty_name: str | None


class DistroRelease(FactBase[DistroReleaseDict | None]):
    """
    ``/etc/os-release`` plus the point release, which Debian only keeps in
    ``DEBIAN_VERSION_FULL`` (13+) or ``/etc/debian_version`` and Ubuntu in ``VERSION``.
    ``None`` when ``/etc/os-release`` does not exist.

    .. code:: python

        {
            "id": "debian",
            "id_like": [],  # Debian has no ID_LIKE; Ubuntu: ["debian"]
            "version_id": "12",
            "codename": "bookworm",  # VERSION_CODENAME, else UBUNTU_CODENAME
            "point_release": "12.9",  # Ubuntu: "24.04.3"; None if unknown
            "pretty_name": "Debian GNU/Linux 12 (bookworm)",
        }
    """

    @override
    def command(self) -> str:
        return (
            "! test -e /etc/os-release || cat /etc/os-release; "
            "if test -e /etc/debian_version; then "
            'printf "__debian_version=%s\\n" "$(cat /etc/debian_version)"; fi'
        )

    @override
    def process(self, output: list[str]) -> DistroReleaseDict | None:
        items: dict[str, str] = {}
        debian_version = None
        for line in output:
            line = line.strip()
            if line.startswith("__debian_version="):
                debian_version = line.partition("=")[2].strip()
            elif "=" in line and not line.startswith("#"):
                key, _, value = line.partition("=")
                value = value.strip()
                if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                    value = value[1:-1]
                items[key.strip()] = value
        if "ID" not in items:
            return None

        point = items.get("DEBIAN_VERSION_FULL")
        numeric = debian_version and re.fullmatch(r"\d+(\.\d+)*", debian_version)
        if not point and items["ID"] == "debian" and numeric:
            point = debian_version
        if not point:
            match = re.match(r"(\d+(?:\.\d+)+)", items.get("VERSION", ""))
            point = match.group(1) if match else None
        return {
            "id": items["ID"].lower(),
            "id_like": items.get("ID_LIKE", "").split(),
            "version_id": items.get("VERSION_ID"),
            "codename": items.get("VERSION_CODENAME") or items.get("UBUNTU_CODENAME"),
            "point_release": point,
            "pretty_name": items.get("PRETTY_NAME"),
        }


# ---------------------------------------------------------------------------------------
# Small state facts behind tasks.operations
# ---------------------------------------------------------------------------------------


class KeyringFingerprints(FactBase[list[str] | None]):
    """
    Primary-key fingerprints in a binary (dearmored) keyring, None when the file is missing.

    .. code:: python

        ["CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"]
    """

    def command(self, path: str) -> str:
        q = shlex.quote(path)
        return (
            f"if ! test -e {q}; then echo __missing; "
            f"elif command -v gpg >/dev/null; then h=$(mktemp -d); "  # no ~/.gnupg left behind
            f'gpg --homedir "$h" --batch --with-colons --show-keys {q} 2>/dev/null || true; '
            f'rm -rf "$h"; else echo __nogpg; fi'
        )

    def process(self, output: list[str]) -> list[str] | None:
        if "__missing" in output:
            return None
        fingerprints, primary = [], False
        for line in output:
            fields = line.split(":")
            if fields[0] in ("pub", "sub"):
                primary = fields[0] == "pub"
            elif fields[0] == "fpr" and primary and len(fields) > 9:
                fingerprints.append(fields[9].upper())
                primary = False
        return fingerprints


class StaleAgainst(FactBase[bool]):
    """
    True when ``stamp`` is missing or any of ``inputs`` is newer than it.
    """

    def command(self, stamp: str, inputs: list[str]) -> str:
        s = shlex.quote(stamp)
        newer = " || ".join(f"test {shlex.quote(i)} -nt {s}" for i in inputs) or "false"
        return f"if ! test -e {s} || {newer}; then echo stale; else echo fresh; fi"

    def process(self, output: list[str]) -> bool:
        return "stale" in output


class FileDigestDict(TypedDict):
    mode: str
    sha256: str


class FileDigest(FactBase[FileDigestDict | None]):
    """
    Octal mode and SHA-256 of a regular file in one round trip; None when it isn't one.

    .. code:: python

        {"mode": "644", "sha256": "5f1c…"}
    """

    def command(self, path: str) -> str:
        q = shlex.quote(path)
        return f"if test -f {q}; then stat -c %a {q} && sha256sum < {q}; else echo __absent; fi"

    def process(self, output: list[str]) -> FileDigestDict | None:
        if not output or output[0].strip() == "__absent" or len(output) < 2:
            return None
        return {"mode": output[0].strip(), "sha256": output[1].split()[0]}


class GroupMembershipDict(TypedDict):
    groups: list[str]
    users: dict[str, list[str] | None]


class GroupMembership(FactBase[GroupMembershipDict]):
    """
    Which of ``groups`` exist, and each of ``users``' groups (None: no such user), in one
    round trip.

    .. code:: python

        {"groups": ["video", "render"], "users": {"alice": ["alice", "video"], "bob": None}}
    """

    def command(self, groups: list[str], users: list[str]) -> str:
        group_words = " ".join(shlex.quote(g) for g in groups)
        user_words = " ".join(shlex.quote(u) for u in users)
        return (
            f'for g in {group_words}; do getent group "$g" >/dev/null && echo "__group $g"; '
            f'done; for u in {user_words}; do if id "$u" >/dev/null 2>&1; '
            f'then echo "__user $u $(id -nG "$u")"; else echo "__nouser $u"; fi; done; true'
        )

    def process(self, output: list[str]) -> GroupMembershipDict:
        result: GroupMembershipDict = {"groups": [], "users": {}}
        for line in output:
            words = line.split()
            if len(words) >= 2 and words[0] == "__group":
                result["groups"].append(words[1])
            elif len(words) >= 2 and words[0] == "__user":
                result["users"][words[1]] = words[2:]
            elif len(words) == 2 and words[0] == "__nouser":
                result["users"][words[1]] = None
        return result


# --- preflight and audit facts ---------------------------------------------------------

# NVIDIA's driver and CUDA stack as Debian and Ubuntu package it (Debian non-free:
# nvidia-driver, nvidia-kernel-dkms, libcuda1, libnvidia-*; Ubuntu: nvidia-driver-<branch>,
# nvidia-dkms-<branch>, libnvidia-compute-<branch>, xserver-xorg-video-nvidia-<branch>;
# NVIDIA's own CUDA repository: cuda, cuda-*, libcudnn*, libnccl*).
NVIDIA_PACKAGE_PATTERNS = (
    "nvidia-*",
    "libnvidia-*",
    "cuda",
    "cuda-*",
    "libcuda*",
    "libcudnn*",
    "libnccl*",
    "xserver-xorg-video-nvidia*",
)
# Names the patterns catch that are not NVIDIA's driver or CUDA: the free EGL platform
# libraries in Debian/Ubuntu main (source egl-wayland, egl-gbm, egl-x11) that Mesa
# desktops carry, and nvidia-texture-tools (image tools, no driver).
NVIDIA_PACKAGE_EXCEPTIONS = re.compile(
    r"^(libnvidia-egl-(wayland|gbm|xcb|xlib)\d*|nvidia-texture-tools)$"
)


class NvidiaStackDict(TypedDict):
    packages: list[str]
    modules: list[str]


class NvidiaStack(FactBase[NvidiaStackDict]):
    """
    NVIDIA's driver and CUDA stack on the host: installed dpkg packages whose names match
    ``NVIDIA_PACKAGE_PATTERNS`` (half-installed ones count; removed ones that left only
    config files don't) and loaded ``nvidia*`` kernel modules from ``/proc/modules``.

    .. code:: python

        {
            "packages": ["libcuda1", "nvidia-driver", "nvidia-kernel-dkms"],  # sorted
            "modules": ["nvidia", "nvidia_drm", "nvidia_modeset", "nvidia_uvm"],  # sorted
        }
    """

    @staticmethod
    def default() -> NvidiaStackDict:
        return {"packages": [], "modules": []}

    @override
    def command(self) -> str:
        patterns = " ".join(shlex.quote(p) for p in NVIDIA_PACKAGE_PATTERNS)
        # dpkg-query -W exits 1 when a pattern matches nothing: ignored (facts exit 0).
        return (
            "if command -v dpkg-query >/dev/null 2>&1; then "
            f"dpkg-query -W -f='pkg ${{db:Status-Abbrev}} ${{Package}}\\n' {patterns} "
            "2>/dev/null || true; fi; "
            "if [ -r /proc/modules ]; then "
            'while read -r m _; do case $m in nvidia*) echo "mod $m" ;; esac; '
            "done < /proc/modules; fi"
        )

    @override
    def process(self, output: list[str]) -> NvidiaStackDict:
        packages, modules = set(), set()
        for line in output:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "pkg":
                status, name = parts[1], parts[2].split(":")[0]
                # db:Status-Abbrev is want/status/error; status n = not installed,
                # c = config files only.
                installed = len(status) >= 2 and status[1] not in "nc"
                if installed and not NVIDIA_PACKAGE_EXCEPTIONS.match(name):
                    packages.add(name)
            elif len(parts) == 2 and parts[0] == "mod":
                modules.add(parts[1])
        return {"packages": sorted(packages), "modules": sorted(modules)}


class DpkgInterrupted(FactBase[list[str]]):
    """
    What an interrupted dpkg left behind: ``journal`` when /var/lib/dpkg/updates holds
    unapplied entries (apt then refuses: "dpkg was interrupted"), and ``<state> <package>``
    for each package not in a final state (half-installed, unpacked, half-configured,
    triggers-awaited, triggers-pending, or flagged reinst-required). Empty when dpkg is clean.

    .. code:: python

        ["journal", "half-configured rocm-core", "unpacked rocminfo"]
    """

    command = (
        'if [ -n "$(ls -A /var/lib/dpkg/updates 2>/dev/null)" ]; then echo journal; fi; '
        "dpkg-query -W -f='${Status}\\t${Package}\\n' 2>/dev/null | awk -F'\\t' "
        '\'{ split($1, s, " "); if (s[2] != "ok" || (s[3] != "installed" && '
        's[3] != "config-files" && s[3] != "not-installed")) print s[3] " " $2 }\'; true'
    )
    default = list

    def process(self, output: list[str]) -> list[str]:
        return [line.strip() for line in output if line.strip()]


_SURVEY_MARKER = "__section="
# torch's versions without running Python (a Python start per host is most of the survey's
# cost): the venv's *.dist-info directory names carry the installed versions, and
# torch/version.py its build strings (hip = '6.4.43484-...', cuda = None) as plain
# assignments.
_TORCH_DISTS = ("torch", "torchvision", "torchaudio")
_VERSION_LINE = re.compile(r"^(hip|cuda)\s*(?::[^=]*)?=\s*(.+?)\s*$")


def _survey_torch(lines: list[str]) -> dict[str, Any] | None:
    result: dict[str, Any] = {name: None for name in _TORCH_DISTS}
    result.update(hip=None, cuda=None, error=None)
    found = False
    for line in lines:
        line = line.strip()
        if line.startswith("dist "):
            name, _, version = line[5:].removesuffix(".dist-info").partition("-")
            if name in _TORCH_DISTS:
                result[name] = version
                found = True
        elif match := _VERSION_LINE.match(line):
            try:
                result[match.group(1)] = ast.literal_eval(match.group(2))
            except (ValueError, SyntaxError):
                result["error"] = f"unreadable torch/version.py line: {line}"
    return result if found else None


# Sizes apt prints (apt-pkg's SizeToStr: powers of 1000).
_APT_UNITS = {"B": 1, "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
ROCM_PIN_FILE = "/etc/apt/preferences.d/rocm-pin-600"
MOK_CERTIFICATES = {
    "dkms": "/var/lib/dkms/mok.pub",  # DKMS >= 3.0.4 on Debian (fact sheet §5)
    "shim": "/var/lib/shim-signed/mok/MOK.der",  # DKMS on Ubuntu (fact sheet §5)
}


class NodeSurvey(FactBase["dict[str, Any] | None"]):
    """
    Everything preflight and ``rocm-fleet audit`` read from a host, in one command (one
    SSH round trip), by running the other facts' commands in sections and parsing each
    with that fact's ``process``. Read-only: apt is asked with locking and its cache files
    off, torch's versions read from files (no Python runs).

    Arguments: ``venv`` (the venv whose torch versions to read), ``users`` (whose
    groups to read), ``packages`` (apt packages to size with ``apt-get install
    --assume-no``; empty: skip) and ``space_paths`` (paths whose filesystem's free space to
    read; a missing path is measured at its nearest existing parent).

    .. code:: python

        {
            "distro": {...},             # DistroRelease
            "arch": "amd64",             # dpkg --print-architecture
            "kernel": "6.1.0-28-amd64",  # uname -r
            "machine": "x86_64",         # uname -m
            "uid": 0, "user": "root",
            "kernels": ["6.1.0-28-amd64", "6.12.12+bpo-amd64"],  # /boot/vmlinuz-*
            "pci": [...],                # PciGpus
            "kfd": [...] | None,         # KfdNodes
            "secure_boot": {...},        # SecureBoot
            "mok": {"dkms": {...}, "shim": {...}},  # MokKeyState per certificate
            "rocm_version": "6.4.3-128" | None,     # RocmVersion
            "packages": {"rocminfo": "1.0.0.60403-128~22.04", ...},  # installed (dpkg)
            "nvidia": {...},             # NvidiaStack
            "sources": [["/etc/apt/sources.list.d/rocm.list", "deb [...] https://..."]],
            "pin": True,                 # /etc/apt/preferences.d/rocm-pin-600 exists
            "amdgpu": {"loaded": True, "version": "6.8.5" | None, "initstate": "live"},
            "wsl": False,
            "reboot_required": False, "reboot_packages": [],
            "groups": {"alice": ["alice", "video", "render"], "bob": None},
            "torch": {"torch": "2.9.1+rocm6.4", "torchvision": ..., "torchaudio": ...,
                      "hip": "6.4.43484", "cuda": None, "error": None} | None,
            "disk": [{"path": "/opt", "mount": "/", "avail": 80000000000}],
            "apt_need": 2400000000 | None,   # bytes apt would add; None: can't tell
            "apt_message": "After this operation, ..." | "E: Unable to locate ...",
        }
    """

    tool_timeout = 60

    @override
    def command(
        self,
        venv: str,
        users: list[str] | tuple[str, ...] = (),
        packages: list[str] | tuple[str, ...] = (),
        space_paths: list[str] | tuple[str, ...] = (),
        release_tag: str | None = None,
    ) -> str:
        def section(name: str, body: str) -> str:
            return f"echo {_SURVEY_MARKER}{name}; {{ {body}; }} 2>/dev/null; "

        venv = _quote(venv.rstrip("/") or "/")
        user_loop = " ".join(_quote(u) for u in users)
        apt = (
            "LC_ALL=C DEBIAN_FRONTEND=noninteractive apt-get install --assume-no "
            "-o Debug::NoLocking=1 -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= "
            + " ".join(_quote(p) for p in packages)
            + " </dev/null 2>&1 | grep -E '^(After this operation|E:|[0-9]+ upgraded)' || true"
        )
        if release_tag and packages:
            # Sizing an install loads apt's whole cache (most of this survey's time); a host
            # that already has every package from this release needs no space for it.
            wanted = " ".join(_quote(p) for p in packages)
            have = (
                f"dpkg-query -W -f='${{db:Status-Abbrev}}${{Version}}\\n' {wanted} 2>/dev/null"
                f" | grep -c '^ii.*[.]{release_tag}-'"
            )
            apt = f'if [ "$({have})" = {len(packages)} ]; then echo {_INSTALLED}; else {apt}; fi'
        disk = (
            f"for p in {' '.join(_quote(p) for p in space_paths)}; do d=$p; "
            'while [ ! -e "$d" ]; do d=$(dirname "$d"); done; '
            'df -Pk "$d" | tail -n +2 | sed "s|^|$p |"; done'
        )
        return (
            section("distro", DistroRelease().command())
            + section("arch", "dpkg --print-architecture || true")
            + section("uname", "uname -r; uname -m")
            + section("id", "id -u; id -un")
            + section(
                "kernels",
                'for f in /boot/vmlinuz-*; do [ -e "$f" ] && echo "${f#/boot/vmlinuz-}"; done',
            )
            + section("pci", PciGpus().command())
            + section("kfd", KfdNodes().command())
            + section("secure_boot", SecureBoot().command())
            + "".join(
                section(f"mok_{key}", MokKeyState().command(path))
                for key, path in MOK_CERTIFICATES.items()
            )
            + section("rocm_version", RocmVersion().command())
            + section(
                "packages",
                "dpkg-query -W -f='${db:Status-Abbrev}|${Package}|${Version}\\n' || true",
            )
            + section(
                "modules",
                '! test -r /proc/modules || while read -r m _; do echo "$m"; done < /proc/modules',
            )
            + section(
                "sources",
                "grep -Hs -e 'repo[.]radeon[.]com' -e 'repo[.]amd[.]com' "
                "/etc/apt/sources.list /etc/apt/sources.list.d/* || true",
            )
            + section("pin", f"! test -e {ROCM_PIN_FILE} || echo present")
            + section(
                "amdgpu",
                "if [ -d /sys/module/amdgpu ]; then echo loaded; "
                "! test -r /sys/module/amdgpu/version || "
                "echo version=$(cat /sys/module/amdgpu/version); "
                "! test -r /sys/module/amdgpu/initstate || "
                "echo initstate=$(cat /sys/module/amdgpu/initstate); fi",
            )
            + section(
                "wsl",
                "! test -e /proc/sys/fs/binfmt_misc/WSLInterop || echo interop; "
                "! test -e /run/WSL || echo run",
            )
            + section(
                "reboot",
                "if [ -e /run/reboot-required ]; then echo required; "
                "! test -r /run/reboot-required.pkgs || cat /run/reboot-required.pkgs; fi",
            )
            + section(
                "groups",
                f'for u in {user_loop}; do if id "$u" >/dev/null 2>&1; then '
                'echo "$u: $(id -nG "$u")"; else echo "$u: __nouser"; fi; done'
                if users
                else "true",
            )
            + section(
                "torch",
                f'for d in {venv}/lib/python3*/site-packages; do [ -d "$d" ] || continue; '
                'for i in "$d"/torch-*.dist-info "$d"/torchvision-*.dist-info '
                '"$d"/torchaudio-*.dist-info; do [ -d "$i" ] && echo "dist ${i##*/}"; done; '
                '! test -r "$d/torch/version.py" || '
                "grep -E '^(hip|cuda)[ :=]' \"$d/torch/version.py\"; done",
            )
            + section("disk", disk if space_paths else "true")
            + section("apt_need", apt if packages else "true")
            + "true"
        )

    @override
    def process(self, output: list[str]) -> dict[str, Any] | None:
        sections: dict[str, list[str]] = {}
        current: list[str] | None = None
        for line in output:
            if line.startswith(_SURVEY_MARKER):
                current = sections.setdefault(line[len(_SURVEY_MARKER) :].strip(), [])
            elif current is not None:
                current.append(line)
        if "distro" not in sections:
            raise FactProcessError(f"no survey output: {_text(output)[-500:]!r}")

        def get(name: str) -> list[str]:
            return sections.get(name, [])

        def first(name: str, index: int = 0) -> str | None:
            values = [line.strip() for line in get(name) if line.strip()]
            return values[index] if len(values) > index else None

        uid = first("id")
        packages = {}
        for line in get("packages"):
            parts = line.split("|")
            if len(parts) == 3 and len(parts[0]) >= 2 and parts[0][1] not in "nc":
                packages[parts[1].split(":")[0]] = parts[2]
        amdgpu_lines = [line.strip() for line in get("amdgpu")]
        amdgpu_values = dict(line.split("=", 1) for line in amdgpu_lines if "=" in line)
        groups: dict[str, list[str] | None] = {}
        for line in get("groups"):
            user, _, rest = line.partition(": ")
            groups[user.strip()] = None if rest.strip() == "__nouser" else rest.split()
        reboot = get("reboot")
        sources = []
        for line in get("sources"):
            path, _, text = line.partition(":")
            if text.strip() and not text.lstrip().startswith("#"):
                sources.append([path, text.strip()])
        disk = []
        for line in get("disk"):
            parts = line.split()
            if len(parts) >= 7 and parts[4].isdigit():
                disk.append({"path": parts[0], "mount": parts[6], "avail": int(parts[4]) * 1024})
        apt_message = " ".join(get("apt_need")).strip()
        return {
            "distro": DistroRelease().process(get("distro")),
            "arch": first("arch"),
            "kernel": first("uname"),
            "machine": first("uname", 1),
            "uid": int(uid) if uid and uid.isdigit() else None,
            "user": first("id", 1),
            "kernels": sorted(line.strip() for line in get("kernels") if line.strip()),
            "pci": PciGpus().process(get("pci")),
            "kfd": KfdNodes().process(get("kfd")),
            "secure_boot": SecureBoot().process(get("secure_boot")),
            "mok": {key: MokKeyState().process(get(f"mok_{key}")) for key in MOK_CERTIFICATES},
            "rocm_version": RocmVersion().process(get("rocm_version")),
            "packages": packages,
            "nvidia": _nvidia(packages, get("modules")),
            "sources": sources,
            "pin": first("pin") == "present",
            "amdgpu": {
                "loaded": "loaded" in amdgpu_lines,
                "version": amdgpu_values.get("version") or None,
                "initstate": amdgpu_values.get("initstate") or None,
            },
            "wsl": bool(get("wsl")) and any(line.strip() for line in get("wsl")),
            "reboot_required": bool(reboot) and reboot[0].strip() == "required",
            "reboot_packages": [line.strip() for line in reboot[1:] if line.strip()],
            "groups": groups,
            "torch": _survey_torch(get("torch")),
            "disk": disk,
            "apt_need": _apt_need(apt_message),
            "apt_message": apt_message,
        }


def _nvidia(packages: dict[str, str], modules: list[str]) -> NvidiaStackDict:
    """NvidiaStack's answer from the survey's dpkg listing and /proc/modules."""
    names = sorted(
        name
        for name in packages
        if any(fnmatch.fnmatchcase(name, p) for p in NVIDIA_PACKAGE_PATTERNS)
        and not NVIDIA_PACKAGE_EXCEPTIONS.match(name)
    )
    loaded = sorted({m.strip() for m in modules if m.strip().startswith("nvidia")})
    return {"packages": names, "modules": loaded}


_INSTALLED = "already installed from this release"


def _apt_need(message: str) -> int | None:
    """Bytes apt says an install adds: 0 when nothing is to install, None when apt can't
    resolve the packages (not in any configured source) or said nothing."""
    if message == _INSTALLED:
        return 0
    if not message or message.startswith("E:") or " E:" in message:
        return None
    match = re.search(r"After this operation, ([\d.,]+) ([kMGT]?B) (of additional|disk)", message)
    if not match:
        return 0 if re.search(r"\b0 newly installed", message) else None
    if "freed" in message:
        return 0
    number = float(match.group(1).replace(",", ""))
    return int(number * _APT_UNITS[match.group(2)])


# --- kernel, driver and Secure Boot facts ---


class RunningKernel(FactBase[str]):
    """
    The running kernel's release, ``uname -r``: ``"6.1.0-50-amd64"``.
    """

    @override
    def command(self) -> str:
        return "uname -r"

    @override
    def process(self, output: list[str]) -> str:
        return output[0].strip() if output else ""


class InstalledKernels(FactBase[list[str]]):
    """
    Releases of the installed (``ii``) Debian/Ubuntu kernel image packages, from their names
    ``linux-image-<release>`` / ``linux-image-unsigned-<release>``; meta packages
    (``linux-image-amd64``, ``linux-image-generic``) are skipped.

    .. code:: python

        ["6.1.0-50-amd64", "6.12.95+deb12-amd64"]
    """

    default = list

    @override
    def command(self) -> str:
        return (
            "dpkg-query -W -f='${db:Status-Abbrev} ${Package}\\n' "
            "'linux-image-[0-9]*' 'linux-image-unsigned-[0-9]*' 2>/dev/null || true"
        )

    @override
    def process(self, output: list[str]) -> list[str]:
        releases = []
        for line in output:
            parts = line.split()
            if len(parts) != 2 or not parts[0].startswith("ii"):
                continue
            name = parts[1].removeprefix("linux-image-").removeprefix("unsigned-")
            if name and name[0].isdigit() and name not in releases:
                releases.append(name)
        return releases


class RebootRequiredDict(TypedDict):
    required: bool
    packages: list[str]
    reasons: list[str]


class RebootRequired(FactBase[RebootRequiredDict]):
    """
    Whether the host waits for a reboot, where Debian and Ubuntu record it:
    ``/run/reboot-required`` (exists), ``/run/reboot-required.pkgs`` (one package per line,
    the packages that asked), plus rocm-fleet's own reasons (one per line) in
    ``/run/rocm-fleet/reboot-reasons``. /run is a tmpfs, so a reboot clears all three.

    .. code:: python

        {
            "required": True,
            "packages": ["linux-image-6.12.95+deb12-amd64"],
            "reasons": ["new kernel 6.12.95+deb12-amd64 (running 6.1.0-50-amd64)"],
        }
    """

    @staticmethod
    def default() -> RebootRequiredDict:
        return {"required": False, "packages": [], "reasons": []}

    @override
    def command(self) -> str:
        return (
            "if test -e /run/reboot-required; then echo __required; fi; "
            "if test -r /run/reboot-required.pkgs; then "
            "sed 's/^/__pkg=/' /run/reboot-required.pkgs; fi; "
            "if test -r /run/rocm-fleet/reboot-reasons; then "
            "sed 's/^/__reason=/' /run/rocm-fleet/reboot-reasons; fi"
        )

    @override
    def process(self, output: list[str]) -> RebootRequiredDict:
        result = self.default()
        for line in output:
            line = line.strip()
            if line == "__required":
                result["required"] = True
            for prefix, key in (("__pkg=", "packages"), ("__reason=", "reasons")):
                value = line[len(prefix) :].strip() if line.startswith(prefix) else ""
                if value and value not in result[key]:  # type: ignore[literal-required]
                    result[key].append(value)  # type: ignore[literal-required]
        return result


class MokPendingDict(TypedDict):
    pending: bool
    fingerprint: str | None
    requests: list[str]


class MokPending(FactBase[MokPendingDict | None]):
    """
    Whether a certificate is in the pending MOK enrollment request (MokNew), from
    ``mokutil --list-new``: the SHA1 fingerprints it lists are compared with ``sha1sum`` of
    the DER certificate (older mokutil's ``--test-key`` says "already enrolled" for a
    queued key too). ``None`` when mokutil is not installed or the certificate is missing.

    .. code:: python

        {
            "pending": True,
            "fingerprint": "c8:39:a7:...",  # the certificate's SHA1
            "requests": ["c8:39:a7:..."],  # every fingerprint in MokNew
        }
    """

    @override
    def command(self, path: str) -> str:
        cert = _quote(path)
        return (
            f"if ! command -v mokutil >/dev/null 2>&1 || ! test -e {cert}; then "
            f"echo {_ABSENT}; else "
            f'echo "__sha1=$(sha1sum {cert} | cut -c1-40)"; '
            "mokutil --list-new </dev/null 2>&1 || true; fi"
        )

    @override
    def process(self, output: list[str]) -> MokPendingDict | None:
        if any(line.strip() == _ABSENT for line in output):
            return None
        fingerprint, requests = None, []
        for line in output:
            line = line.strip()
            if line.startswith("__sha1="):
                raw = line[len("__sha1=") :].lower()
                fingerprint = ":".join(raw[i : i + 2] for i in range(0, len(raw), 2))
            elif line.lower().startswith("sha1 fingerprint:"):
                requests.append(line.split(":", 1)[1].strip().lower())
        return {
            "pending": fingerprint is not None and fingerprint in requests,
            "fingerprint": fingerprint,
            "requests": requests,
        }


# ---------------------------------------------------------------------------------------
# Facts read once between two changes
# ---------------------------------------------------------------------------------------

# state -> (host, fact, arguments) -> (changes seen on the host then, value)
_READS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _changes_and_reads(kwargs: dict[str, Any], fact_cls: type[FactBase]):
    from pyinfra import host

    state = host.state
    changes = sum(
        1
        for data in state.ops[host].values()
        if data.operation_meta.is_complete() and data.operation_meta.did_change()
    )
    reads = _READS.setdefault(state, {})
    return changes, reads, (host.name, fact_cls, repr(sorted(kwargs.items())))


def remember_fact(fact_cls: type[FactBase], value: Any, **kwargs: Any) -> None:
    """Record what ``fact_cls`` would answer now, read as part of a larger read (the
    preflight survey runs ``uname -r`` too), so ``read_fact`` doesn't ask again."""
    changes, reads, key = _changes_and_reads(kwargs, fact_cls)
    reads[key] = (changes, value)


def read_fact(fact_cls: type[FactBase], **kwargs: Any) -> Any:
    """``host.get_fact``, gathered again only after an operation changed this host.

    pyinfra 3.10 keeps no fact cache: every ``get_fact`` is an SSH round trip, and several
    operations read the same fact (the package list, the running kernel). A value read
    since the host's last change still holds, so it is reused; any operation that changes
    the host (a reboot included) makes every earlier read stale. Call it at the top of an
    operation, before it yields, as pyinfra's own operations read their facts.
    """
    from pyinfra import host

    changes, reads, key = _changes_and_reads(kwargs, fact_cls)
    seen = reads.get(key)
    if seen is not None and seen[0] == changes:
        return seen[1]
    value = host.get_fact(fact_cls, **kwargs)
    reads[key] = (changes, value)
    return value
