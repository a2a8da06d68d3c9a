"""Doubles of the ROCm Core SDK's repositories: repo.amd.com/rocm/packages-multi-arch (7.14.x)
and stable.repo.amd.com/rocm/core/packages (10.x), signed apt repositories with small
packages at realistic names, versions and paths.

What follows the real repositories (read from the recorded upstream facts,
tests/fixtures/upstream/repo.amd.com.toml, not from the product's matrix): one flat
repository per distro directory (ubuntu2204 ... debian13),
suite ``stable``, component ``main``, holding every release's packages side by side;
Release files with Origin "AMD ROCm" and Label "ROCm release Packages" (TheRock's
build_package_repo.py; the pin the deploy writes names that Origin); package names with the
release's major.minor (``amdrocm10.1``, ``amdrocm10.1-gfx1100``, ``amdrocm-base10.1``) and
versions <X.Y.Z>-<build> with exact ``(= version)`` Depends (TheRock packaging_utils.py);
everything under /opt/rocm/core-X.Y; ``/opt/rocm/core``, ``/opt/rocm/core-<major>``,
``/opt/rocm/bin``, ``/opt/rocm/lib`` and ``/usr/bin/rocminfo`` as update-alternatives links
(TheRock amdrocm-core-postinst.j2); rocminfo in the base package; .info/version from
rocm-core. The keys: repo.amd.com's armored at packages-multi-arch/gpg/rocm.gpg;
stable.repo.amd.com's at rocm/gpg/packages.gpg as a binary key with an armored copy
appended, the form a third party measured there (matrix.py cites it).

Where the double is simpler than AMD's: one lab key signs every double (AMD signs the
classic and Core SDK repositories with different keys); the per-target packages carry a
stub kernel file each instead of the libraries; the alternatives are registered by one
package, ``amdrocm-core<X.Y>``, that every per-target package depends on (AMD registers
them from each per-target core package, so removing one of several would drop the links);
priorities are AMD's formula without its install-time minutes.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import profiles
from . import upstream_facts as facts
from ._util import clean_env, run
from .amd_repo import (
    _AGENT_ENUMERATOR,
    Release,
    Signer,
    dpkg_deb,
    rocminfo_script,
    sign_suite,
)

HOSTS = ("repo.amd.com", "stable.repo.amd.com")
_RECORD = facts.load("repo.amd.com")
ORIGIN = _RECORD["release_file"]["origin"]
LABEL = _RECORD["release_file"]["label"]
#: The per-distro directories (ubuntu2204 ... debian13).
DIRECTORIES = tuple(facts.core_directories().values())
#: The per-target packages amdrocm<X.Y>-<gfx>.
GFX_PACKAGES = facts.core_gfx_packages()


@dataclass(frozen=True)
class Repository:
    """One of the two Core SDK repositories as the record gives it."""

    name: str  # "multi-arch" or "stable"
    base_url: str  # without the per-distro directory
    key_url: str


REPOSITORIES = {
    name: Repository(name, row["url"].split("/{directory}")[0], row["key"])
    for name, row in _RECORD["repository"].items()
}
MULTI_ARCH_REPOSITORY = REPOSITORIES["multi-arch"]
STABLE_REPOSITORY = REPOSITORIES["stable"]


def repository_of(rel: Release) -> Repository:
    """The repository a release is published in (the record; a release it doesn't know,
    such as a drift release of 10.x, goes where the newest recorded one is)."""
    recorded = facts.core_releases()
    fact = recorded.get(rel.version) or list(recorded.values())[-1]
    return REPOSITORIES[fact.repository]


def major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def release_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def root(rel: Release) -> str:
    """/opt/rocm/core-X.Y (the record's package root)."""
    return _RECORD["packages"]["root"].format(ver=major_minor(rel.version))


def package_version(version: str) -> str:
    return f"{version}-{facts.core_build(version)}"


def host_of(repo: Repository) -> str:
    return repo.base_url.split("/")[2]


def base_dir(www: Path, repo: Repository) -> Path:
    """Where a repository's tree lives in the lab's www: <host>/<path of its base URL>."""
    path = repo.base_url.split("/", 3)[3]
    return www / host_of(repo) / path


@dataclass(frozen=True)
class Deb:
    name: str
    depends: tuple[str, ...] = ()
    files: tuple[tuple[str, str, int], ...] = ()  # (path, content, mode)
    postinst: str = ""
    prerm: str = ""
    description: str = ""


def _alternatives(rel: Release) -> tuple[str, str]:
    """postinst and prerm of amdrocm-core<X.Y>: TheRock's amdrocm-core-postinst.j2 and
    -prerm.j2 (the links they make, priority = f(major, minor, patch)), in POSIX sh."""
    major, minor, patch = release_key(rel.version)
    prefix = root(rel)
    score = (((major - 3) * 14 + minor) * 14 + patch) * 1_000_000
    links = [
        ("/opt/rocm/core", "core", prefix),
        (f"/opt/rocm/core-{major}", f"core-{major}", prefix),
        ("/opt/rocm/bin", "rocm-bin", f"{prefix}/bin"),
        ("/opt/rocm/lib", "rocm-lib", f"{prefix}/lib"),
        ("/usr/bin/rocminfo", "rocminfo", f"{prefix}/bin/rocminfo"),
        ("/usr/bin/rocm_agent_enumerator", "rocm_agent_enumerator",
         f"{prefix}/bin/rocm_agent_enumerator"),
    ]  # fmt: skip
    install = "\n".join(f"    update-alternatives --install {link} {name} {path} {score}"
                        for link, name, path in links)  # fmt: skip
    remove = "\n".join(f"    update-alternatives --remove {name} {path} || true"
                       for _link, name, path in links)  # fmt: skip
    postinst = f'#!/bin/sh\nset -e\nif [ "$1" = configure ]; then\n{install}\nfi\n'
    prerm = (
        "#!/bin/sh\nset -e\n"
        f'if [ "$1" = remove ] || [ "$1" = upgrade ] || [ "$1" = deconfigure ]; then\n'
        f"{remove}\nfi\n"
    )
    return postinst, prerm


def packages(rel: Release) -> list[Deb]:
    """The release's packages, dependencies first."""
    ver = major_minor(rel.version)
    root_ = root(rel).lstrip("/")
    stub = f"rocm-fleet lab double of ROCm Core SDK {rel.version}\n"
    enumerator = _AGENT_ENUMERATOR.replace("PROFILE_PATH", profiles.PROFILE_PATH)
    postinst, prerm = _alternatives(rel)
    sysdeps = Deb(
        f"amdrocm-sysdeps{ver}",
        files=((f"{root_}/lib/rocm_sysdeps/lib/librocm_sysdeps_liblzma.so.5", stub, 0o644),),
        description="ROCm system dependencies",
    )
    runtime = Deb(
        f"amdrocm-runtime{ver}",
        (sysdeps.name,),
        files=(
            (f"{root_}/lib/libamdhip64.so.7", stub, 0o644),
            (f"{root_}/lib/libhsa-runtime64.so.1", stub, 0o644),
        ),
        description="HIP and HSA runtimes",
    )
    base = Deb(
        f"amdrocm-base{ver}",
        (runtime.name,),
        files=(
            (f"{root_}/bin/rocminfo", rocminfo_script(rel), 0o755),
            (f"{root_}/bin/rocm_agent_enumerator", enumerator, 0o755),
            (f"{root_}/.info/version", package_version(rel.version) + "\n", 0o644),
        ),
        description="rocminfo, rocm-core",
    )
    core = Deb(
        f"amdrocm-core{ver}",
        (base.name, runtime.name),
        postinst=postinst,
        prerm=prerm,
        description="ROCm core (the /opt/rocm links)",
    )
    debs = [sysdeps, runtime, base, core]
    for gfx in GFX_PACKAGES:
        kernels = f"{root_}/lib/rocblas/library/TensileLibrary_lab_{gfx}.dat"
        per_target = Deb(
            f"amdrocm-core{ver}-{gfx}",
            (core.name,),
            files=((kernels, stub, 0o644),),
            description=f"ROCm core for {gfx}",
        )
        debs += [
            per_target,
            Deb(f"amdrocm{ver}-{gfx}", (per_target.name,), description=f"ROCm Base for {gfx}"),
        ]
    every = tuple(f"amdrocm{ver}-{gfx}" for gfx in GFX_PACKAGES)
    debs.append(Deb(f"amdrocm{ver}", every, description="ROCm Base, every GPU target"))
    return debs


def build_deb(deb: Deb, version: str, staging: Path, debs: Path) -> Path:
    tree = staging / deb.name
    (tree / "DEBIAN").mkdir(parents=True)
    depends = ", ".join(f"{name} (= {version})" for name in deb.depends)
    (tree / "DEBIAN" / "control").write_text(
        f"Package: {deb.name}\nVersion: {version}\nArchitecture: amd64\n"
        "Maintainer: ROCm Dev Support <rocm-dev.support@amd.com>\nSection: devel\n"
        "Priority: optional\nHomepage: https://github.com/ROCm/TheRock\n"
        + (f"Depends: {depends}\n" if depends else "")
        + f"Description: {deb.description} (rocm-fleet lab double)\n"
        " Built by the rocm-fleet test lab; not an AMD package.\n"
    )
    for script, body in (("postinst", deb.postinst), ("prerm", deb.prerm)):
        if body:
            (tree / "DEBIAN" / script).write_text(body)
            (tree / "DEBIAN" / script).chmod(0o755)
    for path, content, mode in deb.files or (
        (f"usr/share/doc/{deb.name}/README.lab", "rocm-fleet lab meta package\n", 0o644),
    ):
        target = tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        target.chmod(mode)
    out = debs / "main" / deb.name[0] / deb.name / f"{deb.name}_{version}_amd64.deb"
    out.parent.mkdir(parents=True, exist_ok=True)
    dpkg_deb(tree, out)
    return out


def build_release(rel: Release, debs: Path, meta_only: bool = False) -> None:
    """The release's .debs into ``debs`` (pool/ layout: main/<letter>/<name>/).
    ``meta_only``: just the all-targets meta package, for a catalog of releases that is
    read but never installed from."""
    packages_ = packages(rel)
    if meta_only:
        packages_ = [Deb(packages_[-1].name, (), description=packages_[-1].description)]
    with tempfile.TemporaryDirectory(prefix="rflab-core-") as tmp:
        for deb in packages_:
            build_deb(deb, package_version(rel.version), Path(tmp), debs)


FIELDS = {"Origin": ORIGIN, "Label": LABEL, "Suite": "stable", "Codename": "stable",
          "Description": "ROCm APT Repository"}  # fmt: skip


def publish(base: Path, debs: Path, signer: Signer, before: Path | None = None) -> None:
    """Each distro directory of ``base``: pool/ (the built .debs, hard links: TheRock's
    packages are the same for every distro) and dists/stable, signed. ``before``: a
    repository whose index this one extends (a drift overlay lists the repository's own
    packages, then its own)."""
    env = clean_env()
    for directory in DIRECTORIES:
        tree = base / directory
        tree.mkdir(parents=True, exist_ok=True)
        if not (tree / "pool").exists():
            run(["cp", "-al", debs, tree / "pool"])
        text = run(["apt-ftparchive", "packages", "pool"], cwd=tree, env=env).stdout
        if before is not None:
            index = before / directory / "dists/stable/main/binary-amd64/Packages"
            text = index.read_text() + text
        sign_suite(tree / "dists" / "stable", text, signer, FIELDS)


def write_keys(www: Path, signer: Signer) -> None:
    """repo.amd.com's key armored; stable.repo.amd.com's binary with an armored copy
    appended (the concatenation a third party found there; apt's gpgv can't read it as
    it is, which the deploy's key step must cope with)."""
    for repo, data in (
        (MULTI_ARCH_REPOSITORY, signer.armored_key().encode()),
        (STABLE_REPOSITORY, signer.binary_key() + signer.armored_key().encode()),
    ):
        key = www / repo.key_url.split("/", 2)[2]
        key.parent.mkdir(parents=True, exist_ok=True)
        key.write_bytes(data)


def build(www: Path, releases: list[Release], signer: Signer, catalog: list[Release] = ()) -> None:
    """Both repositories under www/<host>/: the packages of ``releases`` and, ``catalog``,
    the meta package of each other release (read by `rocm-fleet matrix check`)."""
    write_keys(www, signer)
    for repo in (MULTI_ARCH_REPOSITORY, STABLE_REPOSITORY):
        mine = [r for r in releases if repository_of(r) is repo]
        versions = {r.version for r in mine}
        listed = [r for r in catalog if repository_of(r) is repo and r.version not in versions]
        if not mine and not listed:
            continue
        with tempfile.TemporaryDirectory(prefix="rflab-core-debs-") as tmp:
            debs = Path(tmp)
            for rel in mine:
                build_release(rel, debs)
            for rel in listed:
                build_release(rel, debs, meta_only=True)
            publish(base_dir(www, repo), debs, signer)


def build_drift(www: Path, drift: Path, signer: Signer, release: Release) -> Path:
    """An overlay of stable.repo.amd.com whose indexes also list ``release`` (one the
    product's matrix doesn't know), for the lab's `plant_matrix_drift` to serve in front of
    the repository. Returns the overlay's root (the host's directory)."""
    with tempfile.TemporaryDirectory(prefix="rflab-core-drift-") as tmp:
        build_release(release, Path(tmp), meta_only=True)
        publish(base_dir(drift, STABLE_REPOSITORY), Path(tmp), signer,
                before=base_dir(www, STABLE_REPOSITORY))  # fmt: skip
    return drift / host_of(STABLE_REPOSITORY)
