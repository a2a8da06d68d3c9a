# shellcheck shell=sh
# kernel-hold.sh LEDGER CHANGE...: put packages on hold and release rocm-fleet's own holds,
# keeping LEDGER the list of the holds rocm-fleet placed. Each CHANGE is a package name
# after a sign: +NAME hold it (and record it), -NAME release it (and forget it), =NAME keep
# it recorded. The ledger names the holds before they are placed and forgets the releases
# after they are made: a run cut short never leaves a hold of rocm-fleet's unrecorded (it
# would then stay forever, as the admin's).
set -eu
ledger=$1
shift
hold=
release=
record=
for change in "$@"; do
    name=${change#?}
    case $change in
        +*) hold="$hold $name" record="$record $name" ;;
        -*) release="$release $name" ;;
        =*) record="$record $name" ;;
        *) echo "kernel-hold: bad change $change" >&2; exit 2 ;;
    esac
done
# write_ledger NAME...: the ledger names exactly NAMEs (none: no ledger).
write_ledger() {
    if [ $# -eq 0 ]; then
        rm -f "$ledger"
        return
    fi
    mkdir -p "$(dirname "$ledger")"
    # root's alone (0644) whatever umask the login left: a line another user could add would
    # be a hold rocm-fleet releases.
    printf '%s\n' "$@" | write_file "$ledger" 644
}
safe_path "$ledger"
# Package names (checked against Debian's grammar before they got here), one word each:
# word splitting is intended.
# shellcheck disable=SC2086
write_ledger $record $release
if [ -n "$hold" ]; then
    # shellcheck disable=SC2086
    apt-mark hold $hold
fi
if [ -n "$release" ]; then
    # shellcheck disable=SC2086
    apt-mark unhold $release
fi
# shellcheck disable=SC2086
write_ledger $record
