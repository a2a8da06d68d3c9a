# shellcheck shell=sh
# verified-keyring.sh URL FINGERPRINT KEYRING [PROXY [NO_PROXY [CACERT]]]: fetch a key
# (through PROXY unless the host is in NO_PROXY, when given; trusting only CACERT's CA, the
# fleet mirror's, when given; from https never redirected to http), refuse it unless the primary keys it
# holds are exactly the one with FINGERPRINT, then write that key, in the binary form apt
# reads, to KEYRING (lib.sh's write_file). Nothing is written when the check fails.
# The key is imported into a throwaway home and exported again rather than dearmored, so
# any form AMD serves works: armored (repo.radeon.com), binary, or binary with an armored
# copy of the same key appended ((3p) reported of stable.repo.amd.com's packages.gpg, which
# neither gpg --import nor gpgv reads as a whole): then only the binary part is read.
set -eu
url=$1
fingerprint=$2
keyring=$3
proxy=${4:-}
no_proxy=${5:-}
cacert=${6:-}
tmp=$(mktemp -d)
export GNUPGHOME="$tmp/home"
# gpg may start daemons (gpg-agent, keyboxd) for the throwaway home: stop them with it.
trap 'gpgconf --kill all 2>/dev/null || true; rm -rf "$tmp"' EXIT
install -d -m 0700 "$GNUPGHOME"
set -- -fsSL --retry 2
if [ -n "$proxy" ]; then
    set -- "$@" --proxy "$proxy"
fi
if [ -n "$no_proxy" ]; then
    set -- "$@" --noproxy "$no_proxy"
fi
if [ -n "$cacert" ]; then
    set -- "$@" --cacert "$cacert"
fi
# A key asked for over https is never followed to http (curl follows https to http by
# default): what a TLS-verified server redirects to must stay verified.
case "$url" in
https://*) set -- "$@" --proto-redir =https ;;
esac
curl "$@" -o "$tmp/key" "$url"
armor=$(LC_ALL=C grep -abo -- '-----BEGIN PGP PUBLIC KEY BLOCK-----' "$tmp/key" | head -n 1 \
    | cut -d: -f1)
if [ -n "$armor" ] && [ "$armor" -gt 0 ]; then
    head -c "$armor" "$tmp/key" > "$tmp/key.binary"
    mv "$tmp/key.binary" "$tmp/key"
fi
gpg --batch --quiet --import "$tmp/key" 2>/dev/null || true
got=$(gpg --batch --with-colons --list-keys 2>/dev/null | awk -F: '
    $1 == "pub" { primary = 1; next }
    $1 == "fpr" && primary { print $10 }
    { primary = 0 }' | sort -u)
if [ "$got" != "$fingerprint" ]; then
    found=$(printf '%s' "${got:-none}" | tr '\n' ' ')
    echo "refusing key from $url: fingerprint $found is not $fingerprint" >&2
    exit 1
fi
safe_path "$keyring"
install -d -m 0755 "$(dirname "$keyring")"
gpg --batch --export "$fingerprint" > "$tmp/keyring.gpg"
write_file "$keyring" 644 < "$tmp/keyring.gpg"
