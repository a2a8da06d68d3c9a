# shellcheck shell=sh
# verified-keyring.sh URL FINGERPRINT KEYRING: fetch an armored key, refuse it unless its
# one primary key has FINGERPRINT, then write it dearmored to KEYRING (temporary name and
# rename). Nothing is written when the check fails.
set -eu
url=$1
fingerprint=$2
keyring=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GNUPGHOME="$tmp"
curl -fsSL --retry 2 -o "$tmp/key.asc" "$url"
# The fingerprint of each primary key (the fpr line after a pub line; subkeys have their own).
got=$(gpg --batch --with-colons --show-keys "$tmp/key.asc" \
    | awk -F: '$1 == "pub" { primary = 1 } $1 == "fpr" && primary { print $10; primary = 0 }')
if [ "$got" != "$fingerprint" ]; then
    echo "refusing key from $url: fingerprint ${got:-none} is not $fingerprint" >&2
    exit 1
fi
install -d -m 0755 "$(dirname "$keyring")"
gpg --batch --yes --dearmor -o "$tmp/keyring.gpg" "$tmp/key.asc"
install -m 0644 "$tmp/keyring.gpg" "$keyring.rocm-fleet-new"
mv -f "$keyring.rocm-fleet-new" "$keyring"
