# shellcheck shell=sh
# venv-remove.sh VENV LEDGER: remove a venv this deploy created (LEDGER records it, or the
# directory it is in), then the directories LEDGER records above it that are now empty,
# deepest first, and drop from LEDGER what no longer exists.
set -eu
venv=$1
ledger=$2
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
    while IFS= read -r directory; do
        if [ -d "$directory" ]; then
            printf '%s\n' "$directory"
        fi
    done < "$ledger" > "$ledger.new"
    mv "$ledger.new" "$ledger"
fi
