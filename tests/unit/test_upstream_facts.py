"""The product's matrix against the recorded upstream facts (tests/fixtures/upstream/).

The records are written from AMD's and PyTorch's own sources, independently of the matrix;
every disagreement is reported with the matrix row and the record (and so the source) that
says otherwise.
"""

from __future__ import annotations

import pytest

from lab import upstream_facts as facts
from rocm_fleet.model import gpu_targets, matrix, pci_ids, streams, torch_builds


def _where(record: str) -> str:
    return f"tests/fixtures/upstream/{record}.toml"


def disagreements() -> list[str]:
    out: list[str] = []

    def differ(row: str, what: str, ours, theirs, record: str) -> None:
        if ours != theirs:
            out.append(f"{row}: {what} is {ours!r} in the matrix, {theirs!r} in {_where(record)}")

    classic = facts.classic_releases()
    core = facts.core_releases()
    ours = {r.version for r in matrix.RELEASES}
    for version in sorted(set(classic) | set(core) - ours):
        if version not in ours:
            out.append(f"release {version}: recorded in {_where('repo.radeon.com')} / "
                       f"{_where('repo.amd.com')}, missing from the matrix")  # fmt: skip
    for rel in matrix.RELEASES:
        row = f"release {rel.version}"
        torch = facts.release_index(rel.version)
        differ(row, "the PyTorch index", rel.torch_index, torch, "download.pytorch.org")
        amd_record = facts.amd_stable_releases().get(rel.version)
        amd = rel.amd_wheels
        record = "repo.amd.com-whl"
        differ(row, "served by AMD's stable wheel index", amd is not None,
               amd_record is not None, record)  # fmt: skip
        if amd is not None and amd_record is not None:  # AMD's own torch where PyTorch has none
            stable = facts.amd_wheel_record()["stable"]
            differ(row, "AMD's wheel index", amd.url, stable["url"], record)
            differ(row, "the wheels taking the device extra", list(amd.device_extra_on),
                   stable["device_extra_on"], record)  # fmt: skip
            differ(row, "the local label", amd.label, amd_record.label, record)
            builds = tuple((b.torch, b.torchvision, b.torchaudio) for b in amd.builds)
            differ(row, "AMD's torch/vision/audio builds", builds, amd_record.builds, record)
            differ(row, "the targets with a device extra", amd.targets, amd_record.targets,
                   record)  # fmt: skip
            differ(row, "the targets offered fewer builds", dict(amd.target_builds),
                   amd_record.target_builds, record)  # fmt: skip
            runtime = facts.amd_wheel_record()["runtime"]["torch_requires"]
            differ(row, "the runtime torch requires", amd.runtime,
                   runtime.format(release=rel.version), record)  # fmt: skip
        if rel.stream is streams.CLASSIC:
            fact = classic.get(rel.version)
            if fact is None:
                out.append(f"{row}: in the matrix, not in {_where('repo.radeon.com')}")
                continue
            differ(row, "rocm/apt folder", rel.apt_path, fact.folder, "repo.radeon.com")
            differ(row, "amdgpu folder", matrix.amdgpu_repo_version(rel), fact.driver_folder,
                   "repo.radeon.com")  # fmt: skip
            differ(row, "signed under the SHA-1 binding", matrix.sha1_bound(rel),
                   fact.binding == "sha1", "repo.radeon.com")  # fmt: skip
            suites = {d.key: d.suite for d in matrix.DISTROS if rel.publication(d)}
            differ(row, "suites", suites, facts.classic_suites(rel.version), "repo.radeon.com")
        else:
            fact = core.get(rel.version)
            if fact is None:
                out.append(f"{row}: in the matrix, not in {_where('repo.amd.com')}")
                continue
            host = {"multi-arch": "repo.amd.com", "stable": "stable.repo.amd.com"}
            differ(row, "repository", rel.repository.name, host[fact.repository], "repo.amd.com")
            differ(row, "amdgpu folder", rel.amdgpu_driver, fact.driver_folder or None,
                   "repo.amd.com")  # fmt: skip
    directories = {p.distro: p.directory for p in streams.CORE_SDK.publications}
    differ("Core SDK", "distro directories", directories, facts.core_directories(),
           "repo.amd.com")  # fmt: skip
    differ("Core SDK", "per-target packages", set(streams.CORE_SDK_GFX_PACKAGES),
           set(facts.core_gfx_packages()), "repo.amd.com")  # fmt: skip

    os_support = facts.load("repo.amd.com")["os_support"]
    for pub in streams.CORE_SDK.publications:
        recorded = os_support["gfx"].get(pub.distro)
        differ(f"Core SDK {pub.distro}", "GPU targets AMD lists it for",
               list(pub.listed_gfx) if pub.listed_gfx is not None else None, recorded,
               "repo.amd.com")  # fmt: skip

    keys = facts.load("keys")
    differ("classic stream", "key fingerprint", streams.CLASSIC.key_fingerprint,
           keys["radeon"]["fingerprint"], "keys")  # fmt: skip
    differ("classic stream", "key URL", streams.CLASSIC_REPOSITORY.key_url,
           keys["radeon"]["url"], "keys")  # fmt: skip
    differ("Core SDK", "key fingerprint", streams.CORE_SDK.key_fingerprint,
           keys["amd"]["fingerprint"], "keys")  # fmt: skip
    differ("Core SDK 7.14", "key URL", streams.MULTI_ARCH_REPOSITORY.key_url,
           keys["amd"]["url_714"], "keys")  # fmt: skip
    differ("Core SDK 10.x", "key URL", streams.STABLE_REPOSITORY.key_url, keys["amd"]["url_10"],
           "keys")  # fmt: skip

    recorded = facts.torch_indexes()
    for index in sorted(set(recorded) | set(torch_builds.TORCH_INDEXES)):
        builds = tuple((b.torch, b.torchvision, b.torchaudio)
                       for b in torch_builds.TORCH_INDEXES.get(index, ()))  # fmt: skip
        differ(f"torch index {index}", "builds", builds, recorded.get(index, ()),
               "download.pytorch.org")  # fmt: skip
        differ(f"torch index {index}", "runtime requirement", torch_builds.TORCH_RUNTIME.get(index),
               facts.torch_runtime(index), "download.pytorch.org")  # fmt: skip

    runtime_record = facts.amd_wheel_record()["runtime"]
    sdist_only = {"rocm"} if runtime_record["rocm_dist"] == "sdist" else set()
    differ("wheel policy", "distributions published as sdists only", set(torch_builds.SDIST_ONLY),
           sdist_only, "repo.amd.com-whl")  # fmt: skip

    docs = facts.load("rocm-docs")
    history = {v: d for v, d in docs["release_history"].items() if v != "source"}
    for version in sorted(set(history) - ours, key=_key):
        out.append(f"release {version}: in AMD's release history ({_where('rocm-docs')}), "
                   "missing from the matrix")  # fmt: skip
    drivers = docs["amdgpu_drivers"]
    for rel in matrix.RELEASES:
        folder = matrix.amdgpu_repo_version(rel)
        if folder is None or not folder.startswith(("30.", "31.")):  # versioned with ROCm
            continue
        driver = folder if folder.count(".") == 2 else f"{folder}.0"  # amdgpu/31.40 = 31.40.0
        if driver not in drivers["versions"] and driver not in drivers.get("absent", {}):
            out.append(f"release {rel.version}: amdgpu folder {folder!r} is not a driver AMD's "
                       f"driver list names in {_where('rocm-docs')}")  # fmt: skip
    for gfx in docs["gpu_list"]["gfx"]:
        if gpu_targets.gpu_target(gfx) is None:
            out.append(f"GPU {gfx}: in AMD's GPU list ({_where('rocm-docs')}), missing from "
                       "the matrix")  # fmt: skip

    for gfx, fact in facts.gpu_targets().items():
        target = gpu_targets.gpu_target(gfx)
        if target is None:
            out.append(f"GPU {gfx}: recorded in {_where('gpus')}, missing from the matrix")
            continue
        differ(f"GPU {gfx}", "first classic release listing it", target.supported_from,
               fact["listed_from"] or None, "gpus")  # fmt: skip
        # the recorded IDs are the matrix's; it may know more, from AMD's device tables
        ids = {d for d, row in pci_ids.PCI_DEVICES.items() if row.gfx == gfx}
        recorded = set(fact["pci"])
        differ(f"GPU {gfx}", "PCI device IDs (pci_ids.py)", ids & recorded, recorded, "gpus")
    return out


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def test_the_matrix_agrees_with_the_recorded_upstream_facts():
    found = disagreements()
    assert not found, "the matrix disagrees with upstream:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("record", "path", "value", "expected"),
    [
        ("repo.radeon.com", ("release", 20, "folder"), "6.4.03",
         "release 6.4.3: rocm/apt folder is '6.4.3' in the matrix, '6.4.03'"),
        ("repo.radeon.com", ("release", 23, "binding"), "modern",
         "release 7.0.1: signed under the SHA-1 binding is True in the matrix, False"),
        ("repo.amd.com", ("release", 0, "driver_folder"), "31.40.1",
         "release 7.14.0: amdgpu folder is '31.40' in the matrix, '31.40.1'"),
        ("keys", ("radeon", "fingerprint"), "0" * 40, "classic stream: key fingerprint"),
        ("gpus", ("gfx906", "listed_from"), "6.0.0", "GPU gfx906: first classic release"),
        ("download.pytorch.org", ("index", "rocm7.0", "builds", 0, 0), "2.10.1",
         "torch index rocm7.0: builds"),
        ("repo.amd.com-whl", ("stable", "url"), "https://repo.amd.com/rocm/whl-multi-arch/",
         "release 10.0.0: AMD's wheel index is 'https://stable.repo.amd.com/rocm/whl-next/'"),
        ("repo.amd.com-whl", ("stable", "release", "10.1.0", "builds", 2, 1), "0.29.0",
         "release 10.1.0: AMD's torch/vision/audio builds"),
        ("repo.amd.com-whl", ("stable", "release", "10.0.0", "target_builds", "gfx1150"),
         ["2.12.0", "2.13.0"], "release 10.0.0: the targets offered fewer builds"),
        ("repo.amd.com-whl", ("runtime", "torch_requires"), "rocm[libraries]=={release}.*",
         "release 10.1.0: the runtime torch requires is 'rocm[libraries]==10.1.0'"),
        # AMD's rocm-docs data: a release it lists, a driver it drops, a target it adds
        ("rocm-docs", ("release_history", "10.2.0"), "2026-12-01",
         "release 10.2.0: in AMD's release history"),
        ("rocm-docs", ("amdgpu_drivers", "versions", 1), "31.55.0",
         "release 10.0.0: amdgpu folder '31.50' is not a driver AMD's driver list names"),
        ("rocm-docs", ("gpu_list", "gfx", 0), "gfx1250", "GPU gfx1250: in AMD's GPU list"),
    ],
)  # fmt: skip
def test_a_changed_record_fails_naming_the_row_and_the_source(
    monkeypatch, record, path, value, expected
):
    import copy

    data = copy.deepcopy(facts.load(record))
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    real = facts.load

    def patched(name):
        return data if name == record else real(name)

    monkeypatch.setattr(facts, "load", patched)
    found = [line for line in disagreements() if expected in line]
    assert found, disagreements()
    assert f"tests/fixtures/upstream/{record}.toml" in found[0]
