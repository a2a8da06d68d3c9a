# rocm-fleet pull, run by rocm-fleet-pull.service (written by rocm-fleet: deploy/pull.py,
# which puts the PULL_*, PUSH_* and TEXTFILES variables above): fetch this node's inventory
# data, converge the node to it @local with the pinned rocm-fleet, check the node, and write
# its audit for node_exporter. Data that fails validation stops the deploy before its first
# operation, so it changes nothing; this then exits non-zero and the journal says why. The
# service runs this under flock(1) (PULL_LOCK), so two pulls never overlap, and a push waits
# for it or refuses; a push that is running (PUSH_MARKER) makes this pull skip (75).
set -eu
umask 022
status=0
started=$(date +%s)

# The pull's own status for node_exporter (rocm_fleet_pull_*): written whole, then renamed,
# so the collector never reads half a file.
report() { # report RESULT EXIT_STATUS
    [ -d "$TEXTFILES" ] || return 0
    cat > "$PULL_STATUS_METRICS.$$" <<EOF
# HELP rocm_fleet_pull_last_run_timestamp_seconds When the last pull started.
# TYPE rocm_fleet_pull_last_run_timestamp_seconds gauge
rocm_fleet_pull_last_run_timestamp_seconds $started
# HELP rocm_fleet_pull_last_run_exit_status The last pull's exit status (0: converged).
# TYPE rocm_fleet_pull_last_run_exit_status gauge
rocm_fleet_pull_last_run_exit_status $2
# HELP rocm_fleet_pull_last_run What the last pull did.
# TYPE rocm_fleet_pull_last_run gauge
rocm_fleet_pull_last_run{result="$1"} 1
EOF
    mv -f -- "$PULL_STATUS_METRICS.$$" "$PULL_STATUS_METRICS"
}
fail() { # fail RESULT EXIT_STATUS MESSAGE
    echo "rocm-fleet pull: $3" >&2
    report "$1" "$2"
    exit "$2"
}

if [ -f "$PUSH_MARKER" ]; then
    pushed=$(cat -- "$PUSH_MARKER" 2> /dev/null || echo 0)
    case "$pushed" in '' | *[!0-9]*) pushed=0 ;; esac
    if [ $((started - pushed)) -lt "$PUSH_MARKER_EXPIRY" ]; then
        echo "rocm-fleet pull: a push has been changing this node since $pushed" \
            "(seconds since the epoch, $PUSH_MARKER): skipping this pull; the next one runs" \
            "once it has ended"
        report skipped-push-running 75
        exit 75
    fi
    echo "rocm-fleet pull: ignoring a push mark older than ${PUSH_MARKER_EXPIRY}s" \
        "($PUSH_MARKER, $pushed): that push ended without taking it away" >&2
fi

mkdir -p "$(dirname "$PULL_DATA")"
fetched="$PULL_DATA.new"
# On the fleet mirror over TLS: its CA alone vouches for it (the one the deploy pinned).
set --
if [ -n "$PULL_MIRROR" ]; then
    case "$PULL_SOURCE" in
    "$PULL_MIRROR"*) set -- --cacert "$PULL_MIRROR_CA" ;;
    esac
fi
case "$PULL_SOURCE" in
http://* | https://*)
    # The data is small: a limit on its size and on the time it takes. curl refuses a body
    # whose announced length is over the limit; `head` cuts one that announces none a byte
    # past it, which the size check below then refuses.
    rc_file=$(mktemp)
    {
        rc=0
        curl --fail --silent --show-error --location --proto '=http,https' \
            --max-time "$PULL_FETCH_SECONDS" --max-filesize "$PULL_DATA_MAX_BYTES" \
            "$@" --output - -- "$PULL_SOURCE" || rc=$?
        echo "$rc" > "$rc_file"
    } | head -c "$((PULL_DATA_MAX_BYTES + 1))" > "$fetched"
    rc=$(cat -- "$rc_file")
    rm -f -- "$rc_file"
    # 23: curl could not write on, as `head` stopped reading past the limit.
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 23 ]; then
        fail fetch-failed 1 "could not fetch $PULL_SOURCE (curl exit status $rc); nothing changed"
    fi
    ;;
*) cp -- "$PULL_SOURCE" "$fetched" || fail fetch-failed 1 "could not read $PULL_SOURCE" ;;
esac
size=$(wc -c < "$fetched")
if [ "$size" -gt "$PULL_DATA_MAX_BYTES" ]; then
    rm -f -- "$fetched"
    fail fetch-failed 1 "$PULL_SOURCE is over $PULL_DATA_MAX_BYTES bytes; nothing changed"
fi
mv -f -- "$fetched" "$PULL_DATA"
cd "$PULL_ROOT"
"$PULL_VENV/bin/pyinfra" --yes "$PULL_INVENTORY" "$PULL_DEPLOY" || status=$?
# Data that turned pull mode off has just removed this venv: nothing is left to check with.
[ -x "$PULL_VENV/bin/rocm-fleet" ] || exit "$status"
if [ "$status" -eq 0 ]; then
    "$PULL_VENV/bin/rocm-fleet" check "$PULL_INVENTORY" || status=$?
    result=converged
    [ "$status" -eq 0 ] || result=check-failed
else
    result=deploy-failed
fi
if [ -d "$TEXTFILES" ]; then
    "$PULL_VENV/bin/rocm-fleet" audit --quiet --format prometheus --output "$PULL_METRICS" \
        "$PULL_INVENTORY" || { rc=$?; [ "$status" -ne 0 ] || status=$rc; }
fi
report "$result" "$status"
[ "$status" -eq 0 ] || echo "rocm-fleet pull: $result (exit status $status)" >&2
exit "$status"
