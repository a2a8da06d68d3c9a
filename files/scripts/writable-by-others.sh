# shellcheck shell=sh
# writable-by-others.sh PATH: the first directory above PATH breaking the safe path rule
# (unsafe_directory), else the first path under PATH (itself included) not root's alone
# (another owner, or group/other-writable; links by owner only), as "OWNER MODE PATH";
# nothing when none. Reads only.

# unsafe_directory's dirname and readlink -m as builtins where the answer is plain (an
# absolute path without //, a trailing /, . or .. in it; for readlink, no link on it): this
# runs in every survey, and each process costs more than the check.
dirname() {
    if [ $# -eq 2 ] && [ "$1" = -- ]; then
        case $2 in
            *//* | ?*/) ;;
            /*/*) printf '%s\n' "${2%/*}"; return ;;
            /*) echo /; return ;;
        esac
    fi
    command dirname "$@"
}
readlink() {
    if [ $# -eq 3 ] && [ "$1" = -m ] && [ "$2" = -- ]; then
        case $3 in
            *//* | ?*/ | */. | */./* | */.. | */../* | [!/]* | '') ;;
            *)
                _readlink_at=$3
                while [ -n "$_readlink_at" ] && [ ! -L "$_readlink_at" ]; do
                    _readlink_at=${_readlink_at%/*}
                done
                if [ -z "$_readlink_at" ]; then
                    printf '%s\n' "$3"
                    return
                fi
                ;;
        esac
    fi
    command readlink "$@"
}
# unsafe_directory's stat -c '%u %a %U' -- DIR, answered from _stat_ancestors' one process
# (asked before unsafe_directory, whose $(...) subshells keep nothing).
_stat_known='
'
stat() {
    if [ $# -eq 4 ] && [ "$1" = -c ] && [ "$2" = '%u %a %U' ] && [ "$3" = -- ]; then
        case $4 in
            *//* | ?*/ | [!/]* | '' | *'|'* | *'
'*) ;;
            *)
                case $_stat_known in *"
$4|"*)
                    _stat_at=${_stat_known#*"
$4|"}
                    printf '%s\n' "${_stat_at%%"
"*}"
                    return 0
                    ;;
                esac
                ;;
        esac
    fi
    command stat "$@"
}
# _stat_ancestors DIR: each of DIR and the directories above it that exists, stat'ed in one
# process, kept in _stat_known as "PATH|ANSWER" lines; nothing kept unless it answered each.
_stat_ancestors() {
    _stat_at=$1
    set --
    while [ -n "$_stat_at" ]; do
        if [ -e "$_stat_at" ] || [ -L "$_stat_at" ]; then set -- "$@" "$_stat_at"; fi
        _stat_at=${_stat_at%/*}
    done
    [ "$1" = / ] || set -- "$@" /
    _stat_lines=$(command stat -c '%u %a %U' -- "$@" 2>/dev/null) || return 0
    _stat_new=
    for _stat_at; do
        [ -n "$_stat_lines" ] || return 0
        _stat_new="$_stat_new$_stat_at|${_stat_lines%%
*}
"
        case $_stat_lines in
            *'
'*) _stat_lines=${_stat_lines#*
} ;;
            *) _stat_lines= ;;
        esac
    done
    [ -z "$_stat_lines" ] || return 0
    _stat_known=$_stat_known$_stat_new
}

case $1 in *'|'* | *'
'*) ;; /*) _stat_ancestors "$1" ;; esac
found=$(unsafe_directory "$1")
if [ -n "$found" ]; then
    printf '%s\n' "$found"
elif test -e "$1"; then
    find "$1" \( ! -uid 0 -o \( ! -type l -perm /022 \) \) -printf '%u %m %p\n' -quit 2>/dev/null
fi
true
