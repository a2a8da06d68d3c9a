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
