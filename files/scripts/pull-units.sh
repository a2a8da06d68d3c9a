# shellcheck shell=sh
# pull-units.sh enable TIMER LINK STAMP: enable TIMER as `systemctl enable` does (LINK in
# timers.target.wants, which works without a running systemd too), and where systemd runs
# (sd_booted(3): /run/systemd/system exists) reload it and (re)start the timer; touch STAMP.
# pull-units.sh disable TIMER LINK STAMP SERVICE: stop the timer and its service where
# systemd runs, and remove LINK, TIMER, SERVICE and STAMP.
set -eu
action=$1
timer=$2
link=$3
stamp=$4
unit=$(basename "$timer")
safe_path "$link"
safe_path "$stamp"
if [ "$action" = enable ]; then
    mkdir -p "$(dirname "$link")"
    ln -sfn "$timer" "$link"
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload
        systemctl restart "$unit"
    fi
    mkdir -p "$(dirname "$stamp")"
    : | write_file "$stamp" 644
else
    service=$5
    safe_path "$timer"
    safe_path "$service"
    if [ -d /run/systemd/system ]; then
        systemctl stop "$unit" || true
    fi
    rm -f "$link" "$timer" "$service" "$stamp"
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload
    fi
fi
