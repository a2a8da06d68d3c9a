"""Every path rocm-fleet writes on a host (and the few it reads by a fixed name), in one place.

Operations, facts, preflight, the survey and the command-line tools import these names;
no other module types out a host path. Paths AMD or Debian document are cited; the rest
are rocm-fleet's own choices, kept under names that say so (``rocm-fleet``).
"""

from __future__ import annotations

# --- AMD's classic repository (repo.radeon.com) ---------------------------------------------
# Keyring, source list and pin file names: every AMD install page 5.7 -> 7.2
# (rocm-install-on-linux docs/install/native-install/ubuntu.rst; fact sheet §3.1, §3.2).
ROCM_KEYRING = "/etc/apt/keyrings/rocm.gpg"
ROCM_SOURCE = "/etc/apt/sources.list.d/rocm.list"
AMDGPU_SOURCE = "/etc/apt/sources.list.d/amdgpu.list"
ROCM_PIN = "/etc/apt/preferences.d/rocm-pin-600"

# --- The ROCm Core SDK's repositories (repo.amd.com for 7.14, stable.repo.amd.com for 10.x) ----
# Keyring (both) and the 10.x deb822 file: AMD's install page, rocm-docs
# docs/install/include/200-install.rst @ 0c31064a (10.0) and @ 50600d8d (7.14.1). 7.14's
# one-line source goes to ROCM_SOURCE, the file name the classic stream uses too.
AMDROCM_KEYRING = "/etc/apt/keyrings/amdrocm.gpg"
AMDROCM_SOURCE = "/etc/apt/sources.list.d/amdrocm-stable.sources"
# rocm-fleet's own: AMD's Core SDK pages publish no pin (see matrix.CORE_SDK).
AMDROCM_PIN = "/etc/apt/preferences.d/rocm-fleet-amdrocm"

# --- ROCm on the host ------------------------------------------------------------------------
ROCM_ROOT = "/opt/rocm"
# Classic: /opt/rocm is a link to /opt/rocm-X.Y.Z (rocm-core's alternative), and tools read
# the release from /opt/rocm/.info/version (fact sheet §4; not from AMD's docs). Core SDK:
# /opt/rocm is a directory of links, /opt/rocm/core the newest installed core-X.Y
# (TheRock template/scripts/amdrocm-core-postinst.j2), whose .info comes with rocm-core
# in amdrocm-base (TheRock base/artifact.toml: rocm-core lib includes ".info/**").
ROCM_VERSION_FILES = (f"{ROCM_ROOT}/.info/version", f"{ROCM_ROOT}/core/.info/version")
ROCM_VERSION_FILE = ROCM_VERSION_FILES[0]
# AMD's post-install step: /opt/rocm/lib{,64} on the loader path (post-install.rst, §4); the
# Core SDK links /opt/rocm/lib to core-X.Y/lib, so the same file serves both streams.
LD_CONF = "/etc/ld.so.conf.d/rocm.conf"
# rocm-fleet's own: /opt/rocm/bin on login shells' PATH (appended, files/rocm-profile.sh).
PROFILE = "/etc/profile.d/rocm.sh"
# Where Debian's and Ubuntu's own ROCm packages put their programs (rocminfo, hipcc,
# rocm-smi: dpkg -c of each); before /opt/rocm/bin on PATH, so a copy there shadows AMD's.
DISTRO_BIN = "/usr/bin"

# --- Debian backports (rocm_fleet/deploy/kernel.py) -----------------------------------------------
BACKPORTS_SOURCE = "/etc/apt/sources.list.d/rocm-fleet-backports.sources"
BACKPORTS_PIN = "/etc/apt/preferences.d/rocm-fleet-backports"
# The Debian archive keyring every Debian host has (package debian-archive-keyring).
DEBIAN_ARCHIVE_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# Where apt reads its sources: the one-line file and the directory of parts (sources.list(5)).
APT_SOURCES_LIST = "/etc/apt/sources.list"
APT_SOURCES_PARTS = "/etc/apt/sources.list.d"
# Where a Debian host names its mirror: deb822 (bookworm's default) or the one-line file.
DEBIAN_SOURCES = (f"{APT_SOURCES_PARTS}/debian.sources", APT_SOURCES_LIST)

# --- Proxy and fleet mirror (rocm_fleet/deploy/mirror.py) -----------------------------------------
# apt reads every file of apt.conf.d (apt.conf(5)); this one only holds rocm_proxy's settings.
APT_PROXY_CONF = "/etc/apt/apt.conf.d/80rocm-fleet-proxy"
# Debian's nginx.conf includes conf.d/*.conf inside http {}, and its pid file is /run/nginx.pid
# (`nginx -V` of bookworm's 1.22.1 and trixie's 1.26.3 packages: --pid-path=/run/nginx.pid).
MIRROR_SITE = "/etc/nginx/conf.d/rocm-fleet-mirror.conf"
# The mirror's TLS certificate and key (rocm_mirror_tls_cert/_key), beside nginx's own
# configuration; the key root's alone (0600: nginx's master process reads it as root).
MIRROR_CERT = "/etc/nginx/rocm-fleet-mirror.crt"
MIRROR_KEY = "/etc/nginx/rocm-fleet-mirror.key"
# rocm-fleet's configuration directory (FHS /etc/<package>), made when a file below is first
# written: the CA hosts pin for the fleet mirror only (never the system's trust store, which
# would let it vouch for any name), and pip's credentials (rocm_pip_netrc).
CONFIG_DIR = "/etc/rocm-fleet"
MIRROR_CA = f"{CONFIG_DIR}/mirror-ca.crt"
PIP_NETRC = f"{CONFIG_DIR}/pip.netrc"
# apt's per-host TLS settings for the mirror (apt.conf(5): Acquire::https::HOST::CaInfo).
APT_MIRROR_CONF = "/etc/apt/apt.conf.d/80rocm-fleet-mirror"
# apt reads credentials from every file of auth.conf.d (apt_auth.conf(5)); root-only.
APT_AUTH = "/etc/apt/auth.conf.d/rocm-fleet.conf"
NGINX_PID = "/run/nginx.pid"
# The system's CA certificates, which the mirror's nginx verifies upstream TLS with (Debian's
# ca-certificates package, update-ca-certificates(8)).
SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
# rocm-fleet's own: the bundle the mirror serves (FHS /srv: data a host serves), and the live
# cache (nginx's proxy_cache_path, which nginx makes itself: only its last component may be
# missing); both removed with the mirror.
MIRROR_ROOT = "/srv/rocm-fleet"
MIRROR_BUNDLE = f"{MIRROR_ROOT}/bundle"
# The file a bundle describes itself in (bundle/build.py), where pyinfra runs and on the host.
BUNDLE_MANIFEST = "manifest.json"
MIRROR_CACHE = "/var/cache/rocm-fleet"
# What the fleet's administrators publish for pull-mode nodes (their inventory data, the
# pinned lock and wheels), served by the mirror under MIRROR_PUBLISHED_URL_PATH. Theirs, not
# rocm-fleet's: filled by their own tooling, never written or removed by the deploy.
MIRROR_PUBLISHED = "/srv/rocm-fleet-published"
MIRROR_PUBLISHED_URL_PATH = "/fleet/"

# --- rocm-fleet's own state (removed last by rocm_state: absent) ------------------------------
STATE_DIR = "/var/lib/rocm-fleet"
# Touched after each `apt-get update` the deploy runs for a source (operations.apt).
APT_LISTS_STAMP = f"{STATE_DIR}/apt-lists.stamp"
AMDGPU_LISTS_STAMP = f"{STATE_DIR}/amdgpu-lists.stamp"
BACKPORTS_LISTS_STAMP = f"{STATE_DIR}/backports-lists.stamp"
# Distribution packages the deploy installed (not the ones already there), for uninstalling.
PACKAGE_LEDGER = f"{STATE_DIR}/installed-packages"
# Directories the deploy created (the venv's parents, e.g. /opt/rocm-fleet, then the venv
# itself), for uninstalling, and for telling a venv it made from one it found.
DIRECTORY_LEDGER = f"{STATE_DIR}/created-directories"
# Packages the DKMS driver's install put on the host (amdgpu-dkms, the kernel headers it
# builds against; not the ones already there), purged when rocm_driver goes back to inbox.
DRIVER_LEDGER = f"{STATE_DIR}/driver-packages"
# Kernel meta packages rocm-fleet put on hold (rocm_kernel_hold), so that it releases only
# its own holds: one the admin placed stays.
KERNEL_HOLD_LEDGER = f"{STATE_DIR}/held-kernel-packages"
# The SHA-256 of the gres.conf rocm-fleet wrote (rocm_slurm_gres): the file is rocm-fleet's,
# and goes when the setting does, only while it still holds exactly that.
SLURM_GRES_LEDGER = f"{STATE_DIR}/slurm-gres.sha256"
# Touched after nginx (re)loaded the mirror's site: a newer site file means a reload is due.
MIRROR_STAMP = f"{STATE_DIR}/mirror-loaded.stamp"

# --- Secure Boot: the DKMS module signing key per distro (fact sheet §5) ----------------------
# (certificate, private key): DKMS >= 3.0.4 on Debian; DKMS's Ubuntu branch (shim-signed).
MOK_KEYS = {
    "debian": ("/var/lib/dkms/mok.pub", "/var/lib/dkms/mok.key"),
    "ubuntu": ("/var/lib/shim-signed/mok/MOK.der", "/var/lib/shim-signed/mok/MOK.priv"),
}

# --- APU memory: the TTM page limit, where AMD's amd-ttm puts it (model.apu) ------------------
# Its own name, not amd-ttm's /etc/modprobe.d/ttm.conf: another file setting the limit is
# reported (model.apu), never overwritten or taken for ours.
TTM_MODPROBE = "/etc/modprobe.d/rocm-fleet-ttm.conf"

# --- Slurm: the node's generic resources (model.slurm, deploy.slurm) ------------------------
# Where Debian's slurmd reads gres.conf (beside slurm.conf; SLURM_CONF's directory).
SLURM_DIR = "/etc/slurm"
SLURM_GRES_CONF = f"{SLURM_DIR}/gres.conf"
# A GPU's DRM render node, by its KFD ``drm_render_minor``: what Slurm binds a job to.
RENDER_NODE_PREFIX = "/dev/dri/renderD"

# --- The next boot: GRUB's files, read (never written) by the reboot gate (facts.boot) -------
GRUBENV = "/boot/grub/grubenv"
GRUB_CFG = "/boot/grub/grub.cfg"
DEFAULT_GRUB = "/etc/default/grub"

# --- Reboots: where Debian/Ubuntu's package hooks and rocm-fleet record them (/run: tmpfs) -----
REBOOT_REQUIRED = "/run/reboot-required"
REBOOT_PACKAGES = "/run/reboot-required.pkgs"
RUN_DIR = "/run/rocm-fleet"
REBOOT_REASONS = f"{RUN_DIR}/reboot-reasons"
# What the last passed GPU check vouched for (operations.gpu.gpu_verified); /run, so a
# reboot makes the next run check again.
VERIFIED = f"{RUN_DIR}/verified"
# The MOK password's crypt hash lives here only for the length of one `mokutil --import`.
MOK_HASH = f"{RUN_DIR}/mok-import.hash"

# --- What the install fills up (preflight's free-space check) ---------------------------------
# AMD's packages unpack under /opt/rocm-X.Y.Z; apt downloads them to its archive cache first.
INSTALL_PATHS = ("/opt", "/var/cache/apt/archives")

# --- The default PyTorch venv -----------------------------------------------------------------
DEFAULT_VENV = "/opt/rocm-fleet/venv"

# --- Pull mode (rocm_fleet/deploy/pull.py) ----------------------------------------------------
# rocm-fleet's own: everything pull mode puts on a node besides its units lives under
# PULL_ROOT (removed whole with rocm_pull: false): the venv of the pinned rocm-fleet, the
# script the service runs, the deploy and inventory files it hands pyinfra, and a stamp of
# the lock file the venv was installed from.
PULL_ROOT = "/opt/rocm-fleet/pull"
PULL_VENV = f"{PULL_ROOT}/venv"
PULL_SCRIPT = f"{PULL_ROOT}/rocm-fleet-pull.sh"
PULL_DEPLOY = f"{PULL_ROOT}/deploy.py"
PULL_INVENTORY = f"{PULL_ROOT}/inventory.py"
PULL_INSTALLED = f"{PULL_ROOT}/installed-lock.sha256"
# The TUF root a push installs (rocm_pull_trusted_root): where the node's trust starts.
PULL_TRUSTED_ROOT = f"{PULL_ROOT}/trusted-root.json"
# What TUF's client verified (the newest root it followed, the versions it never goes back
# from) and the serial of the settings the node last applied.
PULL_METADATA = f"{PULL_ROOT}/tuf"
# The pull's run directory (tmpfs, mode 0700, root's): its lock and the verified settings.
PULL_RUN_DIR = "/run/rocm-fleet-pull"
# The node's settings as last verified (fetched again on every run).
PULL_DATA = f"{PULL_RUN_DIR}/inventory.json"
# The site matrix data a node's target carries (``model.pulled``): written by pull-fetch beside
# the settings, named by their rocm_matrix_data for the pull's deploy.
PULL_MATRIX_DATA = f"{PULL_RUN_DIR}/matrix-data.json"
# Units the administrator installs go to /etc/systemd/system, and `systemctl enable` of a
# unit WantedBy=timers.target is a link in timers.target.wants (systemd.unit(5)).
SYSTEMD_UNITS = "/etc/systemd/system"
PULL_SERVICE = f"{SYSTEMD_UNITS}/rocm-fleet-pull.service"
PULL_TIMER = f"{SYSTEMD_UNITS}/rocm-fleet-pull.timer"
PULL_TIMER_LINK = f"{SYSTEMD_UNITS}/timers.target.wants/rocm-fleet-pull.timer"
# Touched after systemd was told of the units (enabled, reloaded): newer units need it again.
PULL_STAMP = f"{STATE_DIR}/pull-units.stamp"
# The pull's flock(1) lock, so two runs never overlap: in root's own directory (not the
# world-writable /run/lock, where any user could hold it and stop the pulls).
PULL_LOCK = f"{PULL_RUN_DIR}/lock"
# The program the service's ExecStart names (absolute, as systemd.service(5) asks): the POSIX
# shell, Essential on Debian and Ubuntu (as is util-linux's flock(1), which the script runs).
SHELL = "/bin/sh"
# A push that changes a pull-mode node marks it here while it runs (the time it started,
# seconds since the epoch): a pull that finds the mark skips; /run is emptied at boot.
PUSH_MARKER = f"{RUN_DIR}/push-running"
# node_exporter's textfile directory as Debian's and Ubuntu's prometheus-node-exporter package
# sets it up (--collector.textfile.directory); the pull writes its audit there when it exists.
NODE_EXPORTER_TEXTFILES = "/var/lib/prometheus/node-exporter"
PULL_METRICS = f"{NODE_EXPORTER_TEXTFILES}/rocm_fleet.prom"
# The pull's own status for node_exporter (rocm_fleet_pull_*), beside the audit's file.
PULL_STATUS_METRICS = f"{NODE_EXPORTER_TEXTFILES}/rocm_fleet_pull.prom"

# Every text file a deploy may write, in the order the survey reads them: the plan of a
# converged host is answered from one read of all of them (``operations.files`` declares
# their reads for the survey). A file added to a task goes here, or the plan reads it with a
# round trip of its own (test_plan's converged hosts fail on it).
MANAGED_FILES = (
    APT_PROXY_CONF,
    APT_MIRROR_CONF,
    APT_AUTH,
    MIRROR_SITE,
    MIRROR_CERT,
    MIRROR_KEY,
    MIRROR_CA,
    PIP_NETRC,
    f"{MIRROR_BUNDLE}/{BUNDLE_MANIFEST}",
    MIRROR_STAMP,
    ROCM_SOURCE,
    AMDROCM_SOURCE,
    AMDGPU_SOURCE,
    ROCM_PIN,
    AMDROCM_PIN,
    LD_CONF,
    PROFILE,
    TTM_MODPROBE,
    BACKPORTS_SOURCE,
    BACKPORTS_PIN,
    APT_LISTS_STAMP,
    AMDGPU_LISTS_STAMP,
    BACKPORTS_LISTS_STAMP,
    VERIFIED,
    PULL_SERVICE,
    PULL_TIMER,
    PULL_SCRIPT,
    PULL_DEPLOY,
    PULL_INVENTORY,
    PULL_INSTALLED,
    PULL_TRUSTED_ROOT,
    PULL_STAMP,
    PULL_METRICS,
    PULL_STATUS_METRICS,
)
# Directories the deploy may create whole (their existence is read).
MANAGED_DIRECTORIES = (MIRROR_ROOT, MIRROR_CACHE, PULL_ROOT)
# Every keyring a deploy may write (their fingerprints are read, not their digests).
MANAGED_KEYRINGS = (ROCM_KEYRING, AMDROCM_KEYRING)


def classic_root(version: str) -> str:
    """Where a classic release unpacks: /opt/rocm-6.4.3 (fact sheet §3.5)."""
    return f"/opt/rocm-{version}"


def core_sdk_root(major_minor: str) -> str:
    """Where a Core SDK release unpacks: /opt/rocm/core-10.0 (TheRock build_package.py
    "# Release:  /opt/rocm/core-7.15"; transition guide: "/opt/rocm/core-10.1")."""
    return f"{ROCM_ROOT}/core-{major_minor}"


def venv_python(venv: str) -> str:
    """The interpreter of a venv."""
    return f"{venv.rstrip('/')}/bin/python"


def venv_marker(venv: str) -> str:
    """The file every venv has (PEP 405), whose presence means the venv exists."""
    return f"{venv.rstrip('/')}/pyvenv.cfg"


def parent(path: str) -> str:
    """The directory of ``path`` ("/" for a top-level entry)."""
    return path.rsplit("/", 1)[0] or "/"


# --- GPU device access ------------------------------------------------------------------------
# The groups that own /dev/kfd (compute) and /dev/dri/renderD* (render nodes): AMD's
# prerequisites put every GPU user in both (fact sheet §4). Names on the host, read by the
# survey and written by the GPU groups task.
GPU_GROUPS = ("video", "render")
