# shellcheck shell=sh
# writable-by-others.sh PATH: the first directory above PATH breaking the safe path rule
# (unsafe_directory), else the first path under PATH (itself included) not root's alone
# (another owner, or group/other-writable; links by owner only), as "OWNER MODE PATH";
# nothing when none. Reads only.
found=$(unsafe_directory "$1")
if [ -n "$found" ]; then
    printf '%s\n' "$found"
elif test -e "$1"; then
    find "$1" \( ! -uid 0 -o \( ! -type l -perm /022 \) \) -printf '%u %m %p\n' -quit 2>/dev/null
fi
true
