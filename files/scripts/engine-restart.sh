# shellcheck shell=sh
# engine-restart.sh SERVICE STAMP: restart SERVICE (it reads its changed configuration), then
# write STAMP (write_file: a link at it replaced, never followed; its directories keep to the
# safe path rule), which records that it runs with the configuration as it is now.
set -eu
safe_path "$2"
service "$1" restart
mkdir -p "$(dirname "$2")"
: | write_file "$2" 644
