# shellcheck shell=sh
# release-switch.sh REGEX ITEM...: ITEM is foreign:NAME, want:NAME, stale:NAME or drop:NAME
# (a GPU target's package no longer wanted: purged after the install). The foreign
# packages (the other ROCm stream's) are purged first: AMD says to uninstall ROCm 7.2.4 or
# older before installing the Core SDK, and the two can't share /opt/rocm. Then each other
# package is installed at exactly the version the configured repository offers that matches
# the extended regular expression REGEX (the release's versions), which is how apt
# downgrades too (a 600 pin is below the 1000 apt needs to downgrade on its own). A stale
# package the release doesn't publish is purged; a wanted one it doesn't publish fails the
# host by name.
set -eu
regex=$1
shift
foreign=""
install=""
purge=""
for item in "$@"; do
    kind=${item%%:*}
    name=${item#*:}
    if [ "$kind" = foreign ]; then
        foreign="$foreign $name"
        continue
    fi
    if [ "$kind" = drop ]; then
        purge="$purge $name"
        continue
    fi
    version=$(apt-cache madison "$name" | awk -F'|' -v re="$regex" \
        '{ gsub(/ /, "", $2) } $2 ~ re { print $2; exit }')
    if [ -n "$version" ]; then
        install="$install $name=$version"
    elif [ "$kind" = want ]; then
        echo "ROCm release versions /$regex/ have no package $name on the configured repository" >&2
        exit 1
    else
        purge="$purge $name"
    fi
done
# Package names and versions have no spaces: word splitting into arguments is intended.
if [ -n "$foreign" ]; then
    # shellcheck disable=SC2086
    apt_get purge $foreign
fi
if [ -n "$install" ]; then
    # shellcheck disable=SC2086
    apt_get install --allow-downgrades $install
fi
if [ -n "$purge" ]; then
    # shellcheck disable=SC2086
    apt_get purge $purge
fi
