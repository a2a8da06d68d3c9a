"""Survey answers for plan, preflight and audit tests, and the one plan harness.

``fresh_survey()`` is what a freshly installed host answers to preflight's survey, as the
record preflight gets (``HostSurvey``: its fields as ``rocm_fleet.engine.surveying.survey_reads``
names them; a field left None, or a path a per-path field lacks, gets its fact's default, as
the real survey gives a fact with no output). ``plan()`` plans the deploy through
pyinfra's API for one host whose only source of facts is such a survey, and records every
other fact the plan asks for (a round trip a converged host should not need).
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import runpy
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from pyinfra.api import Config, FactBase, Inventory, State, StringCommand
from pyinfra.context import ctx_host, ctx_state

from rocm_fleet.facts.health import GpuHealthFact
from rocm_fleet.facts.round_trip import Read, Survey
from rocm_fleet.facts.secureboot import SecureBoot
from rocm_fleet.model import matrix, paths, streams
from rocm_fleet.model.answers import InstallSize
from rocm_fleet.model.boot import BootState, InstalledKernel
from rocm_fleet.model.config import load_config
from rocm_fleet.model.health import HostHealth
from rocm_fleet.model.host_survey import PER_PATH, HostSurvey
from rocm_fleet.model.pci_ids import lookup
from rocm_fleet.model.versions import major_minor

ROOT = Path(__file__).resolve().parents[2]
OS_RELEASE = ROOT / "tests" / "fixtures" / "os-release"

# One RX 7900 XTX on PCI (device 0x744c, tests/fixtures/sysfs/rx7900xtx), amdgpu not
# loaded yet, nothing of ROCm, NVIDIA or torch, plenty of space, connected as root.
FRESH = HostSurvey(
    distro={"id": "debian", "id_like": [], "version_id": "12", "codename": "bookworm",
            "point_release": "12.9", "pretty_name": "Debian GNU/Linux 12 (bookworm)"},
    arch="amd64",
    kernel="6.12.38+deb13-amd64",  # new enough for every matrix distro
    identity={"uid": 0, "user": "root"},
    wsl=False,
    pci=[{"slot": "0000:03:00.0", "vendor": "0x1002", "device": "0x744c", "class": "0x030000",
          "driver": None}],
    kfd=None,
    amdgpu={"loaded": False, "version": None, "initstate": None},
    modules=[],
    packages={"curl": "7.88.1-10+deb12u14"},
    dpkg=[],
    sources=[],
    mirror="http://deb.debian.org/debian",
    rocm_version=None,
    secure_boot={"state": "absent", "shim_validation_disabled": False, "setup_mode": False,
                 "message": ""},
    reboot={"required": False, "packages": [], "reasons": []},
    # the running kernel, its initramfs and its own amdgpu; no GRUB config read (newest boots)
    boot=BootState(kernels=(InstalledKernel("6.12.38+deb13-amd64", initrd_bytes=70 * 2**20,
                                            inbox_module=True),),
                   boot_free_bytes=400 * 2**20),
    groups={"groups": ["video"], "users": {}},
    venv=None,
    torch_build=None,
    disk=[{"path": "/opt", "mount": "/", "avail": 80 * 10**9},
          {"path": "/var/cache/apt/archives", "mount": "/", "avail": 80 * 10**9}],
    apt=InstallSize(need=None, message="E: Unable to locate package rocm-hip-runtime"),
)  # fmt: skip


def with_kernel(survey: HostSurvey, **changes: Any) -> HostSurvey:
    """``survey`` with its (only) kernel in /boot changed."""
    boot = survey.boot or BootState()
    (kernel,) = boot.kernels
    return replace(survey, boot=replace(boot, kernels=(replace(kernel, **changes),)))


def os_release(name: str) -> dict[str, str]:
    meta = {}
    for line in (OS_RELEASE / name).read_text().splitlines():
        key, _, value = line.partition("=")
        meta[key] = value.strip('"')
    return meta


def fresh_survey(os_name: str | None = None, arch: str = "amd64", **changes: Any) -> HostSurvey:
    """FRESH with the distro of an os-release fixture, the arch, and any fields changed."""
    survey = changed(copy.deepcopy(FRESH), arch=arch, **changes)
    if os_name is not None:
        meta = os_release(os_name)
        survey = replace(survey, distro={
            "id": meta.get("ID", "").lower(),
            "id_like": meta.get("ID_LIKE", "").split(),
            "version_id": meta.get("VERSION_ID"),
            "codename": meta.get("VERSION_CODENAME"),
            "point_release": None,
            "pretty_name": meta.get("PRETTY_NAME"),
        })  # fmt: skip
    if "kernel" in changes and "boot" not in changes:  # the running kernel is the one in /boot
        survey = with_kernel(survey, release=changes["kernel"])
    return survey


def changed(survey: HostSurvey, **changes: Any) -> HostSurvey:
    """``survey`` with fields changed: a per-path field's paths added to (or replacing) its own."""
    per_path = {
        name: {**getattr(survey, name), **changes.pop(name)} for name in PER_PATH & set(changes)
    }
    return replace(survey, **changes, **per_path)


def digest(content: str, mode: str = "644", mtime: int = 1_700_000_000) -> dict[str, Any]:
    """A FileDigest answer for a file holding ``content``."""
    return {"mode": mode, "sha256": hashlib.sha256(content.encode()).hexdigest(), "mtime": mtime}


@dataclass(frozen=True)
class FactKey:
    """One fact read: its class and its arguments. Fake hosts are answered, and their reads
    recorded, by these: a renamed fact fails at import, a wrong argument at ``fact_key``."""

    fact: type[FactBase]
    arguments: tuple[tuple[str, Any], ...] = ()

    def __repr__(self) -> str:
        arguments = ", ".join(f"{name}={value!r}" for name, value in self.arguments)
        return f"{self.fact.__name__}({arguments})"


def _hashable(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def fact_key(fact: type[FactBase], **arguments: Any) -> FactKey:
    """The key of reading ``fact`` with ``arguments`` (pyinfra's own ``_``-arguments left
    out), e.g. ``fact_key(FileDigest, path=paths.ROCM_SOURCE)``; arguments the fact's
    ``command`` doesn't take are a TypeError here, not an answer that never matches."""
    arguments = {k: v for k, v in arguments.items() if not k.startswith("_")}
    command = fact().command
    if isinstance(command, str):  # pyinfra's fact without arguments
        if arguments:
            raise TypeError(f"{fact.__name__} takes no arguments, not {arguments}")
    else:
        inspect.signature(command).bind(**arguments)
    return FactKey(fact, tuple(sorted((k, _hashable(v)) for k, v in arguments.items())))


Answers = dict[FactKey | type[FactBase], Any]


def answered(answers: Answers, key: FactKey) -> tuple[bool, Any]:
    """(whether ``answers`` has one, the answer) for ``key``: by the key itself, else by its
    fact class (an answer to any arguments)."""
    for candidate in (key, key.fact):
        if candidate in answers:
            return True, copy.deepcopy(answers[candidate])
    return False, None


def answer(survey: HostSurvey, read: Read) -> Any:
    """What the host of ``survey`` answers to ``read``: its field (a per-path field's entry
    for the read's path), or the fact's default where that is None."""
    value = getattr(survey, read.name)
    if read.name in PER_PATH:
        value = value.get(read.kwargs["path"])
    return read.fact().default() if value is None else copy.deepcopy(value)


@dataclass
class SurveyHost:
    """Answers preflight's survey from ``survey`` and the audit's read of the GPUs' health
    from ``health``; any other fact read is recorded in ``extra_reads`` (its ``fact_key``)
    and answered from ``other`` (by ``fact_key``, or by fact class for any arguments) or None."""

    survey: HostSurvey
    other: Answers = field(default_factory=dict)
    extra_reads: list[FactKey] = field(default_factory=list)
    health: HostHealth | None = None

    def answer(self, read: Read) -> Any:
        if read.fact is GpuHealthFact:  # the audit's read apart, not preflight's survey
            return read.fact().default() if self.health is None else self.health
        if not hasattr(self.survey, read.name):  # another read apart: from ``other``
            found, value = answered(self.other, fact_key(read.fact, **read.kwargs))
            return value if found else read.fact().default()
        return answer(self.survey, read)

    def __call__(self, fact, *args, **kwargs):
        kwargs = {k: v for k, v in kwargs.items() if not k.startswith("_")}
        if fact is Survey:
            return [self.answer(read) for read in kwargs["reads"]]
        key = fact_key(fact, **kwargs)
        self.extra_reads.append(key)
        return answered(self.other, key)[1]


@dataclass
class PlannedOp:
    name: str  # the op's name without the "rocm-fleet | " of the node deploy
    commands: list[Any]
    meta: Any
    conditional: bool  # gated with _if


@dataclass
class Plan:
    ops: list[PlannedOp]
    state: State
    refused: bool  # preflight refused the host (it is failed before anything runs)

    @property
    def names(self) -> list[str]:
        return [op.name for op in self.ops]

    @property
    def reason(self) -> str | None:
        """Why preflight refused the host (None: it didn't)."""
        from rocm_fleet.engine.refuse import outcome

        found = outcome(self.state, "node")
        return found.refused if found else None

    @property
    def beyond_preflight(self) -> list[str]:
        """The operations planned after preflight: none for a refused host."""
        return [name for name in self.names if not name.startswith("Preflight")]

    @property
    def changes(self) -> list[str]:
        """The operations that would change the host (not counting ``_if``-gated ones)."""
        return [op.name for op in self.ops if op.meta._maybe_is_change and not op.conditional]

    def find(self, fragment: str) -> PlannedOp:
        (op,) = [op for op in self.ops if fragment in op.name]
        return op

    def run(self, op: PlannedOp) -> None:
        """Mark ``op`` run and succeeded with its commands, as pyinfra's ``run_host_op``
        does: counted in the host's results, then complete."""
        from pyinfra.connectors.util import CommandOutput

        self.state.get_results_for_host(self.state.inventory.get_host("node")).ops += 1
        op.meta.set_complete(True, op.commands, CommandOutput([]))


def plan(
    data: dict,
    host: SurveyHost,
    others: dict[str, dict] | None = None,
    deploy_file: Path | None = None,
    diff: bool = False,
) -> Plan:
    """Plan deploy.py through pyinfra's API for one host ("node") whose facts come from
    ``host``; ``others`` are more hosts of the inventory (name -> data), not planned;
    ``diff``: as with pyinfra's ``--diff``. Nothing runs anywhere."""
    hosts = [("node", dict(data)), *((name, dict(d)) for name, d in (others or {}).items())]
    inventory = Inventory((hosts, {}))
    state = State(inventory, Config(DIFF=diff))
    node = inventory.get_host("node")
    node.connected = True
    state.activate_host(node)
    node.get_fact = host
    with ctx_state.use(state), ctx_host.use(node):
        runpy.run_path(str(deploy_file or ROOT / "deploy.py"))
        ops = []
        for op_hash in state.get_op_order():
            if op_hash not in state.ops[node]:
                continue
            op_data = state.get_op_data_for_host(node, op_hash)
            name = next(iter(state.get_op_meta(op_hash).names)).removeprefix("rocm-fleet | ")
            ops.append(
                PlannedOp(
                    name,
                    list(op_data.command_generator()),
                    op_data.operation_meta,
                    bool(op_data.global_arguments["_if"]),
                )
            )
        # preflight fails the host through pyinfra's context proxy, which only resolves
        # while the host is the current one: compare by name, here.
        refused = any(getattr(failed, "name", None) == "node" for failed in state.failed_hosts)
    return Plan(ops, state, refused)


def words(command: Any) -> list[str]:
    """The words of a StringCommand, unquoted."""
    return [str(getattr(bit, "obj", bit)) for bit in command.bits]


def checked(path: str) -> str:
    """What an operation puts before a command root runs (a venv's python) or removes with
    at ``path``: the safe path rule's check (``path-safe.sh``) and ``&&``."""
    from rocm_fleet.operations._script import script

    return f"{script('path-safe', path)} && "


def unchecked(found: list[str]) -> list[str]:
    """A command's words (``words`` or ``shlex.split``) after that check, if it has one."""
    first = str(found[0]) if found else ""
    return found[found.index("&&") + 1 :] if first.startswith("sh -c") or first == "sh" else found


def is_script(command: Any) -> bool:
    """Whether ``command`` was made by ``operations._script.script``."""
    return isinstance(command, StringCommand) and words(command)[:2] == ["sh", "-c"]


def script_call(command: Any) -> tuple[str, list[str]]:
    """(script name, its arguments) of a command made by ``operations._script.script``."""
    assert is_script(command), command
    bits = words(command)
    return bits[3], bits[4:]


# --- a converged host -------------------------------------------------------------------------

# The kernel each fixture distribution runs, and the version of its kernel packages.
KERNELS = {
    "debian-12": ("6.1.0-31-amd64", "6.1.128-1"),
    "debian-13": ("6.12.48+deb13-amd64", "6.12.48-1"),
    "ubuntu-22.04": ("5.15.0-130-generic", "5.15.0-130.140"),
    "ubuntu-24.04": ("6.8.0-50-generic", "6.8.0-50.51"),
    "ubuntu-26.04": ("7.0.0-22-generic", "7.0.0-22.22"),
}
# The kernel a converged host runs after the deploy installed a newer kernel's meta package and
# it rebooted (a release and version of the shape Ubuntu's HWE kernels have; set for the scenario).
NEWER_KERNELS = {"linux-generic-hwe-24.04": ("6.17.0-14-generic", "6.17.0-14.14~24.04.1")}
# What apt installs of the distribution packages a deploy asks for (Debian 12's versions).
DEBIAN_VERSIONS = {
    "ca-certificates": "20230311",
    "gnupg": "2.2.40-1.1",
    "gpgv": "2.2.40-1.1",
    "python3-venv": "3.11.2-1+b1",
    "mokutil": "0.6.0-2",
    "openssl": "3.0.15-1~deb12u1",
    "shim-signed": "1.58+15.8-0ubuntu1",
}
# torch.version.hip of the ROCm wheels per index: rocm6.4 as the README's audit table shows
# it; the others are of the same shape (HIP version, build, commit), not copied from a wheel.
TORCH_HIP = {
    "rocm6.4": "6.4.43482-0f2d60242",
    "rocm7.1": "7.1.25424-4179531dcd",
    "rocm7.2": "7.2.26015-fc0010cf6a",
    "rocm7.14": "7.14.60850",  # (3p) torch.version.hip of 2.14.1+rocm7.14 (matrix.py cites)
    # AMD's 10.x torch: a stand-in (torch.version.hip of these builds was not read).
    "amd10.0.0": "10.0.0-standin",
    "amd10.1.0": "10.1.0-standin",
}
# What pip installs for the ROCm runtime a Core SDK torch requires (rocm[...]==7.14.*): the
# rocm meta package as it was published (3p: "rocm==7.14.0.post1") and its core wheel.
PIP_RUNTIME = {"rocm": ".0.post1", "rocm-sdk-core": ".0"}


def package_version(release: Any, suite_version: str) -> str:
    """The version a release's packages carry (matrix streams' rules): classic
    <x.y.z>.<tag>-<build>~<ubuntu>, Core SDK <x.y.z>-<build>."""
    if release.stream is streams.CLASSIC:
        return f"{release.version}.{release.numeric_tag}-128~{suite_version}"
    return f"{release.version}-1"


# Seconds since the epoch: files the deploy wrote, then the apt-lists stamps after them.
WRITTEN, UPDATED = 1_700_000_000, 1_700_000_060
PYVENV_CFG = "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n"


def converged_survey(data: dict, os_name: str, **changes: Any) -> dict[str, Any]:
    """What a host of the ``os_name`` fixture answers once the deploy of ``data`` ran on it.

    Derived from planning a fresh host (``fresh_survey`` with ``data``'s users, who exist
    with their own group only): each command that plan would run is applied to the survey
    (the text files it writes, the keyring, the apt-list stamps after their inputs, the
    packages at the release's tag, the venv with the pinned wheels, the groups), and the
    GPU is then driven by amdgpu. A command this builder doesn't know is an error, so a new
    kind of change in the deploy shows up here rather than as a silently partial host.
    Secure Boot is reported disabled once the deploy installed mokutil.
    """
    config = load_config(data, "node")
    kernel, kernel_version = KERNELS[os_name]
    image = f"linux-image-{kernel}"
    survey = fresh_survey(os_name, kernel=kernel, **changes)
    survey.packages.update({image: kernel_version})
    survey.groups["users"] = {user: [user] for user in config.rocm_users}
    if config.rocm_driver == "dkms":  # amdgpu-dkms's postinst built it for the kernel
        module = f"/lib/modules/{kernel}/updates/dkms/amdgpu.ko.xz"
        survey = with_kernel(survey, dkms_module=module)
    fresh = plan(data, SurveyHost(copy.deepcopy(survey)))
    assert not fresh.refused, "the fresh host of a converged survey must be deployable"

    distro = survey.distro
    row = matrix.distro(distro["id"], distro["version_id"])
    suite_version = {"jammy": "22.04", "noble": "24.04", "resolute": "26.04"}[row.suite]
    release = config.release
    packages = survey.packages
    groups = survey.groups
    for op in fresh.ops:
        for command in op.commands:
            if is_script(command):
                name, args = script_call(command)
            else:
                name, args = words(command)[0], words(command)[1:]
            if name == "text-file":
                path, mode, content = args
                survey.files[path] = digest(content, mode, WRITTEN)
                if path == paths.ACCEPTANCE_LEDGER:  # what Ledger reads back
                    survey.ledgers[path] = content.splitlines()
                if path.startswith("/etc/apt/sources.list"):  # what AptSourceLines reads
                    survey.sources.extend(
                        [path, line]
                        for line in content.splitlines()
                        if "repo.radeon.com" in line or "repo.amd.com" in line
                    )
            elif name == "verified-keyring":
                _url, fingerprint, path = args[:3]
                survey.keyrings[path] = [fingerprint]
                survey.files[path] = digest(f"dearmored {fingerprint}", "644", WRITTEN)
            elif name == "mkdir" and args[-2] == "touch":  # an apt-lists stamp
                survey.files[args[-1]] = digest("", "644", UPDATED)
            elif name == "mkdir" and args[0] == "-p":  # a directory for a file after it
                pass
            elif name == "packages-install":
                packages.update({p: DEBIAN_VERSIONS[p] for p in args[1:]})
                if args[0] == paths.DRIVER_LEDGER:  # the one the survey reads (Ledger)
                    survey.ledgers[args[0]] = survey.ledgers.get(args[0], []) + args[1:]
            elif name == "release-switch":
                regex, *items = args
                assert regex == release.stream.version_regex(release)
                version = package_version(release, suite_version)
                for item in items:
                    kind, _, package = item.partition(":")
                    assert kind == "want", "a fresh host has no other release to move"
                    packages[package] = version
                # What the meta packages depend on and its version file: the classic
                # rocm-core (X.Y.Z-<build>), the Core SDK's amdrocm-base<X.Y> (X.Y.Z-<build>).
                if release.stream is streams.CLASSIC:
                    packages["rocm-core"] = version
                    survey = replace(survey, rocm_version=f"{release.version}-128")
                else:
                    packages[f"amdrocm-base{major_minor(release.version)}"] = version
                    survey = replace(survey, rocm_version=version)
            elif name == "dkms-driver":
                ledger, driver, *installed = args
                survey.ledgers[ledger] = survey.ledgers.get(ledger, []) + installed
                for package in installed:
                    packages[package] = (
                        f"1:6.12.12.{release.numeric_tag}-2194681.{suite_version}"
                        if package == driver
                        else kernel_version
                    )
                survey.amdgpu["version"] = "6.12.12"
            elif name == "newer-kernel":  # installed, and the host rebooted into it
                meta = args[-1]
                newer, newer_version = NEWER_KERNELS[meta]
                packages[meta] = packages[f"linux-image-{newer}"] = newer_version
                survey = with_kernel(replace(survey, kernel=newer), release=newer)
                packages = survey.packages
            elif name == "venv-create":
                venv, ledger = args
                survey.files[paths.venv_marker(venv)] = digest(PYVENV_CFG, "644", WRITTEN)
                # The venv's directory, made for it on a fresh host, then the venv.
                survey.ledgers[ledger] = [paths.parent(venv), venv]
                survey = replace(survey, venv={"pip": "23.0.1", "setuptools": "66.1.1"})
            elif "-m" in args and args[args.index("-m") :][:3] == ["-m", "pip", "install"]:
                # Hash-locked lines on pip's stdin (unit.conftest.UpstreamLocks): the specs.
                for spec in (a.split(" --hash=")[0] for a in args if "==" in a):
                    req = Requirement(spec)
                    version = str(req.specifier).removeprefix("==")
                    if req.name == "rocm" and version.endswith(".*"):  # rocm7.14's runtime
                        prefix = version.removesuffix(".*")
                        survey.venv.update({n: prefix + v for n, v in PIP_RUNTIME.items()})
                    elif req.name == "rocm":  # AMD's 10.x runtime, exactly the release
                        survey.venv.update({"rocm": version, "rocm-sdk-core": version})
                    else:
                        survey.venv[req.name] = version
                hip = TORCH_HIP.get(release.torch_index or f"amd{release.version}")
                survey = replace(survey, torch_build={"hip": hip, "cuda": None})
            elif name == "pull-venv":  # pull mode's venv, installed from its lock
                root, venv, _lock, lock_sha256, stamp, _min_python, protocol = args
                survey.directories[root] = True
                survey.files[paths.venv_marker(venv)] = digest(PYVENV_CFG, "644", WRITTEN)
                recorded = f"{lock_sha256}\npull protocol {protocol}\n"  # it speaks the push's
                survey.files[stamp] = digest(recorded, "644", WRITTEN)
                survey.ledgers[stamp] = recorded.splitlines()
            elif name == "pull-units":  # the timer enabled: its stamp after the unit files
                survey.files[args[3]] = digest("", "644", UPDATED)
            elif name == "groupadd":
                groups["groups"].append(args[-1])
            elif name == "usermod":
                groups["users"][args[-1]] += args[-2].split(",")
            elif name not in ("apt-get", "ldconfig", "path-safe", "directories"):
                raise ValueError(f"converged_survey doesn't know {name} {args} ({op.name})")

    if "mokutil" in packages:
        survey = replace(
            survey, secure_boot=SecureBoot().process(["SecureBoot disabled", "__rc=0"])
        )
    for cert, _key in paths.MOK_KEYS.values():
        survey.mok[cert] = {"state": "missing" if "mokutil" in packages else "absent",
                                 "message": ""}  # fmt: skip
    # amdgpu drives the cards now, and the KFD topology reports them (as KfdNodes reads
    # tests/fixtures/sysfs): node 0 is the CPU, each GPU a node after it.
    survey.amdgpu.update({"loaded": True, "initstate": "live"})
    survey = replace(survey, kfd=[])
    for node, gpu in enumerate(survey.pci, start=1):
        gpu["driver"] = "amdgpu"
        gfx = lookup(gpu["device"]).gfx
        version = int(gfx[3:-2]) * 10000 + int(gfx[-2], 16) * 100 + int(gfx[-1], 16)
        properties = {"gfx_target_version": version, "drm_render_minor": 127 + node}
        survey.kfd.append(
            {"node": node, "gfx": gfx, "gfx_target_version": version, "device_id": gpu["device"],
             "slot": gpu["slot"], "drm_render_minor": 127 + node, "simd_count": None,
             "properties": properties}
        )  # fmt: skip
    survey = replace(survey, apt=InstallSize(need=0, message="already installed from this release"))
    # The GPU check passed: it recorded what it vouched for, which only the host as it is
    # now (installed, GPUs driven) says, so it is planned once more on that host.
    check = plan(data, SurveyHost(copy.deepcopy(survey))).find("Check rocminfo and torch")
    _mkdir, record = check.commands
    path, mode, content = script_call(record)[1]
    survey.files[path] = digest(content, mode, WRITTEN)
    return survey


def plan_fleet(hosts: dict[str, tuple[dict, dict]]) -> State:
    """deploy.py planned for several hosts in one state as pyinfra's CLI and the audit plan
    them (CLI mode, each host on pyinfra's greenlet pool: ``engine.host_plans``), each host
    answering its facts from its own survey: ``{name: (data, survey)}``. Asserts no host's
    planning raised; the state holds every host's operations."""
    from rocm_fleet.engine.host_plans import plan_deploy, plan_in_parallel

    inventory = Inventory(([(name, dict(data)) for name, (data, _) in hosts.items()], {}))
    state = State(inventory, Config())
    deploy_file = str(Path(__file__).resolve().parents[2] / "deploy.py")
    state.current_deploy_filename = deploy_file
    state.current_op_file_number = 0
    for host in inventory:
        host.connected = True
        host.get_fact = SurveyHost(hosts[host.name][1])
    results = plan_in_parallel(
        state,
        list(inventory),
        lambda host: plan_deploy(state, host, lambda: runpy.run_path(deploy_file)),
    )
    failed = [r for r in results if isinstance(r, BaseException)]
    assert not failed, failed
    return state
