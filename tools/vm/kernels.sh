#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/vm/kernels.sh <K> - prepare guest kernel K (6.1, 6.12 or 6.1-debug) in
# build/kernels/<K>/:
#
#   vmlinuz     the kernel image the guest boots (the bzImage)
#   vmlinux     the same kernel uncompressed (ELF with a PVH entry), which
#               run-guest.sh boots instead when present: faster under TCG
#   kdir        a kernel build dir for `make -C kdir M=...`
#   kbuild.env  shell fragment to source before building a module for K; sets KDIR,
#               KMAKE_ARGS (extra make arguments) and KRELEASE
#   release     the kernel release string (the guest's uname -r)
#   modules/    the kernel's own modules the tests need (GUEST_MODULES below, with
#               their dependencies), decompressed, laid out as /lib/modules/<release>/
#
# 6.1  is Debian 12's own kernel, installed on this machine (linux-image-amd64 and
#      linux-headers-amd64, see tools/deps.sh): nothing is downloaded.
# 6.12 is Debian 13's (trixie) kernel.  Its image, headers and kbuild are fetched with
#      apt using a private state (own sources list, lists, cache; the system's apt
#      sources and state stay untouched) and unpacked with dpkg -x into
#      build/kernels/6.12/root/, then patched so that Debian 12's gcc-12 can build
#      modules against it (see prepare_612 for the four fixes and why).
# 6.1-debug is built here from Debian's linux-source-6.1 with KASAN, lockdep,
#      DEBUG_ATOMIC_SLEEP, kmemleak, UBSAN and KFENCE (tools/vm/debug.config) by
#      tools/vm/debug-kernel.sh, which caches it under
#      ${AGILE_CACHE:-$HOME/.cache/agile}/kernels/6.1-debug/: the first call takes
#      about a quarter of an hour, later ones reuse it.  Its kdir is the built
#      source tree itself.
#
# Idempotent: a stamp records what was prepared; a second call returns at once.
# Downloads are kept in ${AGILE_CACHE:-$HOME/.cache/agile}/trixie/ and reused.
#
# Environment:
#   AGILE_CACHE          download cache (default ~/.cache/agile)
#   AGILE_BUILD          build dir (default <repo>/build)
#   AGILE_DEBIAN_MIRROR  Debian mirror URI for 6.12 (default: the one this machine's
#                        apt sources use for the Debian archive)

set -eu

# Kernel modules (by name) the guest tests need from the kernel's own tree.
# Their dependencies are added from modinfo.  Extend here.
GUEST_MODULES="vgem"

# trixie host libraries that kbuild's tools (fixdep, modpost, objtool...) need:
# they are linked against glibc 2.38+, Debian 12 has 2.36.  Extend here.
TRIXIE_HOST_LIBS="libc6 libelf1t64 zlib1g libzstd1"

# Bump when the layout or the patches below change, so old stamps are redone.
FORMAT=4

die() {
	echo "kernels.sh: $*" >&2
	exit 1
}

[ $# -eq 1 ] || die "usage: tools/vm/kernels.sh <6.1|6.12|6.1-debug>"
K=$1
case $K in
6.1 | 6.12 | 6.1-debug) ;;
*) die "unknown kernel '$K' (known: 6.1 6.12 6.1-debug)" ;;
esac
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${AGILE_BUILD:-$REPO/build}
CACHE=${AGILE_CACHE:-$HOME/.cache/agile}
OUT=$BUILD/kernels/$K
STAMP=$OUT/.stamp

# ---------------------------------------------------------------------------
# helpers

# find_module <modules dir> <name>: path of module <name> (.ko, .ko.xz, .ko.zst,
# .ko.gz) under <modules dir>/kernel; module names use '_' where file names may
# use '-'.
find_module() {
	local pattern
	pattern=$(printf '%s' "$2" | sed 's/[-_]/[-_]/g')
	find "$1/kernel" -name "$pattern.ko" -o -name "$pattern.ko.*" | head -n 1
}

# decompress_to <src module> <dest .ko>: plain copy or decompress, by suffix.
decompress_to() {
	mkdir -p "$(dirname "$2")"
	case $1 in
	*.ko) cp "$1" "$2" ;;
	*.ko.xz) xz -dc "$1" >"$2" ;;
	*.ko.zst) zstd -qdc "$1" >"$2" ;;
	*.ko.gz) gzip -dc "$1" >"$2" ;;
	*) die "unknown module format: $1" ;;
	esac
}

# copy_modules <kernel's modules dir>: copy GUEST_MODULES and everything they
# depend on into $OUT/modules/ (same relative paths, decompressed), with the
# files depmod needs to tell built-in modules from missing ones.  The guest's
# initramfs builder runs depmod over the result.
copy_modules() {
	local src=$1 todo name path rel deps done_list=" "
	mkdir -p "$OUT/modules"
	for f in modules.order modules.builtin modules.builtin.modinfo; do
		if [ -e "$src/$f" ]; then cp "$src/$f" "$OUT/modules/"; fi
	done
	todo=$GUEST_MODULES
	while [ -n "$todo" ]; do
		# shellcheck disable=SC2086 # split the list into words
		set -- $todo
		# Only blanks left (a module with no dependencies).
		[ $# -ge 1 ] || break
		name=$1
		shift
		todo=$*
		case $done_list in *" $name "*) continue ;; esac
		done_list="$done_list$name "
		path=$(find_module "$src" "$name")
		if [ -z "$path" ]; then
			# Built in?  Then there is nothing to copy.
			if grep -q "/$name.ko\$" "$src/modules.builtin" 2>/dev/null; then continue; fi
			die "module $name not found under $src"
		fi
		rel=${path#"$src"/}
		rel=${rel%.ko*}.ko
		decompress_to "$path" "$OUT/modules/$rel"
		deps=$(modinfo -F depends "$OUT/modules/$rel" | tr ',' ' ')
		todo="$todo $deps"
	done
}

# A kernel ELF that QEMU can boot directly: complete (readelf has no complaint:
# a truncated file loses its section headers) with a PVH entry point
# (XEN_ELFNOTE_PHYS32_ENTRY, note type 0x12).
valid_pvh_elf() {
	local notes
	[ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] || return 1
	notes=$(readelf -n "$1" 2>&1) || return 1
	printf '%s\n' "$notes" | grep -qiE 'warning|error' && return 1
	printf '%s\n' "$notes" | grep -qE 'note type: \(0x0*12\)|PHYS32_ENTRY'
}

# extract_vmlinux: $OUT/vmlinux, the uncompressed kernel inside the bzImage.
# run-guest.sh boots it through its PVH entry when present: the guest then
# skips decompressing itself, which under TCG takes about 3 s for 6.1's xz
# image.  Optional: without it guests boot the bzImage.
extract_vmlinux() {
	local img=$OUT/vmlinuz out=$OUT/vmlinux fmt magic off
	for fmt in xz zstd gzip; do
		case $fmt in
		xz) magic='\xfd\x37\x7a\x58\x5a\x00' ;;
		zstd) magic='\x28\xb5\x2f\xfd' ;;
		gzip) magic='\x1f\x8b\x08' ;;
		esac
		off=$(LC_ALL=C grep -obUaP "$magic" "$img" | head -n 1 | cut -d: -f1)
		[ -n "$off" ] || continue
		# The payload is followed by more of the bzImage: zstd and gzip
		# complain about trailing data after decoding all of it, so their
		# status says nothing; valid_pvh_elf judges the result.
		case $fmt in
		xz) tail -c +$((off + 1)) "$img" | xz -dc --single-stream >"$out.tmp" 2>/dev/null || true ;;
		zstd) tail -c +$((off + 1)) "$img" | zstd -qdc >"$out.tmp" 2>/dev/null || true ;;
		gzip) tail -c +$((off + 1)) "$img" | gzip -dc >"$out.tmp" 2>/dev/null || true ;;
		esac
		if valid_pvh_elf "$out.tmp"; then
			mv "$out.tmp" "$out"
			return 0
		fi
	done
	rm -f "$out.tmp"
	echo "kernels.sh: note: no PVH vmlinux in $img; guests will boot the bzImage (slower)" >&2
}

write_common() {
	# $1 = release, $2 = make arguments
	printf '%s\n' "$1" >"$OUT/release"
	cat >"$OUT/kbuild.env" <<EOF
# Generated by tools/vm/kernels.sh $K: source before building a module for $K.
KRELEASE='$1'
KDIR='$OUT/kdir'
KMAKE_ARGS='$2'
EOF
}

# Remove what this script makes, and only that: out/ (tools/build-kmod.sh's
# modules) and anything else others put in $OUT stays.
clean_owned() {
	rm -rf "$STAMP" "$OUT/vmlinuz" "$OUT/vmlinux" "$OUT/vmlinux.tmp" "$OUT/kdir" \
		"$OUT/kbuild.env" "$OUT/release" "$OUT/modules" "$OUT/root" "$OUT/hostlibs"
	mkdir -p "$OUT"
}

stamp_text() {
	# Everything that, when changed, means the directory must be redone.
	printf 'format=%s kernel=%s out=%s modules=%s release=%s\n' \
		"$FORMAT" "$K" "$OUT" "$GUEST_MODULES" "$1"
}

stamp_ok() {
	[ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(stamp_text "$1")" ] &&
		[ -e "$OUT/vmlinuz" ] && [ -e "$OUT/kdir/Makefile" ] &&
		[ -f "$OUT/kbuild.env" ] && [ -f "$OUT/release" ]
}

# ---------------------------------------------------------------------------
# 6.1: Debian 12's installed kernel

# The release the linux-image-amd64 metapackage points at (the newest one
# installed, whatever kernel the host runs).
release_61() {
	local dep
	dep=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null) ||
		die "linux-image-amd64 is not installed: run tools/deps.sh"
	dep=$(printf '%s\n' "$dep" | tr ',|' '\n' | sed -n 's/^ *linux-image-\([^ ]*\).*/\1/p' | head -n 1)
	dep=${dep%-unsigned}
	case $dep in
	6.1.*) printf '%s\n' "$dep" ;;
	*) die "linux-image-amd64 depends on '$dep', expected a 6.1 kernel (Debian 12)" ;;
	esac
}

prepare_61() {
	local rel=$1
	[ -r "/boot/vmlinuz-$rel" ] || die "/boot/vmlinuz-$rel missing or unreadable"
	[ -e "/lib/modules/$rel/build/Makefile" ] ||
		die "/lib/modules/$rel/build missing: install linux-headers-$rel (tools/deps.sh)"
	clean_owned
	ln -s "/boot/vmlinuz-$rel" "$OUT/vmlinuz"
	ln -s "/lib/modules/$rel/build" "$OUT/kdir"
	copy_modules "/lib/modules/$rel"
	extract_vmlinux
	# Debian 12's headers lack vmlinux, so modfinal would print "Skipping BTF
	# generation ... due to unavailability of vmlinux" for every module; turning
	# the step off keeps the build (and make lint) quiet.  No BTF is lost.
	write_common "$rel" "CONFIG_DEBUG_INFO_BTF_MODULES="
}

# ---------------------------------------------------------------------------
# 6.12: Debian 13's kernel, fetched with a private apt state

# The Debian archive mirror this machine's apt uses (the source that serves the
# system's own suite, e.g. bookworm), so no mirror is hard-coded here.
debian_mirror() {
	local suite uri
	if [ -n "${AGILE_DEBIAN_MIRROR:-}" ]; then
		printf '%s\n' "$AGILE_DEBIAN_MIRROR"
		return
	fi
	# shellcheck disable=SC1091
	suite=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-bookworm}")
	# deb822 .sources: the first stanza whose Suites has exactly $suite.
	uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v suite="$suite" '
		/^[ \t]*$/ { if (ok && uri != "") { print uri; exit } ok = 0; uri = ""; next }
		tolower($1) == "uris:" { uri = $2 }
		tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == suite) ok = 1 }
		tolower($1) == "enabled:" && tolower($2) == "no" { ok = -1000 }
		END { if (ok > 0 && uri != "") print uri }' | head -n 1)
	if [ -z "$uri" ]; then
		# one-line format: deb [options] URI SUITE COMPONENTS...
		uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			sed 's/\[[^]]*\]//' | awk -v suite="$suite" '$1 == "deb" && $3 == suite { print $2; exit }')
	fi
	[ -n "$uri" ] || die "no Debian mirror for suite '$suite' in /etc/apt/sources*; set AGILE_DEBIAN_MIRROR"
	printf '%s\n' "${uri%/}"
}

# Private apt: everything under $APTDIR, the system keyring for signatures.
# The system's apt.conf.d is still read (proxies and the like must apply), but
# its update/dpkg hooks are cleared so nothing of the system's is touched, and
# the binary package cache is kept (Docker-style images disable it, which makes
# every apt-cache call re-parse the lists: half a second each).
setup_private_apt() {
	local mirror keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	APTDIR=$CACHE/trixie/apt
	mkdir -p "$APTDIR/state/lists/partial" "$APTDIR/cache/archives/partial" \
		"$APTDIR/etc/sources.list.d" "$APTDIR/etc/preferences.d"
	[ -r "$keyring" ] || die "$keyring missing: install debian-archive-keyring"
	mirror=$(debian_mirror)
	printf 'deb [signed-by=%s] %s trixie main\n' "$keyring" "$mirror" >"$APTDIR/etc/sources.list"
	: >"$APTDIR/state/status"
	cat >"$APTDIR/apt.conf" <<EOF
Dir::State "$APTDIR/state";
Dir::State::status "$APTDIR/state/status";
Dir::Cache "$APTDIR/cache";
Dir::Cache::pkgcache "pkgcache.bin";
Dir::Cache::srcpkgcache "srcpkgcache.bin";
Dir::Etc::SourceList "$APTDIR/etc/sources.list";
Dir::Etc::SourceParts "$APTDIR/etc/sources.list.d";
Dir::Etc::Preferences "$APTDIR/etc/preferences";
Dir::Etc::PreferencesParts "$APTDIR/etc/preferences.d";
APT::Architecture "amd64";
#clear APT::Architectures;
APT::Architectures { "amd64"; };
APT::Sandbox::User "root";
#clear APT::Update::Pre-Invoke;
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
#clear DPkg::Pre-Invoke;
#clear DPkg::Post-Invoke;
EOF
}

papt_get() { apt-get -c "$APTDIR/apt.conf" -q "$@"; }
papt_cache() { apt-cache -c "$APTDIR/apt.conf" "$@"; }

# field <package> <Field>: a field of the candidate version.
field() {
	papt_cache show --no-all-versions "$1" 2>/dev/null | sed -n "s/^$2: //p" | head -n 1
}

# fetch <package>...: make sure the candidate .deb of each package is in
# $DEBS (checked against the index's SHA256), downloading only what is missing.
# Appends the .deb paths to FETCHED.
fetch() {
	local pkg ver arch sum file missing="" list
	# One apt-cache call for all: "package version arch sha256" per line.
	list=$(papt_cache show --no-all-versions "$@" | awk '
		/^Package: / { p = $2 } /^Version: / { v = $2 }
		/^Architecture: / { a = $2 } /^SHA256: / { s = $2 }
		/^$/ { if (p != "") print p, v, a, s; p = "" }
		END { if (p != "") print p, v, a, s }') || die "apt-cache show $* failed"
	for pkg in "$@"; do
		# shellcheck disable=SC2046
		set -- $(printf '%s\n' "$list" | awk -v p="$pkg" '$1 == p { print $2, $3, $4; exit }')
		[ $# -eq 3 ] || die "package $pkg not found in trixie"
		ver=$1 arch=$2 sum=$3
		# apt-get download's file name: the epoch's ':' is URL-encoded.
		file=$DEBS/${pkg}_$(printf '%s' "$ver" | sed 's/:/%3a/')_$arch.deb
		if [ ! -f "$file" ] || [ "$(sha256sum <"$file" | cut -d' ' -f1)" != "$sum" ]; then
			rm -f "$file"
			missing="$missing $pkg=$ver"
		fi
		FETCHED="$FETCHED $file"
	done
	if [ -n "$missing" ]; then
		echo "kernels.sh: downloading$missing" >&2
		# shellcheck disable=SC2086
		(cd "$DEBS" && papt_get download $missing >&2) || die "apt-get download failed"
	fi
	for file in $FETCHED; do
		[ -f "$file" ] || die "apt-get download left no $file"
	done
}

# The exact packages: the kernel the trixie metapackage linux-image-amd64
# depends on, its headers, and whatever -common and kbuild those depend on.
resolve_612() {
	local dep
	dep=$(field linux-image-amd64 Depends | tr ',|' '\n' | sed -n 's/^ *linux-image-\([^ ]*\).*/\1/p' | head -n 1)
	REL=${dep%-unsigned}
	case $REL in
	6.12.*) ;;
	*) die "trixie's linux-image-amd64 depends on linux-image-$dep, expected 6.12" ;;
	esac
	# Signed or unsigned image, whichever the archive has (same vmlinuz either way).
	if [ -n "$(field "linux-image-$REL" Version)" ]; then
		IMAGE_PKG=linux-image-$REL
	elif [ -n "$(field "linux-image-$REL-unsigned" Version)" ]; then
		IMAGE_PKG=linux-image-$REL-unsigned
	else
		die "neither linux-image-$REL nor linux-image-$REL-unsigned in trixie"
	fi
	HEADERS_PKGS="linux-headers-$REL $(field "linux-headers-$REL" Depends | tr ',|' '\n' |
		sed -n 's/^ *\(linux-headers-[^ ]*-common\|linux-kbuild-[^ ]*\).*/\1/p' | sort -u | tr '\n' ' ')"
	case $HEADERS_PKGS in
	*-common*linux-kbuild-* | *linux-kbuild-*-common*) ;;
	*) die "cannot find -common and linux-kbuild in the Depends of linux-headers-$REL" ;;
	esac
}

# The releases the private lists point at; refreshes them first when online.
# Offline with lists from an earlier run: use those (warning).
update_private_lists() {
	# apt-get update exits 0 when it cannot reach the mirror (it only warns
	# "Failed to fetch"), so the log decides.
	if ! papt_get update >"$APTDIR/update.log" 2>&1 ||
		grep -qE '^(E:|W: Failed to fetch|W: Some index files failed)' "$APTDIR/update.log"; then
		if ls "$APTDIR/state/lists/"*Packages* >/dev/null 2>&1; then
			echo "kernels.sh: apt-get update (trixie) failed, using the lists of an earlier run" >&2
		else
			cat "$APTDIR/update.log" >&2
			die "apt-get update of the private trixie lists failed (log above); a mirror that carries trixie can be set with AGILE_DEBIAN_MIRROR=URI"
		fi
	fi
}

prepare_612() {
	local root libs deb ldso libpath tool kdir common d sym
	setup_private_apt
	DEBS=$CACHE/trixie/debs
	mkdir -p "$DEBS"
	update_private_lists
	resolve_612
	echo "kernels.sh: preparing 6.12 ($REL) in $OUT" >&2

	clean_owned
	root=$OUT/root
	libs=$OUT/hostlibs
	FETCHED=""
	# shellcheck disable=SC2086
	fetch "$IMAGE_PKG" $HEADERS_PKGS
	for deb in $FETCHED; do
		dpkg -x "$deb" "$root"
	done
	FETCHED=""
	# shellcheck disable=SC2086
	fetch $TRIXIE_HOST_LIBS
	for deb in $FETCHED; do
		dpkg -x "$deb" "$libs"
	done

	kdir=$root/usr/src/linux-headers-$REL
	common=
	for d in "$root"/usr/src/linux-headers-*-common; do
		[ -d "$d" ] && common=${d##*/}
	done
	if [ ! -f "$kdir/Makefile" ] || [ -z "$common" ]; then
		die "unexpected layout in $root/usr/src"
	fi
	[ -f "$root/boot/vmlinuz-$REL" ] || die "no boot/vmlinuz-$REL in $IMAGE_PKG"

	# Fix 1: the -amd64 headers' Makefile is one line including the -common
	# headers by absolute path (/usr/src/...): point it at the private copy.
	sed -i "s#^include /usr/src/#include $root/usr/src/#" "$kdir/Makefile"
	grep -q "^include $root/usr/src/$common/Makefile" "$kdir/Makefile" ||
		die "could not redirect $kdir/Makefile to the private $common"

	# Fix 2: the config was made with gcc-14; kbuild reads these symbols from
	# auto.conf without re-testing the compiler:
	# - CC_HAS_MIN_FUNCTION_ALIGNMENT makes kbuild pass -fmin-function-alignment,
	#   which gcc-12 lacks; without it kbuild uses -falign-functions instead;
	# - DEBUG_INFO_BTF_MODULES makes modfinal run pahole/resolve_btfids against
	#   vmlinux BTF, needing a new pahole that Debian 12 lacks.  Modules load
	#   fine without BTF.
	# Only auto.conf (what make reads) changes, never autoconf.h (what C
	# reads): C must see the kernel's real configuration, or structures change
	# layout (struct module has BTF fields under DEBUG_INFO_BTF_MODULES; a
	# module built without them fails to load with "Invalid relocation
	# target, existing value is nonzero").
	for sym in CONFIG_CC_HAS_MIN_FUNCTION_ALIGNMENT CONFIG_DEBUG_INFO_BTF_MODULES; do
		sed -i "/^$sym=/d" "$kdir/include/config/auto.conf"
	done

	# Fix 3: kbuild's own ELF tools (fixdep, modpost, objtool, genksyms...) are
	# linked against trixie's glibc (2.38+).  Replace each by a two-line script
	# that runs it through the private trixie ld.so with the private libraries.
	# --argv0 "$0" keeps argv[0] the script's path: Debian's modpost and objtool
	# are dispatchers that exec argv[0] + ".real-<arch>", which is then wrapped
	# too.
	ldso=
	for d in "$libs/usr/lib/x86_64-linux-gnu" "$libs/lib/x86_64-linux-gnu"; do
		[ -e "$d/ld-linux-x86-64.so.2" ] && ldso=$d/ld-linux-x86-64.so.2 && break
	done
	[ -n "$ldso" ] || die "no ld-linux-x86-64.so.2 in the unpacked trixie libc6"
	libpath=$libs/usr/lib/x86_64-linux-gnu:$libs/lib/x86_64-linux-gnu
	find "$root/usr/lib" -path "$root/usr/lib/linux-kbuild-*" -type f -perm -u+x |
		while read -r tool; do
			[ "$(head -c 4 "$tool" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] || continue
			mv "$tool" "$tool.elf"
			# shellcheck disable=SC2016 # $0 and $@ are for the wrapper
			printf '#!/bin/sh\nexec "%s" --library-path "%s" --argv0 "$0" "%s" "$@"\n' \
				"$ldso" "$libpath" "$tool.elf" >"$tool"
			chmod 755 "$tool"
		done
	# The wrapped tools must run here (this catches a wrong loader or library).
	"$kdir/scripts/basic/fixdep" 2>&1 | grep -q Usage ||
		die "wrapped fixdep does not run: $("$kdir/scripts/basic/fixdep" 2>&1 | head -n 3)"

	ln -s "root/boot/vmlinuz-$REL" "$OUT/vmlinuz"
	ln -s "root/usr/src/linux-headers-$REL" "$OUT/kdir"

	# Debian 13's modules are xz-compressed; copy_modules decompresses them.
	copy_modules "$root/usr/lib/modules/$REL"
	extract_vmlinux

	# Fix 4: the headers' .kernelvariables set CC to x86_64-linux-gnu-gcc-14;
	# build with the host's gcc (gcc-12) and no cross prefix.
	write_common "$REL" "CC=gcc CROSS_COMPILE="
}

# ---------------------------------------------------------------------------
# 6.1-debug: built from linux-source-6.1 and cached by debug-kernel.sh

# prepare_61debug <cache entry>: link the entry's pieces into $OUT.
prepare_61debug() {
	local entry=$1 rel
	rel=$(cat "$entry/release")
	clean_owned
	# The bzImage only: see debug-kernel.sh for why no PVH vmlinux.
	ln -s "$entry/bzImage" "$OUT/vmlinuz"
	ln -s "$entry/src" "$OUT/kdir"
	copy_modules "$entry/modules"
	write_common "$rel" ""
}

# ---------------------------------------------------------------------------

# Two builds asking for the same kernel at once (make -j) prepare it once.
mkdir -p "$BUILD/kernels"
exec 8>"$BUILD/kernels/$K.lock"
flock 8

case $K in
6.1)
	REL=$(release_61)
	stamp_ok "$REL" && exit 0
	echo "kernels.sh: preparing 6.1 ($REL) in $OUT" >&2
	prepare_61 "$REL"
	;;
6.12)
	# A stamp and no network needed: skip even the apt lists refresh, so a
	# prepared tree never changes under a build (delete build/kernels/6.12/.stamp to
	# move to a newer trixie kernel).
	if [ -f "$STAMP" ]; then
		REL=$(sed -n 's/.* release=//p' "$STAMP")
		stamp_ok "$REL" && exit 0
	fi
	if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
		die "6.12 needs apt-get and dpkg (Debian)"
	fi
	prepare_612
	;;
6.1-debug)
	# Instant when the cache holds the kernel of this debug.config; the
	# stamp names the cache entry, so a changed fragment relinks.
	ENTRY=$("$(dirname "$0")/debug-kernel.sh") || die "the 6.1-debug kernel could not be built"
	REL="$(cat "$ENTRY/release") entry=$ENTRY"
	stamp_ok "$REL" && exit 0
	echo "kernels.sh: preparing 6.1-debug from $ENTRY" >&2
	prepare_61debug "$ENTRY"
	;;
esac

stamp_text "$REL" >"$STAMP"
echo "kernels.sh: $K ready: $(cat "$OUT/release") in $OUT" >&2
