"""GPU health from ``amd-smi``'s ECC, PCIe and XGMI JSON (parsed by ``model.health``)."""

from pyinfra.api import FactBase

from rocm_fleet.facts._shell import ABSENT, RC_PREFIX, sections, split_rc
from rocm_fleet.model import health, paths

SECTION = "__health_section="
TOOL = "__health_tool="
#: rocm-smi's ``--json`` has no RAS data ("No JSON data to report").
ROCM_SMI_ONLY = "only rocm-smi is installed; its --json has no ECC counters: install amd-smi"


class GpuHealthFact(FactBase[health.HostHealth]):
    """The GPUs' health from ``amd-smi`` (on ``PATH`` or in ``/opt/rocm/bin``), each call bounded
    by ``tool_timeout`` seconds and ``max_bytes``; ``status`` says whether it answered."""

    tool_timeout = 60
    max_bytes = 4_000_000

    @staticmethod
    def default() -> health.HostHealth:
        return health.HostHealth(status="no_tool")

    def command(self) -> str:
        bin_ = f"{paths.ROCM_ROOT}/bin"
        reads = " ".join(f"'{name}:{args}'" for name, args in health.AMD_SMI_READS.items())
        return (
            f"smi=$(command -v amd-smi 2>/dev/null); "
            f'[ -n "$smi" ] || {{ [ -x {bin_}/amd-smi ] && smi={bin_}/amd-smi; }}; '
            f'if [ -z "$smi" ]; then '
            f"  if command -v rocm-smi >/dev/null 2>&1 || [ -x {bin_}/rocm-smi ]; "
            f"  then echo {TOOL}rocm-smi; else echo {ABSENT}; fi; "
            f'else echo "{TOOL}$smi"; for read in {reads}; do '
            f'  echo "{SECTION}${{read%%:*}}"; '
            f'  ( timeout {self.tool_timeout} "$smi" ${{read#*:}} --json </dev/null 2>/dev/null; '
            # the status inside the bounded pipe: cut off with the output when it overflows
            f'  rc=$?; echo; echo "{RC_PREFIX}$rc" ) | head -c {self.max_bytes}; echo; '
            f"done; fi; true"
        )

    def process(self, output: list[str]) -> health.HostHealth:
        lines = [line.rstrip("\n") for line in output]
        if any(line.strip() == ABSENT for line in lines):
            return health.HostHealth(status="no_tool")
        tool = next((line[len(TOOL) :] for line in lines if line.startswith(TOOL)), None)
        if tool == "rocm-smi":
            return health.HostHealth(status="unsupported", tool=tool, message=ROCM_SMI_ONLY)
        texts, codes = {}, {}
        for name, body in sections(lines, SECTION).items():
            text, codes[name] = split_rc(body)
            texts[name] = "\n".join(text).strip()
        if (rc := codes.get("metric")) != 0:
            cut, slow = f"more than {self.max_bytes} bytes", f"timed out after {self.tool_timeout}s"
            why = {None: cut, 124: slow}.get(rc, f"exited {rc}")
            return health.HostHealth(status="error", tool=tool, message=f"amd-smi metric: {why}")
        try:
            static, xgmi = (health.usable_json(texts.get(name)) for name in ("static", "xgmi"))
            gpus = health.gpu_health(texts["metric"], static, xgmi)
        except health.HealthParseError as exc:
            return health.HostHealth(status="error", tool=tool, message=str(exc))
        return health.HostHealth(status="ok", tool=tool, gpus=tuple(gpus))
