#!/bin/sh
# amd-container-runtime double (rocm-fleet lab): adds the requested GPUs to the OCI spec,
# then execs the real runc, as ROCm/container-toolkit's runtime does.
set -u
log() { printf 'time=%s level=%s msg="%s"\n' "$(date -u +%FT%TZ)" "$1" "$2" >> /var/log/amd-container-runtime.log; }
if [ "$(id -u)" != 0 ]; then log ERROR "Rootless mode is not supported"; exit 1; fi
bundle=""; create=false; prev=""
for a; do
    case $prev in -b|-bundle|--b|--bundle) bundle=$a ;; esac
    case $a in --bundle=*|-b=*|-bundle=*|--b=*) bundle=${a#*=} ;; create) create=true ;; esac
    prev=$a
done
if $create && [ -n "$bundle" ]; then
    spec="$bundle/config.json"
    want=$(jq -r '.process.env // [] | .[] | select(startswith("AMD_VISIBLE_DEVICES=") or startswith("DOCKER_RESOURCE_")) | sub("^[^=]*="; "")' "$spec" | tail -n 1)
    if [ -n "$want" ]; then
        list=$(amd-ctk cdi list | awk '/^amd.com\/gpu=[0-9]/ { n = substr($0, 13) } /^  / { print n, $1 }')
        count=$(printf '%s\n' "$list" | awk 'NF { print $1 }' | sort -u | grep -c .)
        case $want in all|All|ALL) want=$(seq -s, 0 $((count - 1))) ;; esac
        paths=""
        for i in $(printf '%s' "$want" | tr ',' ' '); do
            case $i in *[!0-9]*|"") log ERROR "invalid GPU index $i"; exit 1 ;; esac
            [ "$i" -lt "$count" ] || { log ERROR "GPU index $i out of range"; exit 1; }
            paths="$paths $(printf '%s\n' "$list" | awk -v i="$i" '$1 == i { print $2 }')"
        done
        for path in $paths /dev/kfd; do
            major=$(printf '%d' "0x$(stat -c %t "$path")"); minor=$(printf '%d' "0x$(stat -c %T "$path")")
            mode=$(printf '%d' "0$(stat -c %a "$path")"); gid=$(stat -c %g "$path")
            jq --arg p "$path" --argjson ma "$major" --argjson mi "$minor" --argjson m "$mode" --argjson g "$gid" '
                .linux.devices = ((.linux.devices // []) + [{"path": $p, "type": "c", "major": $ma, "minor": $mi, "fileMode": $m, "uid": 0, "gid": $g}])
                | .linux.resources.devices = ((.linux.resources.devices // []) + [{"allow": true, "type": "c", "major": $ma, "minor": $mi, "access": "rwm"}])' \
                "$spec" > "$spec.amd" && mv "$spec.amd" "$spec"
        done
        log INFO "Container configured for GPU access"
    fi
fi
exec runc "$@"
