# shellcheck shell=sh
# mok-import.sh CERT HASH_FILE: queue CERT for MOK enrollment with the one-time password
# whose crypt hash is in HASH_FILE (removed whatever happens), and mark a reboot: the
# enrollment is confirmed in MokManager at the console on the next boot.
set -eu
cert=$1
hash_file=$2
safe_path "$cert"
safe_path "$hash_file"
trap 'rm -f "$hash_file"' EXIT
chmod 0600 "$hash_file"
mokutil --import "$cert" --hash-file "$hash_file"
mark_reboot "MOK enrollment pending (confirm it at the console)"
