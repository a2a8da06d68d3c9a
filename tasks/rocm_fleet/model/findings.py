"""Preflight's rules: can this host take the chosen ROCm release as the inventory says?

``findings``, a pure function of a host's survey (the answers ``engine.survey`` reads in one
round trip, keyed as its reads name them), returns the problems (each with its fix) that refuse
the host and the warnings (pairings AMD doesn't list, a distro override) printed before the
deploy goes ahead. No pyinfra and no I/O on hosts: the deploy (``deploy.preflight``) reads
the survey, asks these rules and refuses the host.

Checked: amd64; the distro and release pairing in the matrix (or an explicit override),
and a move between the classic stream and the ROCm Core SDK announced (a warning: the deploy
carries it out);
not WSL; root (directly or through ``_sudo``); an AMD GPU on PCI (mapped to gfx targets by
``pci_ids``, or the KFD topology when amdgpu is loaded) matching ``expected_gfx`` /
``expected_gpu_count``; the kernel at least the one AMD lists for the distro; free space
for the packages; a fleet mirror's bundle holding what the host needs; and no conflicting
stack: NVIDIA driver or CUDA packages, the distro's
own ROCm tools that would shadow AMD's on PATH or carry AMD's package names, another ROCm
release's apt source, a CUDA or CPU torch in the venv. The distro's own ROCm libraries
(Ubuntu's libamdhip64-5 for OpenMPI's libucx0) don't stop AMD's stack: they are a warning
naming what needs them. A removal is only ever suggested with what apt's simulation
(``apt-get -s purge``, read in the survey) says it would take along. A host without an
AMD GPU is told which display or accelerator devices it has instead.

And whatever would otherwise stop the run halfway, after changes (``_plan_time``,
``_users``): ``rocm_users`` naming users the host lacks, ``rocm_driver: dkms`` on a release
whose driver the matrix doesn't record, a newer kernel from backports with no Debian mirror
to take it from, a DKMS signing key the firmware blocks or mokutil can't read. (The MOK
password, which comes from where pyinfra runs, is checked by ``deploy.preflight``.)

The survey's readers the audit shows too (``gpus_found``, ``describe_gpus``, ``amd_pci``,
``venv_torch``) are here, so both say the same of a host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rocm_fleet.model import matrix, paths
from rocm_fleet.model.kernels import kernel_findings
from rocm_fleet.model.nvidia import is_nvidia_package, nvidia_stack
from rocm_fleet.model.pci_ids import AMD_VENDOR, describe_device, lookup
from rocm_fleet.model.sources import HostNeeds, amdgpu_repository, host_needs
from rocm_fleet.model.versions import ROCM_APT_PATH, kernel_key, release_key

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


# Debian's and Ubuntu's own ROCm packages: the binary packages they build from ROCm's
# sources (rocm-hipamd, rocr-runtime, roct-thunk-interface, rocm-compilersupport,
# rocm-smi-lib, amdsmi, rocminfo, hipify, rocm-cmake, rocm-device-libs, rocprim, rocrand,
# rocthrust, rocsparse, hipsparse, rocblas, hipblas, rocfft, hipfft, rocsolver, hipsolver,
# rocalution, rccl, roctracer, rocdbgapi, pkg-rocm-tools), by name, as the Packages
# indexes of Debian bookworm 12.15 and trixie 13.8 (main) and Ubuntu noble (main,
# universe) list them (read 2026-11-30). AMD's packages match some of these names too
# (rocminfo, rocm-core); their versions tell them apart (versions.amd_release_tag).
DISTRO_ROCM_PACKAGES = (
    "rocminfo", "rocm-*", "hipcc", "hipify-*", "amd-smi", "amd-dbgapi*", "pkg-rocm-tools",
    "libamd-comgr*", "libamd-smi*", "libamdhip64*", "libhsa-runtime*", "libhsakmt*",
    "libhipblas*", "libhipcub*", "libhipfft*", "libhiprand*", "libhiprtc*", "libhipsolver*",
    "libhipsparse*", "liboam*", "librccl*", "librocalution*", "librocblas*", "librocfft*",
    "librocm*", "librocprim*", "librocrand*", "librocsolver*", "librocsparse*",
    "librocthrust*", "libroctx*", "libroctracer*",
)  # fmt: skip
# Names AMD's repository uses for packages of its own, which Debian and Ubuntu use too, at
# higher versions (Ubuntu 24.04 rocminfo 5.7.1-3build1 against AMD's 1.0.0.70202-...,
# hipcc 5.7.1-3 against 1.1.1.70204-..., rocm-cmake 6.0.0-1 against 0.14.0.70204-...;
# Debian 12 rocm-device-libs 5.2.3-2): AMD's pin (600) doesn't take an installed package
# to a lower version (apt_preferences(5): 500 <= P < 990 "unless the installed version is
# more recent"), so AMD's stack can't go on beside them. Reported in
# github.com/ROCm/legacy-rocm-build issues 3656, 6367 and 1899.
AMD_PACKAGE_NAMES = ("hipcc", "rocminfo", "rocm-cmake", "rocm-device-libs")
# AMD's programs in /opt/rocm/bin that Debian's and Ubuntu's packages (hipcc, rocminfo,
# rocm-smi, amd-smi, hipify-perl: dpkg -c of each in bookworm, trixie and noble) also put
# in paths.DISTRO_BIN, which comes first on PATH: there they shadow AMD's.
AMD_PROGRAMS = (
    "rocminfo", "rocm_agent_enumerator", "rocm-smi", "amd-smi", "hipcc", "hipcc.pl",
    "hipconfig", "hipconfig.pl", "hipify-perl", "roc-obj", "roc-obj-extract", "roc-obj-ls",
)  # fmt: skip
# Upstream hosts whose apt sources preflight looks for (repo.amd.com matches
# stable.repo.amd.com too).
AMD_REPOSITORY_HOSTS = ("repo.radeon.com", "repo.amd.com")
# The source files the deploy itself writes, for any stream: never a conflict.
OWN_SOURCES = {repo.source for repo in matrix.REPOSITORIES}


@dataclass
class Findings:
    row: matrix.Distro | None
    problems: list[str]
    warnings: list[str]
    # gfx targets of every AMD GPU found (None for a device the matrix can't name)
    gpus: list[str | None] = field(default_factory=list)
    # Long lists a message only summarises ("cuda-cccl-13-0, ... and 57 more"), in full:
    # shown with pyinfra -v and in `rocm-fleet audit --json`.
    details: dict[str, list[str]] = field(default_factory=dict)


# How many names a one-line message lists before "and N more".
LISTED = 5


def listed(names: list[str], what: str) -> str:
    """``names`` for a one-line message: all of them up to LISTED, else the first LISTED and
    how many more ("a, b, c, d, e and 57 more <what>")."""
    if len(names) <= LISTED:
        return ", ".join(names)
    return f"{', '.join(names[:LISTED])} and {len(names) - LISTED} more {what}"


class BundleFiles(Protocol):
    """What a bundle on the controller's disk holds (``rocm_fleet.offline.manifest`` is one):
    read by the caller, so the rules stay pure."""

    def incomplete(self, bundle: str) -> list[str]: ...

    def missing(self, bundle: str, needs: HostNeeds) -> list[str]: ...


def findings(
    config: Config, survey: dict[str, Any], bundle_files: BundleFiles | None = None
) -> Findings:
    """Problems (each with its fix) and warnings for a host, from its survey
    (``deploy.preflight.survey_reads``). ``bundle_files`` reads the fleet mirror's bundle, when
    the host's mirror has one (without it, the bundle isn't checked)."""
    problems: list[str] = []
    warnings: list[str] = []
    details: dict[str, list[str]] = {}
    row = _distro(config, survey, problems, warnings)
    gpus = [gpu["gfx"] for gpu in gpus_found(survey)]
    if bundle_files is not None and row is not None and config.release.publication(row) is not None:
        _bundle(config, row, gpus, problems, bundle_files)
    _system(survey, problems)
    _gpus(config, survey, problems, warnings)
    if row is not None:
        _kernel(row, survey, problems)
        _plan_time(config, row, survey, problems)
    _users(config, survey, problems)
    _disk(config, survey, problems)
    _conflicts(config, survey, problems, warnings, details)
    _stream_move(config, survey, warnings)
    _plain_mirror(config, warnings)
    return Findings(row if not problems else None, problems, warnings, gpus, details)


def _distro(config: Config, survey: dict, problems: list[str], warnings: list[str]):
    arch = survey.get("arch")
    if arch != "amd64":
        problems.append(
            f"architecture is {arch or 'unknown'}; AMD publishes ROCm for amd64 only: "
            "use an x86-64 machine"
        )
    distro = survey.get("distro") or {}
    distro_id, version_id = distro.get("id") or "", distro.get("version_id") or ""
    row = matrix.distro(distro_id, version_id)
    rel = config.release
    override = config.rocm_distro_override
    if row is None and override:
        row = matrix.distro(distro_id, version_id, override)
        warnings.append(
            f"{distro_id} {version_id} is not in the matrix; deploying it as {row.key} "
            "(rocm_distro_override): unofficial"
        )
    elif row is None:
        supported = ", ".join(matrix.DISTRO_KEYS)
        problems.append(
            f"{distro_id or 'unknown'} {version_id} is not supported ({supported}): "
            "upgrade the host to one of them, or set rocm_distro_override to the one it "
            "is built on"
        )
        return None
    support = rel.support(row)
    if support is None:
        publishers = ", ".join(
            f"{stream.title} {pub.first_release} and newer"
            for stream in matrix.STREAMS
            if (pub := stream.publication(row))
        )
        problems.append(
            f"ROCm {rel.version} ({rel.stream.title}) publishes no packages for {row.key}; "
            f"{row.key} packages come with {publishers or 'no release'}: choose one of those "
            "as rocm_version"
        )
    elif support is matrix.Support.REJECTED:
        classic, core = matrix.accepted_alternatives(row)
        ways = " or ".join(
            f"{r.stream.title} {r.version} or newer" for r in (classic, core) if r is not None
        )
        problems.append(
            f"{row.key}'s apt rejects the signatures of ROCm {rel.version}: AMD signed its "
            f"repositories while the only binding signature of its key "
            f"({rel.stream.key_fingerprint}) was SHA-1, which {row.key}'s apt (sqv) refuses "
            'since 2026-02-01 ("Signing key ... is not bound"; "The repository ... is not '
            f'signed"), so apt-get update would fail: choose {ways or "another release"} as '
            "rocm_version (rocm-fleet does not weaken apt's signature policy)"
        )
    elif support is matrix.Support.UNLISTED:
        warnings.append(f"AMD does not list {row.key} for ROCm {rel.version}: unofficial")
    elif support is matrix.Support.INSTINCT_ONLY:
        pub = rel.publication(row)
        unlisted = [
            g for g in config.expected_gfx_list if _family(g) is not None and not pub.lists(g)
        ]
        if unlisted:
            warnings.append(
                f"AMD lists {row.key} for {pub.listed_text} only; {', '.join(unlisted)} on it "
                "is unofficial"
            )
    return row


def _bundle(
    config: Config,
    row: matrix.Distro,
    gpus: list[str | None],
    problems: list[str],
    bundle_files: BundleFiles,
) -> None:
    """A bundle the fleet mirror serves must hold everything this host will fetch (with the
    packages its GPUs make the stream choose): apt or pip failing halfway through on a
    missing file is worse than not starting."""
    mirror = config.mirror
    if mirror is None or not mirror.bundle:
        return
    broken = bundle_files.incomplete(mirror.bundle) if mirror.serves else []
    if broken:
        problems.append(
            f"the bundle {mirror.bundle} this host is to serve is incomplete ({len(broken)} "
            f"file(s) its manifest lists are missing or cut short: {', '.join(broken[:5])}): "
            f"run `rocm-fleet bundle INVENTORY --output {mirror.bundle}` again"
        )
    gaps = bundle_files.missing(mirror.bundle, host_needs(config, row, gpus))
    if gaps:
        problems.append(
            f"the fleet mirror's bundle {mirror.bundle} lacks what this host needs: "
            f"{'; '.join(gaps)}: run `rocm-fleet bundle INVENTORY --output {mirror.bundle}` "
            "again with this inventory, then deploy"
        )


def _plain_mirror(config: Config, warnings: list[str]) -> None:
    """A mirror over plain HTTP: said in ``--dry`` and the audit. apt still verifies AMD's
    signature and pinned hashes still hold, but nothing else: whoever is on the fleet network
    sees what hosts fetch and can serve anything unsigned or unpinned (every wheel is pinned:
    a bundle's or the controller's lock, ``--require-hashes``)."""
    mirror = config.mirror
    if mirror is None or mirror.tls:
        return
    warnings.append(
        f"the fleet mirror {mirror.url} is plain HTTP: integrity rests on AMD's signatures and "
        "pinned hashes alone; `rocm-fleet mirror-ca` and rocm_mirror_tls_ca/_cert/_key give it TLS"
    )


def _family(gfx: str) -> str | None:
    target = matrix.gpu_target(gfx)
    return target.family if target else None


def _system(survey: dict, problems: list[str]) -> None:
    if survey.get("wsl") or "microsoft" in (survey.get("kernel") or "").lower():
        problems.append(
            "this is WSL: ROCm on WSL is a different stack (AMD's WSL driver and "
            "runtime, installed from Windows); deploy to a Linux host instead"
        )
    identity = survey.get("identity") or {}
    if identity.get("uid") != 0:
        problems.append(
            f"connected as {identity.get('user') or 'an unknown user'} "
            f"(uid {identity.get('uid')}), "
            "not root: set _sudo: True (with passwordless sudo or _sudo_password) in the "
            "inventory, or connect as root"
        )


def amd_pci(survey: dict) -> list[dict[str, Any]]:
    """The survey's PCI display and accelerator devices that are AMD's."""
    return [gpu for gpu in survey.get("pci") or [] if gpu.get("vendor") == AMD_VENDOR]


def other_pci(survey: dict) -> list[str]:
    """The survey's display and accelerator devices of other vendors, described."""
    return [
        describe_device(gpu["slot"], gpu["vendor"], gpu["device"], gpu["class"])
        for gpu in survey.get("pci") or []
        if gpu.get("vendor") != AMD_VENDOR
    ]


def _with_memory(gpu: dict[str, Any], pci: dict[str, Any] | None) -> dict[str, Any]:
    """``gpu`` with whether it is an APU's integrated GPU (a Ryzen target) and amdgpu's
    memory totals of its PCI device (bytes; None when not read)."""
    target = matrix.gpu_target(gpu["gfx"] or "")
    gpu["apu"] = target is not None and target.family == "ryzen"
    gpu["vram_total"] = (pci or {}).get("vram_total")
    gpu["gtt_total"] = (pci or {}).get("gtt_total")
    return gpu


def gpus_found(survey: dict) -> list[dict[str, Any]]:
    """AMD GPUs on the host: KFD nodes when amdgpu is loaded (authoritative gfx), else the
    PCI devices mapped by the PCI-ID table. Each: slot, device, gfx (None: unknown), name,
    apu (an APU's integrated GPU), vram_total and gtt_total (amdgpu's, in bytes, or None)."""
    pci = {gpu["slot"]: gpu for gpu in amd_pci(survey)}
    found = []
    kfd = survey.get("kfd")
    if kfd:
        for node in kfd:
            row = lookup(node["device_id"]) if node.get("device_id") else None
            gpu = {
                "slot": node.get("slot"),
                "device": node.get("device_id"),
                "gfx": node["gfx"],
                "name": row.name if row else None,
            }
            found.append(_with_memory(gpu, pci.get(node.get("slot") or "")))
        return found
    for slot, pci_gpu in pci.items():
        row = lookup(pci_gpu["device"])
        gpu = {
            "slot": slot,
            "device": pci_gpu["device"],
            "gfx": row.gfx if row else None,
            "name": row.name if row else None,
        }
        found.append(_with_memory(gpu, pci_gpu))
    return found


def gib(size: int | None) -> str:
    """Bytes as GiB for a person, e.g. 103079215104 -> "96.0 GiB"; "?" when unknown."""
    return "?" if size is None else f"{size / 2**30:.1f} GiB"


def apu_memory(gpu: dict[str, Any]) -> str:
    """What an APU's GPU memory is, e.g. "APU: 4.0 GiB VRAM carve-out, 96.0 GiB GTT"."""
    if gpu.get("vram_total") is None and gpu.get("gtt_total") is None:
        return "APU: memory not read (amdgpu not bound)"
    return f"APU: {gib(gpu.get('vram_total'))} VRAM carve-out, {gib(gpu.get('gtt_total'))} GTT"


def describe_gpus(found: list[dict[str, Any]]) -> str:
    if not found:
        return "no AMD GPU"
    counts: dict[str, int] = {}
    for gpu in found:
        label = gpu["gfx"] or f"unknown AMD device {gpu['device']}"
        if gpu.get("apu"):
            label = f"{label} ({apu_memory(gpu)})"
        counts[label] = counts.get(label, 0) + 1
    return ", ".join(f"{n} x {label}" for label, n in counts.items())


def gpu_mismatch(
    config: Config, found: list[dict[str, Any]], others: list[str] | None = None
) -> str | None:
    """What is wrong with the GPUs against expected_gfx / expected_gpu_count, or None;
    ``others`` describes the display and accelerator devices of other vendors."""
    expected_count = config.expected_gpu_count
    expected_gfx = config.expected_gfx_list
    if expected_count == 0:
        return None
    found_text = describe_gpus(found)
    if not found:
        instead = (
            f"found instead: {'; '.join(others)}"
            if others
            else "nor any other display or accelerator device"
        )
        return (
            "no AMD GPU found (no PCI device of vendor 0x1002 with a display or "
            f"processing-accelerator class; {instead}): seat the card, or set "
            "expected_gpu_count: 0 for a GPU-less host (CI runner, image builder)"
        )
    matching = [g for g in found if g["gfx"] in expected_gfx] if expected_gfx else found
    wanted = "/".join(expected_gfx) if expected_gfx else "AMD GPU"
    if expected_gfx and not matching:
        return (
            f"expected {expected_count or 'at least 1'} x {wanted}, found {found_text}: "
            "correct expected_gfx in the inventory or check the host's cards"
        )
    if expected_count is not None and len(matching) != expected_count:
        fewer = "too few GPUs" if len(matching) < expected_count else "more GPUs than expected"
        return (
            f"{fewer}: expected {expected_count} x {wanted}, found {len(matching)} "
            f"({found_text}): correct expected_gpu_count or check that every card is seated "
            "and enabled in the firmware"
        )
    return None


def _gpus(config: Config, survey: dict, problems: list[str], warnings: list[str]) -> None:
    if config.expected_gpu_count == 0 and config.expected_gfx_list:
        # Not an error: on a GPU-less image builder expected_gfx still picks the kernel and
        # the Core SDK's per-target packages; but nothing about it is verified.
        warnings.append(
            f"expected_gfx is {'/'.join(config.expected_gfx_list)} but expected_gpu_count is "
            "0: no GPU is checked or verified (expected_gfx only picks the kernel and the "
            "Core SDK's packages); drop expected_gpu_count for a host with the GPU"
        )
    found = gpus_found(survey)
    mismatch = gpu_mismatch(config, found, other_pci(survey))
    if mismatch:
        problems.append(mismatch)
        return
    for gpu in found:
        target = matrix.gpu_target(gpu["gfx"] or "")
        if target is not None and target.family == "ryzen":
            warnings.append(apu_note(gpu, target))
    for gfx in sorted({g["gfx"] for g in found if g["gfx"]}):
        listed = config.release.lists_gpu(gfx)
        wanted = not config.expected_gfx_list or gfx in config.expected_gfx_list
        if wanted and not listed:
            warnings.append(f"AMD does not list {gfx} for ROCm {config.release.version}")


def _plan_time(config: Config, row: matrix.Distro, survey: dict, problems: list[str]) -> None:
    """What would stop the run halfway, known now: the operations that would fail it are
    never reached (deploy/driver.py, kernel.py, operations/secureboot.py keep their own
    check for a deploy composed without preflight)."""
    if config.rocm_driver == "dkms" and amdgpu_repository(config, row) is None:
        known = [r.version for r in matrix.RELEASES if matrix.amdgpu_repo_version(r) is not None]
        newest = max(known, key=release_key) if known else None
        problems.append(
            f"rocm_driver: dkms, but the matrix does not record which amdgpu driver ROCm "
            f"{config.release.version} ships, so there is no driver repository to use: set "
            "rocm_driver: inbox, or a rocm_version whose driver is known"
            + (f" (the newest is {newest})" if newest else "")
        )
    newer, _, _ = kernel_findings(
        config, row.key, survey.get("kernel") or "", survey.get("packages") or {}
    )
    if (
        newer is not None
        and newer.kind == "backports"
        and newer.suite
        and not config.rocm_kernel_backports_mirror
        and not survey.get("mirror")
    ):
        problems.append(
            f"a newer kernel from {newer.suite} is needed, but no Debian mirror is named in "
            f"{' or '.join(paths.DEBIAN_SOURCES)} to add it from: set "
            "rocm_kernel_backports_mirror (e.g. 'http://deb.debian.org/debian'), or "
            "rocm_kernel_backports: never"
        )
    _secure_boot(config, row, survey, problems)


def _secure_boot(config: Config, row: matrix.Distro, survey: dict, problems: list[str]) -> None:
    """With the DKMS driver and Secure Boot on, a signing key the firmware blocks, or whose
    state mokutil can't tell, would stop the run after the driver is built."""
    if config.rocm_driver != "dkms":
        return
    if (survey.get("secure_boot") or {}).get("state") != "enabled":
        return
    cert = paths.MOK_KEYS[row.id][0]
    state = (survey.get(f"mok {cert}") or {}).get("state")
    pending = (survey.get(f"mok-new {cert}") or {}).get("pending")
    if state == "blocked":
        problems.append(
            f"the DKMS signing key {cert} is blocked by the firmware (dbx/MokListX), so the "
            "driver signed with it would not load: move it and its private key aside so a new "
            "one is made, then deploy"
        )
    elif state not in (None, "enrolled", "pending", "not_enrolled", "missing") and not pending:
        problems.append(
            f"cannot tell whether the DKMS signing key {cert} is enrolled (mokutil says "
            f"{state}): check `mokutil --test-key {cert}` on the host"
        )


def _users(config: Config, survey: dict, problems: list[str]) -> None:
    """Every user of rocm_users must exist: the groups deploy adds them, never creates one."""
    users = (survey.get("groups") or {}).get("users") or {}
    absent = [user for user in config.rocm_users if user in users and users[user] is None]
    if absent:
        problems.append(
            f"rocm_users names {', '.join(absent)}, not a user on this host: create "
            f"{'them' if len(absent) > 1 else 'it'} first (the deploy adds users to video and "
            f"render, it never creates one), or take {'them' if len(absent) > 1 else 'it'} "
            "out of rocm_users"
        )


def apu_note(gpu: dict[str, Any], target: matrix.GpuTarget) -> str:
    """What preflight says of a Ryzen APU's integrated GPU: its model and target, that it
    computes in system memory, and where AMD lists it (matrix.GPU_TARGETS' sources)."""
    pci = f" [1002:{gpu['device'].removeprefix('0x')}]" if gpu.get("device") else ""
    if gpu.get("vram_total") is None and gpu.get("gtt_total") is None:
        memory = "it has no VRAM of its own (a small carve-out)"
    else:  # amdgpu's mem_info_vram_total / mem_info_gtt_total (facts.gpu.PciGpus)
        memory = (
            f"its VRAM is a {gib(gpu.get('vram_total'))} carve-out of system memory and its "
            f"GTT {gib(gpu.get('gtt_total'))}"
        )
    return (
        f"{gpu['gfx']} at {gpu.get('slot') or '?'} is the integrated GPU of a Ryzen APU: "
        f"{target.products}{pci}; {memory}: it computes in system memory it shares with "
        "the CPU (GTT), so its usable memory is the host's; AMD lists Ryzen APUs for the "
        "ROCm Core SDK on Ubuntu 26.04 and 24.04.4 (OEM 6.17 kernel) only"
    )


def _kernel(row: matrix.Distro, survey: dict, problems: list[str]) -> None:
    minimum = matrix.MIN_KERNEL.get(row.key)
    running = survey.get("kernel") or ""
    if minimum and kernel_key(running) < kernel_key(minimum):
        problems.append(
            f"kernel {running} is older than {minimum}, the one AMD lists for {row.key}: "
            "install the distribution's current kernel and reboot"
        )


def _disk(config: Config, survey: dict, problems: list[str]) -> None:
    need = (survey.get("apt") or {}).get("need")
    source = "what apt says the ROCm packages need"
    if need is None:
        need = config.preflight_min_free_gb * 10**9
        source = "preflight_min_free_gb, as apt can't size AMD's packages before their source"
    short = {}
    for entry in survey.get("disk") or []:
        if entry["avail"] < need:
            short.setdefault(entry["mount"], (entry["avail"], []))[1].append(entry["path"])
    for mount, (avail, where) in short.items():
        problems.append(
            f"not enough free space on {mount} (for {', '.join(where)}): "
            f"{avail / 10**9:.2f} GB free, {need / 10**9:.2f} GB needed ({source}): "
            "free some space or grow the filesystem"
        )


def venv_torch(survey: dict) -> dict[str, Any]:
    """The venv's torch as the survey saw it: {"torch": version or None, "hip", "cuda",
    "build": "rocm" | "cuda" | "cpu" | None (no torch)}."""
    version = (survey.get("venv") or {}).get("torch")
    strings = survey.get("torch_build") or {}
    hip, cuda = strings.get("hip"), strings.get("cuda")
    if not version:
        build = None
    elif hip or "+rocm" in version:
        build = "rocm"
    elif cuda or "+cu" in version:
        build = "cuda"
    else:
        build = "cpu"
    return {"torch": version, "hip": hip, "cuda": cuda, "build": build}


def removal_effect(purge: dict[str, Any] | None, names: list[str]) -> str:
    """What apt's simulation (facts.apt ``PurgeDict``) says ``apt-get purge names`` would
    take along, as a sentence for a message that suggests it."""
    command = (
        f"apt-get -s purge {' '.join(names)}"
        if len(names) <= 6
        else f"apt-get -s purge of these {len(names)} packages"
    )
    if purge is None or purge["errors"]:
        why = "; ".join(purge["errors"]) if purge else "it did not run"
        return (
            f"apt could not work out what removing them takes along ({why}): "
            f"run apt-get -s purge {' '.join(names)}"
        )
    extra = sorted(set(purge["removes"]) - set(names))
    if extra:
        return f"{command} says it also removes {listed(extra, 'packages')}"
    return f"{command} says it removes nothing else"


def _nvidia(
    config: Config,
    survey: dict,
    problems: list[str],
    warnings: list[str],
    details: dict[str, list[str]],
) -> None:
    nvidia = nvidia_stack(survey.get("packages") or {}, survey.get("modules") or [])
    packages = nvidia.get("packages") or []
    if not packages and not nvidia.get("modules"):
        return
    # A CUDA host has dozens of them: the line names a few, the details all.
    what = listed(packages, "(pyinfra -v or rocm-fleet audit --json lists all)") or "none"
    if len(packages) > LISTED:
        details["NVIDIA packages"] = list(packages)
    modules = ", ".join(nvidia.get("modules") or []) or "none"
    simulated = (survey.get("nvidia_purge") or {}).get("purge")
    removal = f" ({removal_effect(simulated, packages)})" if packages else ""
    if config.rocm_migrate_from_cuda:
        # The migration purges with apt-get -y: never when apt says it takes along anything
        # that is not NVIDIA's (OpenMPI built against CUDA, a user's own tools), or can't say.
        unknown = simulated is None or bool(simulated["errors"])
        others = [] if unknown else [
            name for name in simulated["removes"] if name not in packages
            and not is_nvidia_package(name)
        ]  # fmt: skip
        if packages and (unknown or others):
            problems.append(
                f"rocm_migrate_from_cuda would purge NVIDIA's packages ({what}), but "
                f"{removal_effect(simulated, packages)}: the migration never removes more "
                "than NVIDIA's stack; deal with those yourself (remove them, or what makes "
                "them depend on NVIDIA's), then run again"
            )
            return
        warnings.append(
            f"NVIDIA stack present (packages: {what}); rocm_migrate_from_cuda: the deploy "
            f"purges them{removal}"
        )
    else:
        problems.append(
            f"NVIDIA driver/CUDA stack installed (packages: {what}; loaded modules: "
            f"{modules}): set rocm_migrate_from_cuda: true to remove it first, or purge it "
            f"yourself and reboot{removal}"
        )


def _distro_rocm(survey: dict, problems: list[str], warnings: list[str]) -> None:
    """The distribution's own ROCm packages (facts.apt.DistroRocmPackages): its programs
    that shadow AMD's on PATH and its packages named like AMD's stop the host; its
    libraries, under /usr apart from AMD's /opt/rocm, are left in place with a warning
    naming what needs them."""
    rocm = survey.get("distro_rocm")
    if not rocm:
        return
    packages = rocm["packages"]
    distro = ((survey.get("distro") or {}).get("id") or "the distribution").capitalize()
    conflicting = rocm["conflicting"]
    if conflicting:
        reasons = []
        for name in conflicting:
            shadowing = sorted(path for path, owner in rocm["tools"].items() if owner == name)
            why = (
                [f"{', '.join(shadowing)} would run instead of AMD's on PATH"] if shadowing else []
            )
            if name in AMD_PACKAGE_NAMES:
                why.append(
                    "AMD's package of that name is versioned lower, so its pin can't replace it"
                )
            reasons.append(f"{name} {packages[name]} ({'; '.join(why)})")
        problems.append(
            f"{distro}'s own ROCm tools are installed: {', '.join(reasons)}: remove them with "
            f"apt-get purge {' '.join(conflicting)} "
            f"({removal_effect(rocm['purge_conflicting'], conflicting)})"
        )
    kept = sorted(set(packages) - set(conflicting))
    if kept:
        listed = ", ".join(f"{name} {packages[name]}" for name in kept)
        warnings.append(
            f"{distro}'s own ROCm libraries are installed ({listed}): "
            f"{_needed_by(kept, rocm['needed_by'])}. They install under /usr, apart from "
            f"AMD's {paths.ROCM_ROOT}, and put none of AMD's programs on PATH, so they are left in "
            f"place ({removal_effect(rocm['purge_kept'], kept)})"
        )


def _needed_by(libraries: list[str], needed_by: dict[str, list[str]]) -> str:
    """Which installed packages need ``libraries``, e.g. "libucx0 needs libamdhip64-5 (and
    through it libamd-comgr2, libhsa-runtime64-1)"."""
    inside = set(libraries)
    roots = sorted({other for lib in libraries for other in needed_by.get(lib, [])} - inside)
    parts, reached = [], set()
    for root in roots:
        direct = sorted(lib for lib in libraries if root in needed_by.get(lib, []))
        through, frontier = set(), list(direct)
        while frontier:
            current = frontier.pop()
            for lib in libraries:
                if current in needed_by.get(lib, []) and lib not in through | set(direct):
                    through.add(lib)
                    frontier.append(lib)
        reached |= set(direct) | through
        part = f"{root} needs {', '.join(direct)}"
        if through:
            pronoun = "it" if len(direct) == 1 else "them"
            part += f" (and through {pronoun} {', '.join(sorted(through))})"
        parts.append(part)
    orphans = sorted(inside - reached)
    if orphans:
        parts.append(f"nothing installed needs {', '.join(orphans)}")
    return "; ".join(parts)


def _conflicts(
    config: Config,
    survey: dict,
    problems: list[str],
    warnings: list[str],
    details: dict[str, list[str]],
) -> None:
    migrate = config.rocm_migrate_from_cuda
    _nvidia(config, survey, problems, warnings, details)
    _distro_rocm(survey, problems, warnings)
    others = sorted(
        {
            f"{path} ({match.group(1)})"
            for path, line in survey.get("sources") or []
            if path not in OWN_SOURCES
            and (match := ROCM_APT_PATH.search(line))
            and match.group(1) != config.release.apt_path
        }
        | {
            f"{path} (ROCm Core SDK, {host})"
            for path, line in survey.get("sources") or []
            if path not in OWN_SOURCES
            and (host := next((h for h in _CORE_SDK_HOSTS if h in line), None))
        }
    )
    if others:
        problems.append(
            f"apt sources of another ROCm release: {', '.join(others)}: remove them (the "
            f"deploy writes {config.repository.source} for ROCm {config.release.version})"
        )
    torch = venv_torch(survey)
    build = torch["build"]
    if config.torch is not None and build in ("cuda", "cpu"):
        message = (
            f"{config.pytorch_venv} holds a {build.upper()} torch ({torch['torch']}): remove the "
            "venv (or set pytorch_venv to a new path) so the ROCm build goes into a clean one"
        )
        if migrate:
            warnings.append(message + "; rocm_migrate_from_cuda")
        else:
            problems.append(message + ", or set rocm_migrate_from_cuda: true")


_CORE_SDK_HOSTS = ("stable.repo.amd.com", "repo.amd.com")


def _stream_move(config: Config, survey: dict, warnings: list[str]) -> None:
    """Announce a move between streams, which the deploy carries out (repository.py,
    rocm.py): the other stream's packages, source, key and pin go before the release's
    come, as AMD asks ("If you have ROCm 7.2.4 or older installed, please uninstall it")."""
    stream = config.stream
    packages = survey.get("packages") or {}
    for other in matrix.STREAMS:
        if other is stream:
            continue
        found = sorted(f"{n} {v}" for n, v in packages.items() if other.owns(n, v))
        if found:
            shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
            warnings.append(
                f"moving from {other.title} ({shown}) to {stream.title} "
                f"{config.release.version}: the deploy purges them and removes that stream's "
                "source, key and pin first"
            )
