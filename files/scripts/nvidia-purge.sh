# shellcheck shell=sh
# nvidia-purge.sh REASON PACKAGE...: purge NVIDIA's packages; a REASON (not "") marks a
# reboot first, for a driver that stays loaded until then.
set -eu
reason=$1
shift
if [ -n "$reason" ]; then
    mark_reboot "$reason"
fi
apt_get purge "$@"
