# shellcheck shell=sh
# dkms-driver-purge.sh LEDGER DRIVER REASON PACKAGE...: purge what the DKMS driver's install
# put on the host (PACKAGEs: LEDGER's names still installed) as ledger_purge does, keeping
# what the admin's own packages need, then forget LEDGER (what stayed is the admin's now).
# The driver's module stays loaded until the host boots the kernel's own: when DRIVER went,
# mark a reboot with REASON.
set -eu
ledger=$1
driver=$2
reason=$3
shift 3
safe_path "$ledger"
ledger_purge "$ledger" "$@"
rm -f "$ledger"
if ! dpkg-query -W -f '${Status}\n' "$driver" 2>/dev/null | grep -q ' installed$'; then
    mark_reboot "$reason"
fi
