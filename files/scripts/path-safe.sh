# shellcheck shell=sh
# path-safe.sh PATH...: fail, naming the directory, its owner and the rule, unless every
# directory above each PATH keeps to the safe path rule (safe_path): before root runs PATH.
set -eu
for path in "$@"; do
    safe_path "$path"
done
