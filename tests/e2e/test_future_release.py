"""End to end: a release published after this rocm-fleet, deployed from a site's own matrix
data with no code change.

The lab's doubles also serve a synthetic Core SDK release, 10.9.0 (AMD has published no such
release: tests/fixtures/upstream/synthetic-future.toml), with a torch build no committed row
names (2.15.0+rocm10.9.0 on AMD's stable index). ``future`` (Debian 13, PRO W7900) starts on
the committed 10.0.0: a converged root (tests/lab/converged.py) of test_pull.py's ``future``
kind, since its first install is no behaviour of this module. Then:

* asking for 10.9.0 without site data is refused ("a release the matrix knows");
* discovery: the lab adds 10.9.0 to a copy of the stored upstream files (AMD's release
  history, versions.rst) and ``tools/matrix_update.py --stored COPY`` finds it (no driver in
  AMD's driver list, so dkms stays refused); ``rocm-fleet matrix update --output FILE
  --release`` <each release discovery found> reads it from the doubles at their real https
  URLs (verified indexes, AMD's wheel index) and writes it, checked; ``rocm-fleet matrix``
  and ``matrix --json`` show it, marked as the site's;
* the run with the file (named by the environment) says the plan comes from it (path and
  SHA-256), moves the host to 10.9.0 with torch 2.15.0, its checks pass, and the audit names
  the file too and finds nothing to change; with the file still set, naming 10.0.0 takes
  the host back to the committed release, from the committed data, and a second run
  changes nothing;
* a copy of the file edited to point the release at another host is refused, naming it;
  a row for a release upstream doesn't publish is refused by the deploy's check of the file.

The site file is a module fixture (``matrix update``'s run), so each test also passes alone
and in any order. That ``--dry`` plans what a run changes is test_fleet's
(test_dry_run_reports_exactly_the_drift); the plan's provenance line is printed by a run too.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from e2e import support
from e2e.support import (
    changed,
    differences,
    refusal,
    root_hashes,
    running_lab,
    sh,
    succeeded,
    wheels,
)
from lab import HostSpec
from lab.upstream_facts import FUTURE_RELEASE
from rocm_fleet.model import matrix, paths

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
STORED = ROOT / "tests" / "fixtures" / "upstream" / "stored"

COMMITTED = "10.0.0"
# The kind of pull_support.FLEET's ``future`` (its data, suite, profile and the Core SDK
# releases the lab serves): in CI one converge serves both modules.
HOST = HostSpec("future", suite="trixie", profile="w7900", converged=True,
                data={"rocm_version": COMMITTED, "expected_gfx": "gfx1100",
                      "expected_gpu_count": 1, "pytorch_install": False})  # fmt: skip
VERIFY = "Verify | Check rocminfo and torch see the expected GPUs"


@pytest.fixture(scope="module")
def lab():
    yield from running_lab([HOST], [COMMITTED, FUTURE_RELEASE])


def deploy(lab, *data: str, dry: bool = False, env: dict[str, str] | None = None):
    return support.deploy(lab, limit="future", data=data, dry=dry, env=env)


def installed(lab) -> dict[str, str]:
    out = sh(lab, "future", "dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\\n'")
    return {w[1]: w[2] for w in (line.split() for line in out.splitlines()) if w[0][0] == "i"}


def test_a_release_the_matrix_does_not_know_is_refused_without_site_data(lab):
    result = deploy(lab, f"rocm_version={FUTURE_RELEASE}", dry=True)
    assert result.returncode != 0
    assert f"'rocm_version' has value '{FUTURE_RELEASE}'" in result.output, result.output[-3000:]
    assert "rocm-fleet matrix update --output FILE" in result.output


@pytest.fixture(scope="module")
def discovered(lab) -> list[str]:
    """The releases discovery finds in the stored upstream copies to which the lab adds
    FUTURE_RELEASE (a line of AMD's release history, versions.rst), that the committed
    matrix lacks: the tool's own data, not a hand-made row."""
    stored = Path(shutil.copytree(STORED, lab.workdir / "stored"))
    history = stored / "versions.rst"
    text = history.read_text()
    first = text.index("   * - `")
    history.write_text(text[:first] + f"   * - `{FUTURE_RELEASE} <https://rocm.docs.amd.com/"
                       f"en/docs-{FUTURE_RELEASE}>`__\n     - December 1, 2026\n\n"
                       + text[first:])  # fmt: skip
    out = lab.workdir / "upstream_data.json"
    tool = [sys.executable, str(ROOT / "tools" / "matrix_update.py"), "--stored", str(stored),
            "--output", str(out)]  # fmt: skip
    result = subprocess.run(tool, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert f"new release {FUTURE_RELEASE} (2026-12-01) from AMD versions.rst: no driver" in (
        result.stderr
    )  # fmt: skip
    rows = json.loads(out.read_text())["releases"]
    return [r["version"] for r in rows if r["version"] not in matrix.release_versions()]


def test_discovery_finds_the_release_the_stored_copies_add(discovered):
    assert discovered == [FUTURE_RELEASE]


class Written(NamedTuple):
    path: Path  # the site file
    result: Any  # the run of ``rocm-fleet matrix update`` that wrote it


@pytest.fixture(scope="module")
def written(lab, discovered) -> Written:
    """``rocm-fleet matrix update --output FILE --release`` <each release discovery found>,
    from the doubles at their real https URLs."""
    path = lab.workdir / "site-matrix.json"
    command = [lab_cli(lab), "matrix", "update", "--output", str(path),
               *(a for version in discovered for a in ("--release", version)),
               "--key-fingerprint", lab.lab_key_fingerprint]  # fmt: skip
    result = lab.run(command, env={"REQUESTS_CA_BUNDLE": str(lab.ca_cert)}, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return Written(path, result)


@pytest.fixture(scope="module")
def site_file(written) -> Path:
    return written.path


def lab_cli(lab) -> str:
    """The lab's ``rocm-fleet``."""
    return str(Path(lab.env()["PATH"].split(":")[0]) / "rocm-fleet")


def test_matrix_update_writes_the_future_release_from_upstream(lab, written):
    site_file, result, cli = written.path, written.result, lab_cli(lab)
    (row,) = json.loads(site_file.read_text())["releases"]
    assert row["version"] == FUTURE_RELEASE
    assert (row["stream"], row["repository"]) == ("core-sdk", "stable.repo.amd.com")
    assert row["amd_wheels"]["builds"] == [["2.15.0", "0.30.0", "2.11.0.4"]]
    assert row["amd_wheels"]["targets"] == ["gfx950", "gfx942", "gfx1201", "gfx1100"]
    assert "amdrocm10.9 10.9.0-1" in row["found"]
    # no URL, key or fingerprint is in the file: the committed matrix's are used
    assert "https://" not in json.dumps(row).replace(row["found"], "")
    assert f"wrote {site_file}" in result.stdout
    # `rocm-fleet matrix` and `matrix --json` show it after the committed rows, the site's
    shown = lab.run([cli, "matrix", "--site-data", str(site_file)], timeout=120)
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert any(line.startswith(f"{FUTURE_RELEASE} ") for line in shown.stdout.splitlines())
    assert f"site matrix data {site_file}" in shown.stdout
    as_json = lab.run([cli, "matrix", "--json", "--site-data", str(site_file)], timeout=120)
    assert as_json.returncode == 0, as_json.stderr[-3000:]
    last = json.loads(as_json.stdout)["releases"][-1]
    assert (last["version"], last["source"]["from"]) == (FUTURE_RELEASE, "site")


def test_dkms_for_the_site_files_release_without_a_driver_is_refused_at_plan_time(lab, site_file):
    """No AMD page names 10.9.0's driver, so the site file has none: with rocm_driver: dkms
    the driver step would fail after the key, source, pin and apt-get update. Preflight
    refuses the host while planning instead: the audit and the run say it, exit 1, and not
    a byte of the host changes (``--dry`` plans as the run does)."""
    assert json.loads(site_file.read_text())["releases"][0]["amdgpu_driver"] is None
    reason = (f"rocm_driver: dkms, but the matrix does not record which amdgpu driver ROCm "
              f"{FUTURE_RELEASE} ships (AMD's driver list, ")  # fmt: skip
    data = (f"rocm_version={FUTURE_RELEASE}", "rocm_driver=dkms", f"rocm_matrix_data={site_file}")
    before = root_hashes(lab.root("future"))
    report = support.audit(lab, "--limit", "future", *[a for d in data for a in ("--data", d)])
    (row,) = report.json["hosts"]
    assert row["status"] == "refused" and reason in row["error"], row
    run = deploy(lab, *data)
    assert run.returncode == 1 and reason in (refusal(run, "future") or ""), run.output[-3000:]
    assert differences(before, root_hashes(lab.root("future"))) == []


def refused_with_edited_copy(lab, site_file: Path, name: str, **change: str):
    """A deploy of the release of a copy of the site file with ``change`` in its row, which
    must fail and leave the host's packages as they were; (the result, the copy)."""
    data = json.loads(site_file.read_text())
    data["releases"][0].update(change)
    edited = lab.workdir / name
    edited.write_text(json.dumps(data))
    before = installed(lab)
    version = data["releases"][0]["version"]
    result = deploy(lab, f"rocm_version={version}", "pytorch_install=True",
                    f"rocm_matrix_data={edited}")  # fmt: skip
    assert result.returncode != 0
    assert installed(lab) == before
    return result, edited


def test_a_site_file_edited_to_point_at_another_host_is_refused(lab, site_file):
    result, forged = refused_with_edited_copy(
        lab, site_file, "forged-matrix.json", repository="evil.example"
    )
    # bad inventory data stops the run before any host is touched, naming the file and field
    assert (
        f"future: inventory key 'rocm_matrix_data' (set in --data): site matrix data {forged}: "
        "field 'releases[0].repository' has value \"evil.example\"" in result.output
    ), result.output[-3000:]


def test_a_site_row_upstream_does_not_publish_is_refused_before_planning(lab, site_file):
    # A well-formed row for a release the doubles don't serve (as a stale or mistyped file
    # would have): the deploy's own check of the file finds it missing, and stops there.
    result, _ = refused_with_edited_copy(
        lab, site_file, "unpublished-matrix.json", version="10.8.0"
    )
    assert "upstream does not publish what it says" in result.output, result.output[-3000:]
    assert "10.8.0 packages in debian13: wrong (no amdrocm10.8 of 10.8.0" in result.output


def test_the_host_moves_to_the_future_release_and_back_with_the_site_file(lab, site_file):
    digest = hashlib.sha256(site_file.read_bytes()).hexdigest()
    move = (f"rocm_version={FUTURE_RELEASE}", "pytorch_install=True")
    # the run (the file named by the environment) says where the plan comes from
    result = deploy(lab, *move, env={"ROCM_FLEET_MATRIX_DATA": str(site_file)})
    succeeded(result)
    assert f"ROCm {FUTURE_RELEASE} from site matrix data {site_file} (sha256 {digest})" in (
        result.output
    )  # fmt: skip
    made = [op for op, hosts in changed(result).items() if hosts == ["future"]]
    assert any(op.endswith("Install the ROCm packages of the release") for op in made), made
    assert changed(result)[VERIFY] == ["future"]
    record = (lab.root("future") / paths.VERIFIED.lstrip("/")).read_text()
    assert f"rocm {FUTURE_RELEASE} (core-sdk, /opt/rocm/core-10.9/bin/rocminfo)\n" in record
    packages = installed(lab)
    assert packages["amdrocm10.9-gfx1100"] == "10.9.0-1", packages
    assert not any(name.startswith("amdrocm10.0") for name in packages), packages
    assert wheels(lab, "future") == {"torch": "2.15.0+rocm10.9.0",
                                     "torchvision": "0.30.0+rocm10.9.0",
                                     "torchaudio": "2.11.0.4+rocm10.9.0"}  # fmt: skip
    # the audit names the data the host's plan comes from, and finds nothing to change
    data = [a for item in (*move, f"rocm_matrix_data={site_file}") for a in ("--data", item)]
    report = support.audit(lab, "--limit", "future", *data)
    assert report.json is not None, report.stdout + report.stderr[-3000:]
    (row,) = report.json["hosts"]
    assert row["matrix_data"] == f"site matrix data {site_file} (sha256 {digest})"
    assert row["status"] == "ok", row

    # with the file still set, the committed release comes from the committed data
    back = (f"rocm_version={COMMITTED}", "pytorch_install=False", f"rocm_matrix_data={site_file}")
    result = deploy(lab, *back)
    succeeded(result)
    assert f"ROCm {COMMITTED} from rocm-fleet's committed matrix" in result.output
    packages = installed(lab)
    assert packages["amdrocm10.0-gfx1100"].startswith("10.0.0-"), packages
    assert not any(name.startswith("amdrocm10.9") for name in packages), packages
    record = (lab.root("future") / paths.VERIFIED.lstrip("/")).read_text()
    assert f"rocm {COMMITTED} (core-sdk, /opt/rocm/core-10.0/bin/rocminfo)\n" in record
    assert changed(deploy(lab, *back)) == {}
