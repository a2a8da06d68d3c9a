#!/bin/sh
# acceptance-record.sh PATH JSON: keep the last acceptance run's record at PATH, root-only
# (0600), written whole: into a fresh mktemp name in PATH's directory (never a fixed name a
# link could wait at), then renamed onto PATH with mv -T (a link at PATH is replaced, not
# followed). The directory is made root-only when missing; a link in its place is refused, and
# so is a directory above it breaking the safe path rule (safe_path, safe-path.sh before this).
set -eu
path=$1
safe_path "$path"
dir=$(dirname "$path")
if [ -L "$dir" ]; then echo "acceptance-record: $dir is a link: refused" >&2; exit 1; fi
(umask 077 && mkdir -p "$dir")
umask 077
temporary=$(mktemp "$dir/.acceptance.XXXXXX")
if printf '%s\n' "$2" > "$temporary" && chmod 0600 "$temporary" && mv -Tf "$temporary" "$path"
then
    exit 0
fi
rm -f "$temporary"
exit 1
