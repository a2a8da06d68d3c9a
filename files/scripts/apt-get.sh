# shellcheck shell=sh
# apt-get ARGS...: apt-get the way every rocm-fleet operation runs it (lib.sh's apt_get).
set -eu
apt_get "$@"
