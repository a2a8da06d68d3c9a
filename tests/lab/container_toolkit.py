"""Double of AMD's container-toolkit apt repository on repo.radeon.com.

``https://repo.radeon.com/amd-container-toolkit/apt/`` with suites jammy and noble (component
main), signed with the lab key as the ROCm double is (AMD signs it with rocm.gpg.key), holding
one ``amd-container-toolkit`` package per suite: ``/usr/local/bin/amd-ctk`` and
``/usr/local/bin/amd-container-runtime`` as POSIX sh doubles (jq, which the real package
depends on, edits the JSON). Everything here comes from the record
``tests/fixtures/upstream/amd-container-toolkit.toml``, read from ROCm/container-toolkit
(commit 192fe8e); the behaviour each function copies is cited beside it.

Only AMD's part is doubled: the runtime double adds the GPUs' device nodes to the OCI bundle
the engine gives it, then execs the real ``runc``; the engines and CDI are Debian's own.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from . import amd_repo
from . import upstream_facts as facts
from ._util import run

PACKAGE = "amd-container-toolkit"
#: repo.radeon.com's suite -> the Ubuntu release in the package version (Makefile)
UBUNTU = {"jammy": "22.04", "noble": "24.04"}


def record() -> dict:
    return facts.load("amd-container-toolkit")


def version() -> str:
    return record()["package"]["version"]


def deb_version(suite: str) -> str:
    """``1.3.0~22.04``: the Makefile's BUILD_VER_ENV."""
    return record()["package"]["deb_version"].format(version=version(), ubuntu=UBUNTU[suite])


def base_path() -> str:
    """The repository's path on repo.radeon.com (``amd-container-toolkit/apt``)."""
    return record()["repository"]["url"].split("repo.radeon.com/", 1)[1].rstrip("/")


# --- amd-ctk ------------------------------------------------------------------------------

#: amd-ctk (cmd/amd-ctk): errors go to stdout with exit 1 (main.go: fmt.Printf("%v\n", err)).
AMD_CTK = Path(__file__).parent / "ctk" / "amd-ctk.sh"

#: amd-container-runtime (cmd/container-runtime/main.go, internal/runtime, internal/oci):
#: root only; on ``create`` the GPUs that AMD_VISIBLE_DEVICES (or DOCKER_RESOURCE_*) names are
#: added to the bundle's config.json (linux.devices and an allow rule each, then /dev/kfd);
#: then runc is exec'd with the same arguments.
AMD_CONTAINER_RUNTIME = Path(__file__).parent / "ctk" / "amd-container-runtime.sh"

_PREINST = """#!/bin/sh
# build/debian/DEBIAN/preinst of ROCm/container-toolkit: refuse a host without amdgpu
set -e
case "$1" in
    install|upgrade)
        echo "Checking for AMD GPU driver..."
        if [ ! -d "/sys/module/amdgpu/drivers/" ]; then
            echo "Error: AMD GPU driver (amdgpu) is not installed or loaded."
            echo "The AMD Container Toolkit requires the amdgpu driver to be installed and loaded."
            echo "Please install the AMD GPU driver before installing the container toolkit."
            exit 1
        fi
        echo "AMD GPU driver found."
        ;;
esac
exit 0
"""

_POSTINST = """#!/bin/sh
set -e
case "$1" in
    configure) /usr/local/bin/amd-ctk gpu-tracker init || true ;;
esac
exit 0
"""


def build_deb(suite: str, staging: Path, pool: Path) -> Path:
    """amd-container-toolkit_<version>~<ubuntu>_amd64.deb (control as the real package's)."""
    tree = staging / suite
    (tree / "DEBIAN").mkdir(parents=True)
    pkg = record()["package"]
    (tree / "DEBIAN/control").write_text(
        f"Package: {PACKAGE}\nPriority: optional\nSection: utils\nMaintainer: AMD Inc.\n"
        f"Architecture: amd64\nDescription: AMD Container Toolkit for Ubuntu\n"
        f"Version: {deb_version(suite)}\nDepends: {', '.join(pkg['depends'])}\n"
    )
    for name, body in (("preinst", _PREINST), ("postinst", _POSTINST)):
        (tree / "DEBIAN" / name).write_text(body)
        (tree / "DEBIAN" / name).chmod(0o755)
    bin_dir = tree / "usr/local/bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "amd-ctk").write_text(AMD_CTK.read_text().replace("@VERSION@", version()))
    (bin_dir / "amd-container-runtime").write_text(AMD_CONTAINER_RUNTIME.read_text())
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    out = pool / f"{PACKAGE}_{deb_version(suite)}_amd64.deb"
    run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", tree, out])
    return out


def build(www: Path, signer: amd_repo.Signer) -> Path:
    """``www``/amd-container-toolkit/apt: pool and signed suites (the record's)."""
    base = www / base_path()
    pool = base / "pool/main/a" / PACKAGE
    pool.mkdir(parents=True, exist_ok=True)
    suites = record()["repository"]["suites"]
    with tempfile.TemporaryDirectory(prefix="rflab-ctk-") as tmp:
        for suite in suites:
            build_deb(suite, Path(tmp), pool)
    packages = run(["apt-ftparchive", "packages", "pool/main"], cwd=base).stdout
    for suite in suites:
        mine = amd_repo._split_packages(packages, f"~{UBUNTU[suite]}")
        amd_repo.sign_suite(base / "dists" / suite, mine, signer, amd_repo.suite_fields(suite))
    return base
