# shellcheck shell=sh
# subids.sh add|del LEDGER LINE...: give (add) or take back (del) subordinate ID ranges, each
# LINE "USER uid|gid START COUNT", with usermod(8); add appends each line to LEDGER once its
# range is given, del drops it from LEDGER (removed once empty). A user gone since keeps
# nothing to take back (userdel took its ranges).
set -euf
action=$1
ledger=$2
shift 2
mkdir -p "$(dirname "$ledger")"
for line in "$@"; do
    # shellcheck disable=SC2086 # the line's four words, checked before they came here
    set -- $line
    user=$1 kind=$2 start=$3 count=$4
    if [ "$action" = add ] || id "$user" >/dev/null 2>&1; then
        usermod "--$action-sub${kind}s" "$start-$((start + count - 1))" "$user"
    fi
    if [ "$action" = add ]; then
        printf '%s\n' "$line" >> "$ledger"
    else
        { grep -vxF -- "$line" "$ledger" || true; } | write_file "$ledger" 600
    fi
done
if [ ! -s "$ledger" ]; then
    rm -f "$ledger"
fi
