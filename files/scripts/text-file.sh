# shellcheck shell=sh
# text-file.sh PATH MODE CONTENT: write a whole file, via a temporary name and a rename,
# so readers never see half of it.
set -eu
path=$1
mode=$2
content=$3
temporary="$path.rocm-fleet-new"
printf '%s' "$content" > "$temporary"
chmod "$mode" "$temporary"
mv -f "$temporary" "$path"
