"""The settings of a node's install, declared (``NodeSettings``: repository, packages, groups,
PyTorch, verify, preflight, kernel, driver, APU memory, Secure Boot, reboot), and ``setting``,
which declares one: its default, meaning and concern, what is valid being in its type
(``model.setting_types``). ``model.settings.Settings`` adds the fleet's settings after them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rocm_fleet.model import container_toolkit, matrix, paths
from rocm_fleet.model.setting_types import (
    AbsolutePath,
    ContainerEngines,
    Count,
    Distro,
    EnvName,
    Fingerprint,
    Flag,
    GfxTargets,
    HttpUrl,
    ImageRefs,
    PackageNames,
    Positive,
    Release,
    RootlessUsers,
    SecretSource,
    ToolkitRelease,
    TorchRelease,
    UserNames,
    one_of,
)


# ruff: noqa: RUF009 - ``setting`` makes a dataclass field, as ``field`` does
def setting(default: Any, meaning: str, concern: str) -> Any:
    """A dataclass field carrying the setting's meaning and concern (what is valid is in its
    type); a list default becomes a ``default_factory``, so no two hosts share one list.
    ``description`` and ``json_schema_extra`` are what pydantic's JSON Schema reads."""
    metadata = {
        "meaning": meaning,
        "concern": concern,
        "description": meaning,
        "json_schema_extra": {"x-concern": concern},
    }
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


REPOSITORY = "ROCm repository"
PACKAGES = "ROCm packages"
GROUPS = "GPU groups"
PYTORCH = "PyTorch"
VERIFY = "Verify"
PREFLIGHT = "Preflight"
KERNEL = "Kernel"
DRIVER = "amdgpu driver"
APU = "APU memory"
SECURE_BOOT = "Secure Boot"
REBOOT = "Reboot"
CUDA = "Migrate from CUDA"
MIRROR = "Fleet mirror"
PROXY = "Proxy"
PULL = "Pull mode"
SLURM = "Slurm"
CONTAINERS = "GPU containers"


@dataclass(frozen=True, kw_only=True)
class NodeSettings:
    """A host's settings of its install (defaults applied); ``Settings`` is all of them."""

    rocm_version: Release = setting(
        "",
        "ROCm release to install, e.g. `6.4.3` or `7.2.1` (classic), `7.14.1` or `10.1.0` "
        "(ROCm Core SDK); `rocm-fleet matrix` lists them (required)",
        REPOSITORY,
    )
    rocm_matrix_data: AbsolutePath | None = setting(
        None,
        "A site's own matrix data (a file where pyinfra runs, written by `rocm-fleet matrix "
        "update --output`): releases AMD published after this rocm-fleet, verified against "
        "upstream before a host is planned from one; it can only add releases, never change "
        "a key, host or committed row. Unset: `ROCM_FLEET_MATRIX_DATA` where pyinfra runs, "
        "else the committed matrix alone. A pull node is given the file's content in its "
        "signed target by `rocm-fleet publish`, never a path",
        REPOSITORY,
    )
    rocm_state: one_of("present", "absent") = setting(
        "present",
        "`present`, or `absent` to remove what the deploy added (sources, key, pin, ROCm "
        "packages, venv, loader and PATH files); users, groups and kernels stay",
        REPOSITORY,
    )
    rocm_apt_base_url: HttpUrl | None = setting(
        None,
        "Base of the release's AMD repository, for a mirror of it; default: the release's "
        "(`repo.radeon.com/rocm/apt`, `repo.amd.com/rocm/packages-multi-arch` for 7.14, "
        "`stable.repo.amd.com/rocm/core/packages` for 10.x)",
        REPOSITORY,
    )
    rocm_key_url: HttpUrl | None = setting(
        None, "URL of the repository's signing key; default: the release's, from AMD", REPOSITORY
    )
    rocm_key_fingerprint: Fingerprint | None = setting(
        None,
        "Fingerprint the fetched key must have (default: the release stream's, from the "
        "matrix); a mismatch fails the host, writing nothing",
        REPOSITORY,
    )
    rocm_apt_auth: SecretSource | None = setting(
        None,
        "Credentials for apt's sources, for a repository or mirror that asks for them: "
        "`env:VARIABLE` or a 0600 file where pyinfra runs holding apt_auth.conf(5) lines "
        "(`machine HOST login USER password SECRET`); written to "
        f"`{paths.APT_AUTH}` (root, 0600), never shown. Unset: that file goes",
        REPOSITORY,
    )
    rocm_packages: PackageNames | None = setting(
        None,
        'AMD meta packages to install, e.g. `["rocm"]`; default: '
        + matrix.CLASSIC.default_packages_text
        + " (classic), "
        + matrix.CORE_SDK.default_packages_text
        + " (Core SDK)",
        PACKAGES,
    )
    rocm_users: UserNames = setting(
        [], "Existing users to add to `video` and `render` (other groups kept)", GROUPS
    )
    pytorch_install: Flag = setting(True, "Install the PyTorch venv (false: ROCm only)", PYTORCH)
    pytorch_venv: AbsolutePath = setting(
        paths.DEFAULT_VENV, "Path of the venv holding torch", PYTORCH
    )
    pytorch_index_base_url: HttpUrl = setting(
        matrix.PYTORCH_INDEX_BASE_URL,
        "Base of the wheel indexes; `/rocmX.Y` from the matrix is appended",
        PYTORCH,
    )
    rocm_pip_netrc: SecretSource | None = setting(
        None,
        "Credentials for the wheel index, for one that asks for them: `env:VARIABLE` or a 0600 "
        "file where pyinfra runs holding netrc lines (`machine HOST login USER password "
        f"SECRET`); written to `{paths.PIP_NETRC}` (root, 0600) and given to pip as `NETRC`, "
        "never shown. Unset: that file goes",
        PYTORCH,
    )
    torch_version: TorchRelease | None = setting(
        None,
        "The torch version, e.g. `2.9.1`; default: the newest the matrix lists for "
        "`rocm_version` (ROCm 10.x: of those AMD's page offers every `expected_gfx`)",
        PYTORCH,
    )
    expected_gfx: GfxTargets | None = setting(
        None, 'GPU target(s) rocminfo and torch must report, e.g. `gfx1100` or `["gfx942"]`', VERIFY
    )
    expected_gpu_count: Count | None = setting(
        None,
        "How many GPUs of `expected_gfx` must be present; 0 for a GPU-less host (CI, image builds)",
        VERIFY,
    )
    rocm_distro_override: Distro | None = setting(
        None,
        'Deploy a distro the matrix doesn\'t know as one it does, e.g. `"ubuntu 24.04"` for '
        "Linux Mint 22 (unofficial: warned). Without it an unknown distro is refused",
        PREFLIGHT,
    )
    preflight_min_free_gb: Count = setting(
        10,
        f"Free space (GB) preflight requires for {paths.INSTALL_PATHS[0]}, the venv and apt's "
        "cache while apt can't size the ROCm packages (no AMD source yet); once it can, apt's "
        "figure is used",
        PREFLIGHT,
    )
    rocm_kernel_backports: one_of("auto", "always", "never") = setting(
        "auto",
        "A newer kernel (Debian 12: bookworm-backports; Ubuntu: HWE): `auto` when the running "
        "kernel is older than `expected_gfx` needs, `always`, or `never`",
        KERNEL,
    )
    rocm_kernel_backports_mirror: HttpUrl | None = setting(
        None,
        "Debian mirror for the backports source; default: the one the host's own Debian "
        "sources use",
        KERNEL,
    )
    rocm_kernel_hold: Flag = setting(
        False,
        "With `rocm_driver: dkms`: put the kernel meta packages the host has installed "
        "(`linux-image-amd64`, `linux-generic`, `linux-generic-hwe-*`, `linux-oem-*`, their "
        "image and headers packages) on hold (`apt-mark hold`), so an unattended upgrade "
        "can't bring a kernel of a new ABI that `amdgpu-dkms` may not build for, and the "
        "node boot without its GPU. AMD publishes no kernel range per driver release: the "
        "range held is the one the host has. To move the kernel deliberately, unset it (or "
        "plan the move with `rocm_kernel_backports`, which releases the hold for that "
        "install alone). False: rocm-fleet releases only the holds it placed",
        KERNEL,
    )
    rocm_driver: one_of("inbox", "dkms") = setting(
        "inbox",
        "The amdgpu kernel driver: `inbox` (the kernel's own) or `dkms` (AMD's `amdgpu-dkms`, "
        "built for the running and newer kernels; needs an enrolled key with Secure Boot)",
        DRIVER,
    )
    rocm_amdgpu_apt_base_url: HttpUrl = setting(
        matrix.AMDGPU_APT_BASE_URL,
        "Base of AMD's amdgpu driver repository (with `rocm_driver: dkms`)",
        DRIVER,
    )
    rocm_amdgpu_key_url: HttpUrl = setting(
        matrix.AMDGPU_KEY_URL,
        "URL of the driver repository's signing key, installed with a Core SDK release and "
        "`rocm_driver: dkms` (a classic release's key signs both), and for AMD's container "
        "toolkit (`rocm_containers_engines`), which it signs too",
        DRIVER,
    )
    rocm_amdgpu_key_fingerprint: Fingerprint = setting(
        matrix.AMDGPU_KEY_FINGERPRINT, "Fingerprint that key must have", DRIVER
    )
    rocm_apu_gtt_gib: Positive | None = setting(
        None,
        "GiB of system memory a Ryzen APU's GPU may map (GTT), set as the kernel's TTM page "
        f"limit the way AMD documents it (`options ttm pages_limit=` in `{paths.TTM_MODPROBE}`); "
        "applies at the next boot (a reboot reason). Only on hosts with an APU, at most 90% of "
        "MemTotal, never beside `amdgpu.gttsize`. Unset: the file goes (the kernel's default, "
        "half the RAM)",
        APU,
    )
    rocm_mok_password_env: EnvName = setting(
        "ROCM_FLEET_MOK_PASSWORD",
        "Environment variable (where pyinfra runs) with the one-time MOK password to type at "
        "the console; unset: asked once when pyinfra runs in a terminal",
        SECURE_BOOT,
    )
    rocm_reboot: one_of("allow", "never") = setting(
        "never",
        "Reboots: `allow` = hosts that need one (new kernel, new driver, MOK to confirm) "
        "reboot, then are verified again; `never` = the run ends listing them",
        REBOOT,
    )
    rocm_reboot_parallel: Positive = setting(
        1, "How many hosts reboot at a time (set it fleet-wide)", REBOOT
    )
    rocm_reboot_timeout: Positive = setting(
        600, "Seconds a rebooting host has to come back before it fails", REBOOT
    )
    rocm_containers_engines: ContainerEngines = setting(
        [],
        "Container engines that get the node's GPUs (`rocm_fleet.containers.gpu_containers`, "
        "after `rocm_node`): `docker`, `podman`, or both, through AMD's container toolkit "
        f"(the CDI spec `{container_toolkit.CDI_SPEC}`; Docker older than 25 gets AMD's "
        "runtime instead). Empty: none, and what rocm-fleet set up for containers goes",
        CONTAINERS,
    )
    rocm_containers_install_engine: Flag = setting(
        True,
        "Install each engine from the distribution (`docker.io`; `podman` with `crun`); false: "
        "only configure an engine the site installed (preflight refuses a host without it)",
        CONTAINERS,
    )
    rocm_containers_rootless_users: RootlessUsers = setting(
        [],
        "Existing users who run rootless Podman: put in `video` and `render` and given "
        f"subordinate ID ranges (`{paths.SUBUID}`, `{paths.SUBGID}`) where they have none; "
        "they run containers with `--group-add keep-groups`",
        CONTAINERS,
    )
    rocm_containers_restart_running: Flag = setting(
        False,
        "Restart Docker for a configuration change even while it runs containers (they stop); "
        "false: such a host is warned that the change waits for Docker's next restart",
        CONTAINERS,
    )
    rocm_containers_toolkit_version: ToolkitRelease | None = setting(
        None,
        f"The `{container_toolkit.PACKAGE}` release; default: the newest rocm-fleet knows "
        f"({container_toolkit.DEFAULT_RELEASE}; source: AMD's release notes, "
        "`model/container_toolkit.py`)",
        CONTAINERS,
    )
    rocm_containers_images: ImageRefs = setting(
        [],
        "Images to pull on each engine ahead of use (e.g. before a reboot wave), each naming "
        "the site's registry (`registry.example.org/ml/pytorch:2.9`); none from a public "
        "registry by default",
        CONTAINERS,
    )
