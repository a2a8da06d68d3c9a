# shellcheck shell=sh
# dkms-driver.sh LEDGER DRIVER PACKAGE...: install kernel headers and AMD's DKMS driver
# without removing anything, and append their names to LEDGER, so going back to the
# kernel's own driver purges them again; when DRIVER is among the packages (a new driver),
# mark a reboot.
set -eu
ledger=$1
driver=$2
shift 2
safe_path "$ledger"
apt_get install --no-remove --no-install-recommends "$@"
mkdir -p "$(dirname "$ledger")"
printf '%s\n' "$@" | append_file "$ledger"
for package in "$@"; do
    if [ "$package" = "$driver" ]; then
        mark_reboot "new driver $driver" "$driver"
    fi
done
