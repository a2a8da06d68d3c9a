# shellcheck shell=sh
# package-purge.sh EXCEPT GLOB...: the installed packages a GLOB names (but no glob of the
# space-separated EXCEPT), "__package=name|version", and what `apt-get purge` of them would
# remove (simulate_purge). Prints nothing when none is installed.
set -f
except=$1
shift
found=$(installed_matching "$except" "" "$@")
[ -n "$found" ] || exit 0
printf '%s\n' "$found" | sed 's/^/__package=/'
# shellcheck disable=SC2046  # one word per package name
simulate_purge $(printf '%s\n' "$found" | cut -d'|' -f1)
