"""What a converged ROCm + PyTorch node looks like, checked from outside with testinfra; each
check's docstring begins with the sentence ``rocm-fleet check`` names it by."""

import dataclasses
import json
import re
import shlex

import pytest

from rocm_fleet.checks.plugin import Target
from rocm_fleet.checks.report import UNREACHABLE
from rocm_fleet.facts.gpu import KfdNodes
from rocm_fleet.facts.slurm import SlurmNode
from rocm_fleet.model import apu, paths
from rocm_fleet.model.config import Config
from rocm_fleet.model.container_toolkit import CDI_KIND, DOCKER_CDI, RUNTIME_NAME
from rocm_fleet.model.gpu_targets import gpu_target
from rocm_fleet.model.health import AMD_SMI_READS, HealthParseError, gpu_health, usable_json
from rocm_fleet.model.matrix import distro
from rocm_fleet.model.paths import ROCM_ROOT
from rocm_fleet.model.slurm import gres_conf, gres_mismatch, node_gres, slurm_gpus
from rocm_fleet.model.sources import mirror_path, rocm_repository
from rocm_fleet.model.streams import REPOSITORIES, STREAMS
from rocm_fleet.model.untrusted import visible

TORCH_PROBE = r"""
import json, torch
out = {"version": torch.__version__, "hip": torch.version.hip,
       "available": torch.cuda.is_available(), "count": torch.cuda.device_count()}
out["archs"] = [torch.cuda.get_device_properties(i).gcnArchName.split(":")[0]
                for i in range(out["count"])]
if out["available"]:
    a = torch.ones(32, 32, device="cuda")
    out["matmul"] = (a @ a).sum().item()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def host(target: Target):
    """The host, as testinfra's ``host`` (``target``: the plugin's, one per host checked)."""
    return target.host


#: each GPU's target and total memory as torch sees them (on an APU: what it may map)
TORCH_MEMORY_PROBE = r"""
import json, torch
print(json.dumps([[torch.cuda.get_device_properties(i).gcnArchName.split(":")[0],
                   torch.cuda.get_device_properties(i).total_memory]
                  for i in range(torch.cuda.device_count())]))
"""


@pytest.fixture(autouse=True)
def connected(target: Target, request):
    """Fail each check of an unreachable host with one line (asked once per host)."""
    reason = target.reach()
    if reason:
        request.node.user_properties.append((UNREACHABLE, reason))
        pytest.fail(f"{target.name}: unreachable: {reason}", pytrace=False)


@pytest.fixture(scope="module")
def node(target: Target) -> Config:
    """What the host should have: its validated ``Config``."""
    return target.config


def test_rocm_source_uses_keyring_and_suite(host, node):
    """The ROCm apt source is AMD's, with its keyring and suite."""
    row = distro(host.system_info.distribution, host.system_info.release)
    system = f"{host.system_info.distribution} {host.system_info.release}"
    assert row is not None, f"{system}: not a distro of the matrix"
    expected = rocm_repository(node, row)
    source = host.file(expected.source)
    assert source.is_file, f"{expected.source} is missing: the ROCm apt source was not written"
    text = source.content_string
    # AMD's URL, or the fleet mirror's copy of it.
    served = re.findall(r"https?://\S+?/" + re.escape(mirror_path(expected.url)), text)
    urls = [expected.url, *served]
    wanted = {dataclasses.replace(expected, url=url).source_text() for url in urls}
    assert text in wanted, f"{expected.source} is not the release's source: {text.strip()!r}"
    assert host.file(expected.keyring).is_file, f"{expected.keyring} is missing"
    for other in {repo.source for repo in REPOSITORIES} - {expected.source}:
        assert not host.file(other).exists, f"{other}: a source of the other stream"


def test_pin_prefers_amds_repository(host, node):
    """The apt pin prefers AMD's repository."""
    pin_file = host.file(node.stream.pin)
    assert pin_file.is_file, f"{node.stream.pin} is missing: the distribution's ROCm packages win"
    pin = pin_file.content_string
    origin = node.stream.pin_origin
    assert f"Pin: release o={origin}" in pin, f"{node.stream.pin} does not pin origin {origin}"
    assert "Pin-Priority: 600" in pin, f"{node.stream.pin} does not give AMD's packages 600"


def test_rocm_packages_come_from_the_release(host, node):
    """The installed ROCm packages are the release's.

    None of the other stream's is left, and the release's version file says so."""
    listing = host.check_output("dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\\n'")
    installed = {}
    for line in listing.splitlines():
        words = line.split()  # "ii" (want and state; no error flag) name version
        if len(words) == 3 and words[0].startswith("i"):
            installed[words[1]] = words[2]
    release = re.compile(node.stream.version_regex(node.release))
    mine = {n: v for n, v in installed.items() if node.stream.owns(n, v)}
    assert mine, "no ROCm package of the release's stream is installed"
    foreign = {n: v for n, v in mine.items() if not release.search(v)}
    assert foreign == {}, f"not {node.release.version}'s: {foreign}"
    others = [s for s in STREAMS if s is not node.stream]
    stray = [n for n, v in installed.items() if any(s.owns(n, v) for s in others)]
    assert stray == [], f"packages of another ROCm stream are installed: {stray}"
    version_file = host.file(f"{node.release.root}/.info/version")
    assert version_file.is_file, f"{version_file.path} is missing"
    version, wanted = version_file.content_string.strip(), node.release.version
    assert version.startswith(wanted + "-"), f"{version_file.path} says {version}, not {wanted}"


def test_users_can_reach_the_gpu(host, node):
    """The rocm_users can reach the GPU (video and render groups)."""
    if not node.rocm_users:
        pytest.skip("no rocm_users to check")
    for user in node.rocm_users:
        assert host.user(user).exists, f"user {user} does not exist"
        groups = host.user(user).groups
        said = f"{user} is not in video and render (groups: {', '.join(groups) or 'none'})"
        assert "video" in groups and "render" in groups, said


def test_rocminfo_reports_expected_gpus(host, node):
    """rocminfo reports the expected GPUs."""
    if node.expected_gpu_count == 0:
        pytest.skip("GPU-less host by configuration")
    rocminfo = node.release.rocminfo  # the release's own
    assert host.file(rocminfo).exists, f"{rocminfo} is missing: AMD's rocminfo is not installed"
    out = host.check_output(rocminfo)
    agents = re.findall(r"^\s+Name:\s+(gfx[0-9a-f]+)\s*$", out, re.M)
    assert agents, f"{rocminfo} lists no GPU agent"
    expected = node.expected_gfx_list or agents
    matching = [a for a in agents if a in expected]
    assert matching, f"expected {expected}, rocminfo lists {agents}"
    if node.expected_gpu_count is not None:
        assert len(matching) == node.expected_gpu_count, (
            f"expected {node.expected_gpu_count} x {'/'.join(expected)}, rocminfo lists {agents}"
        )


def test_torch_is_the_rocm_build_and_sees_the_gpus(host, node):
    """torch is the ROCm build and sees the GPUs."""
    if not node.pytorch_install:
        pytest.skip("pytorch_install is false")
    python = node.venv_python
    assert host.file(python).exists, f"{python} is missing: the PyTorch venv was not created"
    info = json.loads(host.check_output("%s -c %s", python, TORCH_PROBE))
    # The exact pin with its index's label: 2.9.1+rocm6.4, AMD's 2.13.0+rocm10.0.0.
    assert node.torch.accepts("torch", info["version"]), (
        f"torch {info['version']} is not the build wanted: {' '.join(node.torch.requirements())}"
    )
    assert info["hip"], "torch.version.hip is empty: not a ROCm build"
    if node.expected_gpu_count == 0:
        return
    assert info["available"] is True, "torch sees no GPU (torch.cuda.is_available() is False)"
    assert info["count"] >= 1, "torch counts no GPU"
    for gfx in node.expected_gfx_list:
        assert gfx in info["archs"], f"torch sees {info['archs']}, not {gfx}"
    assert info["matmul"] == 32 * 32 * 32, f"a 32x32 matmul on the GPU gave {info['matmul']}"


def test_apu_gtt_is_the_size_asked(host, node):
    """The APU's GTT is the size rocm_apu_gtt_gib asks.

    amdgpu reports that GTT, and torch sees no less memory on the APU."""
    if node.rocm_apu_gtt_gib is None:
        pytest.skip("rocm_apu_gtt_gib is not set")
    wanted = apu.gtt_bytes(node.rocm_apu_gtt_gib)
    lines = host.run("grep -H . /sys/bus/pci/devices/*/mem_info_gtt_total").stdout.split()
    reported = {path.split("/")[-2]: int(n) for path, _, n in (ln.rpartition(":") for ln in lines)}
    pending = apu.REBOOT_REASON in host.run("cat %s", paths.REBOOT_REASONS).stdout
    assert wanted in reported.values(), (
        f"rocm_apu_gtt_gib is {node.rocm_apu_gtt_gib} ({wanted} bytes) but amdgpu reports GTT "
        f"{reported or 'nowhere (no mem_info_gtt_total)'}"
        + ("; a reboot is pending: the limit applies at the next boot" if pending else "")
    )
    if not node.pytorch_install or not host.file(node.venv_python).exists:
        return
    seen = json.loads(host.check_output("%s -c %s", node.venv_python, TORCH_MEMORY_PROBE))
    for arch, total in seen:
        target = gpu_target(arch)
        assert target is None or target.family != "ryzen" or total >= wanted, (
            f"torch sees {total} bytes on {arch}, less than the {wanted} asked"
        )


def test_gpus_are_healthy(host, node):
    """The GPUs are healthy (ECC, PCIe, XGMI).

    An uncorrectable error, a narrowed link or a link down fails; a missing counter doesn't."""
    if node.expected_gpu_count == 0:
        pytest.skip("GPU-less host by configuration")
    found = host.run(f"command -v amd-smi || command -v {ROCM_ROOT}/bin/amd-smi")
    if found.rc != 0:
        pytest.skip("amd-smi is not installed: no health counters to read")
    smi = found.stdout.strip()
    out = {}
    for name, args in AMD_SMI_READS.items():
        result = host.run(f"timeout 60 %s {args} --json", smi)
        out[name] = result.stdout if result.rc == 0 else None
    assert out["metric"] is not None, f"{smi} metric --ecc --pcie --json failed"
    try:
        gpus = gpu_health(out["metric"], usable_json(out["static"]), usable_json(out["xgmi"]))
    except HealthParseError as exc:
        pytest.fail(str(exc), pytrace=False)
    assert gpus, f"{smi} lists no GPU"
    report = "\n".join(line for gpu in gpus for line in gpu.lines() + gpu.warnings())
    problems = [problem for gpu in gpus for problem in gpu.problems()]
    if problems:  # the problems first, then every GPU's counters for context
        pytest.fail("\n".join(problems) + "\n" + report, pytrace=False)


def test_slurm_sees_the_gpus(host, node):
    """Slurm sees the node's GPUs.

    gres.conf lists them as they are now, and ``scontrol show node`` gives their ``Gres=``."""
    if not node.rocm_slurm_gres:
        pytest.skip("rocm_slurm_gres is not set")
    kfd = KfdNodes()
    nodes = kfd.process(host.run(kfd.command()).stdout.splitlines())
    if nodes is None:
        pytest.fail("no KFD topology (amdgpu not loaded): no GPU for Slurm", pytrace=False)
    gpus = slurm_gpus(nodes, node.rocm_slurm_gres_type)
    conf = host.file(paths.SLURM_GRES_CONF)
    assert conf.is_file, f"{paths.SLURM_GRES_CONF} is missing: the deploy did not write it"
    written = conf.content_string
    assert written == gres_conf(gpus), (
        f"{paths.SLURM_GRES_CONF} does not list this node's GPUs (Gres={node_gres(gpus)}):\n"
        f"{written.strip()}"
    )
    slurm = SlurmNode()
    view = slurm.process(host.run(slurm.command(node.rocm_slurm_node_name)).stdout.splitlines())
    mismatch = gres_mismatch(gpus, view)
    assert mismatch is None, mismatch


#: what a GPU container runs: ls of /dev/kfd and the render nodes it was given
CONTAINER_PROBE = "ls /dev/kfd /dev/dri"


def container_devices(out: str) -> tuple[bool, list[str]]:
    """(whether /dev/kfd was listed, the render nodes) in ``CONTAINER_PROBE``'s output."""
    kfd = any(line.strip() == "/dev/kfd" for line in out.splitlines())
    return kfd, sorted(set(re.findall(r"\brenderD\d+\b", out)), key=lambda n: int(n[7:]))


def docker_gpu_args(version: str) -> str:
    """How Docker ``version`` gets every GPU: CDI from ``DOCKER_CDI`` on, else AMD's runtime."""
    found = re.match(r"(\d+)\.(\d+)", version.strip())
    if found and (int(found[1]), int(found[2])) >= DOCKER_CDI:
        return f"--device {CDI_KIND}=all"
    return f"--runtime={RUNTIME_NAME} -e AMD_VISIBLE_DEVICES=all"


def test_gpu_containers_see_the_gpus(host, node):
    """GPU containers see the GPUs.

    The first image on each engine, as root and (Podman) as each rootless user, sees /dev/kfd
    and ``expected_gpu_count`` render nodes."""
    engines = node.rocm_containers_engines
    if not engines:
        pytest.skip("rocm_containers_engines is empty")
    if not node.rocm_containers_images:
        pytest.skip("no image to run: rocm_containers_images names none")
    image = node.rocm_containers_images[0]
    runs: list[tuple[str, str | None, str]] = []
    for engine in engines:
        if engine == "docker":
            version = host.run("docker version --format '{{.Server.Version}}'")
            refused = f"! docker answers no version: {version.stderr}"
            runs.append((engine, None, refused if version.rc else docker_gpu_args(version.stdout)))
        else:
            runs.append((engine, None, f"--device {CDI_KIND}=all"))
            runs += [(engine, user, f"--group-add keep-groups --device {CDI_KIND}=all")
                     for user in node.rocm_containers_rootless_users]  # fmt: skip
    problems = []
    for engine, user, args in runs:
        who = f"{engine} as {user}" if user else f"{engine} as root"
        if args.startswith("!"):
            problems.append(f"{who}: {visible(args[2:].strip())}")
            continue
        command = f"timeout 120 {engine} run --rm --network none {args} {image} {CONTAINER_PROBE}"
        if user:
            command = f"su -s {paths.SHELL} {user} -c {shlex.quote('cd && ' + command)}"
        result = host.run(command)
        kfd, render = container_devices(result.stdout)
        want = node.expected_gpu_count
        wanted = want if want is not None else "1 or more"
        if result.rc != 0 and not render:
            problems.append(f"{who}: `{command}` failed: {visible(result.stderr.strip()[-500:])}")
        elif not kfd:
            problems.append(f"{who}: the container has no /dev/kfd")
        elif not render or (want is not None and len(render) != want):
            problems.append(f"{who}: the container sees {len(render)} render node(s) "
                            f"({', '.join(render) or 'none'}), expected {wanted}")  # fmt: skip
    assert not problems, "\n".join(problems)
