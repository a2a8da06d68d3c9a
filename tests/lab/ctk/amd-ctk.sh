#!/bin/sh
# amd-ctk double (rocm-fleet lab): AMD's container toolkit CLI, ROCm/container-toolkit
# cmd/amd-ctk at 192fe8e, for the GPUs the lab host's sysfs shows.
set -u
VERSION=@VERSION@

fail() { printf '%s\n' "$*"; exit 1; }

# internal/amdgpu/amdgpu.go GetAMDGPUs: the devices bound to amdgpu, each one's drm/card* and
# drm/renderD* as /dev/dri nodes, kept only if KFD's topology names its render minor.
gpus() {
    [ -d /sys/module/amdgpu/drivers/ ] || \
        fail "$1: getting GPUs: amdgpu driver unavailable: stat /sys/module/amdgpu/drivers/: no such file or directory"
    minors=$(cat /sys/class/kfd/kfd/topology/nodes/*/properties 2>/dev/null \
        | awk '$1 == "drm_render_minor" && $2 > 0 { print $2 }')
    for dev in /sys/module/amdgpu/drivers/pci:amdgpu/[0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F]:*; do
        [ -e "$dev" ] || continue
        nodes=""; render=0
        for drm in "$dev"/drm/card* "$dev"/drm/renderD*; do
            [ -e "$drm" ] || continue
            nodes="$nodes /dev/dri/${drm##*/}"
            case ${drm##*/} in renderD*) render=${drm##*/renderD} ;; esac
        done
        [ "$render" -gt 0 ] || continue
        printf '%s\n' "$minors" | grep -qx "$render" || continue
        printf '%s\n' "${nodes# }"
    done
}

# GetAMDGPU: stat's %t/%T (hex major/minor), %a (octal mode), %g; uid always 0; type c, rwm.
node() {
    [ -e "$1" ] || fail "$2: getting GPU details for $1: stat $1: no such file or directory"
    major=$(printf '%d' "0x$(stat -c %t "$1")"); minor=$(printf '%d' "0x$(stat -c %T "$1")")
    mode=$(printf '%d' "0$(stat -c %a "$1")"); gid=$(stat -c %g "$1")
    printf '{"path":"%s","type":"c","major":%s,"minor":%s,"fileMode":%s,"permissions":"rwm","uid":0,"gid":%s}\n' \
        "$1" "$major" "$minor" "$mode" "$gid"
}

# internal/cdi/cdi.go GenerateSpec: cdiVersion 0.6.0, kind amd.com/gpu, devices "0".."N-1"
# (the GPU's nodes then /dev/kfd), then "all" (every GPU's nodes then /dev/kfd once);
# WriteSpec: json.Encoder with a two-space indent (a newline at the end).
spec() {
    list=$(gpus "$1") || { printf '%s\n' "$list"; exit 1; }
    kfd=$(node /dev/kfd "$1") || { printf '%s\n' "$kfd"; exit 1; }
    i=0; devices=""; all=""
    for line in $(printf '%s\n' "$list" | tr ' ' ','); do
        edits=""
        for path in $(printf '%s' "$line" | tr ',' ' '); do
            n=$(node "$path" "$1") || { printf '%s\n' "$n"; exit 1; }
            edits="$edits$n,"; all="$all$n,"
        done
        devices="$devices{\"name\":\"$i\",\"containerEdits\":{\"deviceNodes\":[$edits$kfd]}},"
        i=$((i + 1))
    done
    devices="$devices{\"name\":\"all\",\"containerEdits\":{\"deviceNodes\":[$all$kfd]}}"
    printf '{"cdiVersion":"0.6.0","kind":"amd.com/gpu","devices":[%s],"containerEdits":{}}' \
        "$devices" | jq --indent 2 .
}

option() {  # option NAME DEFAULT ARGS...: urfave/cli's --name value / --name=value
    name=$1; value=$2; shift 2
    while [ $# -gt 0 ]; do
        case $1 in
            --"$name"=*|-"$name"=*) value=${1#*=} ;;
            --"$name"|-"$name") value=${2-}; shift ;;
        esac
        shift
    done
    printf '%s' "$value"
}

has() { flag=$1; shift; for a; do [ "$a" = "--$flag" ] && return 0; done; return 1; }

cdi() {
    sub=${1-}; [ $# -gt 0 ] && shift
    case $sub in
    generate)  # cmd/amd-ctk/cdi/generate/generate.go
        out=$(option output /etc/cdi/amd.json "$@")
        json=$(spec "failed to generate CDI spec") || { printf '%s\n' "$json"; exit 1; }
        mkdir -p "$(dirname "$out")"
        printf '%s\n' "$json" > "$out" || fail "failed to write CDI spec: creating CDI spec file $out"
        echo "Generated CDI spec: $out"
        ;;
    list)  # cmd/amd-ctk/cdi/list/list.go
        list=$(gpus "failed to list AMD devices") || { printf '%s\n' "$list"; exit 1; }
        n=$(printf '%s' "$list" | grep -c .)
        if [ "$n" -eq 1 ]; then echo "Found 1 AMD GPU device"; else echo "Found $n AMD GPU devices"; fi
        i=0
        printf '%s\n' "$list" | while read -r line; do
            [ -n "$line" ] || continue
            [ "$i" -eq 0 ] && echo "amd.com/gpu=all"
            echo "amd.com/gpu=$i"
            for path in $line; do
                case $path in /dev/dri/card*) ;; *) echo "  $path" ;; esac
            done
            i=$((i + 1))
        done
        ;;
    validate)  # cmd/amd-ctk/cdi/validate/validate.go: exit 0 whether valid or not
        path=$(option path /etc/cdi/amd.json "$@")
        echo "Validating CDI spec: $path"
        [ -e "$path" ] || fail "failed to validate CDI spec: opening CDI spec file $path: open $path: no such file or directory"
        saved=$(jq -S . "$path" 2>/dev/null) || fail "failed to validate CDI spec: decoding CDI spec file $path"
        json=$(spec "failed to validate CDI spec") || { printf '%s\n' "$json"; exit 1; }
        if [ "$saved" = "$(printf '%s' "$json" | jq -S .)" ]; then
            echo "CDI spec is valid"
        else
            printf 'CDI spec is invalid\nPlease regenerate CDI spec\n'
        fi
        ;;
    *) fail "No help topic for '$sub'" ;;
    esac
}

# cmd/amd-ctk/runtime/configure/configure.go and runtime/engine/docker/docker.go
runtime_configure() {
    engine=$(option runtime docker "$@")
    config=$(option config-path /etc/docker/daemon.json "$@")
    [ "$engine" = docker ] || fail "unsupported runtime engine: $engine"
    if has set-as-default "$@" && has unset-as-default "$@"; then
        fail "both set and unset as default cannot be used at the same time"
    fi
    current='{}'
    if [ -e "$config" ]; then
        [ -d "$config" ] && fail "failed to init config for runtime engine: docker | err: file path is a directory"
        echo "Loading configuration from: $config"
        current=$(jq . "$config") || fail "failed to init config for runtime engine: docker | err: error decoding configuration file: $config"
    fi
    if has unset-as-default "$@" || has unset-amd-as-default "$@"; then
        new=$(printf '%s' "$current" | jq 'del(.["default-runtime"])')
        echo "Removed amd as the default runtime"
    elif has remove "$@"; then
        rm -rf /etc/cdi  # RemoveRuntime: os.RemoveAll(defaultCDISpecPath), always
        printf '%s' "$current" | jq -e 'has("runtimes")' >/dev/null || return 0
        new=$(printf '%s' "$current" | jq 'del(.runtimes.amd) | del(.features)
            | if .["default-runtime"] == "amd" then del(.["default-runtime"]) else . end
            | if .runtimes == {} then del(.runtimes) else . end')
    else
        default=false
        if has set-as-default "$@" || has amd-set-as-default "$@"; then default=true; fi
        new=$(printf '%s' "$current" | jq --argjson d "$default" '
            .runtimes = ((.runtimes // {}) + {"amd": {"path": "amd-container-runtime", "args": []}})
            | .features = {"cdi": true}
            | if $d then .["default-runtime"] = "amd" else . end')
    fi
    # Update: json.MarshalIndent(d, "", "    ") (map keys sorted), no newline at the end
    printf '%s' "$(printf '%s' "$new" | jq -S --indent 4 .)" > "$config" \
        || fail "failed to save the config: failed to open file: $config"
    echo "Updated the config file: $config"
    echo "Please restart docker daemon"
}

cmd=${1-}; [ $# -gt 0 ] && shift
case $cmd in
    version) printf 'Version: v%s\nBuild Date: unknown\nGitCommit: none\n' "$VERSION" ;;
    cdi) cdi "$@" ;;
    runtime)
        [ "${1-}" = configure ] || fail "No help topic for '${1-}'"
        shift; runtime_configure "$@" ;;
    gpu-tracker) exit 0 ;;  # the tracker's state is AMD's business, not the lab's
    *) fail "No help topic for '$cmd'" ;;
esac
