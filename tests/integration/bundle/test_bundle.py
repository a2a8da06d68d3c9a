"""The tests of tests/unit/bundle/test_bundle.py that start a process or a loopback server (the
integration tier; the pure ones stay there)."""

# ruff: noqa: F811  (fixtures, imported)

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from rocm_fleet.bundle.build import Plan, make_bundle
from rocm_fleet.model.sources import AptNeed, AptRepository, HostNeeds, SigningKey
from rocm_fleet.upstream import http as download
from rocm_fleet.upstream.aptrepo import (
    RepositoryError,
    check_key,
    parse_release,
    signed_text,
)
from rocm_fleet.upstream.http import DownloadError, Fetcher
from rocm_fleet.upstream.manifest import BundleError, incomplete, locked_requirements, missing
from unit.bundle.test_bundle import (
    CORE_SDK_VERSIONS,
    Quiet,
    needs_of,
    publish,
    sdist,
    signer,  # noqa: F401 (a fixture)
    upstream,  # noqa: F401 (a fixture)
    wheel,
    write_pages,
)
from unit.loopback import serve, serve_trusted


def test_only_the_pinned_key_and_its_signature_are_accepted(signer, tmp_path):
    _home, armored, fingerprint = signer
    check_key(armored, fingerprint, "https://repo.example/key")
    with pytest.raises(RepositoryError, match=r"fingerprint .* is not 0000"):
        check_key(armored, "0" * 40, "https://repo.example/key")
    publish(tmp_path, "jammy", {}, signer)
    inrelease = (tmp_path / "dists/jammy/InRelease").read_bytes()
    release = parse_release(signed_text(inrelease, armored, "InRelease"))
    assert release.fields["Suite"] == "jammy"
    assert set(release.files) == {"main/binary-amd64/Packages", "main/binary-amd64/Packages.gz"}
    tampered = inrelease.replace(b"Suite: jammy", b"Suite: noble")
    with pytest.raises(RepositoryError, match="does not verify"):
        signed_text(tampered, armored, "InRelease")


def test_a_broken_transfer_resumes_where_it_stopped_and_a_bad_hash_keeps_nothing(
    tmp_path, monkeypatch
):
    data = os.urandom(300_000)
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "big.deb").write_bytes(data)
    with serve(tmp_path / "www") as served:
        served.cut_once.add("/big.deb")
        fetcher = Fetcher(progress=Quiet())
        dest = tmp_path / "out" / "big.deb"
        assert fetcher.file(f"{served.url}/big.deb", dest, hashlib.sha256(data).hexdigest())
        assert dest.read_bytes() == data
        first, second = served.requests
        assert first["range"] == "" and first["cut"] == 150_000
        # Resumed from what reached the disk (whole chunks of the first transfer).
        resumed_at = int(second["range"].removeprefix("bytes=").removesuffix("-"))
        assert 0 < resumed_at <= 150_000 and second["status"] == 206
        # Asked again in the same run: neither fetched nor hashed again.
        digest = hashlib.sha256(data).hexdigest()
        hashed = []
        monkeypatch.setattr(download, "sha256_file", lambda path: hashed.append(path) or "")
        assert not fetcher.file(f"{served.url}/big.deb", dest, digest)
        assert len(served.requests) == 2 and not hashed and fetcher.counts.kept == 0
        monkeypatch.undo()
        # Already there and verified by a later run: nothing is fetched.
        again = Fetcher(progress=Quiet())
        assert not again.file(f"{served.url}/big.deb", dest, digest)
        assert len(served.requests) == 2 and again.counts.kept == 1
        with pytest.raises(DownloadError, match=r"SHA-256 is .* its index says 00"):
            fetcher.file(f"{served.url}/big.deb", tmp_path / "out" / "bad.deb", "00" * 32)
        assert len(served.requests) == 3  # a whole transfer with a bad hash: not fetched twice
        assert not (tmp_path / "out" / "bad.deb").exists()
        assert not (tmp_path / "out" / "bad.deb.part").exists()


def test_a_bundle_holds_what_hosts_need_verified_and_a_second_run_fetches_nothing_new(
    upstream, signer, tmp_path
):
    plan = Plan()
    plan.add("node1", needs_of(upstream, signer), {"distro": "debian 12"})
    plan.add("node2", needs_of(upstream, signer, python="3.13"), {"distro": "debian 13"})
    out = tmp_path / "bundle"
    fetcher = Fetcher(progress=Quiet())
    manifest = make_bundle(plan, out, fetcher)
    host = upstream.url.removeprefix("https://")
    repo = f"{host}/rocm/apt/6.4.3"
    # AMD's InRelease and indexes verbatim; the closure's .debs only.
    www = upstream.root
    assert (out / repo / "dists/jammy/InRelease").read_bytes() == (
        www / "rocm/apt/6.4.3/dists/jammy/InRelease"
    ).read_bytes()
    assert (out / repo / "dists/jammy/main/binary-amd64/Packages.gz").exists()
    debs = sorted(p.name.split("_")[0] for p in (out / repo / "pool").rglob("*.deb"))
    assert "rocm" not in debs and "hsa-rocr" in debs and len(debs) == 10
    assert not list((out / repo / "pool").rglob("hsa-rocr_1.14*"))
    # Wheels per Python, with pages listing only them (mpmath from the "other host").
    wheels = manifest["wheel_sets"]
    assert [(w["python"], w["pins"]["filelock"]["version"]) for w in wheels] == [
        ("3.11", "3.20.0"), ("3.13", "3.20.0")
    ]  # fmt: skip
    mpmath = wheels[0]["pins"]["mpmath"]["path"]
    assert mpmath.startswith("localhost:") and (out / mpmath).is_file()
    page = (out / host / "whl/rocm6.4/filelock/index.html").read_text()
    assert "filelock-3.13.1" not in page and 'href="../../filelock-3.20.0' in page
    torch_page = (out / host / "whl/rocm6.4/torch/index.html").read_text()
    assert "torch-2.9.1%2Brocm6.4-py3-none-any.whl#sha256=" in torch_page
    entry = manifest["files"][
        f"{repo}/pool/main/r/rocminfo/rocminfo_1.0.0.60403-128~22.04_amd64.deb"
    ]
    assert entry["verified"] == "SHA256 in the signed package index"
    assert any("dependency of rocm-hip-runtime" in why for why in entry["why"])
    assert json.loads((out / "manifest.json").read_text())["files"] == manifest["files"]
    assert missing(str(out), needs_of(upstream, signer)) == []

    upstream.requests.clear()
    again = Fetcher(progress=Quiet())
    make_bundle(plan, out, again)
    fetched = [r["path"] for r in upstream.requests]
    assert not [p for p in fetched if p.endswith((".deb", ".whl"))], fetched
    assert again.counts.kept == len([p for p in manifest["files"] if p.endswith((".deb", ".whl"))])


def test_preflight_names_what_a_bundle_lacks_and_a_new_bundle_drops_what_is_not_needed(
    upstream, signer, tmp_path
):
    plan = Plan()
    plan.add("node1", needs_of(upstream, signer), {})
    out = tmp_path / "bundle"
    make_bundle(plan, out, Fetcher(progress=Quiet()))
    wider = needs_of(upstream, signer, packages=("rocm",), python="3.13")
    gaps = missing(str(out), wider)
    assert any(gap.startswith("rocm 6.4.3.60403-128~22.04 (") for gap in gaps), gaps
    assert any("torch==2.9.1+rocm6.4, torchvision==0.24.1+rocm6.4 for Python 3.13" in gap
               and "not in the bundle" in gap for gap in gaps), gaps  # fmt: skip
    assert incomplete(str(out)) == []
    rocminfo = next((out).rglob("rocminfo_*.deb"))
    rocminfo.unlink()
    assert incomplete(str(out)) == [str(rocminfo.relative_to(out))]  # a mirror won't serve it
    assert missing(str(out), needs_of(upstream, signer)) == [
        f"rocminfo 1.0.0.60403-128~22.04 ({upstream.url}/rocm/apt/6.4.3 jammy main)"
    ]
    unknown = needs_of(upstream, signer, packages=("rocm-hip-runtime", "rocm-nonexistent"))
    assert missing(str(out), unknown) == [
        f"rocm-nonexistent: not in {upstream.url}/rocm/apt/6.4.3 jammy main"
    ]
    # The bundle for the fleet as it is now: no wheels, so the old ones are removed.
    smaller = Plan()
    smaller.add("node1", HostNeeds(needs_of(upstream, signer).apt, ()), {})
    manifest = make_bundle(smaller, out, Fetcher(progress=Quiet()))
    assert manifest["wheel_sets"] == [] and not list(out.rglob("*.whl"))
    assert any(path.endswith("torch/index.html") for path in manifest["removed"])
    assert rocminfo.exists()  # fetched again


def test_bundle_refuses_a_wrong_key_a_tampered_deb_and_a_missing_package(
    upstream, signer, tmp_path
):
    def attempt(needs):
        plan = Plan()
        plan.add("node1", needs, {})
        make_bundle(plan, tmp_path / "bundle", Fetcher(progress=Quiet(), retries=1))

    good = needs_of(upstream, signer)
    repository = good.apt[0].repository
    wrong_key = AptRepository(
        repository.url, repository.suite, SigningKey(repository.key.url, "0" * 40)
    )
    with pytest.raises(BundleError, match=r"refusing key .* is not 0000"):
        attempt(HostNeeds((AptNeed(wrong_key, ("rocm-hip-runtime",)),), ()))
    with pytest.raises(BundleError, match="rocm-nonexistent: not in"):
        attempt(needs_of(upstream, signer, packages=("rocm-nonexistent",)))
    deb = next((upstream.root / "rocm/apt/6.4.3/pool").rglob("rocminfo_*.deb"))
    deb.write_bytes(b"not what the signed index says")
    with pytest.raises(
        BundleError, match=r"rocminfo_1\.0\.0\.60403-128~22\.04_amd64\.deb: SHA-256"
    ):
        attempt(good)
    assert not list((tmp_path / "bundle").rglob("rocminfo_*.deb"))


def core_sdk_packages() -> str:
    """A Core SDK distro directory's index: the amdrocm*7.14 packages of two releases with
    their exact ``(= version)`` dependencies (TheRock's packaging, the lab double's shape)."""
    stanzas = []
    for version in CORE_SDK_VERSIONS:
        depends = {
            "amdrocm-sysdeps7.14": [],
            "amdrocm-runtime7.14": ["amdrocm-sysdeps7.14"],
            "amdrocm-base7.14": ["amdrocm-runtime7.14"],
            "amdrocm-core7.14": ["amdrocm-base7.14", "amdrocm-runtime7.14"],
            "amdrocm7.14": ["amdrocm7.14-gfx942", "amdrocm7.14-gfx1100"],
        }
        for gfx in ("gfx942", "gfx1100"):
            depends[f"amdrocm-core7.14-{gfx}"] = ["amdrocm-core7.14"]
            depends[f"amdrocm7.14-{gfx}"] = [f"amdrocm-core7.14-{gfx}"]
        for name, needs in depends.items():
            stanza = [f"Package: {name}", f"Version: {version}", "Architecture: amd64"]
            if needs:
                stanza.append("Depends: " + ", ".join(f"{n} (= {version})" for n in needs))
            stanza.append(f"Filename: pool/main/a/{name}/{name}_{version}_amd64.deb")
            stanzas.append("\n".join(stanza))
    return "\n\n".join(stanzas) + "\n"


def core_sdk_index(www: Path) -> None:
    """whl/rocm7.14: torch requiring the pip ROCm runtime, and the runtime's meta package
    with its extras (TheRock's rocm_sdk/_dist_info.py: ``libraries``, ``device-<gfx>``,
    ``device-all``) and parts; a newer ``rocm`` the requirement's ``==7.14.*`` excludes.
    ``rocm`` is an sdist only (repo.amd.com-whl.toml ``rocm_dist``): setuptools, its build
    backend, is published beside it (also as an older wheel its ``>=70.2.0`` excludes)."""
    out = www / "whl/rocm7.14"
    runtime = "rocm[device-all,libraries]==7.14.*"
    devices = ("gfx942", "gfx1100")
    rocm_requires = ["rocm-sdk-core==7.14.0", 'rocm-sdk-libraries==7.14.0; extra == "libraries"']
    rocm_requires += [f'rocm-sdk-device-{g}==7.14.0; extra == "device-all"' for g in devices]
    rocm_requires += [f'rocm-sdk-device-{g}==7.14.0; extra == "device-{g}"' for g in devices]
    extras = ("libraries", "device-all", *(f"device-{g}" for g in devices))
    files = {
        "torch": [wheel(out, "torch", "2.14.1+rocm7.14", ("filelock", runtime))],
        "torchvision": [wheel(out, "torchvision", "0.29.1+rocm7.14", ("torch==2.14.1+rocm7.14",))],
        "filelock": [wheel(www / "whl", "filelock", "3.13.1")],
        "rocm": [sdist(out, "rocm", "7.14.0.post1", rocm_requires, extras=extras),
                 sdist(out, "rocm", "7.15.0", rocm_requires, extras=extras)],
        "setuptools": [wheel(www / "whl", "setuptools", "69.5.1"),
                       wheel(www / "whl", "setuptools", "80.9.0")],
        **{name: [wheel(out, name, "7.14.0")]
           for name in ["rocm-sdk-core", "rocm-sdk-libraries",
                        *(f"rocm-sdk-device-{g}" for g in devices)]},
    }  # fmt: skip
    write_pages(www, "whl/rocm7.14", files)


@pytest.fixture
def core_sdk_upstream(tmp_path, signer):
    """repo.amd.com's layout on a loopback server: a distro directory of the multi-arch
    repository (Origin "AMD ROCm"), its key as a binary key with an armored copy appended
    (the form reported of stable.repo.amd.com), and the rocm7.14 wheel index."""
    home, armored, fingerprint = signer
    www = tmp_path / "www"
    base = www / "rocm/packages-multi-arch"
    publish(base / "debian12", "stable", {}, signer, packages=core_sdk_packages(),
            origin="AMD ROCm")  # fmt: skip
    binary = subprocess.run(
        ["gpg", "--batch", "--homedir", str(home), "--export", fingerprint],
        capture_output=True, check=True, env={"PATH": "/usr/bin:/bin"},
    ).stdout  # fmt: skip
    (base / "gpg").mkdir()
    (base / "gpg" / "rocm.gpg").write_bytes(binary + armored)
    core_sdk_index(www)
    with serve_trusted(www) as served:
        yield served


def test_a_core_sdk_bundle_holds_its_repository_key_closure_and_pip_runtime(
    core_sdk_upstream, signer, tmp_path
):
    from rocm_fleet.model.config import load_config
    from rocm_fleet.model.matrix import DISTROS
    from rocm_fleet.model.sources import host_needs, mirror_path

    url = core_sdk_upstream.url
    key_url = f"{url}/rocm/packages-multi-arch/gpg/rocm.gpg"
    config = load_config({
        "rocm_version": "7.14.1", "expected_gfx": "gfx942", "rocm_key_fingerprint": signer[2],
        "rocm_apt_base_url": f"{url}/rocm/packages-multi-arch", "rocm_key_url": key_url,
        "pytorch_index_base_url": f"{url}/whl",
    })  # fmt: skip
    bookworm = next(d for d in DISTROS if d.key == "debian 12")  # Python 3.11: pip checks too
    needs = host_needs(config, bookworm)
    ((apt,), (wheels,)) = (needs.apt, needs.wheels)
    assert (apt.repository.url, apt.packages) == (
        f"{url}/rocm/packages-multi-arch/debian12", ("amdrocm7.14-gfx942",)
    )  # fmt: skip
    assert (wheels.index_url, wheels.runtime.python) == (f"{url}/whl/rocm7.14", "3.11")
    plan = Plan()
    plan.add("core", needs, {})
    out = tmp_path / "bundle"
    manifest = make_bundle(plan, out, Fetcher(progress=Quiet()))

    # The key verbatim (hosts read either form), checked by its primary key's fingerprint;
    # the InRelease verified with it.
    assert (out / mirror_path(key_url)).read_bytes() == (
        core_sdk_upstream.root / "rocm/packages-multi-arch/gpg/rocm.gpg"
    ).read_bytes()
    assert manifest["keys"][key_url]["fingerprint"] == signer[2]
    # The closure of the per-target package of 7.14.1 only: exact versions, one target.
    (repository,) = manifest["repositories"]
    debs = sorted(path.rsplit("/", 1)[1] for path in repository["debs"])
    assert debs == sorted(
        f"{name}_7.14.1-1_amd64.deb"
        for name in ["amdrocm-sysdeps7.14", "amdrocm-runtime7.14", "amdrocm-base7.14",
                     "amdrocm-core7.14", "amdrocm-core7.14-gfx942", "amdrocm7.14-gfx942"]
    )  # fmt: skip
    # torch and the pip ROCm runtime it requires, every device wheel device-all names.
    (wheel_set,) = manifest["wheel_sets"]
    assert "rocm[device-all,libraries]==7.14.*" in wheel_set["requirements"]
    pins = {name: pin["version"] for name, pin in wheel_set["pins"].items()}
    assert pins == {
        "torch": "2.14.1+rocm7.14", "torchvision": "0.29.1+rocm7.14", "filelock": "3.13.1",
        "rocm": "7.14.0.post1", "rocm-sdk-core": "7.14.0", "rocm-sdk-libraries": "7.14.0",
        "rocm-sdk-device-gfx942": "7.14.0", "rocm-sdk-device-gfx1100": "7.14.0",
        "setuptools": "80.9.0",
    }  # fmt: skip
    why = wheel_set["pins"]["rocm-sdk-device-gfx1100"]["why"]
    assert why == ["required by rocm 7.14.0.post1"]
    # rocm, published only as an sdist, is bundled as one, with the wheel that builds it
    # (its pyproject's setuptools>=70.2.0); the host's lock lines say both.
    assert wheel_set["pins"]["rocm"]["path"].endswith("/rocm-7.14.0.post1.tar.gz")
    assert wheel_set["pins"]["setuptools"] == {
        "version": "80.9.0", "path": wheel_set["pins"]["setuptools"]["path"],
        "why": ["builds rocm"], "build": True, "runtime": False,
    }  # fmt: skip
    lines = locked_requirements(
        str(out), wheels.index_url, wheels.runtime.python, wheels.requirements()
    )
    assert lines[-1] == "--no-binary=rocm"
    backend = manifest["files"][wheel_set["pins"]["setuptools"]["path"]]["sha256"]
    assert [line for line in lines if line.endswith("# build requirement")] == [
        f"setuptools==80.9.0 --hash=sha256:{backend} # build requirement"
    ]
    rocm_line = next(line for line in lines if line.startswith("rocm=="))
    sdist_file = core_sdk_upstream.root / "whl/rocm7.14/rocm-7.14.0.post1.tar.gz"
    assert rocm_line == (
        f"rocm==7.14.0.post1 --hash=sha256:{hashlib.sha256(sdist_file.read_bytes()).hexdigest()}"
    )
    assert missing(str(out), needs) == []
    # A host whose GPUs expected_gfx doesn't all name gets the all-targets package: preflight
    # names what the bundle lacks for it.
    gaps = missing(str(out), host_needs(config, bookworm, ["gfx942", "gfx1100"]))
    where = f"7.14.1-1 ({url}/rocm/packages-multi-arch/debian12 stable main)"
    assert sorted(gaps) == [
        f"{name} {where}"
        for name in ["amdrocm-core7.14-gfx1100", "amdrocm7.14", "amdrocm7.14-gfx1100"]
    ]


def test_the_command_plans_per_distro_from_the_inventory_and_refuses_bad_data(
    tmp_path, plain_inventories
):
    import argparse

    from rocm_fleet.bundle.command import plan_for
    from rocm_fleet.cli.inventory import UsageError

    inventory = tmp_path / "fleet.py"
    inventory.write_text(
        "hosts = [\n"
        "    ('ws1', {'rocm_version': '6.4.3'}),\n"
        "    ('ws2', {'rocm_version': '6.4.3', 'rocm_packages': ['rocm'],\n"
        "             'torch_version': '2.8.0'}),\n"
        "    ('mi1', {'rocm_version': '7.2.1', 'rocm_driver': 'dkms', 'pytorch_install': False}),\n"
        "    ('old', {'rocm_version': '6.4.3', 'rocm_state': 'absent'}),\n"
        "]\n"
    )
    args = argparse.Namespace(inventory=str(inventory), limit=[], distro=["debian 12"])
    plan, notes = plan_for(args)
    assert notes == [] and sorted(plan.hosts) == ["mi1", "ws1", "ws2"]  # absent: nothing to fetch
    apt = {(r.url, r.suite): sorted(packages) for r, (packages, _hosts) in plan.apt.items()}
    # mi1's dkms driver: 7.2.1 ships amdgpu 30.30.1, in repo.radeon.com's suite for Debian 12.
    assert apt == {
        ("https://repo.radeon.com/rocm/apt/6.4.3", "jammy"): ["rocm", "rocm-hip-runtime"],
        ("https://repo.radeon.com/rocm/apt/7.2.1", "jammy"): ["rocm-hip-runtime"],
        ("https://repo.radeon.com/amdgpu/30.30.1/ubuntu", "jammy"): ["amdgpu-dkms"],
    }
    ((index, runtime), (requirements, hosts)) = next(iter(plan.wheels.items()))
    assert (index, runtime.python, sorted(hosts)) == (
        "https://download.pytorch.org/whl/rocm6.4", "3.11", ["ws1", "ws2"]
    )  # fmt: skip
    assert "torch==2.9.1+rocm6.4" in requirements and "torch==2.8.0+rocm6.4" in requirements
    bad = tmp_path / "bad.py"
    bad.write_text("hosts = [('bad', {'rocm_version': '6.4.3', 'rocm_proxy': 'ftp://p'})]\n")
    args.inventory = str(bad)
    with pytest.raises(UsageError, match=r"bad: inventory key 'rocm_proxy' has value 'ftp://p'"):
        plan_for(args)
