# shellcheck shell=sh
# text-file.sh PATH MODE CONTENT: write a whole file (lib.sh's write_file: a fresh temporary
# name, then a rename that follows no link), so readers never see half of it.
set -eu
printf '%s' "$3" | write_file "$1" "$2"
