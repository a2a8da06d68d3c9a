# shellcheck shell=sh
# engine-restart.sh SERVICE STAMP: restart SERVICE (it reads its changed configuration), then
# touch STAMP, which records that it runs with the configuration as it is now.
set -eu
service "$1" restart
mkdir -p "$(dirname "$2")"
touch "$2"
