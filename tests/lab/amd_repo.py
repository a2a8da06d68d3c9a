"""Double of repo.radeon.com: a signed apt repo with small packages at realistic versions.

Why a double: the lab has no internet.  Why realistic versions: the interesting deploy
bugs are about apt's version ordering (Debian's own rocminfo 5.2.3/6.1.2 outranks AMD's
1.0.0.<tag> unless AMD's pin is in place) and about upgrades between ROCm releases, so
package names, versions, Depends and the /opt/rocm-X.Y.Z layout follow the real repo.
The rocminfo double is POSIX sh (a host may have no python) and prints rocminfo's format
for the GPUs in the host's hardware profile (see profiles.py).

What it publishes comes from the recorded upstream facts (tests/fixtures/upstream/, read by
upstream_facts.py), not from the product's matrix: each release's rocm/apt folder, its
suites, its amdgpu driver folder, its package versions (where recorded; stand-ins otherwise)
and how AMD signed it. The signing key is made the way AMD's is: an RSA key whose only
binding signature was SHA-1 until AMD re-bound it with a modern hash (keys.toml); each
release is signed at its recorded signature time, so the releases AMD signed under the SHA-1
binding (6.x, 7.0.0, 7.0.1) are rejected by a trixie host's real apt (sqv) exactly as on
real hosts, and accepted by bookworm's gpgv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from . import profiles, rvs, smi
from . import upstream_facts as facts
from ._util import clean_env, run


class Release(Protocol):
    """What the doubles need of a release: its version (everything else is recorded)."""

    version: str


#: Ubuntu release per repo.radeon.com suite (Debian 12 takes jammy, 13 noble: the record).
DISTS = {"jammy": "22.04", "noble": "24.04"}

ORIGIN = "repo.radeon.com"
KEY_UID = "rocm-fleet lab ROCm repo double <rocm-lab@invalid>"


@dataclass(frozen=True)
class Package:
    name: str
    upstream: str  #: version before the numeric tag, e.g. "1.0.0" for rocminfo
    depends: tuple[str, ...] = ()
    description: str = ""


#: The classic stream's runtime packages (rocm-facts §3.5), smallest set a deploy uses.
PACKAGES = (
    Package("rocm-core", "{rel}", (), "ROCm core: version info and /opt/rocm link"),
    Package("hsa-rocr", "1.15.0", ("rocm-core",), "HSA runtime (double)"),
    Package("comgr", "3.0.0", ("rocm-core",), "Code object manager (double)"),
    Package(
        "rocm-language-runtime",
        "{rel}",
        ("comgr", "hsa-rocr", "rocm-core"),
        "ROCm language runtime meta package",
    ),
    Package("hip-runtime-amd", "{hip}", ("hsa-rocr", "comgr", "rocm-core"), "HIP runtime (double)"),
    Package("rocm-smi-lib", "7.7.0", ("rocm-core",), "ROCm SMI library (double)"),
    Package("rocminfo", "1.0.0", ("rocm-core", "hsa-rocr"), "ROCm agent info tool (double)"),
    Package(
        "rocm-hip-runtime",
        "{rel}",
        ("rocm-core", "rocm-language-runtime", "hip-runtime-amd", "rocminfo"),
        "ROCm HIP runtime meta package",
    ),
    # amd-smi: the real ``rocm`` pulls amd-smi-lib in through rocm-developer-tools
    Package("amd-smi-lib", "{rel}", ("rocm-core",), "AMD SMI library and CLI (double)"),
    Package(
        "rocm", "{rel}", ("rocm-hip-runtime", "rocm-smi-lib", "amd-smi-lib"), "ROCm meta package"
    ),
    # RVS in each classic release's repository (its install guide, docs-6.4.0); 1.1.0 is the
    # version its 6.4.3 documentation names, a stand-in for every release
    Package("rocm-validation-suite", "1.1.0", ("rocm-core",), "ROCm Validation Suite (double)"),
)


def build_number(rel: Release) -> int:
    """The recorded build of the release's packages (6.4.3: 128, 7.2.1: 81); 1 as a
    stand-in where none was recorded."""
    recorded = facts.classic_packages(rel.version)
    return recorded["build"] if recorded else 1


def numeric_tag(rel: Release) -> str:
    """AMD's tag in package versions, major*10000 + minor*100 + patch (6.4.3 -> 60403)."""
    major, minor, patch = (int(p) for p in rel.version.split("."))
    return str(major * 10000 + minor * 100 + patch)


def hip_patch(rel: Release) -> int:
    """HIP's patch number looks like 4xxxx (6.4.x -> 43482); a stable stand-in where the
    record has no hip-runtime-amd version."""
    major, minor = (int(p) for p in rel.version.split(".")[:2])
    return 40000 + (major * 100 + minor) * 5 % 10000


def upstream_version(pkg: Package, rel: Release) -> str:
    """The package's version before the tag: recorded for the release, else the stand-in."""
    recorded = facts.classic_packages(rel.version) or {}
    if pkg.name in recorded.get("upstream", {}):
        return recorded["upstream"][pkg.name]
    major, minor = rel.version.split(".")[:2]
    return pkg.upstream.format(rel=rel.version, hip=f"{major}.{minor}.{hip_patch(rel)}")


def deb_version(pkg: Package, rel: Release, dist: str) -> str:
    return f"{upstream_version(pkg, rel)}.{numeric_tag(rel)}-{build_number(rel)}~{DISTS[dist]}"


def rocm_core_version_string(rel: Release) -> str:
    """Content of /opt/rocm-X.Y.Z/.info/version, e.g. "6.4.3-128"."""
    return f"{rel.version}-{build_number(rel)}"


# --- rocminfo double -------------------------------------------------------------------

_ROCMINFO_HEAD = r"""#!/bin/sh
# rocminfo double (rocm-fleet lab).  Prints rocminfo's format for the GPUs listed in the
# host's hardware profile, one per line: gfx|marketing name|uuid|gcnArchName.
PROFILE=/PROFILE_PATH
GENERIC_ISA=GENERIC
if [ ! -s "$PROFILE" ]; then
    echo "ROCk module is NOT loaded, possibly no GPU devices"
    exit 1
fi
if [ -r /sys/module/amdgpu/version ]; then
    echo "ROCk module version $(cat /sys/module/amdgpu/version) is loaded"
else
    echo "ROCk module is loaded"
fi
if [ "$(id -u)" != 0 ] && ! id -nG | tr ' ' '\n' | grep -qx render; then
    echo "Unable to open /dev/kfd read-write: Permission denied"
    echo "$(id -un) is not member of \"render\" group, the default DRM access group." \
        "Users must be a member of the \"render\" group or another DRM access group" \
        "in order for ROCm applications to run successfully."
    exit 1
fi
p() { printf '%s%-25s%s\n' "$1" "$2" "$3"; }
# Label padded to 25 and value to 35 columns, as rocminfo.cc prints most fields.
pv() { printf '%s%-25s%-35s\n' "$1" "$2" "$3"; }
h() { printf '%-25s\n' "$1"; }
h "====================="
h "HSA System Attributes"
h "====================="
p "" "Runtime Version:" "1.15"
p "" "Runtime Ext Version:" "1.7"
p "" "System Timestamp Freq.:" "1000.000000MHz"
p "" "Sig. Max Wait Duration:" "18446744073709551615 (0xFFFFFFFFFFFFFFFF) (timestamp count)"
pv "" "Machine Model:" "LARGE"
pv "" "System Endianness:" "LITTLE"
p "" "Mwaitx:" "DISABLED"
p "" "XNACK enabled:" "NO"
p "" "DMAbuf Support:" "YES"
p "" "VMM Support:" "YES"
echo
h "=========="
h "HSA Agents"
h "=========="
h "*******"
h "Agent 1"
h "*******"
cpu="AMD EPYC 9654 96-Core Processor"
pv "  " "Name:" "$cpu"
pv "  " "Uuid:" "CPU-XX"
pv "  " "Marketing Name:" "$cpu"
pv "  " "Vendor Name:" "CPU"
pv "  " "Feature:" "None specified"
pv "  " "Profile:" "FULL_PROFILE"
pv "  " "Float Round Mode:" "NEAR"
pv "  " "Max Queue Number:" "0(0x0)"
pv "  " "Queue Min Size:" "0(0x0)"
pv "  " "Queue Max Size:" "0(0x0)"
pv "  " "Queue Type:" "MULTI"
pv "  " "Node:" "0"
pv "  " "Device Type:" "CPU"
pv "  " "Cache Info:" ""
pv "    " "L1:" "32768(0x8000) KB"
pv "  " "Chip ID:" "0(0x0)"
pv "  " "ASIC Revision:" "0(0x0)"
pv "  " "Cacheline Size:" "64(0x40)"
pv "  " "Max Clock Freq. (MHz):" "3700"
pv "  " "BDFID:" "0"
pv "  " "Internal Node ID:" "0"
pv "  " "Compute Unit:" "192"
pv "  " "SIMDs per CU:" "0"
pv "  " "Shader Engines:" "0"
pv "  " "Shader Arrs. per Eng.:" "0"
pv "  " "WatchPts on Addr. Ranges:" "1"
pv "  " "Memory Properties:" ""
p "  " "Features:" "None"
pv "  " "ISA Info:" ""
n=1
while IFS='|' read -r gfx name uuid arch; do
    [ -n "$gfx" ] || continue
    n=$((n + 1))
    h "*******"
    h "Agent $n"
    h "*******"
    p "  " "Name:" "$gfx"
    p "  " "Uuid:" "$uuid"
    p "  " "Marketing Name:" "$name"
    p "  " "Vendor Name:" "AMD"
    p "  " "Feature:" "KERNEL_DISPATCH"
    p "  " "Profile:" "BASE_PROFILE"
    p "  " "Float Round Mode:" "NEAR"
    p "  " "Max Queue Number:" "128(0x80)"
    p "  " "Queue Type:" "MULTI"
    p "  " "Node:" "$((n - 1))"
    p "  " "Device Type:" "GPU"
    p "  " "Cache Info:" ""
    p "    " "L1:" "32(0x20) KB"
    p "  " "Chip ID:" "29857(0x74a1)"
    p "  " "Internal Node ID:" "$((n - 1))"
    p "  " "Compute Unit:" "96"
    p "  " "Wavefront Size:" "32(0x20)"
    p "  " "Features:" "KERNEL_DISPATCH"
    p "  " "ISA Info:" ""
    p "    " "ISA 1" ""
    p "      " "Name:" "amdgcn-amd-amdhsa--$arch"
    if [ "$GENERIC_ISA" = yes ]; then
        case "$gfx" in
            gfx11*) generic=gfx11-generic ;;
            gfx103*) generic=gfx10-3-generic ;;
            gfx94*) generic=gfx9-4-generic ;;
            *) generic= ;;
        esac
        if [ -n "$generic" ]; then
            p "    " "ISA 2" ""
            p "      " "Name:" "amdgcn-amd-amdhsa--$generic"
        fi
    fi
done < "$PROFILE"
h "*** Done ***"
"""

_AGENT_ENUMERATOR = r"""#!/bin/sh
# rocm_agent_enumerator double (rocm-fleet lab): gfx000 for the CPU, then each GPU's target.
echo gfx000
[ -r /PROFILE_PATH ] || exit 0
while IFS='|' read -r gfx _rest; do
    [ -n "$gfx" ] && echo "$gfx"
done < /PROFILE_PATH
exit 0
"""


def rocminfo_script(rel: Release) -> str:
    """The fake rocminfo for a release (7.x also lists a generic ISA, like the real one)."""
    generic = "yes" if int(rel.version.split(".")[0]) >= 7 else "no"
    return _ROCMINFO_HEAD.replace("PROFILE_PATH", profiles.PROFILE_PATH).replace(
        "GENERIC_ISA=GENERIC", f"GENERIC_ISA={generic}"
    )


# --- packages ---------------------------------------------------------------------------


def _files(pkg: Package, rel: Release) -> dict[str, tuple[str, int]]:
    """path -> (content, mode) of each package's payload (paths relative to /)."""
    prefix = f"opt/rocm-{rel.version}"
    if pkg.name == "rocm-core":
        return {
            f"{prefix}/.info/version": (rocm_core_version_string(rel) + "\n", 0o644),
            f"{prefix}/.info/version-major": (rel.version.split(".")[0] + "\n", 0o644),
        }
    if pkg.name == "rocminfo":
        return {
            f"{prefix}/bin/rocminfo": (rocminfo_script(rel), 0o755),
            f"{prefix}/bin/rocm_agent_enumerator": (
                _AGENT_ENUMERATOR.replace("PROFILE_PATH", profiles.PROFILE_PATH),
                0o755,
            ),
        }
    if pkg.name == "amd-smi-lib":
        return {f"{prefix}/bin/amd-smi": (smi.AMD_SMI, 0o755)}
    if pkg.name == "rocm-validation-suite":
        conf = f"{prefix}/share/rocm-validation-suite/conf"
        return {
            f"{prefix}/bin/rvs": (rvs.RVS, 0o755),
            **{f"{conf}/{d}/gst_single.conf": (text, 0o644) for d, text in rvs.CONFS.items()},
        }
    libs = {
        "hsa-rocr": "libhsa-runtime64.so.1",
        "comgr": "libamd_comgr.so.3",
        "hip-runtime-amd": "libamdhip64.so.6",
        "rocm-smi-lib": "librocm_smi64.so.7",
    }
    if pkg.name in libs:
        return {f"{prefix}/lib/{libs[pkg.name]}": (f"{pkg.name} double {rel.version}\n", 0o644)}
    return {f"usr/share/doc/{pkg.name}/README.lab": ("rocm-fleet lab meta package\n", 0o644)}


def _scripts(pkg: Package, rel: Release) -> dict[str, str]:
    if pkg.name != "rocm-core":
        return {}
    opt = f"/opt/rocm-{rel.version}"
    # Like the real rocm-core: /opt/rocm is an alternative pointing at the newest release.
    postinst = f"""#!/bin/sh
set -e
if [ "$1" = configure ]; then
    update-alternatives --install /opt/rocm rocm {opt} {int(numeric_tag(rel))}
fi
"""
    prerm = f"""#!/bin/sh
set -e
if [ "$1" = remove ] || [ "$1" = upgrade ] || [ "$1" = deconfigure ]; then
    update-alternatives --remove rocm {opt} || true
fi
"""
    return {"postinst": postinst, "prerm": prerm}


def _control(pkg: Package, rel: Release, dist: str) -> str:
    deps = ", ".join(f"{d} (= {deb_version(_by_name(d), rel, dist)})" for d in pkg.depends)
    lines = [
        f"Package: {pkg.name}",
        f"Version: {deb_version(pkg, rel, dist)}",
        "Architecture: amd64",
        "Maintainer: ROCm Dev Support <rocm-dev.support@amd.com>",
        "Section: devel",
        "Priority: optional",
        "Homepage: https://github.com/RadeonOpenCompute/ROCm",
    ]
    if deps:
        lines.append(f"Depends: {deps}")
    lines.append(f"Description: {pkg.description}")
    lines.append(" Built by the rocm-fleet test lab; not an AMD package.")
    return "\n".join(lines) + "\n"


def _by_name(name: str) -> Package:
    return next(p for p in PACKAGES if p.name == name)


#: The time every double's .deb carries (its ar members, its files' mtimes clamped to it).
DEB_EPOCH = "1767225600"  # 2026-01-01


def dpkg_deb(tree: Path, out: Path) -> None:
    """``dpkg-deb --build``, reproducibly (SOURCE_DATE_EPOCH): a release's package is the same
    bytes in every lab, as AMD's are, so a root converged by one lab (converged.py) finds in
    the next lab's repository what its apt lists promise."""
    run(
        ["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", tree, out],
        env=clean_env(SOURCE_DATE_EPOCH=DEB_EPOCH),
    )


def build_deb(pkg: Package, rel: Release, dist: str, staging: Path, pool: Path) -> Path:
    tree = staging / f"{pkg.name}_{dist}_{rel.version}"
    debian = tree / "DEBIAN"
    debian.mkdir(parents=True)
    (debian / "control").write_text(_control(pkg, rel, dist))
    for name, body in _scripts(pkg, rel).items():
        (debian / name).write_text(body)
        (debian / name).chmod(0o755)
    for rel_path, (content, mode) in _files(pkg, rel).items():
        path = tree / rel_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        path.chmod(mode)
    out_dir = pool / pkg.name[0] / pkg.name
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{pkg.name}_{deb_version(pkg, rel, dist)}_amd64.deb"
    dpkg_deb(tree, out)
    return out


# --- repository -------------------------------------------------------------------------


#: When AMD's key was made (keys.toml: "pub rsa4096 2016-08-01").
KEY_CREATED = "20160801T000000"
#: When the double re-binds its key with SHA-256, standing in for AMD's re-binding, which the
#: record places between 2025-09-18 (still SHA-1 only) and 7.0.2's release on 2025-10-10.
MODERN_BINDING = datetime(2025, 10, 1, tzinfo=UTC)
MODERN_UID = "rocm-fleet lab AMD MLSE DevOps double <rocm-lab-modern@invalid>"


def _gpg_time(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y%m%dT%H%M%S")


class Signer:
    """A throwaway RSA key (3072 bits: AMD's is 4096; sqv's policy takes both, the binding
    hash is what matters) in a private GNUPGHOME, made like AMD's repo.radeon.com key: its
    first binding signature hashed with SHA-1 (``--cert-digest-algo SHA1`` at the key's
    creation), a second one with SHA-256 made at MODERN_BINDING. Signatures carry the time
    they are made for (``sign_release(when=...)``), so a verifier sees the binding that was
    valid then. close() stops its gpg-agent."""

    def __init__(self, home: Path, copy_of: Path | None = None):
        """A new key in ``home``; or, with ``copy_of`` (a GNUPGHOME a Signer made), that key
        copied into ``home`` (the lab's cached identity: converged roots trust it)."""
        self.home = home
        self.env = clean_env(GNUPGHOME=str(home))
        if copy_of is not None:
            shutil.copytree(copy_of, home, ignore=shutil.ignore_patterns("S.*", "*.lock"))
            home.chmod(0o700)
        else:
            home.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._gpg(
                "--faked-system-time", KEY_CREATED, "--cert-digest-algo", "SHA1",
                "--quick-gen-key", KEY_UID, "rsa3072", "sign", "never",
            )  # fmt: skip
        out = self._gpg("--with-colons", "--list-secret-keys").stdout
        self.fingerprint = next(
            line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:")
        )
        if copy_of is None:
            self._gpg(
                "--faked-system-time", _gpg_time(MODERN_BINDING), "--cert-digest-algo",
                "SHA256", "--quick-add-uid", self.fingerprint, MODERN_UID,
            )  # fmt: skip

    def _gpg(self, *args: str | Path) -> subprocess.CompletedProcess[str]:
        return run(
            ["gpg", "--batch", "--yes", "--pinentry-mode", "loopback", "--passphrase", "", *args],
            env=self.env,
        )

    def armored_key(self) -> str:
        return self._gpg("--armor", "--export", self.fingerprint).stdout

    def binary_key(self) -> bytes:
        return subprocess.run(
            ["gpg", "--batch", "--export", self.fingerprint],
            env=self.env, capture_output=True, check=True,
        ).stdout  # fmt: skip

    def sign_release(self, dist_dir: Path, when: datetime | None = None) -> None:
        """InRelease and Release.gpg for dist_dir/Release, signed at ``when`` (default now)."""
        release = dist_dir / "Release"
        at = ["--faked-system-time", _gpg_time(when)] if when else []
        common = [*at, "--digest-algo", "SHA256", "--local-user", self.fingerprint]
        self._gpg(*common, "--clearsign", "-o", dist_dir / "InRelease", release)
        self._gpg(*common, "-abs", "-o", dist_dir / "Release.gpg", release)

    def close(self) -> None:
        subprocess.run(
            ["gpgconf", "--kill", "all"],
            env=self.env,
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


def _split_packages(text: str, suffix: str) -> str:
    stanzas = [s for s in text.strip().split("\n\n") if s]
    keep = [
        s
        for s in stanzas
        if any(line.startswith("Version:") and line.endswith(suffix) for line in s.splitlines())
    ]
    return "\n\n".join(keep) + "\n"


def is_classic(rel: Release) -> bool:
    return rel.version in facts.classic_releases()


def signed_at(rel: Release) -> datetime | None:
    """When AMD signed the release's repositories (the record); None (now) for the Core SDK
    and for releases the record doesn't know (a drift release)."""
    fact = facts.classic_releases().get(rel.version)
    return fact.signature_time if fact else None


def folder(rel: Release) -> str:
    """The release's directory under rocm/apt (the record)."""
    return facts.classic_releases()[rel.version].folder


def build_release_repo(www: Path, rel: Release, signer: Signer) -> Path:
    """Build rocm/apt/<folder>/ for one ROCm release; returns that directory."""
    base = www / "rocm" / "apt" / folder(rel)
    pool = base / "pool" / "main"
    suites = classic_suites(rel)
    with tempfile.TemporaryDirectory(prefix="rflab-debs-") as tmp:
        for dist in suites:
            for pkg in PACKAGES:
                build_deb(pkg, rel, dist, Path(tmp), pool)
    env = clean_env()
    publish_dists(
        base, env, signer, lambda ubuntu: f"~{ubuntu}", version=rel.version, suites=suites,
        when=signed_at(rel),
    )  # fmt: skip
    return base


def classic_suites(rel: Release) -> list[str]:
    """The suites the release's rocm/apt folder serves (the record: jammy, noble from 6.2)."""
    return sorted(set(facts.classic_suites(rel.version).values()))


def build(www: Path, releases: list[Release], signer: Signer, catalog: bool = False) -> None:
    """The repo.radeon.com double under www: the key, each classic release's repository
    with packages, the amdgpu driver repository of every release (classic and Core SDK)
    with its amdgpu-dkms double, and the listing of rocm/apt/. With ``catalog``, every
    other recorded release is published too, signed but without packages (``rocm-fleet
    matrix check`` reads each suite's InRelease, never installs from them)."""
    (www / "rocm").mkdir(parents=True, exist_ok=True)
    (www / "rocm" / "rocm.gpg.key").write_text(signer.armored_key())
    for rel in releases:
        if is_classic(rel):
            build_release_repo(www, rel, signer)
        build_amdgpu_repo(www, rel, signer)
    if catalog:
        built = {rel.version for rel in releases}
        recorded = [*facts.classic_releases().values(), *facts.core_releases().values()]
        for rel in recorded:
            if rel.version in built:
                continue
            if is_classic(rel):
                for suite in classic_suites(rel):
                    dist_dir = www / "rocm/apt" / folder(rel) / "dists" / suite
                    sign_suite(dist_dir, "", signer, suite_fields(suite, rel.version),
                               signed_at(rel))  # fmt: skip
            version = driver_folder(rel)
            if version and not (www / "amdgpu" / version).exists():
                for suite in driver_suites(rel):
                    dist_dir = www / "amdgpu" / version / "ubuntu" / "dists" / suite
                    sign_suite(dist_dir, "", signer, suite_fields(suite), signed_at(rel))
    write_listing(www / "rocm" / "apt")


def write_listing(directory: Path) -> None:
    """An index.html naming the directory's subdirectories, the way repo.radeon.com's web
    server lists rocm/apt/ (Apache's "Index of": one <a href="NAME/"> per entry)."""
    names = sorted(p.name for p in directory.iterdir() if p.is_dir()) if directory.is_dir() else []
    rows = "".join(f'<a href="{name}/">{name}/</a>\n' for name in names)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "index.html").write_text(
        f"<html>\n<head><title>Index of /rocm/apt/</title></head>\n<body>\n"
        f'<h1>Index of /rocm/apt/</h1><hr><pre><a href="../">../</a>\n{rows}</pre><hr>'
        "</body>\n</html>\n"
    )


# --- amdgpu driver repository double (amdgpu/<version>/ubuntu) ------------------------------

#: Stand-in version of the amdgpu-dkms double: <kernel-driver base>.<ROCm tag>-<build>.<ubuntu>,
#: the shape of AMD's versions; the numbers are the lab's, not AMD's.
AMDGPU_DKMS_UPSTREAM = "6.12.12"

_DKMS_POSTINST = """#!/bin/sh
# amdgpu-dkms double (rocm-fleet lab): AMD's package runs `dkms install` for every kernel
# with headers; the lab can't build the real module, so it records a stub per kernel,
# "signed" with the DKMS key when one exists, as DKMS >= 3.0.4 signs what it builds.
set -e
if [ "$1" = configure ]; then
    for build in /lib/modules/*/build /usr/src/linux-headers-*; do
        [ -e "$build" ] || continue
        k=${build#/usr/src/linux-headers-}; k=${k#/lib/modules/}; k=${k%/build}
        case "$k" in *-common|*-common-*) continue ;; esac
        mkdir -p "/lib/modules/$k/updates/dkms"
        signer=none; [ -e /var/lib/dkms/mok.pub ] && signer="DKMS module signing key"
        printf 'amdgpu-dkms double for %s\nsigner: %s\n' "$k" "$signer" \\
            > "/lib/modules/$k/updates/dkms/amdgpu.ko"
        # a signed module ends with the kernel's marker (module_signature.h)
        [ "$signer" = none ] || printf '~Module signature appended~\n' \\
            >> "/lib/modules/$k/updates/dkms/amdgpu.ko"
    done
fi
"""


#: Ubuntu release per repo.radeon.com suite (the driver repository serves 26.04 too).
UBUNTU = {**DISTS, "resolute": "26.04"}


def driver_suites(rel: Release) -> list[str]:
    """The suites the release's driver repository serves (the record): a classic release's
    own suites, the Core SDK's driver_suites."""
    if is_classic(rel):
        return classic_suites(rel)
    return sorted(facts.load("repo.amd.com")["driver"]["suites"])


def driver_folder(rel: Release) -> str | None:
    """amdgpu/<folder>/ubuntu of the release's driver (the record); None when unknown."""
    classic = facts.classic_releases().get(rel.version)
    if classic:
        return classic.driver_folder
    core = facts.core_releases().get(rel.version)
    return (core.driver_folder or None) if core else None


def amdgpu_dkms_version(rel: Release, dist: str) -> str:
    return f"1:{AMDGPU_DKMS_UPSTREAM}.{numeric_tag(rel)}-{build_number(rel)}.{UBUNTU[dist]}"


def build_amdgpu_repo(www: Path, rel: Release, signer: Signer) -> Path | None:
    """amdgpu/<version>/ubuntu with an `amdgpu-dkms` double, same key and Origin as the ROCm
    repo (so AMD's pin covers it), signed when the release was; the directory and suites
    from the record."""
    version = driver_folder(rel)
    if version is None:
        return None
    base = www / "amdgpu" / version / "ubuntu"
    if base.exists():
        return base  # two releases of one driver (7.14.0 and 7.14.1: 31.40.1)
    pool = base / "pool" / "main" / "a" / "amdgpu-dkms"
    pool.mkdir(parents=True, exist_ok=True)
    env = clean_env()
    suites = driver_suites(rel)
    with tempfile.TemporaryDirectory(prefix="rflab-dkms-") as tmp:
        for dist in suites:
            tree = Path(tmp) / dist
            (tree / "DEBIAN").mkdir(parents=True)
            ver = amdgpu_dkms_version(rel, dist)
            (tree / "DEBIAN" / "control").write_text(
                "Package: amdgpu-dkms\n"
                f"Version: {ver}\n"
                "Architecture: all\n"
                "Maintainer: Advanced Micro Devices (AMD) <gpudriverdevsupport@amd.com>\n"
                "Section: misc\n"
                "Priority: optional\n"
                "Description: amdgpu driver in DKMS format (rocm-fleet lab double)\n"
                " Built by the rocm-fleet test lab; not an AMD package.\n"
            )
            postinst = tree / "DEBIAN" / "postinst"
            postinst.write_text(_DKMS_POSTINST)
            postinst.chmod(0o755)
            src = tree / "usr" / "src" / f"amdgpu-{AMDGPU_DKMS_UPSTREAM}-{numeric_tag(rel)}"
            src.mkdir(parents=True)
            (src / "dkms.conf").write_text(
                f'PACKAGE_NAME="amdgpu"\nPACKAGE_VERSION="{AMDGPU_DKMS_UPSTREAM}"\n'
            )
            out = pool / f"amdgpu-dkms_{ver.split(':', 1)[1]}_{dist}_all.deb"
            dpkg_deb(tree, out)
    publish_dists(base, env, signer, lambda ubuntu: f".{ubuntu}", suites=suites,
                  when=signed_at(rel))  # fmt: skip
    return base


def publish_dists(
    base: Path,
    env,
    signer,
    marker,
    version: str | None = None,
    suites: list[str] | None = None,
    when: datetime | None = None,
) -> None:
    """Per suite: the Packages of pool/main whose version carries ``marker(ubuntu)``, a
    Release with Origin/Label repo.radeon.com (so AMD's pin applies), signed at ``when``."""
    all_packages = run(["apt-ftparchive", "packages", "pool/main"], cwd=base, env=env).stdout
    for dist in suites or list(DISTS):
        packages = _split_packages(all_packages, marker(UBUNTU[dist]))
        sign_suite(base / "dists" / dist, packages, signer, suite_fields(dist, version), when)


def suite_fields(suite: str, version: str | None = None) -> dict[str, str]:
    """The Release fields of a repo.radeon.com suite (fact sheet §3.2: Origin and Label
    repo.radeon.com, what AMD's pin names)."""
    fields = {"Origin": ORIGIN, "Label": ORIGIN, "Suite": suite, "Codename": suite}
    return {**fields, **({"Version": version} if version else {})}


def sign_suite(
    dist_dir: Path,
    packages: str,
    signer: Signer,
    fields: dict[str, str],
    when: datetime | None = None,
) -> None:
    """dists/<suite>/: main/binary-amd64/Packages(.gz) holding ``packages``, a Release with
    ``fields`` and the hashes of both, signed at ``when`` (InRelease, Release.gpg)."""
    binary = dist_dir / "main" / "binary-amd64"
    binary.mkdir(parents=True, exist_ok=True)
    (binary / "Packages").write_text(packages)
    run(["gzip", "-9knf", binary / "Packages"])
    conf = "APT::FTPArchive::Release"
    opts = [f"-o{conf}::{key}={value}" for key, value in fields.items()]
    opts += [f"-o{conf}::Architectures=amd64", f"-o{conf}::Components=main"]
    # Written to a temp file: "release DIR > DIR/Release" would list Release in itself.
    release = run(["apt-ftparchive", *opts, "release", dist_dir], env=clean_env()).stdout
    tmp_release = dist_dir.parent / f".Release-{dist_dir.name}"
    tmp_release.write_text(release)
    os.replace(tmp_release, dist_dir / "Release")
    signer.sign_release(dist_dir, when)
