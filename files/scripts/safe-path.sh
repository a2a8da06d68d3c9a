# shellcheck shell=sh
# The safe path rule (docs/security-model.md), for every file root writes or runs: each
# directory above it is root's and writable by no one else, up to /, as OpenSSH's StrictModes
# checks a key file's directories. Anyone who may write one of them could otherwise swap what
# root runs or plant a link where root writes, between the check and the use.

# unsafe_directory PATH [OWNER]: the first directory above PATH breaking the rule, as
# "OWNER_NAME MODE DIRECTORY" (nothing when none does). Both the directories as written and as
# their links resolve are checked (a link is only as safe as the directory holding it); those
# that don't exist yet are skipped (root makes them, in a directory already checked). OWNER:
# a system user that may own them too, where the file's place requires it (Debian's
# prometheus-node-exporter makes /var/lib/prometheus prometheus's); still not group- or
# other-writable.
unsafe_directory() {
    _unsafe_owner=${2:-root}
    _unsafe_parent=$(dirname -- "$1")
    for _unsafe_dir in "$_unsafe_parent" "$(readlink -m -- "$_unsafe_parent")"; do
        while :; do
            if [ -e "$_unsafe_dir" ] && [ ! -L "$_unsafe_dir" ]; then
                # uid, octal mode, owner's name
                # shellcheck disable=SC2046  # three words, none with spaces
                set -- $(stat -c '%u %a %U' -- "$_unsafe_dir")
                if [ $((0$2 & 022)) -ne 0 ] || { [ "$1" != 0 ] && [ "$3" != "$_unsafe_owner" ]; }
                then
                    printf '%s %s %s\n' "$3" "$2" "$_unsafe_dir"
                    return 0
                fi
            fi
            case $_unsafe_dir in / | . | '') break ;; esac
            _unsafe_dir=$(dirname -- "$_unsafe_dir")
        done
    done
}

# safe_path PATH [OWNER]: fail (exit 1, after saying which directory, its owner and mode, and
# the rule) unless every directory above PATH keeps to the rule (unsafe_directory).
safe_path() {
    _unsafe_found=$(unsafe_directory "$@")
    [ -n "$_unsafe_found" ] || return 0
    _unsafe_dir=${_unsafe_found#* * }
    _unsafe_found=${_unsafe_found%" $_unsafe_dir"}
    echo "rocm-fleet: refusing to write or run $1 as root: $_unsafe_dir is owned by" \
        "${_unsafe_found% *} (mode ${_unsafe_found#* }); every directory above a path root" \
        "writes or runs must be root's and writable by no one else (the safe path rule)" >&2
    exit 1
}
