# shellcheck shell=sh
# pull-venv.sh ROOT VENV LOCK SHA256 STAMP MIN_PYTHON PROTOCOL: make VENV (under ROOT) hold
# what the requirements file LOCK (a URL or a path) locks by hash, after checking that LOCK's
# SHA-256 is SHA256: pip installs with --require-hashes, so no wheel with another hash goes in.
# Then STAMP holds SHA256 and the pull protocol the venv's rocm-fleet speaks. A lock with
# another hash, or a python3 older than MIN_PYTHON (X.Y, rocm-fleet's Requires-Python), fails
# the host before the venv is touched; a rocm-fleet older than pull protocol PROTOCOL
# (rocm_fleet.version.PULL_PROTOCOL) fails it with no STAMP, before the push writes pull files
# that rocm-fleet can't run.
set -eu
root=$1
venv=$2
lock=$3
sha256=$4
stamp=$5
min_python=$6
protocol=$7
if ! python3 -c 'import sys; sys.exit(sys.version_info[:2] < tuple(map(int, sys.argv[1].split("."))))' \
    "$min_python"; then
    have=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2> /dev/null || echo none)
    echo "pull mode: this node's python3 is $have, older than $min_python, the oldest" \
        "rocm-fleet runs on (its requires-python): install a python3 >= $min_python as" \
        "python3, or converge this node by push (rocm_pull: False); nothing installed" >&2
    exit 1
fi
safe_path "$root/.install"
safe_path "$venv/bin/python"
safe_path "$stamp"
mkdir -p "$root"
work=$(mktemp -d "$root/.install.XXXXXX")
trap 'rm -rf "$work"' EXIT
case "$lock" in
http://* | https://*)
    curl --fail --silent --show-error --location --proto '=http,https' --max-time 300 \
        --max-filesize 1048576 --output "$work/requirements.txt" "$lock"
    ;;
*) cp -- "$lock" "$work/requirements.txt" ;;
esac
if ! echo "$sha256  $work/requirements.txt" | sha256sum --check --status; then
    echo "$lock: its SHA-256 is not $sha256 (rocm_pull_lock_sha256); nothing installed" >&2
    exit 1
fi
rm -f "$stamp"
# A venv can't be moved (its scripts name their interpreter by path): made where it stays.
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --no-input --disable-pip-version-check --no-cache-dir \
    --require-hashes --only-binary=:all: -r "$work/requirements.txt"
speaks=$("$venv/bin/python" -I -c \
    'from rocm_fleet.version import PULL_PROTOCOL as p; print(p)' 2> /dev/null) || speaks=0
case "$speaks" in '' | *[!0-9]*) speaks=0 ;; esac
if [ "$speaks" -lt "$protocol" ]; then
    echo "pull mode: rocm_pull_lock $lock pins a rocm-fleet of pull protocol $speaks, older" \
        "than the pushing rocm-fleet's $protocol (its pull deploy runs" \
        "rocm_fleet.compose.fleet_node): lock a rocm-fleet at least as new as the pushing" \
        "one (rocm_pull_lock, rocm_pull_lock_sha256); this push wrote none of the pull's" \
        "files" >&2
    exit 1
fi
printf '%s\npull protocol %s\n' "$sha256" "$speaks" | write_file "$stamp" 644
