#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/vm/run-guest.sh [--tap FILE] <K> <guest-script> [extra files...]
#
# Boots kernel K (6.1, 6.12 or 6.1-debug, prepared by tools/vm/kernels.sh, which
# this script calls) under QEMU (TCG: this class of machine has no usable KVM)
# with an initramfs built in build/vm/<K>/, runs <guest-script> in it as
# /guest.sh, and exits with the guest's verdict:
#   0  pass: the script exited 0 and dmesg shows no BUG/WARNING/Oops/lockdep/...
#      (and, on a kernel with kmemleak, its scan at the end reports no leak)
#   1  fail
#   2  the guest never reported a verdict (host timeout, kernel panic, crash)
#   3  the guest could not be started (bad arguments, missing pieces)
#
# The console streams to stdout and to build/vm/<K>/console.log.  The script's
# stdout (its TAP) is saved to build/vm/<K>/guest.tap, and to FILE with --tap.
#
# What the initramfs holds (see tools/vm/init for the guest side):
#   /init, /guest.sh            tools/vm/init and <guest-script>
#   /lib/agile/tap-merge.sh     selftests/tap-merge.sh, for guest scripts
#   /lib/agile/kmod             the host's kmod and its libraries, for
#                               selftests/kmod/autoload.sh
#   /bin/busybox + applets      from busybox-static
#   /lib/modules/<release>/     build/kernels/<K>/modules/ (vgem & co) and
#                               extra/: build/kernels/<K>/out/*.ko; depmod'ed, so
#                               `modprobe agile` and `modprobe vgem` work
#   /selftests/kmod/            executables of build/selftests/kmod/
#   /selftests/libagile/        executables of build/selftests/libagile/
#                               (make -C libagile guest-tests), which
#                               selftests/libagile/guest.sh runs
#   /tools/                     the statically linked executables of
#                               build/tools/
#   /extra/                     the extra files given on the command line
# /selftests/kmod, /tools and /extra are on PATH.  Dynamically linked
# executables get their libraries copied along (static ones are preferred:
# nothing to copy).
# The guest script runs under busybox sh as root in /tmp, stdin /dev/null,
# with AGILE_KERNEL=<K> and the AGILE_PASS_ENV variables below set; its
# stdout is the TAP the host collects, its stderr goes to the console only; a
# non-zero exit fails the run.
#
# Environment:
#   AGILE_VM_TIMEOUT  host-side limit in seconds (default 1200); the guest's own
#                     watchdog fires a little earlier so a hang still gives a
#                     fail verdict with stacks
#   AGILE_VM_ACCEL    QEMU -accel (default tcg,thread=single; see below)
#   AGILE_VM_CPU      QEMU -cpu model (default max)
#   AGILE_VM_BIOS     firmware: a file for -bios, or "seabios" for QEMU's default
#                     (default: qboot where QEMU ships it, a few tenths faster)
#   AGILE_VM_SMP, AGILE_VM_MEM   (defaults 2, and 1G; 2G for a KASAN kernel)
#   AGILE_VM_APPEND   extra kernel command line
#   AGILE_VM_DMESG=1  print the guest's whole dmesg at the end
#   AGILE_BUILD       build dir (default <repo>/build)
#   AGILE_FUZZ_SECONDS, AGILE_FUZZ_SEED, AGILE_FUZZ_HARDENED, AGILE_TEST_TIMEOUT,
#   AGILE_BACKENDS, AGILE_KMOD_PROGRAMS, AGILE_KMOD_SKIP, AGILE_LIBAGILE_PROGRAMS
#                     test knobs (AGILE_PASS_ENV): when set on the host they are
#                     set in the guest script's environment too (the fuzzer's
#                     budget, seed and -H, see selftests/kmod/fuzz.c; the
#                     runners' limit per program; the libagile backends and
#                     programs, and the kmod programs to run or leave out,
#                     comma-separated: selftests/libagile/guest.sh,
#                     selftests/kmod/run.sh)

set -eu

die() {
	echo "run-guest.sh: $*" >&2
	exit 3
}

TAP_OUT=""
if [ "${1:-}" = "--tap" ]; then
	[ $# -ge 2 ] || die "--tap needs a file"
	TAP_OUT=$2
	shift 2
fi
[ $# -ge 2 ] || die "usage: tools/vm/run-guest.sh [--tap FILE] <6.1|6.12|6.1-debug> <guest-script> [extra files...]"
K=$1
SCRIPT=$2
shift 2
[ -f "$SCRIPT" ] || die "guest script '$SCRIPT' not found"
for f in "$@"; do
	[ -e "$f" ] || die "extra file '$f' not found"
done

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=${AGILE_BUILD:-$REPO/build}
KERN=$BUILD/kernels/$K
VM=$BUILD/vm/$K
TIMEOUT=${AGILE_VM_TIMEOUT:-1200}
case $TIMEOUT in
'' | *[!0-9]*) die "AGILE_VM_TIMEOUT must be a number of seconds" ;;
esac

command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing: run tools/deps.sh"
command -v cpio >/dev/null || die "cpio missing: run tools/deps.sh"
DEPMOD=$(PATH=$PATH:/sbin:/usr/sbin command -v depmod) || die "depmod missing: run tools/deps.sh"

mkdir -p "$VM"
# One guest per kernel and build dir at a time: a second run would overwrite
# the initramfs and the logs of the first.  The lock is inherited by QEMU, so
# it is held until the guest is gone.
exec 9>"$VM.lock"
if ! flock -n 9; then
	echo "run-guest.sh: another $K guest is running on $BUILD; waiting" >&2
	flock 9
fi

# Idempotent and instant once prepared.
"$HERE/kernels.sh" "$K" || die "kernel $K could not be prepared"
REL=$(cat "$KERN/release")

# busybox must be the static one: the initramfs has no libc.
BUSYBOX=$(command -v busybox || true)
[ -n "$BUSYBOX" ] || die "busybox missing: run tools/deps.sh (busybox-static)"
if readelf -l "$BUSYBOX" 2>/dev/null | grep -q 'program interpreter'; then
	die "$BUSYBOX is dynamically linked: install busybox-static"
fi

# ---------------------------------------------------------------------------
# initramfs

STAGE=$VM/initramfs
rm -rf "$STAGE"
mkdir -p "$STAGE"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,root,lib/modules} \
	"$STAGE/selftests/kmod" "$STAGE/selftests/libagile" "$STAGE/tools" \
	"$STAGE/extra"

cp "$BUSYBOX" "$STAGE/bin/busybox"
# Applet links as busybox itself lists them (bin/sh, usr/bin/awk, ...).
"$BUSYBOX" --list-full | while read -r applet; do
	[ -e "$STAGE/$applet" ] || ln -s /bin/busybox "$STAGE/$applet"
done
[ -e "$STAGE/bin/sh" ] || ln -s busybox "$STAGE/bin/sh"

cat >"$STAGE/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
# Group "agile", as udev/60-agile.rules and the install would have it: the
# kmod runner gives /dev/agile this group after it loads the module, as the
# udev rule would (the guest has no udev).
cat >"$STAGE/etc/group" <<'EOF'
root:x:0:
agile:x:990:
nogroup:x:65534:
EOF

cp "$HERE/init" "$STAGE/init"
cp "$SCRIPT" "$STAGE/guest.sh"
chmod 755 "$STAGE/init" "$STAGE/guest.sh"
# The TAP helpers the guest scripts source (selftests/tap-merge.sh).
mkdir -p "$STAGE/lib/agile"
cp "$REPO/selftests/tap-merge.sh" "$STAGE/lib/agile/tap-merge.sh"

# add_file <src> <dest dir>: copy; for a dynamically linked ELF also copy its
# loader and libraries (same paths as on the host).
add_file() {
	cp -a "$1" "$2/"
	[ -f "$1" ] && [ -x "$1" ] || return 0
	readelf -l "$1" 2>/dev/null | grep -q 'program interpreter' || return 0
	ldd "$1" | awk '/=> \// { print $3 } /^[ \t]*\// { print $1 }' | while read -r lib; do
		mkdir -p "$STAGE$(dirname "$lib")"
		cp -L "$lib" "$STAGE$lib"
	done
}

# dynamic <file>: whether <file> is a dynamically linked ELF.
dynamic() {
	readelf -l "$1" 2>/dev/null | grep -q 'program interpreter'
}

# add_executables <dir> <dest dir> [static]: every executable regular file
# in <dir>; with "static", the statically linked ones only.
add_executables() {
	[ -d "$1" ] || return 0
	for f in "$1"/*; do
		if [ ! -f "$f" ] || [ ! -x "$f" ]; then
			continue
		fi
		if [ "${3:-}" = static ] && dynamic "$f"; then
			continue
		fi
		add_file "$f" "$2"
	done
	return 0
}
add_executables "$BUILD/selftests/kmod" "$STAGE/selftests/kmod"
add_executables "$BUILD/selftests/libagile" "$STAGE/selftests/libagile"
# The guests run the static tools (agile-demo, agilectl, agile-bench-static,
# the examples); the host's dynamic ones stay out: agile-retarget alone
# would bring libclang and libLLVM, some 200 MB, and the initramfs no
# longer unpacks in the guest's memory.
add_executables "$BUILD/tools" "$STAGE/tools" static
for f in "$@"; do
	add_file "$f" "$STAGE/extra"
done
# The host's kmod, with its libraries, off PATH (busybox's applets stay
# the guest's insmod, modprobe, ...): selftests/kmod/autoload.sh takes
# the node from `kmod static-nodes` and has the kernel run kmod's modprobe,
# as on a Debian system.
KMOD=$(PATH=$PATH:/sbin:/usr/sbin command -v kmod) || die "kmod missing: run tools/deps.sh"
add_file "$(readlink -f "$KMOD")" "$STAGE/lib/agile"

MODDIR=$STAGE/lib/modules/$REL
mkdir -p "$MODDIR/extra"
[ -d "$KERN/modules" ] && cp -a "$KERN/modules/." "$MODDIR/"
for ko in "$KERN"/out/*.ko; do
	[ -f "$ko" ] && cp "$ko" "$MODDIR/extra/"
done
# modules.dep and friends for busybox modprobe.
"$DEPMOD" -b "$STAGE" "$REL" || die "depmod failed on $MODDIR"
ln -s "/lib/modules/$REL/extra" "$STAGE/ko"

# Uncompressed: QEMU loads it straight into guest memory, and the kernel
# unpacks it faster than it would decompress it under TCG.
(cd "$STAGE" && find . | LC_ALL=C sort | cpio -o -H newc --owner=0:0 --quiet) >"$VM/initramfs.cpio"

# ---------------------------------------------------------------------------
# boot

# The guest gives up (fail verdict with stacks) a bit before the host does.
if [ "$TIMEOUT" -gt 120 ]; then
	GUEST_TIMEOUT=$((TIMEOUT - 60))
else
	GUEST_TIMEOUT=$((TIMEOUT * 3 / 4))
fi

# kconfig <SYMBOL>: true when the guest kernel was built with CONFIG_<SYMBOL>=y.
kconfig() {
	grep -qx "CONFIG_$1=y" "$KERN/kdir/.config" 2>/dev/null
}

APPEND="console=ttyS0 panic=-1 quiet agile_kernel=$K agile_timeout=$GUEST_TIMEOUT"
[ "${AGILE_VM_DMESG:-0}" = 1 ] && APPEND="$APPEND agile_dmesg=1"
# The debug kernel's detectors that init checks at the end: it fails the run
# when one of them is missing or has turned itself off, rather than pass
# without having looked.
kconfig DEBUG_KMEMLEAK && APPEND="$APPEND agile_kmemleak=1"
kconfig PROVE_LOCKING && APPEND="$APPEND agile_lockdep=1"
# The debug guest bounces every DMA mapping through swiotlb, as an IOMMU-less
# device with a narrow mask would: a dma-buf sync in the wrong direction then
# loses data (selftests/kmod/dmabuf.c, importer_sync_uses_mapping_direction),
# where the plain guests map the pages directly and cannot tell.
case $K in
*-debug) APPEND="$APPEND swiotlb=force" ;;
esac
# Test knobs: the kernel passes unknown name=value parameters on to init's
# environment, and init to the guest script.
AGILE_PASS_ENV="AGILE_FUZZ_SECONDS AGILE_FUZZ_SEED AGILE_FUZZ_HARDENED AGILE_TEST_TIMEOUT AGILE_BACKENDS AGILE_KMOD_PROGRAMS AGILE_KMOD_SKIP AGILE_LIBAGILE_PROGRAMS"
for v in $AGILE_PASS_ENV; do
	val=${!v:-}
	case $val in
	'') ;;
	*[!0-9A-Za-z.,_-]*) die "$v='$val': only letters, digits, '.', ',', '_' and '-' can cross the kernel command line" ;;
	*) APPEND="$APPEND $v=$val" ;;
	esac
done
[ -n "${AGILE_VM_APPEND:-}" ] && APPEND="$APPEND $AGILE_VM_APPEND"

RAW_TAP=$VM/ttyS1.out
CONSOLE=$VM/console.log
rm -f "$RAW_TAP" "$CONSOLE" "$VM/guest.tap" "$VM/ttyS1.txt" "$VM/console.txt"

# The kernel: the uncompressed ELF vmlinux that kernels.sh extracts, booted
# through its PVH entry, skips the in-guest decompression (6.1's bzImage is
# xz: about 3 s under TCG); the bzImage otherwise.
KERNEL=$KERN/vmlinuz
[ -f "$KERN/vmlinux" ] && KERNEL=$KERN/vmlinux

# Firmware: qboot starts in milliseconds where SeaBIOS takes most of a second.
BIOS=${AGILE_VM_BIOS:-/usr/share/qemu/qboot.rom}
BIOS_ARGS=()
if [ "$BIOS" != seabios ] && [ -f "$BIOS" ]; then
	BIOS_ARGS=(-bios "$BIOS")
fi

# -accel tcg,thread=single: both vCPUs run in one host thread.  Multi-threaded
# TCG (the default for -smp 2) races with the kernel's live code patching
# (text_poke_bp: static keys, tracepoints, jump labels): flipping tracepoints
# while the other vCPU runs gave "Oops: int3" panics and hard lockups in 3 of
# 6 boots here, single-threaded TCG none in 6.  Both vCPUs still interleave,
# so SMP races in the module remain reachable.
# -nodefaults: no NIC, VGA, floppy or CD-ROM to probe; the two serial ports
# are the only devices we need (ttyS0 console on stdout, ttyS1 TAP to a file).
# stdin is /dev/null so QEMU never puts a terminal into raw mode.
# KASAN's shadow takes an eighth of the memory and its quarantine holds
# freed objects a while: such a kernel gets twice the memory.
MEM=1G
kconfig KASAN && MEM=2G
QEMU=(qemu-system-x86_64 -accel "${AGILE_VM_ACCEL:-tcg,thread=single}"
	-cpu "${AGILE_VM_CPU:-max}" -smp "${AGILE_VM_SMP:-2}" -m "${AGILE_VM_MEM:-$MEM}"
	-nographic -nodefaults -no-reboot -monitor none
	-serial stdio -serial "file:$RAW_TAP" "${BIOS_ARGS[@]}"
	-kernel "$KERNEL" -initrd "$VM/initramfs.cpio" -append "$APPEND")

echo "run-guest.sh: booting $K ($REL, $(basename "$KERNEL")), timeout ${TIMEOUT}s, log $CONSOLE" >&2
start=$(date +%s.%N)
set +e
timeout -k 10 "$TIMEOUT" "${QEMU[@]}" </dev/null 2>&1 | tee "$CONSOLE"
qemu_rc=${PIPESTATUS[0]}
set -e
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

# ---------------------------------------------------------------------------
# results

# Serial output has CRLF line ends.
tr -d '\r' <"$RAW_TAP" 2>/dev/null >"$VM/ttyS1.txt" || : >"$VM/ttyS1.txt"
# ttyS1 carries the verdict and the TAP cleanly; the console is the fallback
# (a guest without a second serial port), where kernel messages may interleave.
RESULTS=$VM/ttyS1.txt
if ! grep -q '^AGILE-TAP-BEGIN' "$RESULTS"; then
	tr -d '\r' <"$CONSOLE" >"$VM/console.txt"
	RESULTS=$VM/console.txt
fi
verdict=$(sed -n 's/^.*AGILE-GUEST-VERDICT: \([a-z]*\).*/\1/p' "$RESULTS" | tail -n 1)
# The TAP: what the script printed between the markers (all of it so far when
# the guest died before AGILE-TAP-END).
awk '/AGILE-TAP-BEGIN/ { on = 1; next } /AGILE-TAP-END/ { on = 0 } on' \
	"$RESULTS" >"$VM/guest.tap"
if [ -n "$TAP_OUT" ]; then
	mkdir -p "$(dirname "$TAP_OUT")"
	cp "$VM/guest.tap" "$TAP_OUT"
fi
boot=$(tr -d '\r' <"$CONSOLE" | sed -n 's/^.*AGILE-INIT: .* up after \([0-9.]*\) s$/\1/p' | head -n 1)

case $verdict in
pass)
	echo "run-guest.sh: $K: PASS (init after ${boot:-?} s of guest uptime, ${elapsed} s in all)" >&2
	exit 0
	;;
fail)
	echo "run-guest.sh: $K: FAIL (see $CONSOLE)" >&2
	exit 1
	;;
*)
	if [ "$qemu_rc" = 124 ] || [ "$qemu_rc" = 137 ]; then
		why="killed after the ${TIMEOUT}s host timeout"
	else
		why="QEMU exited with $qemu_rc: kernel panic or crash?"
	fi
	echo "run-guest.sh: $K: NO VERDICT: the guest never reported ($why); see $CONSOLE" >&2
	exit 2
	;;
esac
