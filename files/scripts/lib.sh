# shellcheck shell=sh
# Functions every rocm-fleet script may call. rocm_fleet.operations.script() puts the host
# paths (as variables, from rocm_fleet/paths.py) and then this file in front of each script.
: "${REBOOT_REQUIRED:?}" "${REBOOT_PACKAGES:?}" "${REBOOT_REASONS:?}"

# apt-get as the deploy always runs it: no prompts, changed config files kept.
apt_get() {
    DEBIAN_FRONTEND=noninteractive apt-get -y \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@"
}

# mark_reboot REASON [PACKAGE...]: record that the host needs a reboot where Debian's and
# Ubuntu's package hooks do (/run/reboot-required and .pkgs), plus rocm-fleet's reason.
# /run is a tmpfs, so the reboot clears them.
mark_reboot() {
    reason=$1
    shift
    mkdir -p "$(dirname "$REBOOT_REASONS")"
    echo '*** System restart required ***' > "$REBOOT_REQUIRED"
    for package in "$@"; do
        grep -qxF "$package" "$REBOOT_PACKAGES" 2>/dev/null \
            || echo "$package" >> "$REBOOT_PACKAGES"
    done
    grep -qxF "$reason" "$REBOOT_REASONS" 2>/dev/null || echo "$reason" >> "$REBOOT_REASONS"
}

# write_file PATH MODE: write standard input as a whole file, as root, safely in a directory
# another user may write (a SlurmUser's /etc/slurm): into a fresh temporary name in PATH's
# directory (mktemp: never a fixed name a link could wait at; created 0600 under umask 077),
# made MODE once written, then renamed onto PATH with mv -T (a link at PATH is replaced, not
# followed; a directory at PATH is refused, never moved into). Readers never see half of it.
write_file() (
    umask 077
    temporary=$(mktemp "$(dirname "$1")/.$(basename "$1").XXXXXX")
    if cat > "$temporary" && chmod "$2" "$temporary" && mv -Tf "$temporary" "$1"; then
        exit 0
    fi
    rm -f "$temporary"
    exit 1
)

# ledger_purge LEDGER PACKAGE...: purge PACKAGEs (names from LEDGER that are still installed)
# and what they pulled in, unless something the admin installed depends on them. They are
# marked automatically installed and only what `apt-get autoremove` would newly remove
# because of that is purged. A Recommends or Suggests doesn't keep them (apt recommends
# ca-certificates and suggests gnupg). Packages that were already autoremovable (someone
# else's) stay, and so do kernels (apt never autoremoves those of the installed kernels).
ledger_purge() {
    ledger=$1
    shift
    ledger_removable > "$ledger.before"
    apt-mark auto "$@" > /dev/null
    ledger_removable > "$ledger.after"
    purge=$(comm -13 "$ledger.before" "$ledger.after")
    rm -f "$ledger.before" "$ledger.after"
    if [ -n "$purge" ]; then
        # One name per line: word splitting into arguments is intended.
        # shellcheck disable=SC2086
        apt_get purge $purge
    fi
}

ledger_removable() {
    apt-get -s -o APT::AutoRemove::RecommendsImportant=false \
        -o APT::AutoRemove::SuggestsImportant=false autoremove \
        | awk '$1 == "Remv" { print $2 }' | sort
}
