# shellcheck shell=sh
# newer-kernel.sh RUNNING TARGET_RELEASE RECOMMENDS HELD PACKAGE...: install a newer kernel
# (from TARGET_RELEASE with -t, "" for the default; RECOMMENDS is --install-recommends or
# --no-install-recommends) without removing anything, so the running kernel stays, and mark
# a reboot for every new kernel image. HELD: the PACKAGEs rocm-fleet holds (names separated
# by spaces, or ""), released for this install alone and held again after it, also when it
# fails.
set -eu
running=$1
target=$2
recommends=$3
held=$4
shift 4
if [ -n "$held" ]; then
    # Package names (Debian's grammar), one word each: word splitting is intended.
    # shellcheck disable=SC2086
    apt-mark unhold $held > /dev/null
    # shellcheck disable=SC2064,SC2086
    trap "apt-mark hold $held > /dev/null" EXIT
fi
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
