#!/usr/bin/env bash
# Runs a command as root in a throwaway QEMU/KVM virtual machine with Debian's kernel, on pure
# cgroup v2, and exits with its status. CI uses it for what this host's kernel cannot show: the
# local adapter's limits on a cgroup v2-only machine, and ext4/xfs project quotas (the --disk layer).
#
#   .ci/vm.sh [--share DIR] [--timeout SECONDS] [--cgroup session|root] -- COMMAND [ARG...]
#
# The VM sees the host's root file system read-only (virtio-9p) under a writable overlay kept in
# memory; /tmp is a fresh ext4 file system on a scratch disk (sandbox workspaces are made there,
# and the disk tests loop-mount images there). DIR (default: a new temporary directory) is shared
# writable at the same path: put the binaries to run there, and read what they wrote afterwards.
# COMMAND runs in the current directory, which must be visible in the VM (not under /tmp unless in
# DIR). Its output goes to this script's stdout (the serial console).
#
# cgroups: cgroup2 alone at /sys/fs/cgroup (the kernel is booted with cgroup_no_v1=all), memory,
# pids and cpu enabled in the root's subtree. --cgroup session (the default) runs COMMAND the way a
# login shell runs on a systemd host: in user.slice/session.scope, a cgroup with those controllers
# available but not enabled in its subtree, and with another process in it (the shell that started
# COMMAND), so nothing may enable them there (cgroup v2's "no internal processes" rule).
# --cgroup root runs it in the root cgroup. --cgroup service runs it alone in
# system.slice/sandboxer.service, as a systemd unit's main process without delegation.
#
# Needs: qemu-system-x86 linux-image-amd64 busybox-static e2fsprogs (apt); /dev/kvm makes it fast.
set -euo pipefail

share="" timeout=900 cgroup=session
while [ $# -gt 0 ]; do
	case "$1" in
	--share) share=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--cgroup) cgroup=$2; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--share DIR] [--timeout SECONDS] [--cgroup session|root|service] -- COMMAND [ARG...]" >&2; exit 2; }

# The newest Debian kernel installed, with its modules.
kver=$(ls /lib/modules | grep -E '^[0-9.]+-[0-9]+-amd64$' | sort -V | tail -n1 || true)
[ -n "$kver" ] && [ -e "/boot/vmlinuz-$kver" ] || { echo "vm.sh: no Debian kernel (apt-get install linux-image-amd64)" >&2; exit 2; }
# KVM where the host's KVM runs ordinary kernels (kvm_intel, kvm_amd); otherwise (no /dev/kvm, or
# a KVM that runs only its own kind of guest, as kvm_pvm does on this CI machine: a stock kernel
# hangs at its first instruction) QEMU's emulator, several times slower.
if [ -z "${VM_ACCEL:-}" ]; then
	VM_ACCEL=tcg,thread=multi
	if [ -w /dev/kvm ] && [ -e /sys/module/kvm_intel ] || [ -e /sys/module/kvm_amd ]; then VM_ACCEL=kvm; fi
fi
cpu=max
[ "$VM_ACCEL" = kvm ] && cpu=host

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$share" ]; then share=$work/share; mkdir "$share"; fi
share=$(cd "$share" && pwd)


# ---- initramfs: busybox, the modules the VM needs, and init (stage 1) ----
mkdir -p "$work/initrd/bin" "$work/initrd/modules" "$work/initrd/proc" "$work/initrd/sys" "$work/initrd/dev"
cp /bin/busybox "$work/initrd/bin/busybox" # busybox-static's: no libraries needed
# Modules in load order (modprobe resolves the dependencies here, on the host).
for m in virtio_pci virtio_blk 9pnet_virtio 9p overlay ext4 xfs loop quota_v2; do
	modprobe -S "$kver" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' >"$work/modules.list"
while read -r ko; do
	cp "$ko" "$work/initrd/modules/"
	basename "$ko" >>"$work/initrd/modules/order"
done <"$work/modules.list"

cat >"$work/initrd/init" <<'EOF'
#!/bin/busybox sh
# Stage 1: mount the host's root read-only under a writable overlay, with a fresh ext4 /tmp, the
# shared directory and cgroup2, and hand over to stage 2 in it.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for ko in $(cat /modules/order); do insmod /modules/$ko 2>/dev/null; done
set -- $(cat /proc/cmdline)
for a; do case "$a" in vm.share=*) share=${a#vm.share=} ;; esac; done
mkdir -p /lower /mem /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose host /lower || exec sh
mount -t tmpfs -o size=50% tmpfs /mem
mkdir /mem/upper /mem/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/mem/upper,workdir=/mem/work /newroot || exec sh
for d in proc sys dev; do mount --move /$d /newroot/$d; done
chroot /newroot mkfs.ext4 -q -F /dev/vda # the host's e2fsprogs
mount -t ext4 /newroot/dev/vda /newroot/tmp
chmod 1777 /newroot/tmp
mkdir -p "/newroot$share"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 share "/newroot$share"
mount -t tmpfs tmpfs /newroot/run
mkdir -p /newroot/dev/shm && mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
mkdir -p /newroot/dev/pts && mount -t devpts devpts /newroot/dev/pts
mount -t cgroup2 cgroup2 /newroot/sys/fs/cgroup
exec switch_root /newroot /bin/bash "$share/.vm/stage2"
EOF
chmod +x "$work/initrd/init"
(cd "$work/initrd" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$work/initrd.gz"

# ---- stage 2: in the host's root; sets up the cgroups and runs the command ----
mkdir -p "$share/.vm"
rm -f "$share/.vm/status"
printf '%q ' "$@" >"$share/.vm/command" # every argument quoted for bash
cat >"$share/.vm/stage2" <<EOF
#!/bin/bash
# Stage 2 (as pid 1, in the VM's root): pure cgroup v2, then the command, then power off.
cg=/sys/fs/cgroup
echo "+memory +pids +cpu" >\$cg/cgroup.subtree_control
case $(printf '%q' "$cgroup") in
session)
	# A systemd login session: the slice passes the controllers on, the scope holds processes.
	mkdir -p \$cg/user.slice/session.scope
	echo "+memory +pids +cpu" >\$cg/user.slice/cgroup.subtree_control
	echo \$\$ >\$cg/user.slice/session.scope/cgroup.procs ;;
service)
	# A systemd unit without delegation: the command alone in a cgroup whose parent passes the
	# controllers on (stage 2 waits from the root cgroup).
	mkdir -p \$cg/system.slice/sandboxer.service
	echo "+memory +pids +cpu" >\$cg/system.slice/cgroup.subtree_control ;;
esac
export HOME=/root PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export TMPDIR=/tmp GOTOOLCHAIN=local
hostname vm
ip link set lo up 2>/dev/null
echo "vm: booted in \$(cut -d' ' -f1 /proc/uptime) s; kernel \$(uname -r); cgroup \$(cat /proc/self/cgroup)"
cd $(printf '%q' "$PWD") || exit 1
if [ $(printf '%q' "$cgroup") = service ]; then
	bash -c 'echo \$\$ >/sys/fs/cgroup/system.slice/sandboxer.service/cgroup.procs && eval exec "\$(cat "\$0")"' $(printf '%q' "$share/.vm/command") </dev/null
else
	eval "\$(cat $(printf '%q' "$share/.vm/command"))" </dev/null
fi
echo \$? >$(printf '%q' "$share")/.vm/status
sync
echo o >/proc/sysrq-trigger # power off; pid 1 must not exit meanwhile (a panic)
while :; do sleep 1; done 2>/dev/null
EOF

# A sparse scratch disk for /tmp.
truncate -s 8G "$work/scratch.img"

start=$(date +%s%N)
set +e
timeout --foreground -k 10 "$timeout" qemu-system-x86_64 \
	-accel "$VM_ACCEL" -cpu "$cpu" -smp 2 -m 2048 -nographic -no-reboot \
	-kernel "/boot/vmlinuz-$kver" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 quiet loglevel=3 panic=-1 cgroup_no_v1=all sysrq_always_enabled=1 vm.share=$share" \
	-virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap \
	-virtfs "local,path=$share,mount_tag=share,security_model=none,multidevs=remap" \
	-drive "file=$work/scratch.img,format=raw,if=virtio,cache=unsafe" \
	-nic none </dev/null
qemu=$?
set -e
ms=$((($(date +%s%N) - start) / 1000000))
printf 'vm.sh: the VM (%s) ran %d.%03d s (qemu exit %d)\n' "$VM_ACCEL" $((ms / 1000)) $((ms % 1000)) "$qemu" >&2
if [ ! -s "$share/.vm/status" ]; then
	echo "vm.sh: the command did not finish (timeout ${timeout}s or the VM failed)" >&2
	exit 124
fi
exit "$(cat "$share/.vm/status")"
