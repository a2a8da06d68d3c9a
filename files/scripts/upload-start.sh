# shellcheck shell=sh
# upload-start.sh PATH MODE PRIVATE: before an upload to PATH: PATH's directories keep to the
# safe path rule (made when missing), then PRIVATE, a new directory beside PATH (mkdir fails
# on anything already there, a link too), root's alone, holds an empty file "new" of MODE
# for the upload to fill.
set -eu
safe_path "$1"
mkdir -p "$(dirname "$1")"
mkdir -m 0700 "$3"
install -m "$2" /dev/null "$3/new"
