"""What a node says about its container engines (untrusted text, parsed by ``engines``)."""

from typing import Any

from pyinfra.api import FactBase

from rocm_fleet.facts._shell import quote

_TOOLS = {"docker": "dockerd", "podman": "podman"}


class ContainerEngines(FactBase[dict[str, Any]]):
    """Each engine's ``--version`` line and apt's candidate of each package (None: none), as
    ``{"installed": {"docker": ...}, "candidate": {"podman": "4.3.1+ds1-8+b1", ...}}``."""

    @staticmethod
    def default() -> dict[str, Any]:
        return {"installed": {}, "candidate": {}}

    def command(self) -> str:
        probes = "".join(
            f"if command -v {tool} >/dev/null 2>&1; then "
            f'echo "__{engine} $({tool} --version 2>/dev/null | head -n 1)"; fi; '
            for engine, tool in _TOOLS.items()
        )
        return (
            probes + "LC_ALL=C apt-cache policy docker.io docker-cli podman 2>/dev/null "
            '| while read -r a b _; do echo "__policy $a $b"; done; true'
        )

    def process(self, output: list[str]) -> dict[str, Any]:
        installed: dict[str, str | None] = dict.fromkeys(_TOOLS)
        candidate: dict[str, str | None] = {"docker.io": None, "docker-cli": None, "podman": None}
        package = None
        for line in output:
            word, _, rest = line.strip().partition(" ")
            if word[2:] in _TOOLS and word.startswith("__"):
                installed[word[2:]] = rest.strip() or None
            elif word == "__policy":
                first, _, value = rest.partition(" ")
                if first.endswith(":") and first[:-1] in candidate:
                    package = first[:-1]
                elif first == "Candidate:" and package and value.strip() != "(none)":
                    candidate[package] = value.strip() or None
        return {"installed": installed, "candidate": candidate}


class RunningContainers(FactBase[int]):
    """How many containers Docker runs now (0 when Docker or its daemon isn't there)."""

    default = int

    def command(self) -> str:
        return (
            "if command -v docker >/dev/null 2>&1; then "
            "timeout 20 docker ps -q 2>/dev/null | wc -l; else echo 0; fi"
        )

    def process(self, output: list[str]) -> int:
        text = "".join(output).strip()
        return int(text) if text.isdigit() else 0


class ImagePresent(FactBase[bool]):
    """Whether ``engine`` (docker or podman, as root) has image ``ref``."""

    default = bool

    def command(self, engine: str, ref: str) -> str:
        return (
            f"if command -v {quote(engine)} >/dev/null 2>&1 && timeout 20 {quote(engine)} image "
            f"inspect {quote(ref)} >/dev/null 2>&1; then echo yes; fi; true"
        )

    def process(self, output: list[str]) -> bool:
        return any(line.strip() == "yes" for line in output)
