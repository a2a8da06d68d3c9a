"""GPU facts: rocminfo's agents, the ROCm version, and from sysfs the PCI GPUs and KFD nodes."""

import re
from typing import Any, TypedDict

from pyinfra.api import FactBase
from pyinfra.api.exceptions import FactProcessError

from rocm_fleet.facts._shell import (
    ABSENT,
    RC_PREFIX,
    joined,
    print_file,
    quote,
    sections,
    split_rc,
)
from rocm_fleet.model import paths
from rocm_fleet.model.answers import KfdNode, PciGpu


def gfx_from_target_version(value: int) -> str | None:
    """KFD ``gfx_target_version`` -> gfx name as ``rocm_agent_enumerator`` decodes it: ``90010``
    -> ``gfx90a``; ``0`` (CPU node) -> None."""
    if value <= 0:
        return None
    major, minor, stepping = value // 10000, (value // 100) % 100, value % 100
    return f"gfx{major}{minor:x}{stepping:x}"


def _pci_bdf(location_id: int, domain: int | None = None) -> str:
    """``bus:dev.fn`` (with ``domain``: ``dddd:``) from bus << 8 | device << 3 | function."""
    bdf = f"{location_id >> 8:02x}:{(location_id >> 3) & 0x1F:02x}.{location_id & 0x7:x}"
    return bdf if domain is None else f"{domain:04x}:{bdf}"


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
        chip = re.search(r"\((0x[0-9a-fA-F]+)\)", fields.get("Chip ID", ""))
        gpus.append(
            {
                "name": fields.get("Name", ""),
                "marketing_name": fields.get("Marketing Name") or None,
                "uuid": fields.get("Uuid") or None,
                "vendor": fields.get("Vendor Name") or None,
                "node": _int_prefix(fields.get("Node")),
                "chip_id": chip[1].lower() if chip else None,
                "compute_units": _int_prefix(fields.get("Compute Unit")),
                "pci_bdf": _pci_bdf(bdfid) if bdfid else None,
                "apu": "APU" in fields.get("Memory Properties", "").split(),
                "isa": agent["isa"],
            },
        )
    return gpus


class RocmAgents(FactBase[RocmAgentsDict | None]):
    """GPU agents (``status`` ok, not_loaded, no_access or error) from a release's own
    ``rocminfo`` (its path, never one on ``PATH``); None when it is not installed.
    ``FactProcessError`` on output without an exit status."""

    tool_timeout = 120

    def command(self, rocminfo: str = f"{paths.ROCM_ROOT}/bin/rocminfo") -> str:
        r = quote(rocminfo)
        return (
            f"if [ ! -x {r} ]; then echo {ABSENT}; "
            f'else timeout {self.tool_timeout} {r} </dev/null 2>&1; echo "{RC_PREFIX}$?"; fi'
        )

    def process(self, output: list[str]) -> RocmAgentsDict | None:
        lines, rc = split_rc(output)
        if rc is None:
            if any(line.strip() == ABSENT for line in lines):
                return None
            raise FactProcessError(f"rocminfo output without exit status: {joined(lines)!r}")

        nonempty = [line.strip() for line in lines if line.strip()]
        status, message, gpus = "ok", (nonempty or [""])[0], []
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
            status, tail = "error", nonempty[-3:]
            message = " | ".join(tail) if tail else f"rocminfo exited with {rc}"
            if rc == 124:
                message = f"rocminfo timed out after {self.tool_timeout}s" + (
                    f" | {message}" if tail else ""
                )
        else:
            gpus = _parse_rocminfo_agents(lines)
        return {"status": status, "rc": rc, "message": message, "gpus": gpus}


class RocmVersion(FactBase[str | None]):
    """Installed ROCm version (``"6.4.3-128"``) from ``<rocm_path>/.info/version`` (default: the
    first of ``paths.ROCM_VERSION_FILES``); None when there is none."""

    def command(self, rocm_path: str | None = None) -> str:
        candidates = [rocm_path.rstrip("/") + "/.info/version"] if rocm_path else None
        files = " ".join(quote(path) for path in candidates or paths.ROCM_VERSION_FILES)
        show = print_file('"$f"')
        return f'for f in {files}; do if [ -r "$f" ]; then {show}; break; fi; done; true'

    def process(self, output: list[str]) -> str | None:
        return next((line.strip() for line in output if line.strip()), None)


# amdgpu's VRAM and GTT totals in bytes (Documentation/gpu/amdgpu/driver-misc.rst).
VRAM, GTT = ("mem_info_vram_total", "mem_info_gtt_total")


class PciGpus(FactBase[list[PciGpu]]):
    """Display controllers and accelerators on PCI, their driver and amdgpu's memory totals."""

    default = list

    def command(self) -> str:
        return (
            "for d in /sys/bus/pci/devices/*; do "
            '[ -r "$d/vendor" ] && [ -r "$d/class" ] || continue; '
            'read -r c < "$d/class"; '
            'case "$c" in 0x03*|0x12*) ;; *) continue ;; esac; '
            'read -r v < "$d/vendor"; read -r id < "$d/device"; '
            # the driver link's last part (readlink's) from the shell's own cd -P: no process
            'drv=-; if [ -e "$d/driver" ]; then drv=; '
            'cd -P -- "$d/driver" 2>/dev/null && drv=$PWD && cd -- "$OLDPWD"; fi; '
            "vram=-; gtt=-; "
            f'[ -r "$d/{VRAM}" ] && read -r vram < "$d/{VRAM}"; '
            f'[ -r "$d/{GTT}" ] && read -r gtt < "$d/{GTT}"; '
            'echo "${d##*/} $v $id $c ${drv##*/} ${vram:--} ${gtt:--}"; '
            "done"
        )

    def process(self, output: list[str]) -> list[PciGpu]:
        gpus: list[PciGpu] = []
        for line in output:
            parts = line.split()
            if len(parts) not in (5, 7):  # 5: before the memory totals were read
                continue
            slot, vendor, device, pci_class, driver = parts[:5]
            vram, gtt = parts[5:] or ("-", "-")
            gpus.append(
                {
                    "slot": slot,
                    "vendor": vendor.lower(),
                    "device": device.lower(),
                    "class": pci_class.lower(),
                    "driver": None if driver == "-" else driver,
                    "vram_total": int(vram) if vram.isdigit() else None,
                    "gtt_total": int(gtt) if gtt.isdigit() else None,
                },
            )
        return gpus


class KfdNodes(FactBase[list[KfdNode] | None]):
    """The GPU nodes of the KFD topology; None when KFD is not loaded."""

    path = "/sys/class/kfd/kfd/topology/nodes"

    def command(self) -> str:
        read = print_file('"$d/properties"')
        return (
            f"if [ -d {self.path} ]; then echo __kfd; "
            f"for d in {self.path}/*; do "
            '[ -r "$d/properties" ] || continue; '
            f'echo "__node=${{d##*/}}"; {read}; '
            "done; fi"
        )

    def process(self, output: list[str]) -> list[KfdNode] | None:
        if not any(line.strip() == "__kfd" for line in output):
            return None
        nodes: dict[int, dict[str, int]] = {}
        for node, body in sections([line.strip() for line in output], "__node=").items():
            pairs = [line.split() for line in body]
            if node.isdigit():
                nodes.setdefault(int(node), {}).update(
                    (p[0], int(p[1])) for p in pairs if len(p) == 2 and p[1].lstrip("-").isdigit()
                )

        result: list[KfdNode] = []
        for node_id, props in sorted(nodes.items()):
            gfx = gfx_from_target_version(props.get("gfx_target_version", 0))
            if gfx is None:
                continue
            location, device_id = props.get("location_id"), props.get("device_id")
            result.append(
                {
                    "node": node_id,
                    "gfx": gfx,
                    "gfx_target_version": props["gfx_target_version"],
                    "device_id": f"0x{device_id:04x}" if device_id else None,
                    "slot": _pci_bdf(location, props.get("domain", 0)) if location else None,
                    "drm_render_minor": props.get("drm_render_minor"),
                    "simd_count": props.get("simd_count"),
                    "properties": props,
                },
            )
        return result
