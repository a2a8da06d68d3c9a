# rocm-fleet pull, run by rocm-fleet-pull.service (written by rocm-fleet: deploy/pull.py,
# which puts the PULL_* and TEXTFILES variables above): fetch this node's inventory data,
# converge the node to it @local with the pinned rocm-fleet, check the node, and write its
# audit for node_exporter. Data that fails validation stops the deploy before its first
# operation, so it changes nothing; this then exits non-zero and the journal says why.
set -eu
umask 022
status=0
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
    # The data is small: a limit on its size and on the time it takes.
    curl --fail --silent --show-error --location --proto '=http,https' --max-time 120 \
        --max-filesize 1048576 "$@" --output "$fetched" "$PULL_SOURCE"
    ;;
*) cp -- "$PULL_SOURCE" "$fetched" ;;
esac
mv -f -- "$fetched" "$PULL_DATA"
cd "$PULL_ROOT"
"$PULL_VENV/bin/pyinfra" --yes "$PULL_INVENTORY" "$PULL_DEPLOY" || status=$?
# Data that turned pull mode off has just removed this venv: nothing is left to check with.
[ -x "$PULL_VENV/bin/rocm-fleet" ] || exit "$status"
if [ "$status" -eq 0 ]; then
    "$PULL_VENV/bin/rocm-fleet" check "$PULL_INVENTORY" || status=$?
fi
if [ -d "$TEXTFILES" ]; then
    "$PULL_VENV/bin/rocm-fleet" audit --quiet --format prometheus --output "$PULL_METRICS" \
        "$PULL_INVENTORY" || { rc=$?; [ "$status" -ne 0 ] || status=$rc; }
fi
exit "$status"
