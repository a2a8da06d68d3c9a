# shellcheck shell=sh
# dkms-driver.sh DRIVER PACKAGE...: install kernel headers and AMD's DKMS driver without
# removing anything; when DRIVER is among the packages (a new driver), mark a reboot.
set -eu
driver=$1
shift
apt_get install --no-remove --no-install-recommends "$@"
for package in "$@"; do
    if [ "$package" = "$driver" ]; then
        mark_reboot "new driver $driver" "$driver"
    fi
done
