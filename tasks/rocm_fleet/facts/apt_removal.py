"""What purging NVIDIA's or the distribution's ROCm packages would take along (``apt-get -s``)."""

from pyinfra.api import FactBase

from rocm_fleet.facts._shell import script_command
from rocm_fleet.model import paths
from rocm_fleet.model.answers import DistroRocmDict, PackagePurgeDict, PurgeDict
from rocm_fleet.model.versions import AMD_CLASSIC_VERSION


def _purge(lines: list[str]) -> PurgeDict:
    result: PurgeDict = {"removes": [], "errors": []}
    for line in lines:
        if line.startswith("__removes="):
            result["removes"].append(line.removeprefix("__removes=").strip())
        elif line.startswith("__error="):
            result["errors"].append(line.removeprefix("__error=").strip())
    result["removes"].sort()
    return result


class PackagePurge(FactBase["PackagePurgeDict | None"]):
    """The installed packages matching ``patterns`` (globs, minus the ``exceptions`` globs) and
    what purging all of them would remove; None when none is installed."""

    def command(
        self, patterns: tuple[str, ...] | list[str], exceptions: tuple[str, ...] | list[str] = ()
    ) -> str:
        return script_command(("apt-query", "package-purge"), (" ".join(exceptions), *patterns))

    def process(self, output: list[str]) -> PackagePurgeDict | None:
        rows = [
            line.split("=", 1)[1].partition("|") for line in output if line.startswith("__package=")
        ]
        if packages := {name.strip(): version.strip() for name, _, version in rows}:
            return {"packages": packages, "purge": _purge(output)}
        return None


def _depends_names(field: str) -> set[str]:
    """Package names in a Depends field: ``a (>= 1), b:any | c`` -> {a, b, c}."""
    names = set()
    for clause in field.split(","):
        for alternative in clause.split("|"):
            word = alternative.strip().split(" ")[0].split("(")[0]
            if word:
                names.add(word.split(":")[0])
    return names


class DistroRocmPackages(FactBase["DistroRocmDict | None"]):
    """The distribution's own ROCm packages (named by ``patterns``, at a version not AMD's) and
    what needs each; AMD's ``tools`` they put in /usr/bin (before /opt/rocm/bin on PATH); the
    ``conflicting`` ones (those owners, and ones named as AMD's ``same_names``); and what purging
    the conflicting ones / the rest would remove. None when there are none."""

    def command(
        self,
        patterns: tuple[str, ...] | list[str],
        same_names: tuple[str, ...] | list[str],
        tools: tuple[str, ...] | list[str],
    ) -> str:
        # A "name|version" line whose version is AMD's.
        not_amd = r"^[^|]*\|" + AMD_CLASSIC_VERSION.removeprefix("^")
        args = (not_amd, " ".join(same_names), paths.DISTRO_BIN, " ".join(tools), *patterns)
        return script_command(("apt-query", "distro-rocm"), args)

    def process(self, output: list[str]) -> DistroRocmDict | None:
        packages: dict[str, str] = {}
        depends: dict[str, set[str]] = {}
        tools: dict[str, str] = {}
        conflicting: list[str] = []
        purges: dict[str, list[str]] = {}
        section: list[str] | None = None
        for line in output:
            key, _, value = line.strip().partition("=")
            if key == "__package":
                name, _, version = value.partition("|")
                packages[name.strip()] = version.strip()
            elif key == "__depends":
                name, _, field = value.partition("|")
                depends[name] = _depends_names(field)
            elif key == "__tool":
                path, _, owner = value.partition("|")
                tools[path] = owner
            elif key == "__conflicting":
                conflicting.append(value)
            elif key == "__purge":
                section = purges.setdefault(value, [])
            elif section is not None:
                section.append(line.strip())
        if not packages:
            return None
        needed_by = {
            name: sorted(other for other, names in depends.items() if name in names - {other})
            for name in sorted(packages)
        }
        return {
            "packages": packages,
            "needed_by": needed_by,
            "tools": tools,
            "conflicting": sorted(conflicting),
            "purge_conflicting": _purge(purges["conflicting"]) if "conflicting" in purges else None,
            "purge_kept": _purge(purges["kept"]) if "kept" in purges else None,
        }
