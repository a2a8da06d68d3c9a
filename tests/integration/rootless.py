"""A double of ``stat`` for running the node scripts' safe path rule (``files/scripts/
safe-path.sh``, which asks ``stat -c '%u %a %U' -- DIR``) as a user who can't chown: the
directories above the test's own ``root`` read as root's 0755 (pytest's are the user's, under
a sticky /tmp), the test user's own files under ``root`` as root's, with their real modes
(group/other-write bits are the test's to set), and ``owners`` names the paths another user
owns. Any other ``stat`` call goes to the real one. Like it, one call answers each path
(writable-by-others.sh asks a path's directories in one), one line each, and fails (no line)
for a path the real one can't stat."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

REAL = "/usr/bin/stat"


def stat_double(bin_dir: Path, root: Path, owners: dict[Path, str] | None = None) -> Path:
    """``bin_dir/stat`` (``bin_dir`` made if missing); ``owners``: path to ``"UID NAME"``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    cases = "".join(
        f'    {shlex.quote(str(path))}) set -- {uid} "$2" {shlex.quote(name)} ;;\n'
        for path, (uid, name) in ((p, o.split()) for p, o in (owners or {}).items())
    )
    top = shlex.quote(str(root))
    script = bin_dir / "stat"
    script.write_text(
        f"""#!/bin/sh
[ "$1 $2 $3" = "-c %u %a %U --" ] || exec {REAL} "$@"
shift 3
status=0
for path do
    case $path in {top} | {top}/*) ;; *) echo "0 755 root"; continue ;; esac
    found=$({REAL} -c '%u %a %U' -- "$path") || {{ status=1; continue; }}
    set -- $found
    case $path in
{cases}    *) [ "$1" != {os.getuid()} ] || set -- 0 "$2" root ;;
    esac
    echo "$1 $2 $3"
done
exit $status
"""
    )
    script.chmod(0o755)
    return bin_dir
