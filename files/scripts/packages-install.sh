# shellcheck shell=sh
# packages-install.sh LEDGER PACKAGE...: refresh the lists, install the packages without
# their Recommends, and append their names to LEDGER ("" for none) so uninstalling can
# remove them again.
set -eu
ledger=$1
shift
if [ -n "$ledger" ]; then
    safe_path "$ledger"
fi
apt_get update
apt_get install --no-install-recommends "$@"
if [ -n "$ledger" ]; then
    mkdir -p "$(dirname "$ledger")"
    printf '%s\n' "$@" | append_file "$ledger"
fi
