# shellcheck shell=sh
# writable-by-others.sh PATH...: the first directory above PATH breaking the safe path rule
# (unsafe_directory), else the first path under PATH (itself included) not root's alone
# (another owner, or group/other-writable; links by owner only), as "OWNER MODE PATH";
# nothing when none (several PATHs: each answer's first line after "__path=INDEX", below).
# Reads only.

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
# (asked before unsafe_directory, whose $(...) subshells keep nothing) when that stat'ed DIR:
# / or PATH or a directory above PATH as written, each kept by its length (_stat_LENGTH), so
# a lookup costs the path's length, not its square (a long path took minutes).
_stat_path=
_stat_lengths=' '
stat() {
    if [ $# -eq 4 ] && [ "$1" = -c ] && [ "$2" = '%u %a %U' ] && [ "$3" = -- ] \
        && case $_stat_lengths in *" ${#4} "*) _stat_above "$4" ;; *) false ;; esac
    then
        eval "printf '%s\n' \"\$_stat_${#4}\""
        return 0
    fi
    command stat "$@"
}
# _stat_above DIR: whether DIR is /, _stat_path or a directory above it as written.
_stat_above() {
    case $1 in / | "$_stat_path") return 0 ;; esac
    case $_stat_path in "$1"/*) return 0 ;; esac
    return 1
}
# _stat_ancestors PATH...: each absolute PATH and each directory above it that exists, and /,
# stat'ed in one process; their answers kept, for _stat_use, only when it answered each.
_stat_ancestors() {
    _stat_count=$#
    _stat_i=0
    _stat_ok=
    for _stat_for; do
        _stat_new=' '
        case $_stat_for in
            /*)
                _stat_first=
                _stat_at=$_stat_for
                while [ -n "$_stat_at" ]; do
                    if [ -e "$_stat_at" ] || [ -L "$_stat_at" ]; then
                        set -- "$@" "$_stat_at"
                        _stat_new="$_stat_new${#_stat_at} "
                        _stat_first=${_stat_first:-$_stat_at}
                    fi
                    _stat_at=${_stat_at%/*}
                done
                if [ "$_stat_first" != / ]; then
                    set -- "$@" /
                    _stat_new="${_stat_new}1 "
                fi
                ;;
        esac
        eval "_stat_lengths_$_stat_i=\$_stat_new"
        _stat_i=$((_stat_i + 1))
    done
    shift "$_stat_count"
    [ $# -gt 0 ] || return 0
    _stat_lines=$(command stat -c '%u %a %U' -- "$@" 2>/dev/null) || return 0
    _stat_i=0
    while [ "$_stat_i" -lt "$_stat_count" ]; do
        eval "_stat_new=\$_stat_lengths_$_stat_i"
        for _stat_at in $_stat_new; do
            [ -n "$_stat_lines" ] || return 0
            _stat_line=${_stat_lines%%"
"*}
            eval "_stat_${_stat_i}_$_stat_at=\$_stat_line"
            case $_stat_lines in
                *'
'*) _stat_lines=${_stat_lines#*"
"} ;;
                *) _stat_lines= ;;
            esac
        done
        _stat_i=$((_stat_i + 1))
    done
    [ -z "$_stat_lines" ] || return 0
    _stat_ok=1
}
# _stat_use INDEX PATH: stat answers from _stat_ancestors' INDEXth path, PATH (none when it
# kept none).
_stat_use() {
    _stat_path=
    _stat_lengths=' '
    [ -n "$_stat_ok" ] || return 0
    eval "_stat_new=\$_stat_lengths_$1"
    [ "$_stat_new" != ' ' ] || return 0
    for _stat_at in $_stat_new; do
        eval "_stat_$_stat_at=\$_stat_${1}_$_stat_at"
    done
    _stat_path=$2
    _stat_lengths=$_stat_new
}

# _unsafe_plain PATH: unsafe_directory's answer in $found without its subshells, where
# _stat_ancestors stat'ed every directory above PATH and PATH is plain (absolute, no //,
# trailing /, . or .., no newline, which $(...) would strip) with no link above it (its
# readlink -m is itself: one walk answers for both); fails otherwise.
_unsafe_plain() {
    found=
    [ "$_stat_path" = "$1" ] || return 1
    case $1 in *//* | */ | */. | */./* | */.. | */../* | [!/]* | '' | *'
'*) return 1 ;; esac
    _plain_dir=${1%/*}
    while :; do
        [ -n "$_plain_dir" ] || _plain_dir=/
        if [ -L "$_plain_dir" ]; then
            return 1
        elif [ -e "$_plain_dir" ]; then
            case $_stat_lengths in *" ${#_plain_dir} "*) ;; *) return 1 ;; esac
            # split and globbed as unsafe_directory's $(stat ...)
            eval "set -- \$_stat_${#_plain_dir}"
            if [ $((0$2 & 022)) -ne 0 ] || { [ "$1" != 0 ] && [ "$3" != root ]; }; then
                found="$3 $2 $_plain_dir"
                return 0
            fi
        fi
        [ "$_plain_dir" != / ] || return 0
        _plain_dir=${_plain_dir%/*}
    done
}

# Several PATHs (the survey's batch): for each, a line "__path=INDEX" (from 0), then its answer's
# first line cut at a newline or RS (all the survey's reader keeps of it: a name can't add a
# line that reads as the next path's), the directories above them all stat'ed in one process.
if [ $# -gt 1 ]; then
    _stat_ancestors "$@"
    _batch_i=0
    for _batch_path; do
        echo "__path=$_batch_i"
        _stat_use "$_batch_i" "$_batch_path"
        _unsafe_plain "$_batch_path" || found=$(unsafe_directory "$_batch_path")
        if [ -z "$found" ] && test -e "$_batch_path"; then
            found=$(find "$_batch_path" \( ! -uid 0 -o \( ! -type l -perm /022 \) \) \
                -printf '%u %m %p\n' -quit 2>/dev/null)
        fi
        found=${found%%"
"*}
        case $found in *[[:cntrl:]]*) found=${found%%"$(printf '\036')"*} ;; esac
        [ -z "$found" ] || printf '%s\n' "$found"
        _batch_i=$((_batch_i + 1))
    done
    exit 0
fi
case $1 in /*) _stat_ancestors "$1" && _stat_use 0 "$1" ;; esac
_unsafe_plain "$1" || found=$(unsafe_directory "$1")
if [ -n "$found" ]; then
    printf '%s\n' "$found"
elif test -e "$1"; then
    find "$1" \( ! -uid 0 -o \( ! -type l -perm /022 \) \) -printf '%u %m %p\n' -quit 2>/dev/null
fi
true
