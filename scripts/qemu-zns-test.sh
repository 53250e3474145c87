#!/usr/bin/env bash
# Runs the zoned-device conformance suite (`zns-conformance zbd:/dev/...`) against real Linux
# kernel zoned block devices: Debian's 6.1 kernel booted in QEMU (software emulation) with an
# emulated NVMe ZNS controller, and a busybox initramfs that holds the statically linked
# runner. See docs/REAL-DEVICE.md.
#
# Usage: scripts/qemu-zns-test.sh
# Environment: QEMU_TIMEOUT      seconds allowed for the whole boot (default 300)
#              ZNS_QEMU_VERBOSE  1 = print the whole guest console
# Exit status: 0 if the suite passed on every guest device, 1 otherwise.
set -euo pipefail

t_start=$(date +%s.%N)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

work="$repo/target/qemu-zns"
qemu_timeout=${QEMU_TIMEOUT:-300}
marker_start='@@ZKV-ZNS-QEMU@@ runner start'
marker_result='@@ZKV-ZNS-QEMU@@ result'
# The guest's namespaces: name, max open zones / max active zones. nvme0n1 is the ZN540-like
# device of the design (14/14); nvme0n2 has an active limit above the open limit (4/6), which
# the cases about CLOSED zones and auto-closing need.
devices=(nvme0n1 nvme0n2)
limits=(14/14 4/6)

log() { printf 'qemu-zns-test: %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

mkdir -p "$work"

# ---------------------------------------------------------------------------------------------
# Host packages

apt_updated=0
apt_update_once() {
    if [ "$apt_updated" = 0 ]; then
        log "apt-get update"
        apt-get update -qq >/dev/null
        apt_updated=1
    fi
}

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

install_missing() {
    local need=() pkg
    for pkg in "$@"; do
        installed "$pkg" || need+=("$pkg")
    done
    [ "${#need[@]}" -gt 0 ] || return 0
    [ "$(id -u)" = 0 ] || die "need root to install: ${need[*]}"
    apt_update_once
    log "apt-get install ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" \
        >/dev/null
}

install_missing qemu-system-x86 busybox-static kmod cpio

# ---------------------------------------------------------------------------------------------
# Kernel: an installed Debian 6.1 kernel if there is one, otherwise Debian's current 6.1
# image package, fetched with apt-get and unpacked under $work (nothing is installed on the
# host and no initramfs hooks run).

kver=""
kernel=""
modroot=""
for k in /boot/vmlinuz-6.1.*-amd64; do
    [ -e "$k" ] || continue
    v=${k#/boot/vmlinuz-}
    if [ -d "/lib/modules/$v/kernel" ] && [ -r "$k" ]; then
        kver=$v
        kernel=$k
        modroot=/
    fi
done
# A kernel unpacked by an earlier run is reused as it is.
for k in "$work"/kernel/6.1.*-amd64/boot/vmlinuz-6.1.*-amd64; do
    [ -z "$kver" ] && [ -e "$k" ] || continue
    v=${k##*/vmlinuz-}
    if [ -e "$work/kernel/$v/lib/modules/$v/modules.dep" ]; then
        kver=$v
        kernel=$k
        modroot="$work/kernel/$v"
    fi
done
kernel_package() {
    apt-cache depends linux-image-amd64 2>/dev/null |
        sed -n 's/^ *Depends: \(linux-image-6\.1\.[^ ]*-amd64\)$/\1/p' | head -n1
}
if [ -z "$kver" ]; then
    kpkg=$(kernel_package)
    if [ -z "$kpkg" ]; then
        apt_update_once
        kpkg=$(kernel_package)
    fi
    [ -n "$kpkg" ] || die "cannot resolve the 6.1 kernel package behind linux-image-amd64"
    kver=${kpkg#linux-image-}
    modroot="$work/kernel/$kver"
    kernel="$modroot/boot/vmlinuz-$kver"
    if [ ! -e "$kernel" ] || [ ! -d "$modroot/lib/modules/$kver/kernel" ]; then
        mkdir -p "$work/debs"
        if ! ls "$work/debs/${kpkg}_"*.deb >/dev/null 2>&1; then
            log "apt-get download $kpkg"
            (cd "$work/debs" &&
                apt-get download -qq -o APT::Sandbox::User=root "$kpkg" >/dev/null)
        fi
        deb=$(ls "$work/debs/${kpkg}_"*.deb | head -n1)
        log "unpacking $(basename "$deb")"
        rm -rf "${modroot:?}"
        mkdir -p "$modroot"
        dpkg-deb -x "$deb" "$modroot"
        rm -f "$deb"
    fi
    if [ ! -e "$modroot/lib/modules/$kver/modules.dep" ]; then
        depmod -b "$modroot" "$kver"
    fi
fi
log "kernel $kver"

# The nvme module and its dependencies (modinfo's `depends`, from modules.dep), dependencies
# first; built-in modules are skipped.
modinfo_args=(-k "$kver")
[ "$modroot" = / ] || modinfo_args+=(-b "$modroot")
declare -A seen=()
modfiles=()
resolve() {
    local m=$1 deps f d
    [ -z "${seen[$m]:-}" ] || return 0
    seen[$m]=1
    deps=$(modinfo "${modinfo_args[@]}" -F depends "$m") || die "modinfo $m failed"
    for d in ${deps//,/ }; do
        resolve "$d"
    done
    f=$(modinfo "${modinfo_args[@]}" -F filename "$m")
    case "$f" in
    "" | "(builtin)") ;;
    *) modfiles+=("$f") ;;
    esac
}
resolve nvme
[ "${#modfiles[@]}" -gt 0 ] || die "found no module files for nvme in kernel $kver"

# ---------------------------------------------------------------------------------------------
# The runner, statically linked (an explicit --target keeps build scripts dynamic).

log "building zns-conformance (static, release)"
RUSTFLAGS="-C target-feature=+crt-static" cargo build -q --release \
    --target x86_64-unknown-linux-gnu -p zkv-zns --bin zns-conformance
runner="$repo/target/x86_64-unknown-linux-gnu/release/zns-conformance"
[ -x "$runner" ] || die "runner not built: $runner"

# ---------------------------------------------------------------------------------------------
# Initramfs: busybox, the runner, the modules (uncompressed: busybox insmod reads plain .ko).

root="$work/initramfs"
rm -rf "${root:?}"
mkdir -p "$root"/{bin,dev,proc,sys,modules}
cp /bin/busybox "$root/bin/busybox"
cp "$runner" "$root/bin/zns-conformance"
: >"$root/modules/order"
for f in "${modfiles[@]}"; do
    name=$(basename "$f")
    case "$name" in
    *.ko) cp "$f" "$root/modules/$name" ;;
    *.ko.xz)
        install_missing xz-utils
        name=${name%.xz}
        xz -dc "$f" >"$root/modules/$name"
        ;;
    *.ko.zst)
        install_missing zstd
        name=${name%.zst}
        zstd -qdc "$f" >"$root/modules/$name"
        ;;
    *.ko.gz)
        name=${name%.gz}
        gzip -dc "$f" >"$root/modules/$name"
        ;;
    *) die "unexpected module file $f" ;;
    esac
    echo "$name" >>"$root/modules/order"
done
log "modules: $(tr '\n' ' ' <"$root/modules/order")"

cat >"$root/init" <<INIT
#!/bin/busybox sh
/bin/busybox mount -t devtmpfs devtmpfs /dev
exec 0</dev/console 1>/dev/console 2>&1
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox --install -s /bin
export PATH=/bin
dmesg -n 1
for m in \$(cat /modules/order); do
    insmod /modules/\$m || echo "guest: insmod \$m failed"
done
echo "guest: kernel \$(uname -r)"
failed=0
for dev in ${devices[*]}; do
    i=0
    while [ ! -b /dev/\$dev ] && [ \$i -lt 300 ]; do
        sleep 0.1
        i=\$((i + 1))
    done
    q=/sys/block/\$dev/queue
    echo "guest: \$dev zoned=\$(cat \$q/zoned 2>/dev/null)" \\
        "chunk_sectors=\$(cat \$q/chunk_sectors 2>/dev/null)" \\
        "max_open=\$(cat \$q/max_open_zones 2>/dev/null)" \\
        "max_active=\$(cat \$q/max_active_zones 2>/dev/null)" \\
        "lbs=\$(cat \$q/logical_block_size 2>/dev/null)" \\
        "scheduler=\$(cat \$q/scheduler 2>/dev/null)"
    echo "$marker_start dev=\$dev"
    read t0 rest </proc/uptime
    /bin/zns-conformance zbd:/dev/\$dev
    rc=\$?
    read t1 rest </proc/uptime
    secs=\$(awk -v a=\$t0 -v b=\$t1 'BEGIN { printf "%.2f", b - a }')
    echo "$marker_result dev=\$dev rc=\$rc guest_seconds=\$secs"
    [ \$rc -eq 0 ] || failed=1
done
if [ \$failed -ne 0 ]; then
    echo "guest: last kernel messages:"
    dmesg | tail -n 40 | sed 's/^/guest: /'
fi
sync
poweroff -f
INIT
chmod +x "$root/init"
initrd="$work/initramfs.cpio.gz"
(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) |
    gzip -1 >"$initrd"

# ---------------------------------------------------------------------------------------------
# Boot. Every namespace: 16 zones of 64 MiB (62 MiB capacity), 4 KiB blocks, on a fresh
# sparse 1 GiB image (QEMU keeps no zone state across restarts anyway).

ns_args=()
for i in "${!devices[@]}"; do
    nsid=$((i + 1))
    lim=${limits[$i]}
    img="$work/zns$nsid.raw"
    rm -f "$img"
    truncate -s 1G "$img"
    ns_args+=(-drive "file=$img,id=z$nsid,format=raw,if=none"
        -device "nvme-ns,drive=z$nsid,bus=nvme0,nsid=$nsid,logical_block_size=4096,physical_block_size=4096,zoned=true,zoned.zone_size=64M,zoned.zone_capacity=62M,zoned.max_open=${lim%/*},zoned.max_active=${lim#*/}")
done
console="$work/console.log"
log "booting QEMU (timeout ${qemu_timeout}s)"
t_boot=$(date +%s.%N)
set +e
timeout "$qemu_timeout" qemu-system-x86_64 -m 1G -nographic -no-reboot \
    -kernel "$kernel" -initrd "$initrd" \
    -append 'console=ttyS0 quiet panic=-1' \
    -device nvme,id=nvme0,serial=z1,zoned.zasl=5 \
    "${ns_args[@]}" \
    </dev/null >"$console" 2>&1
qemu_rc=$?
set -e
t_end=$(date +%s.%N)
# Plain text: no carriage returns, no terminal control sequences from the firmware/kernel.
tr -d '\r' <"$console" | sed -e 's/\x1bc/\n/g' -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' >"$console.txt"

if [ "${ZNS_QEMU_VERBOSE:-0}" = 1 ]; then
    cat "$console.txt"
else
    # The guest's diagnostics and the runners' output.
    awk -v s="$marker_start" -v r="$marker_result" '
        index($0, "guest: ") == 1 { print; next }
        index($0, s) == 1 { running = 1; print; next }
        index($0, r) == 1 { running = 0; print; next }
        running { print }
    ' "$console.txt"
fi

boot_secs=$(awk -v a="$t_boot" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }')
total_secs=$(awk -v a="$t_start" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }')
status=0
guest_total=0
for dev in "${devices[@]}"; do
    result=$(grep -a "^$marker_result dev=$dev " "$console.txt" | tail -n1 || true)
    if [ -z "$result" ]; then
        log "no result from the guest for $dev (qemu exit status $qemu_rc)"
        status=1
        continue
    fi
    rc=$(sed -n 's/.* rc=\([0-9]*\).*/\1/p' <<<"$result")
    secs=$(sed -n 's/.* guest_seconds=\([0-9.]*\).*/\1/p' <<<"$result")
    guest_total=$(awk -v a="$guest_total" -v b="$secs" 'BEGIN { printf "%.2f", a + b }')
    if [ "$rc" != 0 ]; then
        log "FAILED: zns-conformance zbd:/dev/$dev exited with status $rc in the guest"
        status=1
    fi
done
if [ "$status" != 0 ] && [ "${ZNS_QEMU_VERBOSE:-0}" != 1 ]; then
    log "last console lines:"
    tail -n 40 "$console.txt" >&2
fi
log "timings: runner in the guest ${guest_total}s, qemu ${boot_secs}s, whole script ${total_secs}s"
[ "$status" = 0 ] || exit 1
log "passed"
