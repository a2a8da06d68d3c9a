"""What a node shows of its GPU-container side, for the audit (``model.gpu_containers``)."""

from pyinfra.api import FactBase

from rocm_fleet.model.gpu_containers import DAEMON_JSON, GROUPS, SPEC, ContainerView

ENGINE = "__containers_engine="
DOCKERD = "__containers_dockerd="
PODMAN = "__containers_podman="
SPEC_START = "__containers_spec"
DAEMON_START = "__containers_daemon_json"
#: A spec larger than this is cut (AMD's for 8 GPUs is about 9 kB).
MAX_SPEC = 1_000_000


class GpuContainersFact(FactBase[ContainerView]):
    """The engines on ``PATH`` and their versions, the members of video and render, daemon.json
    and the CDI spec (regular files only, cut at ``MAX_SPEC`` bytes)."""

    default = ContainerView

    def command(self) -> str:
        files = "".join(
            f"if [ -f {path} ] && [ ! -L {path} ]; then echo; echo {start}; "
            f"head -c {MAX_SPEC} {path}; fi; "
            for start, path in ((DAEMON_START, DAEMON_JSON), (SPEC_START, SPEC))
        )
        return (
            f"for e in docker podman; do command -v $e >/dev/null 2>&1 && echo {ENGINE}$e; "
            f"done; command -v dockerd >/dev/null 2>&1 && "
            f'echo "{DOCKERD}$(dockerd --version 2>/dev/null | head -n 1)"; '
            f'echo "{PODMAN}$(podman --version 2>/dev/null | head -n 1)"; '
            f"getent group {' '.join(GROUPS)}; {files}true"
        )

    def process(self, output: list[str]) -> ContainerView:
        installed: list[str] = []
        members: dict[str, tuple[str, ...]] = {}
        files: dict[str, list[str]] = {}
        current: list[str] | None = None
        dockerd = podman = None
        for line in output:
            if line.strip() in (SPEC_START, DAEMON_START):
                current = files.setdefault(line.strip(), [])
            elif current is not None:
                current.append(line)
            elif line.startswith(ENGINE):
                installed.append(line[len(ENGINE) :].strip())
            elif line.startswith(DOCKERD):
                dockerd = line[len(DOCKERD) :].strip() or None
            elif line.startswith(PODMAN):
                podman = line[len(PODMAN) :].strip() or None
            else:
                name, _, rest = line.partition(":")
                if name in GROUPS and rest.count(":") == 2:
                    listed = rest.rsplit(":", 1)[1].strip()
                    members[name] = tuple(m for m in listed.split(",") if m)
        text = {key: "\n".join(lines).strip() for key, lines in files.items()}
        return ContainerView(
            tuple(installed), text.get(SPEC_START), members, dockerd, text.get(DAEMON_START),
            podman_version=podman,
        )  # fmt: skip
