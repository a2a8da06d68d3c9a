"""The simulated machine around the GPUs: running kernel, firmware (EFI, Secure Boot, MOK)
and what a reboot does.  Doubles of hardware only; apt, dpkg and the kernel packages the
deploy installs are real.

State lives in the host root under MACHINE_DIR (the lab's "NVRAM" and "bootloader"):

* ``kernel``: the running kernel release.  ``/usr/local/bin/uname`` (a double, first on
  root's PATH) reports it for ``-r``/``-a``, so facts, dkms and the deploy all see it.  At a
  "boot" the lab picks the newest of it and the installed ``/boot/vmlinuz-*``, as GRUB does
  by default (there is no grub.cfg in a lab root).  The running kernel's own files are
  doubled too (``kernel_files``: ``/boot/vmlinuz-R``, ``/boot/initrd.img-R`` and its inbox
  ``amdgpu.ko``), as are the files of a kernel "an unattended upgrade installs" later.
* ``efi/firmware`` (``efi`` | ``bios`` | ``efi-no-sb``), ``efi/secureboot`` (``enabled`` |
  ``disabled``), ``efi/MokListRT/*.der`` (enrolled MOKs), ``efi/MokNew/*.der`` + ``efi/MokAuth``
  (a pending request and its SHA-512 crypt hash, as mokutil writes MokNew/MokAuth).
  ``/usr/local/bin/mokutil`` (a double of lcp/mokutil 0.6/0.7) reads and writes them and
  logs its arguments to ``efi/mokutil.log`` so tests can count imports.
* ``boot``: ``ok`` or ``hang`` (the host never comes back after a reboot).

``/usr/local/sbin/reboot`` (double) marks ``reboot-requested`` and stops the host's pid 1;
the lab's supervisor (fleet.py) then "boots" it: /run emptied (a tmpfs on real hosts), the
kernel chosen, a MOK request confirmed if someone is "at the console" (the password checked
against MokAuth like MokManager does), sshd started in fresh namespaces with uptime reset.

mokutil texts and exit codes (rocm-facts.md §5, lcp/mokutil src/mokutil.c): ``--sb-state``
prints ``SecureBoot enabled|disabled`` and exits 0; legacy BIOS: ``EFI variables are not
supported on this system`` on stderr, exit 1, before any command; EFI without a SecureBoot
variable: ``This system doesn't support Secure Boot``, exit 255; ``--test-key F``:
``F is not enrolled`` exit 0, ``F is already enrolled`` / ``F is already in the enrollment
request`` exit 1; ``--import F --hash-file H`` reads a crypt(3) string (``$6$salt$hash``,
get_hash_from_file/decode_pass), a key already enrolled or pending prints ``Skip F``;
``--list-new`` prints ``[key N]`` and ``SHA1 Fingerprint: aa:bb:...`` per pending key, or
``MokNew is empty``.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path

from . import sysfs

MACHINE_DIR = "etc/rocm-fleet-lab/machine"
EFI_DIR = f"{MACHINE_DIR}/efi"
#: The DKMS signing certificate on Debian (dkms.in prepare_mok; rocm-facts.md §5).
DKMS_CERT = "var/lib/dkms/mok.pub"
DKMS_KEY = "var/lib/dkms/mok.key"

FIRMWARES = ("efi", "bios", "efi-no-sb")
MOK_STATES = ("none", "enrolled", "pending")


@dataclass(frozen=True)
class Machine:
    """What a lab host's firmware and boot look like (the GPUs are profiles.py's job).

    kernel: the running kernel release; None = the suite's stock kernel (the ABI Debian's
    ``linux-image-amd64`` points at in the lab mirror's real index).
    mok: the DKMS certificate at lab start: ``none`` (no cert, nothing enrolled),
    ``enrolled`` or ``pending`` (a cert at /var/lib/dkms/mok.pub, enrolled / queued).
    returns: False = after a reboot the host never comes back.
    """

    kernel: str | None = None
    firmware: str = "efi"
    secure_boot: bool = False
    mok: str = "none"
    returns: bool = True

    def __post_init__(self) -> None:
        if self.firmware not in FIRMWARES:
            raise ValueError(f"firmware {self.firmware!r}: one of {FIRMWARES}")
        if self.mok not in MOK_STATES:
            raise ValueError(f"mok {self.mok!r}: one of {MOK_STATES}")


# --- doubles --------------------------------------------------------------------------------

UNAME = r"""#!/bin/sh
# uname double (rocm-fleet lab): the simulated machine's running kernel.
fake=
read -r fake 2>/dev/null </MACHINE_DIR/kernel
if [ -z "$fake" ]; then exec /usr/bin/uname "$@"; fi
# -r alone (every survey asks) without a process: a real `uname -r` is one, the double no more.
if [ $# -eq 1 ] && [ "$1" = -r ]; then printf '%s\n' "$fake"; exit 0; fi
real=$(/usr/bin/uname -r | sed 's/[.]/\\./g')
/usr/bin/uname "$@" | sed "s/$real/$fake/g"
"""

REBOOT = r"""#!/bin/sh
# reboot double (rocm-fleet lab): ask the lab to power-cycle this host, then go down.
touch /MACHINE_DIR/reboot-requested
sync
kill -TERM 1
"""

MOKUTIL = r"""#!/bin/sh
# mokutil double (rocm-fleet lab): lcp/mokutil's texts and exit codes over the lab's
# simulated EFI variables.  Never stores or prints a password.
EFI=/EFI_DIR
echo "mokutil $*" >> "$EFI/mokutil.log"
firmware=$(cat "$EFI/firmware" 2>/dev/null || echo bios)
case "$1" in -h|--help) echo "Usage: mokutil [--sb-state|--test-key|--import|...]"; exit 0 ;; esac
if [ "$firmware" = bios ]; then
    echo "EFI variables are not supported on this system" >&2
    exit 1
fi
fp() { sha1sum "$1" | cut -c1-40; }
colons() { echo "$1" | sed 's/../&:/g; s/:$//'; }
list() {
    dir="$EFI/$1"; n=0
    for f in "$dir"/*.der; do
        [ -e "$f" ] || continue
        n=$((n + 1))
        echo "[key $n]"
        echo "SHA1 Fingerprint: $(colons "$(fp "$f")")"
        echo "Certificate:"
        echo "    Data:"
        echo "        Subject: $(cat "${f%.der}.subject" 2>/dev/null)"
    done
    [ "$n" -gt 0 ] || echo "$1 is empty"
}
case "$1" in
--sb-state)
    if [ "$firmware" = efi-no-sb ]; then
        echo "This system doesn't support Secure Boot" >&2
        exit 255
    fi
    echo "SecureBoot $(cat "$EFI/secureboot")"
    exit 0 ;;
--test-key|-t)
    f=$2
    if [ ! -r "$f" ]; then echo "Failed to open $f" >&2; exit 255; fi
    sum=$(fp "$f")
    if [ -e "$EFI/MokListRT/$sum.der" ]; then echo "$f is already enrolled"; exit 1; fi
    if [ -e "$EFI/MokNew/$sum.der" ]; then
        echo "$f is already in the enrollment request"; exit 1
    fi
    echo "$f is not enrolled"
    exit 0 ;;
--list-new|-N) list MokNew; exit 0 ;;
--list-enrolled|-l) list MokListRT; exit 0 ;;
--revoke-import)
    rm -f "$EFI"/MokNew/* "$EFI/MokAuth"; exit 0 ;;
--import|-i)
    f=$2; shift 2; hash_file=
    while [ $# -gt 0 ]; do
        case "$1" in
            --hash-file|-f) hash_file=$2; shift 2 ;;
            --hash-file=*) hash_file=${1#*=}; shift ;;
            *) echo "mokutil double: unsupported option $1" >&2; exit 2 ;;
        esac
    done
    if [ ! -r "$f" ]; then echo "Failed to get file status, $f" >&2; exit 255; fi
    sum=$(fp "$f")
    if [ -e "$EFI/MokListRT/$sum.der" ] || [ -e "$EFI/MokNew/$sum.der" ]; then
        echo "Skip $f"; exit 0
    fi
    if [ -z "$hash_file" ]; then
        # The real tool reads the password twice (getline when stdin is no tty); the lab
        # double only takes a hash file, which is what rocm-fleet uses.
        echo "mokutil double: only --hash-file imports are simulated" >&2; exit 2
    fi
    hash=$(head -n 1 "$hash_file" 2>/dev/null)
    case "$hash" in
        '$6$'?*'$'?*) ;;
        *) echo "Failed to read hash" >&2; exit 255 ;;
    esac
    mkdir -p "$EFI/MokNew"
    cp "$f" "$EFI/MokNew/$sum.der"
    printf '%s\n' "$hash" > "$EFI/MokAuth"
    exit 0 ;;
--disable-validation|--enable-validation|--reset|--delete|--password|--import-hash)
    echo "mokutil double: $1 is not simulated" >&2; exit 2 ;;
*)
    echo "mokutil double: unsupported command $*" >&2; exit 2 ;;
esac
"""


def _install(root: Path, rel: str, body: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        body.replace("/MACHINE_DIR", "/" + MACHINE_DIR).replace("/EFI_DIR", "/" + EFI_DIR)
    )
    path.chmod(0o755)


#: Every double of the machine: its path in a host root (first on root's PATH) -> script.
DOUBLES = {
    "usr/local/bin/uname": UNAME,
    "usr/local/bin/mokutil": MOKUTIL,
    "usr/local/sbin/reboot": REBOOT,
}


def write(root: Path, machine: Machine, stock: str) -> None:
    """Install a machine into a host root: doubles, running kernel, EFI state."""
    for rel, body in DOUBLES.items():
        _install(root, rel, body)
    mdir, efi = root / MACHINE_DIR, root / EFI_DIR
    for sub in ("MokListRT", "MokNew"):
        (efi / sub).mkdir(parents=True, exist_ok=True)
    (mdir / "kernel").write_text((machine.kernel or stock) + "\n")
    kernel_files(root, machine.kernel or stock)
    (mdir / "boot").write_text("ok\n" if machine.returns else "hang\n")
    (efi / "firmware").write_text(machine.firmware + "\n")
    (efi / "secureboot").write_text("enabled\n" if machine.secure_boot else "disabled\n")
    (efi / "mokutil.log").touch()
    if machine.mok != "none":
        cert = make_dkms_cert(root)
        dest = "MokListRT" if machine.mok == "enrolled" else "MokNew"
        enroll(root, cert, dest)
        if dest == "MokNew":
            # Queued earlier by someone else with an unknown password.
            (efi / "MokAuth").write_text(crypt_sha512("not-the-lab-password") + "\n")


#: Where a kernel package puts its own amdgpu module.
INBOX_AMDGPU = "kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.xz"


def kernel_files(root: Path, release: str) -> None:
    """The files a ``linux-image-<release>`` package and its initramfs hook leave behind (the
    lab has no kernel to boot): the image, an initramfs, the kernel's own amdgpu module."""
    boot = root / "boot"
    boot.mkdir(exist_ok=True)
    (boot / f"vmlinuz-{release}").write_bytes(b"MZ lab kernel double " + release.encode() + b"\n")
    (boot / f"initrd.img-{release}").write_bytes(b"lab initramfs double\n" * 64)
    module = root / "lib/modules" / release / INBOX_AMDGPU
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_bytes(b"lab amdgpu double\n")


def make_dkms_cert(root: Path) -> Path:
    """A DKMS signing pair made the way dkms.in's prepare_mok does (openssl req, DER)."""
    cert, key = root / DKMS_CERT, root / DKMS_KEY
    cert.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["openssl", "req", "-new", "-x509", "-nodes", "-days", "36500",
         "-subj", "/CN=DKMS module signing key", "-newkey", "rsa:2048",
         "-keyout", str(key), "-outform", "DER", "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    key.chmod(0o600)
    return cert


def enroll(root: Path, cert: Path, var: str = "MokListRT") -> None:
    sha1 = hashlib.sha1(cert.read_bytes()).hexdigest()
    dest = root / EFI_DIR / var / f"{sha1}.der"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cert, dest)
    dest.with_suffix(".subject").write_text("CN=DKMS module signing key\n")


def crypt_sha512(password: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt as _crypt

        return _crypt.crypt(password, _crypt.mksalt(_crypt.METHOD_SHA512))


def check_crypt(password: str, hashed: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt as _crypt

        return _crypt.crypt(password, hashed) == hashed


# --- queries and boot -------------------------------------------------------------------------


def running_kernel(root: Path) -> str:
    return (root / MACHINE_DIR / "kernel").read_text().strip()


def set_running_kernel(root: Path, release: str) -> None:
    (root / MACHINE_DIR / "kernel").write_text(release + "\n")


def mok_state(root: Path, cert: Path) -> str:
    """enrolled | pending | none for a certificate, from the simulated NVRAM."""
    sha1 = hashlib.sha1(cert.read_bytes()).hexdigest()
    efi = root / EFI_DIR
    if (efi / "MokListRT" / f"{sha1}.der").exists():
        return "enrolled"
    return "pending" if (efi / "MokNew" / f"{sha1}.der").exists() else "none"


def mokutil_calls(root: Path) -> list[str]:
    path = root / EFI_DIR / "mokutil.log"
    return path.read_text().splitlines() if path.exists() else []


def reboot_requested(root: Path) -> bool:
    return (root / MACHINE_DIR / "reboot-requested").exists()


def returns_after_reboot(root: Path) -> bool:
    return (root / MACHINE_DIR / "boot").read_text().strip() != "hang"


def set_returns(root: Path, returns: bool) -> None:
    (root / MACHINE_DIR / "boot").write_text("ok\n" if returns else "hang\n")


_KERNEL_FILE = re.compile(r"^vmlinuz-(.+)$")


def boot(root: Path, console_password: str | None = None) -> dict[str, str]:
    """What the firmware, shim and bootloader do between "reboot" and sshd starting.

    Returns what happened (kernel chosen, MOK outcome) for logs and tests."""
    happened: dict[str, str] = {}
    (root / MACHINE_DIR / "reboot-requested").unlink(missing_ok=True)
    # /run is a tmpfs: a boot starts it empty (keeping the dirs the base image has).
    run = root / "run"
    for entry in run.iterdir():
        if entry.name in ("lock", "mount"):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    (run / "sshd").mkdir(exist_ok=True)
    # GRUB boots the newest installed kernel by default.
    candidates = [running_kernel(root)]
    candidates += [
        m.group(1) for p in (root / "boot").glob("vmlinuz-*") if (m := _KERNEL_FILE.match(p.name))
    ]
    newest = candidates[0]
    for release in candidates[1:]:
        if _version_gt(release, newest):
            newest = release
    set_running_kernel(root, newest)
    happened["kernel"] = newest
    # The kernel loads ttm with modprobe.d's options; amdgpu sizes an APU's GTT from them.
    limit = sysfs.load_ttm(root)
    if limit is not None:
        happened["ttm pages_limit"] = str(limit)
    # shim's MokManager: a pending request is shown at the console; enrolled only if someone
    # types the password that matches MokAuth.  Nobody there: it times out, request kept.
    efi = root / EFI_DIR
    pending = sorted((efi / "MokNew").glob("*.der"))
    auth = efi / "MokAuth"
    if pending and console_password is not None and auth.exists():
        if check_crypt(console_password, auth.read_text().strip()):
            for der in pending:
                der.rename(efi / "MokListRT" / der.name)
                (efi / "MokListRT" / der.with_suffix(".subject").name).write_text(
                    "CN=DKMS module signing key\n"
                )
            auth.unlink()
            happened["mok"] = "enrolled"
        else:
            happened["mok"] = "wrong password"
    elif pending:
        happened["mok"] = "pending (nobody at the console)"
    return happened


def _version_gt(a: str, b: str) -> bool:
    proc = subprocess.run(["dpkg", "--compare-versions", a, "gt", b], check=False)
    return proc.returncode == 0


def stock_kernel(packages: Path) -> str:
    """The kernel release ``linux-image-amd64`` depends on in a suite's real Packages index
    (``mirror.packages_index``)."""
    stanza = None
    for block in packages.read_text().split("\n\n"):
        if block.startswith("Package: linux-image-amd64\n"):
            stanza = block
    if stanza is None:
        raise RuntimeError(f"no linux-image-amd64 in {packages}")
    match = re.search(r"^Depends: linux-image-(\S+?-amd64)\b", stanza, re.MULTILINE)
    if not match:
        raise RuntimeError(f"cannot read the kernel ABI from {packages}")
    return match.group(1)
