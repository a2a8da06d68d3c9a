# shellcheck shell=sh
# distro-rocm.sh NOT_AMD SAME_NAMES BIN TOOLS GLOB...: the distribution's own ROCm packages on
# the host and what removing them would take along. Prints nothing when there are none.
#   __package=name|version   installed, named by a GLOB, not AMD's (the line doesn't match
#                            the extended regex NOT_AMD)
#   __depends=pkg|Depends, Pre-Depends   installed packages naming one of them (a substring
#                            match: the fact parses the exact names)
#   __tool=BIN/prog|pkg      one of AMD's programs (TOOLS) in BIN (/usr/bin, which comes
#                            before /opt/rocm/bin on PATH) and the package that put it there
#   __conflicting=pkg        such an owner, or a package with one of AMD's own package
#                            names (SAME_NAMES)
#   __purge=conflicting|kept then simulate_purge's lines for the conflicting ones / the rest
set -f
not_amd=$1
same_names=$2
bin=$3
tools=$4
shift 4
found=$(installed_matching "" "$not_amd" "$@")
[ -n "$found" ] || exit 0
printf '%s\n' "$found" | sed 's/^/__package=/'
names=$(printf '%s\n' "$found" | cut -d'|' -f1)
is_found() { printf '%s\n' "$names" | grep -qxF "$1"; }

set --
for name in $names; do set -- "$@" -e "$name"; done
# shellcheck disable=SC2016  # dpkg-query's format, not the shell's
dpkg-query -W -f='${db:Status-Abbrev}|${Package}|${Depends}, ${Pre-Depends}\n' 2>/dev/null \
    | grep -E '^.[^nc]' | cut -d'|' -f2- | grep -F "$@" | sed 's/^/__depends=/'

candidates=$same_names
for tool in $tools; do
    [ -e "$bin/$tool" ] || continue
    owners=$(dpkg-query -S "$bin/$tool" 2>/dev/null | grep -v '^diversion by' \
        | sed -n "s|: $bin/.*||p" | tr ',' ' ')
    for owner in $owners; do
        owner=${owner%%:*}
        echo "__tool=$bin/$tool|$owner"
        candidates="$candidates $owner"
    done
done
conflicting=$(for name in $candidates; do if is_found "$name"; then echo "$name"; fi; done \
    | sort -u)
kept=$(for name in $names; do
    if ! printf '%s\n' "$conflicting" | grep -qxF "$name"; then echo "$name"; fi
done)
for name in $conflicting; do echo "__conflicting=$name"; done
if [ -n "$conflicting" ]; then
    echo __purge=conflicting
    # shellcheck disable=SC2086  # one word per package name
    simulate_purge $conflicting
fi
if [ -n "$kept" ]; then
    echo __purge=kept
    # shellcheck disable=SC2086  # one word per package name
    simulate_purge $kept
fi
