# rocm-fleet pull, run by rocm-fleet-pull.service (written by rocm-fleet: deploy/pull.py,
# which puts the PULL_*, PUSH_*, SYSTEM_CA_BUNDLE and TEXTFILES variables above): fetch
# this node's signed settings from the fleet's TUF repository and verify them (rocm-fleet
# pull-fetch: forged, replayed, expired or other-node data, or data carrying what pulled
# data never carries, is refused and changes nothing), converge the node to them @local with
# the pinned rocm-fleet, check the node, and write its audit for node_exporter. Settings that
# fail validation stop the deploy before its first operation, so they change nothing either.
# Each refusal or failure exits non-zero with the reason in the journal and the result in
# the metrics.
# Two pulls never overlap (PULL_LOCK, root's own), and a push waits for a pull or refuses;
# a push that is running (PUSH_MARKER) makes this pull skip (75).
set -eu
umask 077
status=0
started=$(date +%s)

# The pull's own status for node_exporter (rocm_fleet_pull_*): written whole in a new file
# beside it (mktemp: never through a link someone left in the collector's directory), then
# renamed over it (a link there is replaced, not followed); only where the directories above
# it keep to the safe path rule (safe-path.sh; Debian makes /var/lib/prometheus prometheus's).
report() { # report RESULT EXIT_STATUS
    [ -d "$TEXTFILES" ] || return 0
    (safe_path "$PULL_STATUS_METRICS" prometheus) || return 0
    metrics=$(mktemp "$PULL_STATUS_METRICS.XXXXXX") || return 0
    cat > "$metrics" <<METRICS
# HELP rocm_fleet_pull_last_run_timestamp_seconds When the last pull started.
# TYPE rocm_fleet_pull_last_run_timestamp_seconds gauge
rocm_fleet_pull_last_run_timestamp_seconds $started
# HELP rocm_fleet_pull_last_run_exit_status The last pull's exit status (0: converged).
# TYPE rocm_fleet_pull_last_run_exit_status gauge
rocm_fleet_pull_last_run_exit_status $2
# HELP rocm_fleet_pull_last_run What the last pull did.
# TYPE rocm_fleet_pull_last_run gauge
rocm_fleet_pull_last_run{result="$1"} 1
METRICS
    chmod 0644 "$metrics" # node_exporter runs as another user
    mv -f -T -- "$metrics" "$PULL_STATUS_METRICS"
}
fail() { # fail RESULT EXIT_STATUS MESSAGE
    echo "rocm-fleet pull: $3" >&2
    report "$1" "$2"
    exit "$2"
}

# One pull at a time: this script runs itself again under flock(1). A pull that finds the
# lock held fails (another process holds it: a pull started by hand, or something that must
# not be there), so the timer's runs never look like success while nothing converges.
if [ -z "${ROCM_FLEET_PULL_LOCKED:-}" ]; then
    (safe_path "$PULL_LOCK") || fail unsafe-path 1 "this pull did not run; nothing changed"
    mkdir -p -- "$PULL_RUN_DIR"
    chmod 0700 -- "$PULL_RUN_DIR"
    locked=0
    ROCM_FLEET_PULL_LOCKED=1 flock --nonblock --conflict-exit-code 73 "$PULL_LOCK" \
        /bin/sh "$0" || locked=$?
    if [ "$locked" -eq 73 ]; then
        fail lock-held 1 "another process holds $PULL_LOCK (a pull started by hand?): this" \
            "pull did not run"
    fi
    exit "$locked"
fi

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

# On the fleet mirror over TLS: its CA alone vouches for the connection (the one the deploy
# pinned); the data itself is vouched for by the TUF keys, wherever it comes from.
set --
if [ -n "$PULL_MIRROR" ]; then
    case "$PULL_SOURCE" in
    "$PULL_MIRROR"*) set -- --ca "$PULL_MIRROR_CA" ;;
    esac
fi
# The node's own key opens its sealed target (rocm_pull_seal_keys); other nodes' it can't.
if [ -f "$PULL_SEAL_KEY" ]; then
    set -- "$@" --seal-key "$PULL_SEAL_KEY"
fi
rm -f -- "$PULL_DATA"
# The venv runs as root: only where no one else could have swapped it (the safe path rule).
(safe_path "$PULL_VENV/bin/rocm-fleet") \
    || fail unsafe-path 1 "the pull venv $PULL_VENV was not run; nothing changed"
result=$("$PULL_VENV/bin/rocm-fleet" pull-fetch --repository "$PULL_SOURCE" \
    --trusted-root "$PULL_TRUSTED_ROOT" --metadata "$PULL_METADATA" --node "$PULL_NODE" \
    --output "$PULL_DATA" "$@") || {
    case "$result" in '' | *[!a-z-]*) result=fetch-failed ;; esac
    fail "$result" 1 "$result: the node's settings were not applied; nothing changed"
}
umask 022
cd "$PULL_ROOT"
# The deploy, its check and its audit reach AMD's and PyTorch's hosts themselves (a site
# file's rows are checked against upstream before one is used): they trust what the node's
# apt and pip trust for those hosts, the system's CA certificates, not the CA list pinned in
# the pull's venv (certifi's, which knows no CA of the site's own and ages with the lock).
if [ -f "$SYSTEM_CA_BUNDLE" ]; then
    export REQUESTS_CA_BUNDLE="$SYSTEM_CA_BUNDLE"
fi
"$PULL_VENV/bin/pyinfra" --yes "$PULL_INVENTORY" "$PULL_DEPLOY" || status=$?
# Settings that turned pull mode off have just removed this venv: nothing is left to check with.
[ -x "$PULL_VENV/bin/rocm-fleet" ] || exit "$status"
if [ "$status" -eq 0 ]; then
    "$PULL_VENV/bin/rocm-fleet" check "$PULL_INVENTORY" || status=$?
    result=converged
    [ "$status" -eq 0 ] || result=check-failed
else
    result=deploy-failed
fi
if [ -d "$TEXTFILES" ] && (safe_path "$PULL_METRICS" prometheus); then
    "$PULL_VENV/bin/rocm-fleet" audit --quiet --format prometheus --output "$PULL_METRICS" \
        "$PULL_INVENTORY" || { rc=$?; [ "$status" -ne 0 ] || status=$rc; }
fi
report "$result" "$status"
[ "$status" -eq 0 ] || echo "rocm-fleet pull: $result (exit status $status)" >&2
exit "$status"
