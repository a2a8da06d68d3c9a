"""What a node shows of its GPU-container side, for the audit (``model.gpu_containers``):
which engines' commands are there, the CDI spec's text, the members of video and render."""

from __future__ import annotations

from pyinfra.api import FactBase
from typing_extensions import override

from rocm_fleet.model.gpu_containers import GROUPS, SPEC, ContainerView

ENGINE = "__containers_engine="
SPEC_START = "__containers_spec"
#: A spec larger than this is cut (AMD's for 8 GPUs is about 9 kB).
MAX_SPEC = 1_000_000


class GpuContainersFact(FactBase[ContainerView]):
    """
    The node's ``ContainerView``: ``docker`` and ``podman`` on ``PATH``, ``/etc/cdi/amd.json``
    (a regular file only) and ``getent group video render``.
    """

    @staticmethod
    def default() -> ContainerView:
        return ContainerView()

    @override
    def command(self) -> str:
        return (
            f"for e in docker podman; do command -v $e >/dev/null 2>&1 && echo {ENGINE}$e; "
            f"done; getent group {' '.join(GROUPS)}; "
            f"if [ -f {SPEC} ] && [ ! -L {SPEC} ]; then echo {SPEC_START}; "
            f"head -c {MAX_SPEC} {SPEC}; fi; true"
        )

    @override
    def process(self, output: list[str]) -> ContainerView:
        installed: list[str] = []
        members: dict[str, tuple[str, ...]] = {}
        spec: list[str] | None = None
        for line in output:
            if spec is not None:
                spec.append(line)
            elif line.startswith(ENGINE):
                installed.append(line[len(ENGINE) :].strip())
            elif line.strip() == SPEC_START:
                spec = []
            else:
                name, _, rest = line.partition(":")
                if name in GROUPS and rest.count(":") == 2:
                    listed = rest.rsplit(":", 1)[1].strip()
                    members[name] = tuple(m for m in listed.split(",") if m)
        text = "\n".join(spec) if spec is not None else None
        return ContainerView(tuple(installed), text, members)
