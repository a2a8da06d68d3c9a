"""Every host path rocm-fleet writes or reads by a fixed name; no other module types one."""

# --- AMD's classic repository (repo.radeon.com) ---------------------------------------------
# AMD's install pages 5.7 -> 7.2 (rocm-install-on-linux native-install/ubuntu.rst).
ROCM_KEYRING = "/etc/apt/keyrings/rocm.gpg"
ROCM_SOURCE = "/etc/apt/sources.list.d/rocm.list"
AMDGPU_SOURCE = "/etc/apt/sources.list.d/amdgpu.list"
ROCM_PIN = "/etc/apt/preferences.d/rocm-pin-600"

# --- The ROCm Core SDK's repositories (repo.amd.com for 7.14, stable.repo.amd.com for 10.x) ----
# rocm-docs install/include/200-install.rst @ 0c31064a (10.0), @ 50600d8d (7.14.1);
# 7.14's one-line source goes to ROCM_SOURCE.
AMDROCM_KEYRING = "/etc/apt/keyrings/amdrocm.gpg"
AMDROCM_SOURCE = "/etc/apt/sources.list.d/amdrocm-stable.sources"
AMDROCM_PIN = "/etc/apt/preferences.d/rocm-fleet-amdrocm"  # Ours: AMD publishes no Core SDK pin

# --- ROCm on the host ------------------------------------------------------------------------
ROCM_ROOT = "/opt/rocm"
# Classic, then Core SDK (/opt/rocm/core: TheRock amdrocm-core-postinst.j2, base/artifact.toml).
ROCM_VERSION_FILES = (f"{ROCM_ROOT}/.info/version", f"{ROCM_ROOT}/core/.info/version")
# AMD's post-install step (post-install.rst); serves both streams.
LD_CONF = "/etc/ld.so.conf.d/rocm.conf"
PROFILE = "/etc/profile.d/rocm.sh"  # Ours: /opt/rocm/bin on login shells' PATH
# Where the distributions' ROCm packages put their programs (dpkg -c); shadows /opt/rocm/bin.
DISTRO_BIN = "/usr/bin"

# --- Debian backports (rocm_fleet/deploy/kernel.py) -----------------------------------------------
BACKPORTS_SOURCE = "/etc/apt/sources.list.d/rocm-fleet-backports.sources"
BACKPORTS_PIN = "/etc/apt/preferences.d/rocm-fleet-backports"
# Package debian-archive-keyring.
DEBIAN_ARCHIVE_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
APT_SOURCES_LIST = "/etc/apt/sources.list"  # sources.list(5)
APT_SOURCES_PARTS = "/etc/apt/sources.list.d"
# A Debian host's mirror: deb822 (bookworm's default) or the one-line file.
DEBIAN_SOURCES = (f"{APT_SOURCES_PARTS}/debian.sources", APT_SOURCES_LIST)

# --- Proxy and fleet mirror (rocm_fleet/deploy/mirror.py) -----------------------------------------
# rocm_proxy's settings only (apt.conf(5)).
APT_PROXY_CONF = "/etc/apt/apt.conf.d/80rocm-fleet-proxy"
# Debian's nginx includes conf.d/*.conf in http {} (`nginx -V`, bookworm 1.22.1, trixie 1.26.3).
MIRROR_SITE = "/etc/nginx/conf.d/rocm-fleet-mirror.conf"
# rocm_mirror_tls_cert/_key; the key is root's alone (0600).
MIRROR_CERT = "/etc/nginx/rocm-fleet-mirror.crt"
MIRROR_KEY = "/etc/nginx/rocm-fleet-mirror.key"
# Ours: the mirror's pinned CA (never the system trust store) and pip's credentials.
CONFIG_DIR = "/etc/rocm-fleet"
MIRROR_CA = f"{CONFIG_DIR}/mirror-ca.crt"
PIP_NETRC = f"{CONFIG_DIR}/pip.netrc"
# Acquire::https::HOST::CaInfo (apt.conf(5)).
APT_MIRROR_CONF = "/etc/apt/apt.conf.d/80rocm-fleet-mirror"
APT_AUTH = "/etc/apt/auth.conf.d/rocm-fleet.conf"  # apt_auth.conf(5); root-only
NGINX_PID = "/run/nginx.pid"
# Debian's ca-certificates bundle: what the mirror verifies upstream TLS with.
SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
# Ours: the served bundle and nginx's cache (only its last component may be missing).
MIRROR_ROOT = "/srv/rocm-fleet"
MIRROR_BUNDLE = f"{MIRROR_ROOT}/bundle"
BUNDLE_MANIFEST = "manifest.json"  # A bundle's own description, on the controller and on the host
MIRROR_CACHE = "/var/cache/rocm-fleet"
# The administrators' files for pull-mode nodes, served under MIRROR_PUBLISHED_URL_PATH;
# never written or removed by the deploy.
MIRROR_PUBLISHED = "/srv/rocm-fleet-published"
MIRROR_PUBLISHED_URL_PATH = "/fleet/"

# --- rocm-fleet's own state (removed last by rocm_state: absent) ------------------------------
STATE_DIR = "/var/lib/rocm-fleet"
APT_LISTS_STAMP = f"{STATE_DIR}/apt-lists.stamp"  # Touched after each `apt-get update` for a source
AMDGPU_LISTS_STAMP = f"{STATE_DIR}/amdgpu-lists.stamp"
BACKPORTS_LISTS_STAMP = f"{STATE_DIR}/backports-lists.stamp"
# Ledgers of what the deploy added (not what was there), for undoing it.
PACKAGE_LEDGER = f"{STATE_DIR}/installed-packages"
DIRECTORY_LEDGER = f"{STATE_DIR}/created-directories"
DRIVER_LEDGER = f"{STATE_DIR}/driver-packages"
KERNEL_HOLD_LEDGER = f"{STATE_DIR}/held-kernel-packages"
# SHA-256 of the gres.conf written: removed only while it still matches.
SLURM_GRES_LEDGER = f"{STATE_DIR}/slurm-gres.sha256"
#: the ECC counts the Slurm health program compares with (root-only, the program's own)
SLURM_HEALTH_BASELINE = f"{STATE_DIR}/health-baseline.json"
#: the last acceptance run's result (JSON, root-only), written by ``rocm-fleet roll``
ACCEPTANCE_RECORD = f"{STATE_DIR}/acceptance.json"
#: the acceptance tools the deploy installed (``rocm_acceptance``), purged when it is off
ACCEPTANCE_LEDGER = f"{STATE_DIR}/acceptance-packages"
# Touched after nginx loaded the site: a newer site file means a reload is due.
MIRROR_STAMP = f"{STATE_DIR}/mirror-loaded.stamp"

# --- Secure Boot: DKMS's signing (certificate, key); DKMS >= 3.0.4 Debian, shim-signed Ubuntu ---
MOK_KEYS = {
    "debian": ("/var/lib/dkms/mok.pub", "/var/lib/dkms/mok.key"),
    "ubuntu": ("/var/lib/shim-signed/mok/MOK.der", "/var/lib/shim-signed/mok/MOK.priv"),
}

# --- APU memory: the TTM page limit, where AMD's amd-ttm puts it (model.apu) ------------------
# Not amd-ttm's ttm.conf: another file setting the limit is reported, never overwritten.
TTM_MODPROBE = "/etc/modprobe.d/rocm-fleet-ttm.conf"

# --- Slurm: the node's generic resources (model.slurm, deploy.slurm) ------------------------
SLURM_DIR = "/etc/slurm"
SLURM_GRES_CONF = f"{SLURM_DIR}/gres.conf"
RENDER_NODE_PREFIX = "/dev/dri/renderD"  # Plus a KFD ``drm_render_minor``
#: Slurm's HealthCheckProgram rocm-fleet writes (rocm_slurm_health_check)
SLURM_HEALTH_PROGRAM = "/usr/local/sbin/rocm-fleet-health-check"
#: where the health program looks for its tools (absolute: it searches no PATH)
AMD_SMI_PROGRAMS = (f"{ROCM_ROOT}/bin/amd-smi", "/usr/bin/amd-smi")
SCONTROL_PROGRAMS = ("/usr/bin/scontrol", "/usr/local/bin/scontrol", "/opt/slurm/bin/scontrol")

# --- The next boot: GRUB's files, read (never written) by the reboot gate (facts.boot) -------
GRUBENV = "/boot/grub/grubenv"
GRUB_CFG = "/boot/grub/grub.cfg"
DEFAULT_GRUB = "/etc/default/grub"

# --- Reboots: where Debian/Ubuntu's package hooks and rocm-fleet record them (/run: tmpfs) -----
REBOOT_REQUIRED = "/run/reboot-required"
REBOOT_PACKAGES = "/run/reboot-required.pkgs"
RUN_DIR = "/run/rocm-fleet"
REBOOT_REASONS = f"{RUN_DIR}/reboot-reasons"
VERIFIED = f"{RUN_DIR}/verified"  # The last passed GPU check; cleared by a reboot
MOK_HASH = f"{RUN_DIR}/mok-import.hash"  # Exists only during one `mokutil --import`

# --- What the install fills up (preflight's free-space check) ---------------------------------
INSTALL_PATHS = ("/opt", "/var/cache/apt/archives")

# --- The default PyTorch venv -----------------------------------------------------------------
DEFAULT_VENV = "/opt/rocm-fleet/venv"

# --- Pull mode (rocm_fleet/deploy/pull.py) ----------------------------------------------------
# Ours: all pull mode puts on a node besides its units; removed whole with rocm_pull: false.
PULL_ROOT = "/opt/rocm-fleet/pull"
PULL_VENV = f"{PULL_ROOT}/venv"
PULL_SCRIPT = f"{PULL_ROOT}/rocm-fleet-pull.sh"
PULL_DEPLOY = f"{PULL_ROOT}/deploy.py"
PULL_INVENTORY = f"{PULL_ROOT}/inventory.py"
PULL_INSTALLED = f"{PULL_ROOT}/installed-lock.sha256"
PULL_TRUSTED_ROOT = f"{PULL_ROOT}/trusted-root.json"  # rocm_pull_trusted_root
# The node's own key, from rocm_pull_seal_keys: it alone opens the node's sealed target.
PULL_SEAL_KEY = f"{PULL_ROOT}/seal-key.pem"
PULL_METADATA = f"{PULL_ROOT}/tuf"  # TUF's verified metadata and the serial last applied
PULL_RUN_DIR = "/run/rocm-fleet-pull"  # tmpfs, 0700, root's
PULL_DATA = f"{PULL_RUN_DIR}/inventory.json"
# The site matrix data a node's target carries (``model.pulled``).
PULL_MATRIX_DATA = f"{PULL_RUN_DIR}/matrix-data.json"
# systemd.unit(5): administrator's units; `enable` links WantedBy=timers.target here.
SYSTEMD_UNITS = "/etc/systemd/system"
PULL_SERVICE = f"{SYSTEMD_UNITS}/rocm-fleet-pull.service"
PULL_TIMER = f"{SYSTEMD_UNITS}/rocm-fleet-pull.timer"
PULL_TIMER_LINK = f"{SYSTEMD_UNITS}/timers.target.wants/rocm-fleet-pull.timer"
PULL_STAMP = f"{STATE_DIR}/pull-units.stamp"  # Touched after systemd was told of the units
# In root's directory, not world-writable /run/lock (any user could hold it).
PULL_LOCK = f"{PULL_RUN_DIR}/lock"
# ExecStart's program (absolute, systemd.service(5)); Essential on Debian and Ubuntu.
SHELL = "/bin/sh"
# Holds a running push's start (epoch seconds); a pull that finds it skips.
PUSH_MARKER = f"{RUN_DIR}/push-running"
# prometheus-node-exporter's --collector.textfile.directory on Debian and Ubuntu.
NODE_EXPORTER_TEXTFILES = "/var/lib/prometheus/node-exporter"
PULL_METRICS = f"{NODE_EXPORTER_TEXTFILES}/rocm_fleet.prom"
PULL_STATUS_METRICS = f"{NODE_EXPORTER_TEXTFILES}/rocm_fleet_pull.prom"

# Every text file a deploy may write, read by the survey in one round trip: a new managed file
# goes here.
MANAGED_FILES = (
    APT_PROXY_CONF, APT_MIRROR_CONF, APT_AUTH, MIRROR_SITE, MIRROR_CERT, MIRROR_KEY, MIRROR_CA,
    PIP_NETRC, f"{MIRROR_BUNDLE}/{BUNDLE_MANIFEST}", MIRROR_STAMP, ROCM_SOURCE, AMDROCM_SOURCE,
    AMDGPU_SOURCE, ROCM_PIN, AMDROCM_PIN, LD_CONF, PROFILE, TTM_MODPROBE, BACKPORTS_SOURCE,
    BACKPORTS_PIN, APT_LISTS_STAMP, AMDGPU_LISTS_STAMP, BACKPORTS_LISTS_STAMP, VERIFIED,
    PULL_SERVICE, PULL_TIMER, PULL_SCRIPT, PULL_DEPLOY, PULL_INVENTORY, PULL_INSTALLED,
    PULL_TRUSTED_ROOT, PULL_SEAL_KEY, PULL_STAMP, PULL_METRICS, PULL_STATUS_METRICS,
)  # fmt: skip
MANAGED_DIRECTORIES = (MIRROR_ROOT, MIRROR_CACHE, PULL_ROOT)
# Read by fingerprint, not digest.
MANAGED_KEYRINGS = (ROCM_KEYRING, AMDROCM_KEYRING)


def classic_root(version: str) -> str:
    """Where a classic release unpacks: /opt/rocm-6.4.3."""
    return f"/opt/rocm-{version}"


def core_sdk_root(major_minor: str) -> str:
    """Where a Core SDK release unpacks: /opt/rocm/core-10.0 (TheRock build_package.py)."""
    return f"{ROCM_ROOT}/core-{major_minor}"


def venv_python(venv: str) -> str:
    """The interpreter of a venv."""
    return f"{venv.rstrip('/')}/bin/python"


def venv_marker(venv: str) -> str:
    """The file every venv has (PEP 405)."""
    return f"{venv.rstrip('/')}/pyvenv.cfg"


def parent(path: str) -> str:
    """The directory of ``path`` ("/" for a top-level entry)."""
    return path.rsplit("/", 1)[0] or "/"


# --- GPU device access ------------------------------------------------------------------------
# Owners of /dev/kfd and /dev/dri/renderD*; AMD's prerequisites put GPU users in both.
GPU_GROUPS = ("video", "render")

# GPU containers (rocm_fleet.containers): AMD's toolkit source, the engines' files, and the
# feature's own state, beside the core's (rocm_state: absent removes STATE_DIR before the
# feature's own removal runs).
CONTAINER_TOOLKIT_SOURCE = "/etc/apt/sources.list.d/amd-container-toolkit.list"
CONTAINER_TOOLKIT_KEYRING = "/etc/apt/keyrings/amd-container-toolkit.gpg"
CONTAINER_TOOLKIT_PIN = "/etc/apt/preferences.d/rocm-fleet-amd-container-toolkit"
CDI_SPEC = "/etc/cdi/amd.json"
DOCKER_DIR = "/etc/docker"
DOCKER_DAEMON_JSON = f"{DOCKER_DIR}/daemon.json"
SUBUID = "/etc/subuid"
SUBGID = "/etc/subgid"
CONTAINERS_STATE_DIR = "/var/lib/rocm-fleet-containers"
