"""Preflight's rules, pure: problems (each with its fix; they refuse the host) and warnings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from rocm_fleet.model import apu, gpu_targets, matrix, paths, streams
from rocm_fleet.model.conflicts import conflicts
from rocm_fleet.model.host_survey import (
    Found,
    HostSurvey,
    apu_note,
    gpu_mismatch,
    gpus_found,
    other_pci,
    vf_note,
)
from rocm_fleet.model.kernels import dkms_range_findings, family_kernel_note, kernel_findings
from rocm_fleet.model.sources import HostNeeds, amdgpu_repository, host_needs
from rocm_fleet.model.versions import kernel_key, release_key

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


@dataclass
class Findings(Found):
    """A host's ``Found``, its matrix row (None when refused) and GPU targets."""

    row: matrix.Distro | None = None
    gpus: list[str | None] = field(default_factory=list)  # None: a device the matrix can't name


class BundleFiles(Protocol):
    """A bundle on the controller's disk, read by the caller."""

    def incomplete(self, bundle: str) -> list[str]: ...

    def missing(self, bundle: str, needs: HostNeeds) -> list[str]: ...


def findings(
    config: Config, survey: HostSurvey, bundle_files: BundleFiles | None = None
) -> Findings:
    """Problems and warnings for a host; ``bundle_files`` (None: unchecked) reads the bundle."""
    row, found = _distro(config, survey)
    gpus = [gpu["gfx"] for gpu in gpus_found(survey)]
    if bundle_files is not None and row is not None and config.release.publication(row) is not None:
        found += _bundle(config, row, gpus, bundle_files)
    found += _system(survey)
    found += _gpus(config, survey)
    notes = (vf_note(gpu, row.key if row else None) for gpu in gpus_found(survey))
    found += Found(warnings=list(dict.fromkeys(n for n in notes if n)))  # one per SR-IOV VF
    found += apu.findings(config, survey)
    if row is not None:
        found += _kernel(row, survey)
        note = family_kernel_note(
            config, row.key, survey.kernel or "", survey.packages or {},
            config.expected_gfx_list or [g for g in gpus if g],
        )  # fmt: skip
        found += Found(warnings=[note] if note else [])
        found += Found(*dkms_range_findings(config, row.key, survey.kernel or ""))
        found += _plan_time(config, row, survey)
    found += _users(config, survey)
    found += _disk(config, survey)
    found += conflicts(config, survey)
    found += _stream_move(config, survey)
    found += _plain_mirror(config)
    problems = found.problems
    return Findings(problems, found.warnings, found.details, row if not problems else None, gpus)


def _distro(config: Config, survey: HostSurvey) -> tuple[matrix.Distro | None, Found]:
    found = Found()
    problems, warnings = found.problems, found.warnings
    if (arch := survey.arch) != "amd64":
        problems.append(
            f"architecture is {arch or 'unknown'}; AMD publishes ROCm for amd64 only: "
            "use an x86-64 machine"
        )
    distro = survey.distro or {}
    distro_id, version_id = distro.get("id") or "", distro.get("version_id") or ""
    row = matrix.distro(distro_id, version_id)
    rel = config.release
    if row is None and config.rocm_distro_override:
        row = matrix.distro(distro_id, version_id, config.rocm_distro_override)
        warnings.append(
            f"{distro_id} {version_id} is not in the matrix; deploying it as {row.key} "
            "(rocm_distro_override): unofficial"
        )
    elif row is None:
        problems.append(
            f"{distro_id or 'unknown'} {version_id} is not supported "
            f"({', '.join(matrix.DISTRO_KEYS)}): "
            "upgrade the host to one of them, or set rocm_distro_override to the one it "
            "is built on"
        )
        return None, found
    support = rel.support(row)
    if support is None:
        publishers = ", ".join(
            f"{stream.title} {pub.first_release} and newer"
            for stream in streams.STREAMS
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
        targets = config.expected_gfx_list
        if unlisted := [g for g in targets if gpu_targets.gpu_target(g) and not pub.lists(g)]:
            warnings.append(
                f"AMD lists {row.key} for {pub.listed_text} only; {', '.join(unlisted)} on it "
                "is unofficial"
            )
    return row, found


def _bundle(config: Config, row: matrix.Distro, gpus: list, bundle_files: BundleFiles) -> Found:
    """The fleet mirror's bundle must hold everything this host will fetch."""
    found, mirror = Found(), config.mirror
    if mirror is None or not mirror.bundle:
        return found
    if broken := bundle_files.incomplete(mirror.bundle) if mirror.serves else []:
        found.problems.append(
            f"the bundle {mirror.bundle} this host is to serve is incomplete ({len(broken)} "
            f"file(s) its manifest lists are missing or cut short: {', '.join(broken[:5])}): "
            f"run `rocm-fleet bundle INVENTORY --output {mirror.bundle}` again"
        )
    if gaps := bundle_files.missing(mirror.bundle, host_needs(config, row, gpus)):
        found.problems.append(
            f"the fleet mirror's bundle {mirror.bundle} lacks what this host needs: "
            f"{'; '.join(gaps)}: run `rocm-fleet bundle INVENTORY --output {mirror.bundle}` "
            "again with this inventory, then deploy"
        )
    return found


def _plain_mirror(config: Config) -> Found:
    mirror = config.mirror
    if mirror is None or mirror.tls:
        return Found()
    warning = (
        f"the fleet mirror {mirror.url} is plain HTTP: integrity rests on AMD's signatures "
        "and pinned hashes alone; `rocm-fleet mirror-ca` and rocm_mirror_tls_ca/_cert/_key "
        "give it TLS"
    )
    return Found(warnings=[warning])


def _system(survey: HostSurvey) -> Found:
    problems: list[str] = []
    if survey.wsl or "microsoft" in (survey.kernel or "").lower():
        problems.append(
            "this is WSL: ROCm on WSL is a different stack (AMD's WSL driver and "
            "runtime, installed from Windows); deploy to a Linux host instead"
        )
    identity = survey.identity or {}
    if identity.get("uid") != 0:
        problems.append(
            f"connected as {identity.get('user') or 'an unknown user'} "
            f"(uid {identity.get('uid')}), "
            "not root: set _sudo: True (with passwordless sudo or _sudo_password) in the "
            "inventory, or connect as root"
        )
    return Found(problems)


def _gpus(config: Config, survey: HostSurvey) -> Found:
    warnings: list[str] = []
    if config.expected_gpu_count == 0 and config.expected_gfx_list:
        warnings.append(
            f"expected_gfx is {'/'.join(config.expected_gfx_list)} but expected_gpu_count is "
            "0: no GPU is checked or verified (expected_gfx only picks the kernel and the "
            "Core SDK's packages); drop expected_gpu_count for a host with the GPU"
        )
    found = gpus_found(survey)
    if mismatch := gpu_mismatch(config, found, other_pci(survey)):
        return Found([mismatch], warnings)
    for gpu in found:
        target = gpu_targets.gpu_target(gpu["gfx"] or "")
        if target is not None and target.family == "ryzen":
            warnings.append(apu_note(gpu, target))
    for gfx in sorted({g["gfx"] for g in found if g["gfx"]}):
        listed = config.release.lists_gpu(gfx)
        wanted = not config.expected_gfx_list or gfx in config.expected_gfx_list
        if wanted and not listed:
            warnings.append(f"AMD does not list {gfx} for ROCm {config.release.version}")
    return Found(warnings=warnings)


def _plan_time(config: Config, row: matrix.Distro, survey: HostSurvey) -> Found:
    """Problems that would otherwise stop the run halfway."""
    problems = []
    if config.rocm_driver == "dkms" and amdgpu_repository(config, row) is None:
        known = [r.version for r in matrix.RELEASES if matrix.amdgpu_repo_version(r) is not None]
        newest = max(known, key=release_key) if known else None
        problems.append(
            f"rocm_driver: dkms, but the matrix does not record which amdgpu driver ROCm "
            f"{config.release.version} ships ({matrix.missing_driver(config.release)}), so "
            "there is no driver repository to use: set "
            "rocm_driver: inbox, or a rocm_version whose driver is known"
            + (f" (the newest is {newest})" if newest else "")
        )
    newer, _, _ = kernel_findings(config, row.key, survey.kernel or "", survey.packages or {})
    no_mirror = not config.rocm_kernel_backports_mirror and not survey.mirror
    if newer is not None and newer.kind == "backports" and newer.suite and no_mirror:
        problems.append(
            f"a newer kernel from {newer.suite} is needed, but no Debian mirror is named in "
            f"{' or '.join(paths.DEBIAN_SOURCES)} to add it from: set "
            "rocm_kernel_backports_mirror (e.g. 'http://deb.debian.org/debian'), or "
            "rocm_kernel_backports: never"
        )
    return Found(problems) + _secure_boot(config, row, survey)


def _secure_boot(config: Config, row: matrix.Distro, survey: HostSurvey) -> Found:
    """With DKMS and Secure Boot: a signing key the firmware blocks or mokutil can't read."""
    secure = (survey.secure_boot or {}).get("state") == "enabled"
    if config.rocm_driver != "dkms" or not secure:
        return Found()
    cert = paths.MOK_KEYS[row.id][0]
    state = (survey.mok.get(cert) or {}).get("state")
    pending = (survey.mok_pending.get(cert) or {}).get("pending")
    if state == "blocked":
        return Found([
            f"the DKMS signing key {cert} is blocked by the firmware (dbx/MokListX), so the "
            "driver signed with it would not load: move it and its private key aside so a new "
            "one is made, then deploy"
        ])  # fmt: skip
    if state not in (None, "enrolled", "pending", "not_enrolled", "missing") and not pending:
        return Found([
            f"cannot tell whether the DKMS signing key {cert} is enrolled (mokutil says "
            f"{state}): check `mokutil --test-key {cert}` on the host"
        ])  # fmt: skip
    return Found()


def _users(config: Config, survey: HostSurvey) -> Found:
    """Every user of rocm_users must exist (the deploy never creates one)."""
    users = (survey.groups or {}).get("users") or {}
    absent = [user for user in config.rocm_users if user in users and users[user] is None]
    if not absent:
        return Found()
    them = "them" if len(absent) > 1 else "it"
    return Found([
        f"rocm_users names {', '.join(absent)}, not a user on this host: create {them} first "
        f"(the deploy adds users to video and render, it never creates one), or take {them} "
        "out of rocm_users"
    ])  # fmt: skip


def _kernel(row: matrix.Distro, survey: HostSurvey) -> Found:
    minimum = matrix.MIN_KERNEL.get(row.key)
    running = survey.kernel or ""
    if minimum and kernel_key(running) < kernel_key(minimum):
        return Found([
            f"kernel {running} is older than {minimum}, the one AMD lists for {row.key}: "
            "install the distribution's current kernel and reboot"
        ])  # fmt: skip
    return Found()


def _disk(config: Config, survey: HostSurvey) -> Found:
    need = survey.apt.need if survey.apt else None
    source = "what apt says the ROCm packages need"
    if need is None:
        need = config.preflight_min_free_gb * 10**9
        source = "preflight_min_free_gb, as apt can't size AMD's packages before their source"
    short, problems = {}, []
    for entry in survey.disk or []:
        if entry["avail"] < need:
            short.setdefault(entry["mount"], (entry["avail"], []))[1].append(entry["path"])
    for mount, (avail, where) in short.items():
        problems.append(
            f"not enough free space on {mount} (for {', '.join(where)}): "
            f"{avail / 10**9:.2f} GB free, {need / 10**9:.2f} GB needed ({source}): "
            "free some space or grow the filesystem"
        )
    return Found(problems)


def _stream_move(config: Config, survey: HostSurvey) -> Found:
    """A warning announcing a move between streams, which the deploy carries out."""
    stream, packages, warnings = config.stream, survey.packages or {}, []
    for other in streams.STREAMS:
        found = sorted(f"{n} {v}" for n, v in packages.items() if other.owns(n, v))
        if found and other is not stream:
            shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
            warnings.append(
                f"moving from {other.title} ({shown}) to {stream.title} "
                f"{config.release.version}: the deploy purges them and removes that stream's "
                "source, key and pin first"
            )
    return Found(warnings=warnings)
