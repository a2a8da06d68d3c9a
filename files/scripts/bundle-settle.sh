# shellcheck shell=sh
# bundle-settle.sh DIR SUMS STALE: in DIR, check the files just uploaded against SUMS (lines
# "SHA256  PATH", as sha256sum -c reads them; may be empty), remove the files STALE lists
# (one path per line: the previous manifest's files the new one doesn't list) and the
# directories that leaves empty, and give the web server read access. A file that fails
# its check fails the host; the manifest isn't written then, so the next run sends it again.
set -eu
dir=$1
sums=$2
stale=$3
safe_path "$dir/."
cd "$dir"
if [ -n "$sums" ]; then
    printf '%s\n' "$sums" | sha256sum -c --quiet --strict
fi
if [ -n "$stale" ]; then
    printf '%s\n' "$stale" | while IFS= read -r path; do
        rm -f -- "$path"
    done
    find . -mindepth 1 -type d -empty -delete
fi
chmod -R a+rX "$dir"
