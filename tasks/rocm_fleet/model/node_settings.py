"""The settings of a node's install (``NodeSettings``; ``model.settings.Settings`` adds the
fleet's), each declared by ``setting(CONCERN)``: its default and meaning, what is valid being in
its type (``model.setting_types``)."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rocm_fleet.model import container_toolkit, matrix, paths, streams, torch_builds
from rocm_fleet.model import setting_types as t


# ruff: noqa: RUF009 - a ``setting`` makes a dataclass field, as ``field`` does
def setting(concern: str) -> Callable[[Any, str], Any]:
    """What declares a setting of ``concern``: a dataclass field of its default (a list's a
    ``default_factory``) and meaning, with the ``description`` pydantic's JSON Schema reads."""

    def declared(default: Any, meaning: str) -> Any:
        schema = {"description": meaning, "json_schema_extra": {"x-concern": concern}}
        metadata = {"meaning": meaning, "concern": concern, **schema}
        if isinstance(default, list):
            return field(default_factory=lambda: list(default), metadata=metadata)
        return field(default=default, metadata=metadata)

    return declared


REPOSITORY, PACKAGES, KERNEL, DRIVER = "ROCm repository", "ROCm packages", "Kernel", "amdgpu driver"
_repository, _packages, _kernel, _driver = map(setting, (REPOSITORY, PACKAGES, KERNEL, DRIVER))
_groups, _pytorch, _verify = map(setting, ("GPU groups", "PyTorch", "Verify"))
_preflight, _apu, _secure_boot = map(setting, ("Preflight", "APU memory", "Secure Boot"))
#: The concern of the GPU-container settings (``rocm_fleet.containers``).
CONTAINERS = "GPU containers"
_reboot, _containers = setting("Reboot"), setting(CONTAINERS)
#: Concerns whose settings a feature's deploy applies after ``rocm_node()``, not it:
#: ``WHOLE_NODE`` runs both and tells ``rocm_node(composed=...)`` so.
FEATURE_CONCERNS = (CONTAINERS,)
#: The deploy that runs ``rocm_node()`` and then every feature's (``deploy.py`` runs it).
WHOLE_NODE = "rocm_fleet.compose.fleet_node"


@dataclass(frozen=True, kw_only=True)
class NodeSettings:
    """A host's settings of its install (defaults applied); ``Settings`` is all of them."""

    rocm_version: t.Release = _repository(
        "",
        "ROCm release to install, e.g. `6.4.3` or `7.2.1` (classic), `7.14.1` or `10.1.0` "
        "(ROCm Core SDK); `rocm-fleet matrix` lists them (required)",
    )
    rocm_matrix_data: t.AbsolutePath | None = _repository(
        None,
        "A site's own matrix data (a file where pyinfra runs, written by `rocm-fleet matrix "
        "update --output`): releases AMD published after this rocm-fleet, verified against "
        "upstream before a host is planned from one; it can only add releases, never change "
        "a key, host or committed row. Unset: `ROCM_FLEET_MATRIX_DATA` where pyinfra runs, "
        "else the committed matrix alone. A pull node is given the file's content in its "
        "signed target by `rocm-fleet publish`, never a path",
    )
    rocm_state: t.one_of("present", "absent") = _repository(
        "present",
        "`present`, or `absent` to remove what the deploy added (sources, key, pin, ROCm "
        "packages, venv, loader and PATH files); users, groups and kernels stay",
    )
    rocm_apt_base_url: t.HttpUrl | None = _repository(
        None,
        "Base of the release's AMD repository, for a mirror of it; default: the release's "
        "(`repo.radeon.com/rocm/apt`, `repo.amd.com/rocm/packages-multi-arch` for 7.14, "
        "`stable.repo.amd.com/rocm/core/packages` for 10.x)",
    )
    rocm_key_url: t.HttpUrl | None = _repository(
        None, "URL of the repository's signing key; default: the release's, from AMD"
    )
    rocm_key_fingerprint: t.Fingerprint | None = _repository(
        None,
        "Fingerprint the fetched key must have (default: the release stream's, from the "
        "matrix); a mismatch fails the host, writing nothing",
    )
    rocm_apt_auth: t.SecretSource | None = _repository(
        None,
        "Credentials for apt's sources, for a repository or mirror that asks for them: "
        "`env:VARIABLE` or a 0600 file where pyinfra runs holding apt_auth.conf(5) lines "
        "(`machine HOST login USER password SECRET`); written to "
        f"`{paths.APT_AUTH}` (root, 0600), never shown. Unset: that file goes",
    )
    rocm_packages: t.PackageNames | None = _packages(
        None,
        'AMD meta packages to install, e.g. `["rocm"]`; default: '
        + streams.CLASSIC.default_packages_text
        + " (classic), "
        + streams.CORE_SDK.default_packages_text
        + " (Core SDK)",
    )
    rocm_users: t.UserNames = _groups(
        [], "Existing users to add to `video` and `render` (other groups kept)"
    )
    pytorch_install: t.Flag = _pytorch(True, "Install the PyTorch venv (false: ROCm only)")
    pytorch_venv: t.AbsolutePath = _pytorch(paths.DEFAULT_VENV, "Path of the venv holding torch")
    pytorch_index_base_url: t.HttpUrl = _pytorch(
        torch_builds.PYTORCH_INDEX_BASE_URL,
        "Base of the wheel indexes; `/rocmX.Y` from the matrix is appended",
    )
    rocm_pip_netrc: t.SecretSource | None = _pytorch(
        None,
        "Credentials for the wheel index, for one that asks for them: `env:VARIABLE` or a 0600 "
        "file where pyinfra runs holding netrc lines (`machine HOST login USER password "
        f"SECRET`); written to `{paths.PIP_NETRC}` (root, 0600) and given to pip as `NETRC`, "
        "never shown. Unset: that file goes",
    )
    torch_version: t.TorchRelease | None = _pytorch(
        None,
        "The torch version, e.g. `2.9.1`; default: the newest the matrix lists for "
        "`rocm_version` (ROCm 10.x: of those AMD's page offers every `expected_gfx`)",
    )
    expected_gfx: t.GfxTargets | None = _verify(
        None, 'GPU target(s) rocminfo and torch must report, e.g. `gfx1100` or `["gfx942"]`'
    )
    expected_gpu_count: t.Count | None = _verify(
        None,
        "How many GPUs of `expected_gfx` must be present; 0 for a GPU-less host (CI, image builds)",
    )
    rocm_distro_override: t.Distro | None = _preflight(
        None,
        'Deploy a distro the matrix doesn\'t know as one it does, e.g. `"ubuntu 24.04"` for '
        "Linux Mint 22 (unofficial: warned). Without it an unknown distro is refused",
    )
    preflight_min_free_gb: t.Count = _preflight(
        10,
        f"Free space (GB) preflight requires for {paths.INSTALL_PATHS[0]}, the venv and apt's "
        "cache while apt can't size the ROCm packages (no AMD source yet); once it can, apt's "
        "figure is used",
    )
    rocm_kernel_backports: t.one_of("auto", "always", "never") = _kernel(
        "auto",
        "A newer kernel (Debian 12: bookworm-backports; Ubuntu: HWE): `auto` when the running "
        "kernel is older than `expected_gfx` needs, `always`, or `never`",
    )
    rocm_kernel_backports_mirror: t.HttpUrl | None = _kernel(
        None,
        "Debian mirror for the backports source; default: the one the host's own Debian "
        "sources use",
    )
    rocm_kernel_hold: t.Flag = _kernel(
        False,
        "With `rocm_driver: dkms`: put the kernel meta packages the host has installed "
        "(`linux-image-amd64`, `linux-generic`, `linux-generic-hwe-*`, `linux-oem-*`, their "
        "image and headers packages) on hold (`apt-mark hold`), so an unattended upgrade "
        "can't bring a kernel of a new ABI that `amdgpu-dkms` may not build for, and the "
        "node boot without its GPU. AMD publishes no kernel range per driver release: the "
        "range held is the one the host has. To move the kernel deliberately, unset it (or "
        "plan the move with `rocm_kernel_backports`, which releases the hold for that "
        "install alone). False: rocm-fleet releases only the holds it placed",
    )
    rocm_driver: t.one_of("inbox", "dkms") = _driver(
        "inbox",
        "The amdgpu kernel driver: `inbox` (the kernel's own) or `dkms` (AMD's `amdgpu-dkms`, "
        "built for the running and newer kernels; needs an enrolled key with Secure Boot)",
    )
    rocm_amdgpu_apt_base_url: t.HttpUrl = _driver(
        matrix.AMDGPU_APT_BASE_URL,
        "Base of AMD's amdgpu driver repository (with `rocm_driver: dkms`)",
    )
    rocm_amdgpu_key_url: t.HttpUrl = _driver(
        matrix.AMDGPU_KEY_URL,
        "URL of the driver repository's signing key, installed with a Core SDK release and "
        "`rocm_driver: dkms` (a classic release's key signs both), and for AMD's container "
        "toolkit (`rocm_containers_engines`), which it signs too",
    )
    rocm_amdgpu_key_fingerprint: t.Fingerprint = _driver(
        matrix.AMDGPU_KEY_FINGERPRINT, "Fingerprint that key must have"
    )
    rocm_apu_gtt_gib: t.Positive | None = _apu(
        None,
        "GiB of system memory a Ryzen APU's GPU may map (GTT), set as the kernel's TTM page "
        f"limit the way AMD documents it (`options ttm pages_limit=` in `{paths.TTM_MODPROBE}`); "
        "applies at the next boot (a reboot reason). Only on hosts with an APU, at most 90% of "
        "MemTotal, never beside `amdgpu.gttsize`. Unset: the file goes (the kernel's default, "
        "half the RAM)",
    )
    rocm_mok_password_env: t.EnvName = _secure_boot(
        "ROCM_FLEET_MOK_PASSWORD",
        "Environment variable (where pyinfra runs) with the one-time MOK password to type at "
        "the console; unset: asked once when pyinfra runs in a terminal",
    )
    rocm_reboot: t.one_of("allow", "never") = _reboot(
        "never",
        "Reboots: `allow` = hosts that need one (new kernel, new driver, MOK to confirm) "
        "reboot, then are verified again; `never` = the run ends listing them",
    )
    rocm_reboot_parallel: t.Positive = _reboot(
        1, "How many hosts reboot at a time (set it fleet-wide)"
    )
    rocm_reboot_timeout: t.Positive = _reboot(
        600, "Seconds a rebooting host has to come back before it fails"
    )
    rocm_containers_engines: t.ContainerEngines = _containers(
        [],
        "Container engines that get the node's GPUs (deployed by `rocm_fleet.compose.fleet_node`"
        " or `deploy.py`; `rocm_node` alone refuses a host setting any `rocm_containers_*` "
        "key): `docker`, `podman`, or both, through AMD's container toolkit "
        f"(the CDI spec `{container_toolkit.CDI_SPEC}`; Docker older than 25 gets AMD's "
        "runtime instead). Empty: none, and what rocm-fleet set up for containers goes",
    )
    rocm_containers_install_engine: t.Flag = _containers(
        True,
        "Install each engine from the distribution (`docker.io`; `podman` with `crun`); false: "
        "only configure an engine the site installed (preflight refuses a host without it)",
    )
    rocm_containers_rootless_users: t.RootlessUsers = _containers(
        [],
        "Existing users who run rootless Podman: put in `video` and `render` and given "
        f"subordinate ID ranges (`{paths.SUBUID}`, `{paths.SUBGID}`) where they have none; "
        "they run containers with `--group-add keep-groups`",
    )
    rocm_containers_restart_running: t.Flag = _containers(
        False,
        "Restart Docker for a configuration change even while it runs containers (they stop); "
        "false: such a host is warned that the change waits for Docker's next restart",
    )
    rocm_containers_toolkit_version: t.ToolkitRelease | None = _containers(
        None,
        f"The `{container_toolkit.PACKAGE}` release; default: the newest rocm-fleet knows "
        f"({container_toolkit.DEFAULT_RELEASE}; source: AMD's release notes, "
        "`model/container_toolkit.py`)",
    )
    rocm_containers_images: t.ImageRefs = _containers(
        [],
        "Images to pull on each engine ahead of use (e.g. before a reboot wave), each naming "
        "the site's registry (`registry.example.org/ml/pytorch:2.9`); none from a public "
        "registry by default",
    )
