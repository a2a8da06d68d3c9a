"""What the next boot depends on (GRUB, kernels, their amdgpu modules and initramfs, ``dkms
status``, room in ``/boot``), in one command: sections ``__section=NAME``, content lines
prefixed ``|`` so no file can open a section."""

import re
import shlex
from typing import Any

from pyinfra.api import FactBase

from rocm_fleet.facts._shell import sections as split_sections
from rocm_fleet.model.boot import BootState, DkmsEntry, InstalledKernel, MenuEntry
from rocm_fleet.model.paths import DEFAULT_GRUB, GRUB_CFG, GRUBENV

#: The last 28 bytes of a signed module (include/linux/module_signature.h MODULE_SIG_STRING).
SIGNATURE_MARKER = "~Module signature appended~"

_SECTION = "__section="

_COMMAND = f"""\
echo {_SECTION}grubenv; if test -r {GRUBENV}; then head -c 4096 {GRUBENV} | sed 's/^/|/'; echo; fi
echo {_SECTION}default; sed -n 's/^[[:space:]]*GRUB_DEFAULT=/|&/p' {DEFAULT_GRUB} \
{DEFAULT_GRUB}.d/*.cfg 2>/dev/null; echo
if test -r {GRUB_CFG}; then
  echo {_SECTION}grubcfg; head -c 1048576 {GRUB_CFG} | sed 's/^/|/'; echo
fi
echo {_SECTION}kernels
for f in /boot/vmlinuz-*; do
  test -e "$f" || continue
  k=${{f#/boot/vmlinuz-}}
  echo "|kernel $k"
  if test -s "/boot/initrd.img-$k"; then echo "|initrd $k $(stat -c %s "/boot/initrd.img-$k")"; fi
  for m in "/lib/modules/$k"/updates/dkms/amdgpu.ko*; do
    test -e "$m" || continue
    echo "|dkms $k $m"
    case "$m" in *.xz) d='xz -dc';; *.zst) d='zstd -dc';; *.gz) d='gzip -dc';; *) d=cat;; esac
    if $d "$m" 2>/dev/null | tail -c 28 | grep -qF '{SIGNATURE_MARKER}'; then echo "|signed $k"; fi
  done
  for m in "/lib/modules/$k"/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko*; do
    if test -e "$m"; then echo "|inbox $k"; fi
  done
done
if command -v dkms >/dev/null 2>&1; then echo {_SECTION}dkms; dkms status 2>&1 | sed 's/^/|/'; fi
echo {_SECTION}df; df -P -B1 /boot 2>/dev/null \
| while IFS= read -r _l || [ -n "$_l" ]; do printf '|%s\\n' "$_l"; done"""


def sections(output: list[str]) -> dict[str, list[str]]:
    """Each section's content lines, without their ``|``."""
    found = split_sections(output, _SECTION).items()
    return {name: [line[1:] for line in body if line.startswith("|")] for name, body in found}


def parse_grubenv(lines: list[str]) -> dict[str, str]:
    """grub-editenv's block: ``name=value`` lines, ``#`` comments and ``#`` padding."""
    pairs = (line.partition("=") for line in lines if not line.startswith("#") and "=" in line)
    return {name.strip(): value.rstrip("\n") for name, _, value in pairs}


def parse_grub_default(lines: list[str]) -> str | None:
    """The last ``GRUB_DEFAULT=`` (shell quoting undone), as /etc/default/grub sources it."""
    value = None
    for line in lines:
        words = _words(line.strip(), comments=True)
        if words and words[0].startswith("GRUB_DEFAULT="):
            value = words[0].removeprefix("GRUB_DEFAULT=")
    return value


def _words(text: str, comments: bool = False) -> list[str] | None:
    """``shlex.split``; None on unbalanced quotes."""
    try:
        return shlex.split(text, comments=comments)
    except ValueError:
        return None


_OPEN = re.compile(r"^\s*(menuentry|submenu)\s+(.*?)\s*\{\s*$")
_LINUX = re.compile(r"^\s*linux(?:efi|16)?\s+(\S+)")
_DEFAULT = re.compile(r"^\s*set\s+default=(.*)$")


def parse_grub_cfg(lines: list[str]) -> tuple[tuple[MenuEntry, ...], str | None]:
    """The menu (entries and submenus, nested) and ``set default=`` (the branch without
    ``${next_entry}``) of a grub-mkconfig grub.cfg."""
    root: list[Any] = []
    stack: list[tuple[str, dict[str, Any], list[Any]]] = []  # kind, entry, children
    default = None
    depth = 0  # other `{` blocks (function ...) inside which nothing counts
    for line in lines:
        stripped = line.strip()
        opened = _OPEN.match(line)
        if opened and depth == 0:
            title, entry_id = _title_and_id(opened.group(2))
            stack.append((opened.group(1), {"title": title, "entry_id": entry_id}, []))
        elif stripped.endswith("{"):
            depth += 1
        elif stripped == "}":
            if depth:
                depth -= 1
            elif stack:
                kind, fields, children = stack.pop()
                (stack[-1][2] if stack else root).append(_entry(kind, fields, children))
        elif (linux := _LINUX.match(line)) and stack and stack[-1][0] == "menuentry":
            name = linux.group(1).rsplit("/", 1)[-1]
            if name.startswith("vmlinuz-"):
                stack[-1][1]["kernel"] = name.removeprefix("vmlinuz-")
        elif (match := _DEFAULT.match(line)) and not stack and depth == 0:
            value = _unquote(match.group(1))
            if value not in ("${next_entry}", "$next_entry"):
                default = value
    return tuple(root), default


def _entry(kind: str, fields: dict[str, Any], children: list[Any]) -> MenuEntry:
    return MenuEntry(
        title=fields["title"],
        entry_id=fields.get("entry_id"),
        kernel=fields.get("kernel") if kind == "menuentry" else None,
        children=tuple(children) if kind == "submenu" else None,
    )


def _unquote(text: str) -> str:
    words = _words(text, comments=True)
    return text.strip() if words is None else (words or [""])[0]


def _title_and_id(args: str) -> tuple[str, str | None]:
    """``'Title' --class x $menuentry_id_option 'id'``: the title and the ``--id``."""
    words = _words(args)
    if words is None:
        return args, None
    entry_id = None
    for i, word in enumerate(words[:-1]):
        if word in ("--id", "$menuentry_id_option", "${menuentry_id_option}"):
            entry_id = words[i + 1]
    return (words[0] if words else ""), entry_id


_DKMS = re.compile(
    # 3.x: amdgpu/6.8.5-2009582.22.04, 6.5.0-41-generic, x86_64: installed
    # 2.x: amdgpu, 6.8.5-2009582.22.04, 6.5.0-41-generic, x86_64: installed
    # added (no kernel): amdgpu/6.8.5-2009582.22.04: added
    r"^(?P<module>[^/,:\s]+)(?:/|,\s*)(?P<version>[^,:\s]+)"
    r"(?:,\s*(?P<kernel>[^,:\s]+),\s*(?P<arch>[^,:\s]+))?:\s*(?P<state>[a-z]+)"
)


def parse_dkms_status(lines: list[str]) -> tuple[DkmsEntry, ...]:
    """``dkms status`` lines of dkms 2.x and 3.x; errors and warnings are skipped."""
    matches = (_DKMS.match(line.strip()) for line in lines)
    return tuple(DkmsEntry(**match.groupdict()) for match in matches if match)


def parse_kernels(lines: list[str]) -> tuple[InstalledKernel, ...]:
    found: dict[str, dict[str, Any]] = {}
    for line in lines:
        parts = line.split(" ", 2)
        if len(parts) < 2:
            continue
        kind, release = parts[0], parts[1]
        fields = found.setdefault(release, {"release": release})
        if kind == "initrd" and len(parts) == 3 and parts[2].isdigit():
            fields["initrd_bytes"] = int(parts[2])
        elif kind == "dkms" and len(parts) == 3:
            fields["dkms_module"] = parts[2]
        elif kind == "signed":
            fields["dkms_signed"] = True
        elif kind == "inbox":
            fields["inbox_module"] = True
    return tuple(InstalledKernel(**fields) for fields in found.values())


def parse_df_available(lines: list[str]) -> int | None:
    """``df -P -B1``: the Available column of the data line."""
    rows = (line.split() for line in lines[1:])
    return next((int(row[3]) for row in rows if len(row) >= 6 and row[3].isdigit()), None)


def boot_state(output: list[str]) -> BootState:
    found = sections(output)
    menu, default = parse_grub_cfg(found["grubcfg"]) if "grubcfg" in found else (None, None)
    return BootState(
        kernels=parse_kernels(found.get("kernels", [])),
        grub_cfg=menu,
        cfg_default=default,
        grubenv=parse_grubenv(found.get("grubenv", [])),
        grub_default=parse_grub_default(found.get("default", [])),
        dkms=parse_dkms_status(found["dkms"]) if "dkms" in found else None,
        boot_free_bytes=parse_df_available(found.get("df", [])),
    )


class BootKernels(FactBase[BootState]):
    """The next boot's inputs as a ``model.boot.BootState``."""

    default = BootState

    def command(self) -> str:
        return _COMMAND

    def process(self, output: list[str]) -> BootState:
        return boot_state(output)
