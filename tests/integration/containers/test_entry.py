"""The entry a fleet with GPU-container settings runs, through pyinfra's own command line: the
core's deploy alone (``rocm_fleet.deploy.rocm_node``) stops the run at the key, naming the file
and line that set it and the deploy to run instead, before any host is read or changed."""

from __future__ import annotations

import subprocess
import sys

FLEET = (
    "gpus = [\n"
    '    ("@local", {"rocm_version": "7.2.0", "expected_gpu_count": 0,\n'
    '                "rocm_containers_images": ["registry.example.org/ml/pytorch:2.9"]}),\n'
    "]\n"
)


def test_pyinfra_dry_with_rocm_node_alone_refuses_a_host_with_container_settings(tmp_path):
    (tmp_path / "fleet.py").write_text(FLEET)
    done = subprocess.run(
        [sys.executable, "-m", "pyinfra", "--dry", "fleet.py", "rocm_fleet.deploy.rocm_node"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert (
        "--> pyinfra error in fleet.py line 3: @local: inventory key 'rocm_containers_images' "
        "has value ['registry.example.org/ml/pytorch:2.9'] (set in fleet.py); expected it "
        "unset when running rocm_fleet.deploy.rocm_node alone, which deploys no GPU "
        "containers: run rocm_fleet.compose.fleet_node (deploy.py), which runs rocm_node and "
        "then GPU containers\n"
    ) in output
    assert "rocm-fleet: ROCm" not in output and "Ready:" not in output  # nothing planned
