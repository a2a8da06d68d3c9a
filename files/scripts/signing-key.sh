# shellcheck shell=sh
# signing-key.sh CERT KEY: create the DKMS module signing key and DER certificate the way
# DKMS does when they are missing (dkms.in prepare_mok; codeSigning EKU as DKMS >= 3.1.7).
# An existing key is never replaced.
set -eu
cert=$1
key=$2
safe_path "$cert"
safe_path "$key"
if test -e "$key"; then
    echo "$key exists without $cert; not replacing a signing key" >&2
    exit 1
fi
install -d -m 0755 "$(dirname "$cert")"
umask 077
openssl req -new -x509 -nodes -days 36500 -subj "/CN=DKMS module signing key" \
    -newkey rsa:2048 -keyout "$key" -addext "extendedKeyUsage=codeSigning" \
    -outform DER -out "$cert" 2>/dev/null
chmod 0644 "$cert"
