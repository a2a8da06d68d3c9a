# shellcheck shell=sh
# module-options.sh PATH CONTENT REASON: write a modprobe.d file whole (lib.sh's write_file),
# or remove it when CONTENT is empty, refresh the initramfs' copy of it, and
# record that the host needs a reboot: modprobe reads its options when the module loads.
set -eu
path=$1
content=$2
reason=$3
safe_path "$path"
if [ -n "$content" ]; then
    # kmod makes the directory; a minimal root without it still gets the file for later.
    mkdir -p "$(dirname "$path")"
    printf '%s' "$content" | write_file "$path" 644
else
    rm -f "$path"
fi
# initramfs-tools' mkinitramfs copies /etc/modprobe.d/*.conf into the image ("module-init-tools"
# section): a host whose initramfs loads amdgpu, and ttm with it, would boot with the old options.
if command -v update-initramfs > /dev/null 2>&1; then
    update-initramfs -u
fi
mark_reboot "$reason"
