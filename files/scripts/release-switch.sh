# shellcheck shell=sh
# release-switch.sh TAG ITEM...: ITEM is want:NAME or stale:NAME. For each package, install
# exactly the version the configured repository offers for release TAG (which is how apt
# downgrades too: AMD's pin is 600, below the 1000 apt needs to downgrade on its own). A
# stale package this release doesn't publish is purged; a wanted one it doesn't publish
# fails the host by name.
set -eu
tag=$1
shift
install=""
purge=""
for item in "$@"; do
    name=${item#*:}
    version=$(apt-cache madison "$name" | awk -F'|' -v t=".$tag-" \
        '{ gsub(/ /, "", $2) } index($2, t) { print $2; exit }')
    if [ -n "$version" ]; then
        install="$install $name=$version"
    elif [ "${item%%:*}" = want ]; then
        echo "ROCm release tag $tag has no package $name on the configured repository" >&2
        exit 1
    else
        purge="$purge $name"
    fi
done
# Package names and versions have no spaces: word splitting into arguments is intended.
if [ -n "$install" ]; then
    # shellcheck disable=SC2086
    apt_get install --allow-downgrades $install
fi
if [ -n "$purge" ]; then
    # shellcheck disable=SC2086
    apt_get purge $purge
fi
