# shellcheck shell=sh
# newer-kernel.sh RUNNING TARGET_RELEASE RECOMMENDS PACKAGE...: install a newer kernel
# (from TARGET_RELEASE with -t, "" for the default; RECOMMENDS is --install-recommends or
# --no-install-recommends) without removing anything, so the running kernel stays, and mark
# a reboot for every new kernel image.
set -eu
running=$1
target=$2
recommends=$3
shift 3
images() {
    dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' 'linux-image-[0-9]*' 2>/dev/null \
        | awk '$1 ~ /^ii/ { print $2 }' | sort
}
before=$(images)
if [ -n "$target" ]; then
    apt_get install --no-remove "$recommends" -t "$target" "$@"
else
    apt_get install --no-remove "$recommends" "$@"
fi
after=$(images)
new=$(printf '%s\n' "$after" | grep -vxF "$(printf '%s\n' "$before")" || true)
for package in $new; do
    release=${package#linux-image-}
    release=${release#unsigned-}
    [ "$release" = "$running" ] \
        || mark_reboot "new kernel $release (running $running)" "$package"
done
