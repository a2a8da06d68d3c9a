# shellcheck shell=sh
# daemon-serving.sh SERVICE ACTION STAMP: check SERVICE's configuration (SERVICE -t), then
# `service SERVICE ACTION` (start or reload), then touch STAMP. A configuration that fails
# the check changes nothing.
set -eu
service=$1
action=$2
stamp=$3
safe_path "$stamp"
"$service" -t -q
service "$service" "$action"
mkdir -p "$(dirname "$stamp")"
: | write_file "$stamp" 644
