# shellcheck shell=sh
# cdi-generate.sh SPEC RECORD: amd-ctk writes the CDI spec of the node's GPUs into a fresh
# temporary file beside SPEC (mktemp: no link can wait at its name), made 0644 (rootless
# engines read it), then renamed onto SPEC (mv -T: a link at SPEC is replaced, not followed);
# RECORD then says rocm-fleet made it (so only then is it removed with the feature).
set -eu
spec=$1
record=$2
dir=$(dirname "$spec")
if [ -L "$dir" ]; then
    echo "$dir is a symbolic link: refusing to write the CDI spec through it" >&2
    exit 1
fi
mkdir -p "$dir"
chmod 755 "$dir"
temporary=$(mktemp "$dir/.$(basename "$spec").XXXXXX")
if amd-ctk cdi generate --output="$temporary" >&2 && chmod 644 "$temporary" \
    && mv -Tf "$temporary" "$spec"; then
    mkdir -p "$(dirname "$record")"
    printf '%s\n' "$spec" | write_file "$record" 600
    exit 0
fi
rm -f "$temporary"
exit 1
