# shellcheck shell=sh
# ledger-purge.sh LEDGER PACKAGE...: purge PACKAGEs (names from LEDGER that are still
# installed) and what they pulled in, unless something the admin installed depends on them.
# They are marked automatically installed and only what `apt-get autoremove` would newly
# remove because of that is purged. A Recommends or Suggests doesn't keep them (apt
# recommends ca-certificates and suggests gnupg). Packages that were already autoremovable
# (someone else's) stay, and so do kernels.
set -eu
removable() {
    apt-get -s -o APT::AutoRemove::RecommendsImportant=false \
        -o APT::AutoRemove::SuggestsImportant=false autoremove \
        | awk '$1 == "Remv" { print $2 }' | sort
}
ledger=$1
shift
removable > "$ledger.before"
apt-mark auto "$@" > /dev/null
removable > "$ledger.after"
purge=$(comm -13 "$ledger.before" "$ledger.after")
rm -f "$ledger.before" "$ledger.after"
if [ -n "$purge" ]; then
    # One name per line: word splitting into arguments is intended.
    # shellcheck disable=SC2086
    apt_get purge $purge
fi
