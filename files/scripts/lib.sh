# shellcheck shell=sh
# Functions every rocm-fleet script may call. rocm_fleet.operations.script() puts the host
# paths (as variables, from rocm_fleet/paths.py) and then this file in front of each script.
: "${REBOOT_REQUIRED:?}" "${REBOOT_PACKAGES:?}" "${REBOOT_REASONS:?}"
# What root makes (a directory mkdir -p makes too) is writable by no one else, whatever umask
# the login left: the safe path rule (safe-path.sh) would refuse it next.
umask 022

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
    safe_path "$REBOOT_REASONS"
    mkdir -p "$(dirname "$REBOOT_REASONS")"
    echo '*** System restart required ***' | write_file "$REBOOT_REQUIRED" 644
    for package in "$@"; do
        grep -qxF "$package" "$REBOOT_PACKAGES" 2>/dev/null \
            || echo "$package" | append_file "$REBOOT_PACKAGES"
    done
    grep -qxF "$reason" "$REBOOT_REASONS" 2>/dev/null \
        || echo "$reason" | append_file "$REBOOT_REASONS"
}

# write_file PATH MODE: write standard input as a whole file, as root: only where every
# directory above PATH keeps to the safe path rule (safe_path: root's, writable by no one
# else), into a fresh temporary name in PATH's directory (mktemp: never a fixed name a link
# could wait at; created 0600 under umask 077), made MODE once written, then renamed onto
# PATH with mv -T (a link at PATH is replaced, not followed; a directory at PATH is refused,
# never moved into). Readers never see half of it.
write_file() (
    safe_path "$1"
    umask 077
    temporary=$(mktemp "$(dirname "$1")/.$(basename "$1").XXXXXX")
    if cat > "$temporary" && chmod "$2" "$temporary" && mv -Tf "$temporary" "$1"; then
        exit 0
    fi
    rm -f "$temporary"
    exit 1
)

# append_file PATH: add standard input at the end of PATH (made 0644 when missing), the whole
# file written again by write_file (never appended to, nor read, through a link).
append_file() {
    safe_path "$1"
    {
        if [ -f "$1" ] && [ ! -L "$1" ]; then cat -- "$1"; fi
        cat
    } | write_file "$1" 644
}

# ledger_purge LEDGER PACKAGE...: purge PACKAGEs (names from LEDGER that are still installed)
# and what they pulled in, unless something the admin installed depends on them. They are
# marked automatically installed and only what `apt-get autoremove` would newly remove
# because of that is purged. A Recommends or Suggests doesn't keep them (apt recommends
# ca-certificates and suggests gnupg). Packages that were already autoremovable (someone
# else's) stay, and so do kernels (apt never autoremoves those of the installed kernels).
ledger_purge() {
    shift # LEDGER: the caller's, only read
    before=$(ledger_removable)
    apt-mark auto "$@" > /dev/null
    # What is removable now and wasn't before (no file: nothing written beside the ledger).
    purge=$(ledger_removable | grep -vxF -e "$before" || true)
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
