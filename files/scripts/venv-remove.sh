# shellcheck shell=sh
# venv-remove.sh VENV LEDGER: remove a venv this deploy created (LEDGER records it, or the
# directory it is in), then the directories LEDGER records above it that are now empty,
# deepest first, and drop from LEDGER what no longer exists.
set -eu
venv=$1
ledger=$2
safe_path "$venv"
rm -rf --one-file-system "$venv"
if [ -f "$ledger" ]; then
    tac "$ledger" | while IFS= read -r directory; do
        case "$venv/" in
        "$directory"/*)
            if [ -d "$directory" ]; then
                rmdir --ignore-fail-on-non-empty "$directory"
            fi
            ;;
        esac
    done
    # write_file reads all before it renames a new file onto LEDGER.
    # shellcheck disable=SC2094
    while IFS= read -r directory; do
        if [ -d "$directory" ]; then
            printf '%s\n' "$directory"
        fi
    done < "$ledger" | write_file "$ledger" 644
fi
