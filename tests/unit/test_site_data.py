"""A site's own matrix data (model.site_data): releases published after this rocm-fleet, added
to the committed matrix and nothing else. The attacks: a data file edited to point a node at
another host or key, or to change a committed row, is refused, naming the file and the field,
and nothing of the host's plan comes from it."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest

from rocm_fleet.model import matrix, site_data, streams, torch_builds
from rocm_fleet.model.config import ConfigError, load_config

# A Core SDK release no rocm-fleet commits (synthetic: AMD has published no 10.9.0).
ROW = {
    "version": "10.9.0",
    "stream": "core-sdk",
    "repository": "stable.repo.amd.com",
    "torch_index": None,
    "amdgpu_driver": None,
    "amd_wheels": {
        "builds": [["2.15.0", "0.30.0", None]],
        "targets": ["gfx942", "gfx1100"],
        "target_builds": {},
    },
    "found": "https://stable.repo.amd.com/rocm/core/packages/debian13/dists/stable",
}


def site_file(tmp_path: Path, *rows: dict, **top) -> Path:
    data = {"format": site_data.FORMAT, "releases": list(rows or [ROW]), **top}
    path = tmp_path / "site-matrix.json"
    path.write_text(json.dumps(data))
    return path


def with_(change: dict) -> dict:
    row = copy.deepcopy(ROW)
    row.update(change)
    return row


def test_a_site_row_adds_a_release_and_its_torch(tmp_path):
    path = site_file(tmp_path)
    config = load_config({"rocm_version": "10.9.0", "expected_gfx": "gfx942",
                          "rocm_matrix_data": str(path)})  # fmt: skip
    rel = config.release
    assert (rel.version, rel.stream, rel.repository) == (
        "10.9.0", streams.CORE_SDK, streams.STABLE_REPOSITORY
    )  # fmt: skip
    # the host and key stay the committed ones: nothing of them is in the file
    assert rel.repository.key_url == "https://stable.repo.amd.com/rocm/gpg/packages.gpg"
    assert config.key_fingerprint == streams.CORE_SDK.key_fingerprint
    assert rel.amd_wheels.url == torch_builds.AMD_STABLE_WHEEL_INDEX
    assert config.torch_build == torch_builds.TorchBuild("2.15.0", "0.30.0", None)
    assert rel.root == "/opt/rocm/core-10.9"
    assert config.wanted_packages(["gfx942"]) == ["amdrocm10.9-gfx942"]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert config.matrix_source == f"site matrix data {path} (sha256 {digest})"


def test_the_environment_names_the_file_when_the_inventory_does_not(tmp_path, monkeypatch):
    path = site_file(tmp_path)
    monkeypatch.setenv(site_data.ENVIRONMENT, str(path))
    assert load_config({"rocm_version": "10.9.0"}).release.version == "10.9.0"
    monkeypatch.delenv(site_data.ENVIRONMENT)
    with pytest.raises(ConfigError, match="matrix update --output FILE"):
        load_config({"rocm_version": "10.9.0"})


def test_a_host_naming_a_committed_release_is_not_moved_by_site_data(tmp_path):
    path = site_file(tmp_path)
    config = load_config({"rocm_version": "10.0.0", "rocm_matrix_data": str(path)})
    assert config.release is matrix.release("10.0.0")
    assert config.matrix_source == "rocm-fleet's committed matrix"


def test_a_committed_row_repeated_exactly_is_accepted(tmp_path):
    committed = site_data.row_json(matrix.release("10.0.0"))
    path = site_file(tmp_path, committed, ROW)
    assert [r.version for r in site_data.load(path).added] == ["10.9.0"]


@pytest.mark.parametrize(
    ("row", "field", "valid"),
    [
        # pointing a node at another host or key: no such field, and names only
        (with_({"key_url": "https://evil.example/key.gpg"}), "releases[0].key_url",
         "hosts, URLs and keys are the committed matrix's alone"),
        (with_({"key_fingerprint": "A" * 40}), "releases[0].key_fingerprint", "no such field"),
        (with_({"base_url": "https://evil.example/rocm"}), "releases[0].base_url",
         "no such field"),
        (with_({"repository": "evil.example"}), "releases[0].repository",
         "the name of a committed core-sdk repository (repo.amd.com, stable.repo.amd.com)"),
        (with_({"repository": "https://evil.example/rocm/core/packages"}),
         "releases[0].repository", "the name of a committed core-sdk repository"),
        # a classic release can't be placed in another stream's repository
        (with_({"stream": "classic"}), "releases[0].repository",
         "committed classic repository (repo.radeon.com)"),
        (with_({"amd_wheels": {**ROW["amd_wheels"], "url": "https://evil.example/whl/"}}),
         "releases[0].amd_wheels.url", "the index is AMD's committed"),
        (with_({"torch_index": "rocm10.9"}), "releases[0].torch_index",
         "a PyTorch index the matrix knows"),
        (with_({"version": "10.9"}), "releases[0].version", "a release X.Y.Z"),
        (with_({"amdgpu_driver": "31.50 main\ndeb https://evil.example"}),
         "releases[0].amdgpu_driver", "an amdgpu folder"),
        (with_({"amd_wheels": {**ROW["amd_wheels"], "targets": ["gfx9999"]}}),
         "releases[0].amd_wheels.targets", "GPU targets the matrix knows"),
        (with_({"amd_wheels": {**ROW["amd_wheels"], "builds": [["2.15.0 --index-url x",
                                                                "0.30.0", None]]}}),
         "releases[0].amd_wheels.builds[0]", "each a version"),
    ],
)  # fmt: skip
def test_a_site_file_can_never_name_a_host_key_or_bad_value(tmp_path, row, field, valid):
    path = site_file(tmp_path, row)
    with pytest.raises(ConfigError) as caught:
        load_config({"rocm_version": "10.9.0", "rocm_matrix_data": str(path)}, "gpu1")
    message = str(caught.value)
    assert caught.value.key == "rocm_matrix_data"
    assert message.startswith(f"gpu1: inventory key 'rocm_matrix_data': site matrix data {path}:")
    assert f"field {field!r}" in message and valid in message


@pytest.mark.parametrize(
    "change",
    [
        {"repository": "repo.amd.com"},  # 10.0.0 moved to another committed host
        {"amdgpu_driver": "31.60"},
        {
            "amd_wheels": {
                "builds": [["2.15.0", "0.30.0", None]],
                "targets": ["gfx942"],
                "target_builds": {},
            }
        },
    ],
)
def test_a_committed_row_can_not_be_changed(tmp_path, change):
    committed = site_data.row_json(matrix.release("10.0.0"))
    path = site_file(tmp_path, {**committed, **change})
    with pytest.raises(ConfigError, match=r"can only add releases, and its row for 10\.0\.0 "
                       r"differs from the committed one"):  # fmt: skip
        load_config({"rocm_version": "10.0.0", "rocm_matrix_data": str(path)})


def test_the_format_and_the_file_itself_are_checked(tmp_path):
    for top, match in (
        ({"format": "rocm-fleet site matrix data 9"}, "field 'format'"),
        ({"streams": []}, "field 'streams'.*'format' and 'releases' only"),
    ):
        path = site_file(tmp_path, **top)
        with pytest.raises(site_data.SiteDataError, match=match):
            site_data.load(path)
    (tmp_path / "bad.json").write_text("{releases: ")
    with pytest.raises(site_data.SiteDataError, match="not JSON"):
        site_data.load(tmp_path / "bad.json")
    with pytest.raises(site_data.SiteDataError, match="can't read it"):
        site_data.load(tmp_path / "missing.json")
    (tmp_path / "big.json").write_bytes(b" " * (site_data.MAX_BYTES + 1))
    with pytest.raises(site_data.SiteDataError, match="larger than"):
        site_data.load(tmp_path / "big.json")


def test_what_is_rendered_reads_back_as_the_same_rows(tmp_path):
    rel = site_data.load(site_file(tmp_path)).added[0]
    text = site_data.render([(rel, "somewhere")])
    (again,) = site_data.parse(text.encode(), tmp_path / "x.json").added
    assert again == rel
