# shellcheck shell=sh
# push-mark.sh start MARKER LOCK WAIT: mark this host as being changed by a push (MARKER holds
# the time the push started, seconds since the epoch), so that a pull starting from now on
# skips; then wait up to WAIT seconds for a pull already holding LOCK (one that started before
# the mark) to end. If it still runs, the mark goes again and this fails, naming the pull.
# The mark is written before the lock is looked at, and the pull takes the lock before it
# looks for the mark: of a push and a pull starting together, at least one sees the other.
# push-mark.sh end MARKER: the push has ended: take the mark away.
set -eu
action=$1
marker=$2
safe_path "$marker"
if [ "$action" = end ]; then
    rm -f -- "$marker"
    exit 0
fi
lock=$3
wait=$4
mkdir -p "$(dirname "$marker")"
date +%s | write_file "$marker" 644
if [ -e "$lock" ] && ! flock --wait "$wait" "$lock" true; then
    rm -f -- "$marker"
    echo "a pull (rocm-fleet-pull.service) is converging this host and still held $lock" \
        "after ${wait}s: nothing was changed; push again once it has ended" \
        "(journalctl -u rocm-fleet-pull), or stop its timer first" \
        "(systemctl stop rocm-fleet-pull.timer)" >&2
    exit 1
fi
