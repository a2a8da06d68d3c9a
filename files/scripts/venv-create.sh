# shellcheck shell=sh
# venv-create.sh VENV LEDGER: create a venv and append the parent directories this creates
# and then the venv itself (one per line, deepest last) to LEDGER, so uninstalling removes
# them again, and only a venv this made.
set -eu
venv=$1
ledger=$2
created=""
directory=$(dirname "$venv")
while [ ! -e "$directory" ]; do
    created="$directory
$created"
    directory=$(dirname "$directory")
done
safe_path "$venv/bin/python"
safe_path "$ledger"
python3 -m venv "$venv"
mkdir -p "$(dirname "$ledger")"
printf '%s%s\n' "$created" "$venv" | append_file "$ledger"
