"""``rocm-fleet bundle``'s parts: Debian versions, the signed repository and its install
closure, the wheel index and its resolution, resumable downloads, and a whole bundle made
from a signed repository and a wheel index on a loopback server (made, verified, made again,
pruned, checked against what hosts need)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import re
import zipfile
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from rocm_fleet.model.matrix import HOST_RUNTIMES, HostRuntime
from rocm_fleet.model.sources import AptNeed, AptRepository, HostNeeds, SigningKey, WheelNeed
from rocm_fleet.model.versions import compare_debian_versions
from rocm_fleet.upstream.aptrepo import (
    Index,
    Relation,
    RepositoryError,
    install_closure,
    parse_relations,
    parse_stanzas,
)
from rocm_fleet.upstream.progress import DownloadProgress
from rocm_fleet.upstream.resolution import Target, manylinux_platforms, resolve
from rocm_fleet.upstream.wheels import Link, ResolutionError, parse_page
from unit.gpgkeys import Gpg, run_gpg
from unit.loopback import serve_trusted

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PACKAGES = (FIXTURES / "apt" / "rocm-6.4.3-jammy-Packages").read_text()


# --- Debian versions ---------------------------------------------------------------------------

# Each pair as `dpkg --compare-versions A lt B` orders it (dpkg 1.21, Debian 12).
ORDERED = [
    ("1.0~rc1", "1.0"),
    ("1.0", "1.0-1"),
    ("1.0-1", "1.0a"),
    ("1.0a", "1.0+"),
    ("1.0.0.60403-128~22.04", "1.0.0.60403-128~24.04"),
    ("1.0.0.60403-128~24.04", "1.0.0.70201-81~22.04"),
    ("1.0.0.60403-128~22.04", "5.2.3-2"),  # why Debian's rocminfo wins without AMD's pin
    ("2.36-9+deb12u9", "2.36-9+deb12u14"),
    ("9", "10"),
    ("1:0.9", "2:0.1"),
    ("6.12.12.60403-128.22.04", "1:0.1"),
    ("1.0-1~bpo12+1", "1.0-1"),
]


@pytest.mark.parametrize(("older", "newer"), ORDERED)
def test_debian_versions_order_as_dpkg_does(older, newer):
    assert compare_debian_versions(older, newer) == -1
    assert compare_debian_versions(newer, older) == 1
    assert compare_debian_versions(older, older) == 0


# --- a signed repository -----------------------------------------------------------------------


def test_relations_with_alternatives_versions_and_qualifiers():
    assert parse_relations("a (>= 1.0), b | c:any (<< 2), d [amd64] <!nocheck>, e (> 3)") == [
        [Relation("a", ">=", "1.0")],
        [Relation("b"), Relation("c", "<<", "2")],
        [Relation("d")],
        [Relation("e", ">=", "3")],  # dpkg's old ">" is ">="
    ]
    (clause,) = parse_relations("rocm-core (= 6.4.3.60403-128~22.04)")
    assert (clause[0].name, clause[0].op, clause[0].version) == (
        "rocm-core", "=", "6.4.3.60403-128~22.04"
    )  # fmt: skip


def test_install_closure_follows_depends_and_recommends_within_the_repository():
    index = Index(parse_stanzas(PACKAGES))
    closure = install_closure(index, ["rocm-hip-runtime"], "AMD 6.4.3 jammy")
    names = {p.name: p.version for p in closure}
    assert names == {
        "rocm-hip-runtime": "6.4.3.60403-128~22.04",
        "rocm-core": "6.4.3.60403-128~22.04",
        "rocm-language-runtime": "6.4.3.60403-128~22.04",
        "comgr": "3.0.0.60403-128~22.04",
        "hsa-rocr": "1.15.0.60403-128~22.04",  # the exact version, not the older 1.14 also there
        "openmp-extras-runtime": "18.63.0.60403-128~22.04",
        "hip-runtime-amd": "6.4.43482.60403-128~22.04",
        "rocprofiler-register": "0.4.0.60403-128~22.04",
        "rocminfo": "1.0.0.60403-128~22.04",
        "rocm-smi-lib": "7.5.0.60403-128~22.04",  # recommended, and apt installs Recommends
    }
    why = {p.name: p.why for p in closure}
    assert "recommended by rocm-hip-runtime" in why["rocm-smi-lib"]
    assert why["rocm-hip-runtime"] == ["wanted"]
    # Debian's own (libc6, python3, kmod, libffi8 | libffi7) come from the host's mirror.
    assert "libc6" not in names and "python3" not in names


def test_a_provided_name_counts_and_a_missing_package_is_named():
    index = Index(parse_stanzas(PACKAGES))
    closure = install_closure(index, ["openmp-runtime"], "AMD")
    # the package that provides the name, wanted in its place, with its dependencies
    assert {p.name: p.why for p in closure}["openmp-extras-runtime"] == ["wanted"]
    assert {p.name for p in closure} == {"openmp-extras-runtime", "rocm-core", "hsa-rocr"}
    # rocm needs rocm-developer-tools, which this index lacks: not an error (it may be
    # Debian's); a wanted package that is missing is.
    assert "rocm" in {p.name for p in install_closure(index, ["rocm"], "AMD")}
    with pytest.raises(RepositoryError, match=r"rocm-nonexistent: not in AMD 6\.4\.3 jammy"):
        install_closure(index, ["rocm-hip-runtime", "rocm-nonexistent"], "AMD 6.4.3 jammy")


def _gpg(home: Path, *args: str) -> str:
    return run_gpg(home, *args).stdout.decode()


@pytest.fixture(scope="module")
def signer(tmp_path_factory):
    """A throwaway ed25519 signing key: (GNUPGHOME, armored key, fingerprint)."""
    keys = Gpg(tmp_path_factory.mktemp("gnupg") / "home", "bundle test <bundle@invalid>")
    home, fingerprint = keys.home, keys.fingerprint
    armored = _gpg(home, "--armor", "--export", fingerprint).encode()
    yield home, armored, fingerprint
    keys.close()


def publish(
    base: Path,
    suite: str,
    debs: dict[str, bytes],
    signer,
    by_hash=False,
    packages: str = PACKAGES,
    origin: str = "repo.radeon.com",
) -> str:
    """A flat repository under ``base`` (dists/SUITE, pool/) whose index is ``packages``'
    stanzas (the fixture's by default) with real sizes and hashes of ``debs`` (package name
    -> content); returns the Packages text."""
    home, _armored, fingerprint = signer
    stanzas = []
    for stanza in parse_stanzas(packages):
        data = debs.get(
            stanza["Package"], f"deb of {stanza['Package']} {stanza['Version']}".encode()
        )
        target = base / stanza["Filename"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        stanza["Size"] = str(len(data))
        stanza["SHA256"] = hashlib.sha256(data).hexdigest()
        stanzas.append("\n".join(f"{k}: {v}" for k, v in stanza.items()))
    text = "\n\n".join(stanzas) + "\n"
    dist = base / "dists" / suite
    binary = dist / "main" / "binary-amd64"
    binary.mkdir(parents=True, exist_ok=True)
    (binary / "Packages").write_text(text)
    (binary / "Packages.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
    lines = [f"Origin: {origin}\nSuite: {suite}\nCodename: {suite}"]
    if by_hash:
        lines.append("Acquire-By-Hash: yes")
    lines.append("SHA256:")
    for name in ("Packages", "Packages.gz"):
        data = (binary / name).read_bytes()
        lines.append(f" {hashlib.sha256(data).hexdigest()} {len(data)} main/binary-amd64/{name}")
    (dist / "Release").write_text("\n".join(lines) + "\n")
    _gpg(home, "--local-user", fingerprint, "--clearsign", "-o", str(dist / "InRelease"),
         str(dist / "Release"))  # fmt: skip
    return text


# --- wheels ------------------------------------------------------------------------------------


def test_simple_page_links_hashes_and_python_requirements():
    url = "https://pypi.org/simple/markupsafe/"
    links = parse_page((FIXTURES / "simple" / "markupsafe.html").read_text(), url)
    assert len(links) == 8
    first = links[0]
    assert first.url.startswith("https://files.pythonhosted.org/packages/97/18/")
    assert first.filename.startswith("MarkupSafe-2.1.5-cp311-cp311-manylinux_2_17_x86_64")
    assert re.fullmatch(r"[0-9a-f]{64}", first.sha256)
    assert first.requires_python == ">=3.7"
    # PyTorch's pages: path-absolute links and PEP 658/714 metadata hashes
    # (pytorch/test-infra#6116).
    page = (
        '<a href="/whl/rocm6.4/torch-2.9.1%2Brocm6.4-cp311-cp311-manylinux_2_28_x86_64.whl'
        '#sha256=ab" data-dist-info-metadata="sha256=cd" data-core-metadata="sha256=cd">x</a>'
    )
    (link,) = parse_page(page, "https://download.pytorch.org/whl/rocm6.4/torch/")
    assert link.url == (
        "https://download.pytorch.org/whl/rocm6.4/"
        "torch-2.9.1%2Brocm6.4-cp311-cp311-manylinux_2_28_x86_64.whl"
    )
    assert link.filename == "torch-2.9.1+rocm6.4-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert (link.sha256, link.metadata_sha256) == ("ab", "cd")


def test_a_host_python_takes_its_own_abi_and_manylinux_up_to_its_glibc():
    assert manylinux_platforms("2.17")[:2] == ["manylinux_2_17_x86_64", "manylinux_2_16_x86_64"]
    assert "manylinux2014_x86_64" in manylinux_platforms("2.35")
    bookworm = Target(HOST_RUNTIMES["debian 12"])
    links = parse_page((FIXTURES / "simple" / "markupsafe.html").read_text(), "https://x/")
    usable = [link.filename for link in links if bookworm.rank(link.filename) is not None]
    assert usable == [
        "MarkupSafe-2.1.5-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "MarkupSafe-3.0.2-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "markupsafe-3.0.3-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64."
        "manylinux_2_28_x86_64.whl",
    ]
    old_glibc = Target(HostRuntime("3.11", "2.17"))
    assert old_glibc.rank(usable[2]) is not None  # also tagged manylinux_2_17
    assert old_glibc.rank("torch-2.9.1+rocm6.4-cp311-cp311-manylinux_2_28_x86_64.whl") is None


def wheel(directory: Path, name: str, version: str, requires=(), python=">=3.9", extras=()) -> Path:
    """A py3-none-any wheel with METADATA, WHEEL and RECORD (what pip reads)."""
    dist = f"{name.replace('-', '_')}-{version}"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Python: {python}\n"
    meta += "".join(f"Provides-Extra: {e}\n" for e in extras)
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{name.replace('-', '_')}/__init__.py": f"__version__ = {version!r}\n",
        f"{dist}.dist-info/METADATA": meta,
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, body in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(body.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(body)}")
    files[f"{dist}.dist-info/RECORD"] = "\n".join([*record, f"{dist}.dist-info/RECORD,,"]) + "\n"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name_in_zip, body in files.items():
            archive.writestr(zipfile.ZipInfo(name_in_zip, (2026, 1, 1, 0, 0, 0)), body)
    return path


def sdist(
    directory: Path,
    name: str,
    version: str,
    requires=(),
    extras=(),
    build_requires=("setuptools>=70.2.0",),
) -> Path:
    """An sdist as setuptools writes one (``<name>-<version>/PKG-INFO`` with static
    requirements, pyproject.toml naming the build backend), as TheRock publishes ``rocm``."""
    import io
    import tarfile

    dist = f"{canonicalize_name(name).replace('-', '_')}-{version}"
    meta = f"Metadata-Version: 2.2\nName: {name}\nVersion: {version}\n"
    meta += "".join(f"Provides-Extra: {e}\n" for e in extras)
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    build = ", ".join(f'"{r}"' for r in build_requires)
    files = {
        "PKG-INFO": meta,
        "pyproject.toml": f"[build-system]\nrequires = [{build}]\n"
        'build-backend = "setuptools.build_meta"\n',
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{dist}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for member, body in files.items():
            info = tarfile.TarInfo(f"{dist}/{member}")
            info.size, info.mtime = len(body.encode()), 1767225600
            archive.addfile(info, io.BytesIO(body.encode()))
    return path


TORCH_REQUIRES = (
    "filelock",
    'typing-extensions>=4.10.0; python_version >= "3.9"',
    'networkx; python_version >= "3.10"',
    'sympy==1.13.3; python_version < "3.12"',
    'sympy>=1.13.3; python_version >= "3.12"',
    'opt-einsum>=3.3; extra == "opt-einsum"',
    'pywin32; sys_platform == "win32"',
)


def index(www: Path, base: str, other: str) -> None:
    """A PyTorch-like index at www/whl/rocm6.4: torch's files beside the pages, its
    dependencies in /whl/ (path-absolute links) and mpmath on another host (``other``)."""
    files = {
        "torch": [wheel(www / "whl/rocm6.4", "torch", "2.9.1+rocm6.4", TORCH_REQUIRES)],
        "torchvision": [
            wheel(www / "whl/rocm6.4", "torchvision", "0.24.1+rocm6.4", ("torch==2.9.1+rocm6.4",))
        ],
        "filelock": [wheel(www / "whl", "filelock", "3.13.1"),
                     wheel(www / "whl", "filelock", "3.20.0", python=">=3.10")],
        "typing-extensions": [wheel(www / "whl", "typing_extensions", "4.12.2")],
        "networkx": [wheel(www / "whl", "networkx", "3.4.2", python=">=3.10")],
        "sympy": [wheel(www / "whl", "sympy", "1.13.3", ("mpmath<1.4,>=1.1.0",)),
                  wheel(www / "whl", "sympy", "1.14.0", ("mpmath<1.4,>=1.1.0",))],
        "mpmath": [wheel(www / "packages", "mpmath", "1.3.0"),
                   wheel(www / "packages", "mpmath", "1.4.0")],
    }  # fmt: skip
    for project, paths in files.items():
        rows = []
        for path in paths:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            relative = "/" + str(path.relative_to(www)).replace("+", "%2B")
            href = (other if project == "mpmath" else "") + relative
            python = ' data-requires-python="&gt;=3.10"' if "3.20.0" in path.name else ""
            rows.append(f'<a href="{href}#sha256={digest}"{python}>{path.name}</a><br/>')
        page = www / "whl/rocm6.4" / canonicalize_name(project) / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text("<html><body>\n" + "\n".join(rows) + "\n</body></html>\n")


def test_resolution_per_python_follows_markers_pins_and_requires_python(tmp_path):
    www = tmp_path / "www"
    index(www, "https://download.example", "https://files.example")

    def page(name: str):
        path = www / "whl/rocm6.4" / name / "index.html"
        if not path.exists():
            return []
        return parse_page(path.read_text(), f"https://download.example/whl/rocm6.4/{name}/")

    def metadata(link):
        for path in www.rglob(link.filename):
            with zipfile.ZipFile(path) as archive:
                name = next(n for n in archive.namelist() if n.endswith("METADATA"))
                return archive.read(name).decode()
        raise AssertionError(link)

    roots = ["torch==2.9.1+rocm6.4", "torchvision==0.24.1+rocm6.4"]
    versions = {}
    for python in ("3.10", "3.12"):
        pins = resolve(roots, page, metadata, Target(HostRuntime(python, "2.35")), "idx")
        versions[python] = {name: str(pin.candidate.version) for name, pin in pins.items()}
    assert versions["3.10"] == {
        "torch": "2.9.1+rocm6.4", "torchvision": "0.24.1+rocm6.4", "filelock": "3.20.0",
        "typing-extensions": "4.12.2", "networkx": "3.4.2", "sympy": "1.13.3", "mpmath": "1.3.0",
    }  # fmt: skip
    assert versions["3.12"]["sympy"] == "1.14.0"  # the marker's other branch
    assert "opt-einsum" not in versions["3.12"] and "pywin32" not in versions["3.12"]
    old = resolve(roots, page, metadata, Target(HostRuntime("3.9", "2.35")), "idx")
    assert str(old["filelock"].candidate.version) == "3.13.1"  # Requires-Python >=3.10
    assert "networkx" not in old
    with pytest.raises(ResolutionError, match=r"no wheel of torch \(==2\.9\.0\+rocm6\.4"):
        resolve(["torch==2.9.0+rocm6.4"], page, metadata, Target(HostRuntime("3.11", "2.36")),
                "idx")  # fmt: skip


def test_resolution_backtracks_from_a_newest_version_that_conflicts():
    """lib 2.0 (the newest) needs helper<2, which top's helper>=2 rules out: pip installs
    lib 1.0; a resolver without backtracking gave up on helper."""
    requires = {
        "top-1.0": ["lib", "helper>=2"],
        "lib-2.0": ["helper<2"],
        "lib-1.0": [],
        "helper-2.0": [],
        "helper-1.0": [],
    }

    def page(name: str) -> list[Link]:
        return [
            Link(f"https://idx/{key}.whl", f"{key}-py3-none-any.whl", "0" * 64, None, None)
            for key in requires
            if key.rsplit("-", 1)[0] == name
        ]

    def metadata(link: Link) -> str:
        key = link.filename.removesuffix("-py3-none-any.whl")
        return "".join(f"Requires-Dist: {r}\n" for r in requires[key])

    pins = resolve(["top"], page, metadata, Target(HostRuntime("3.11", "2.36")), "idx")
    assert {name: str(pin.candidate.version) for name, pin in pins.items()} == {
        "top": "1.0", "lib": "1.0", "helper": "2.0"
    }  # fmt: skip
    assert pins["helper"].why == ["required by top 1.0"]
    requires["lib-1.0"] = ["helper<2"]  # now no lib works with helper>=2: both are named
    with pytest.raises(ResolutionError, match=r"no wheel of helper \((>=2 and <2|<2 and >=2)"):
        resolve(["top"], page, metadata, Target(HostRuntime("3.11", "2.36")), "idx")


# --- downloads ---------------------------------------------------------------------------------


class Quiet(DownloadProgress):
    def __init__(self):
        import io

        super().__init__(io.StringIO())


def test_the_progress_on_a_terminal_is_one_line_redrawn_and_gone_when_the_file_is_done(
    monkeypatch,
):
    import io

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("COLUMNS", "100")
    screen = Terminal()
    progress = DownloadProgress(screen)
    progress.start("rocm-core_6.4.3.deb", 2_000_000)
    progress.advance(1_000_000)
    progress.note("rocm-core_6.4.3.deb: transfer broke off at 1.0 MB (reset), resuming")
    progress.advance(1_000_000)
    progress.finish()
    drawn = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue()).replace("\r", "\n")
    lines = [line.rstrip() for line in drawn.splitlines() if line.strip()]
    assert any(line.startswith("rocm-core_6.4.3.deb: 1.0/2.0 MB") for line in lines), lines
    assert "rocm-core_6.4.3.deb: transfer broke off at 1.0 MB (reset), resuming" in lines
    assert re.fullmatch(r"fetched rocm-core_6\.4\.3\.deb \(2\.0 MB, [0-9.]+ [kMG]?B/s\)", lines[-1])
    assert screen.getvalue().count("\x1b[?25l") == screen.getvalue().count("\x1b[?25h") == 1


# --- a whole bundle ----------------------------------------------------------------------------


@pytest.fixture
def upstream(tmp_path, signer):
    """A signed repository and a wheel index on a loopback server; the key beside them."""
    www = tmp_path / "www"
    publish(www / "rocm/apt/6.4.3", "jammy", {}, signer)
    (www / "rocm" / "rocm.gpg.key").write_bytes(signer[1])
    with serve_trusted(www) as served:
        other = served.url.replace("127.0.0.1", "localhost")
        index(www, served.url, other)
        yield served


def needs_of(served, signer, packages=("rocm-hip-runtime",), python="3.11") -> HostNeeds:
    key = SigningKey(f"{served.url}/rocm/rocm.gpg.key", signer[2])
    repository = AptRepository(f"{served.url}/rocm/apt/6.4.3", "jammy", key)
    wanted = (("torch", "2.9.1+rocm6.4"), ("torchvision", "0.24.1+rocm6.4"))
    runtime = next(r for r in HOST_RUNTIMES.values() if r.python == python)
    wheels = WheelNeed(f"{served.url}/whl/rocm6.4", runtime, wanted)
    return HostNeeds((AptNeed(repository, tuple(packages)),), (wheels,))


# --- a ROCm Core SDK release --------------------------------------------------------------------

CORE_SDK_VERSIONS = ("7.14.0-3", "7.14.1-1")  # two releases side by side, as AMD publishes


def write_pages(www: Path, index_dir: str, files: dict[str, list[Path]]) -> None:
    """PEP 503 project pages under www/<index_dir> with path-absolute links, as PyTorch's."""
    for project, wheels in files.items():
        rows = []
        for path in wheels:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            href = "/" + str(path.relative_to(www)).replace("+", "%2B")
            rows.append(f'<a href="{href}#sha256={digest}">{path.name}</a><br/>')
        page = www / index_dir / canonicalize_name(project) / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text("<html><body>\n" + "\n".join(rows) + "\n</body></html>\n")


# --- the command -------------------------------------------------------------------------------
