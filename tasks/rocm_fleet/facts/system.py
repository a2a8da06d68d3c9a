"""System facts: distribution, kernel, identity, modules, disk space, reboots, NVIDIA's stack."""

from pyinfra.api import FactBase
from pyinfra.facts.deb import DebArch
from pyinfra.facts.server import KernelVersion

from rocm_fleet.facts._shell import Condition, print_file, quote, yes_if
from rocm_fleet.facts.apt import InstalledPackages
from rocm_fleet.model import answers, paths
from rocm_fleet.model.nvidia import NvidiaStackDict, nvidia_stack
from rocm_fleet.model.versions import is_numeric_version, leading_point_release


class DistroRelease(FactBase[answers.DistroReleaseDict | None]):
    """``/etc/os-release`` plus the point release (``"12.9"``, ``"24.04.3"``, None if unknown);
    None without ``/etc/os-release``."""

    def command(self) -> str:
        return (
            f"! test -e /etc/os-release || {print_file('/etc/os-release')}; "
            "if test -e /etc/debian_version; then _v=; read -r _v </etc/debian_version; "
            'printf "__debian_version=%s\\n" "$_v"; fi'
        )

    def process(self, output: list[str]) -> answers.DistroReleaseDict | None:
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
        if not point and items["ID"] == "debian" and is_numeric_version(debian_version or ""):
            point = debian_version
        point = point or leading_point_release(items.get("VERSION", ""))
        return {
            "id": items["ID"].lower(),
            "id_like": items.get("ID_LIKE", "").split(),
            "version_id": items.get("VERSION_ID"),
            "codename": items.get("VERSION_CODENAME") or items.get("UBUNTU_CODENAME"),
            "point_release": point,
            "pretty_name": items.get("PRETTY_NAME"),
        }


# pyinfra's own facts. ``uname -r``: "6.1.0-50-amd64".
RunningKernel = KernelVersion
# ``dpkg --print-architecture``: "amd64"; None without dpkg.
Architecture = DebArch


class RebootRequired(FactBase[answers.RebootRequiredDict]):
    """Whether the host waits for a reboot, the packages and rocm-fleet's reasons that asked."""

    @staticmethod
    def default() -> answers.RebootRequiredDict:
        return {"required": False, "packages": [], "reasons": []}

    def command(self) -> str:
        return (
            f"if test -e {paths.REBOOT_REQUIRED}; then echo __required; fi; "
            f"if test -r {paths.REBOOT_PACKAGES}; then "
            f"sed 's/^/__pkg=/' {paths.REBOOT_PACKAGES}; fi; "
            f"if test -r {paths.REBOOT_REASONS}; then "
            f"sed 's/^/__reason=/' {paths.REBOOT_REASONS}; fi"
        )

    def process(self, output: list[str]) -> answers.RebootRequiredDict:
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


class NvidiaStack(FactBase[NvidiaStackDict]):
    """NVIDIA's driver and CUDA stack: its installed packages and loaded modules, sorted."""

    @staticmethod
    def default() -> NvidiaStackDict:
        return {"packages": [], "modules": []}

    def command(self) -> str:
        return f"{InstalledPackages().command()}; echo __modules; {LoadedModules().command()}"

    def process(self, output: list[str]) -> NvidiaStackDict:
        split = output.index("__modules") if "__modules" in output else len(output)
        packages = InstalledPackages().process(output[:split])
        return nvidia_stack(packages, LoadedModules().process(output[split + 1 :]))


class Identity(FactBase[answers.IdentityDict]):
    """Who the deploy's commands run as (after ``_sudo``): ``{"uid": 0, "user": "root"}``."""

    @staticmethod
    def default() -> answers.IdentityDict:
        return {"uid": None, "user": None}

    def command(self) -> str:
        # The effective uid (``id -u``) from the shell's own /proc/self/status ("Uid: real
        # effective saved fs"); the name needs NSS: ``id -un``.
        return (
            "_u=; while read -r _k _ _v _; do "
            '[ "$_k" != Uid: ] || { _u=$_v; break; }; done 2>/dev/null </proc/self/status; '
            'if [ -n "$_u" ]; then echo "$_u"; else id -u; fi; id -un'
        )

    def process(self, output: list[str]) -> answers.IdentityDict:
        uid, user = ([line.strip() for line in output if line.strip()] + ["", ""])[:2]
        return {"uid": int(uid) if uid.isdigit() else None, "user": user or None}


class Wsl(FactBase[bool]):
    """Whether the host is WSL (its interop binfmt or /run/WSL exist)."""

    default = bool

    def command(self) -> str:
        return (
            "! test -e /proc/sys/fs/binfmt_misc/WSLInterop || echo interop; "
            "! test -e /run/WSL || echo run"
        )

    def process(self, output: list[str]) -> bool:
        return any(line.strip() for line in output)


class LoadedModules(FactBase[list[str]]):
    """Names of the loaded kernel modules, from /proc/modules, sorted."""

    default = list

    def command(self) -> str:
        return '! test -r /proc/modules || while read -r m _; do echo "$m"; done < /proc/modules'

    def process(self, output: list[str]) -> list[str]:
        return sorted({line.strip() for line in output if line.strip()})


class AmdgpuModule(FactBase[answers.AmdgpuModuleDict]):
    """The amdgpu module: loaded, version (AMD's DKMS build only), init state."""

    @staticmethod
    def default() -> answers.AmdgpuModuleDict:
        return {"loaded": False, "version": None, "initstate": None}

    def command(self) -> str:
        return (
            "if [ -d /sys/module/amdgpu ]; then echo loaded; "
            "! test -r /sys/module/amdgpu/version || "
            "{ _v=; read -r _v </sys/module/amdgpu/version; echo version=$_v; }; "
            "! test -r /sys/module/amdgpu/initstate || "
            "{ _v=; read -r _v </sys/module/amdgpu/initstate; echo initstate=$_v; }; fi"
        )

    def process(self, output: list[str]) -> answers.AmdgpuModuleDict:
        lines = [line.strip() for line in output]
        values = dict(line.split("=", 1) for line in lines if "=" in line)
        return {
            "loaded": "loaded" in lines,
            "version": values.get("version") or None,
            "initstate": values.get("initstate") or None,
        }


class ApuMemory(FactBase[answers.ApuMemoryDict]):
    """MemTotal in bytes, and each uncommented place setting ``amdgpu.gttsize`` or the TTM page
    limit (kernel command line, GRUB defaults, modprobe.d) as ("file:line", line)."""

    #: The kernel command line (booted, GRUB's) and modprobe.d(5) directories.
    PLACES = f"/proc/cmdline {paths.DEFAULT_GRUB} {paths.DEFAULT_GRUB}.d/*.cfg " + (
        "/etc/modprobe.d/*.conf /usr/lib/modprobe.d/*.conf /lib/modprobe.d/*.conf"
    )

    @staticmethod
    def default() -> answers.ApuMemoryDict:
        return {"mem_total": None, "gttsize": [], "pages_limit": []}

    def command(self) -> str:
        return (
            # MemTotal is /proc/meminfo's first line: the rest isn't read.
            'while read -r _k _v _; do [ "$_k" != MemTotal: ] || { echo "mem_total $_v"; break; }; '
            "done 2>/dev/null </proc/meminfo; "
            f'set --; for f in {self.PLACES}; do [ -f "$f" ] && [ -r "$f" ] && set -- "$@" "$f"; '
            "done; [ $# -eq 0 ] || awk '"
            '/^[^#]*gttsize/ { print "gttsize " FILENAME ":" FNR ":" $0 } '
            '/^[^#]*pages_limit/ { print "pages_limit " FILENAME ":" FNR ":" $0 }'
            '\' "$@"; set --; true'
        )

    def process(self, output: list[str]) -> answers.ApuMemoryDict:
        found = self.default()
        for line in output:
            kind, _, rest = line.partition(" ")
            if kind == "mem_total" and rest.strip().isdigit():
                found["mem_total"] = int(rest.strip()) * 1024  # kB in /proc/meminfo
            elif kind in ("gttsize", "pages_limit"):
                path, _, rest = rest.partition(":")
                number, _, text = rest.partition(":")
                found[kind].append((f"{path}:{number}", text))
        return found


class FreeSpace(FactBase[list[answers.FreeSpaceDict]]):
    """Free bytes and mount point of the filesystem of each of ``paths`` (a missing path: its
    nearest existing parent); [] when df fails."""

    default = list

    def command(self, paths: list[str] | tuple[str, ...]) -> str:
        if not paths:
            return "true"
        # One df for the nearest existing ancestors; its rows follow its arguments.
        return (
            f"set --; for p in {' '.join(quote(p) for p in paths)}; do d=$p; "
            'while [ ! -e "$d" ]; do d=${d%/*}; d=${d:-/}; done; echo "__path=$p"; '
            'set -- "$@" "$d"; done; df -Pk "$@"; set --'
        )

    def process(self, output: list[str]) -> list[answers.FreeSpaceDict]:
        paths = [line[len("__path=") :] for line in output if line.startswith("__path=")]
        # df -P: Filesystem, 1024-blocks, Used, Available, Capacity, Mounted on.
        rows = [line.split(None, 5) for line in output if not line.startswith("__path=")]
        rows = [row for row in rows if len(row) == 6 and row[3].isdigit()]
        if len(rows) != len(paths):
            return []  # df failed for one of them: nothing measured, none judged
        return [
            {"path": path, "mount": row[5], "avail": int(row[3]) * 1024}
            for path, row in zip(paths, rows, strict=True)
        ]


class DaemonRunning(Condition):
    """Whether the process a daemon's pid file names is alive (``kill -0``)."""

    def command(self, pidfile: str) -> str:
        q = quote(pidfile)
        return yes_if(f'test -s {q} && kill -0 "$(cat {q})" 2>/dev/null')


class Nameservers(FactBase[list[str]]):
    """The ``nameserver`` addresses of /etc/resolv.conf (empty: none, or no file)."""

    default = list
    command = (
        '! test -r /etc/resolv.conf || while IFS= read -r _l || [ -n "$_l" ]; do '
        "case $_l in nameserver*) _l=${_l#nameserver}; "
        'printf "%s\\n" "${_l#"${_l%%[![:space:]]*}"}"; '
        "esac; done </etc/resolv.conf"
    )

    def process(self, output: list[str]) -> list[str]:
        return [line.split()[0] for line in output if line.strip()]
