#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/test-dkms.sh [K...] - the DKMS package of the module (make
# dkms-src: Kbuild, kmod/, uapi/ and dkms.conf from dkms.conf.in) added
# and built by dkms itself for each guest kernel K (default: $KERNELS,
# else 6.1 6.12), against the headers tools/vm/kernels.sh prepared
# (build/kernels/<K>/kbuild.env: KDIR, KRELEASE, KMAKE_ARGS, passed as
# -k, --kernelsourcedir and dkms.conf's AGILE_KMAKE_ARGS).
#
# dkms works in a private tree (--dkmstree, --sourcetree, --installtree
# under build/dkms/tree/), and signs with a key made there (mok_signing_key
# and mok_certificate: dkms would make /var/lib/dkms/mok.key otherwise),
# so the system's dkms state is never touched.  Only add and build: never
# install, nothing is loaded.  Checks agile.ko's vermagic is K's release,
# its modinfo version is VERSION (kmod/agile_version.h, made by make
# dkms-src) and that dkms status says "built".  TAP on stdout; about 15 s a kernel
# on two cores.
set -u

repo=$(cd "$(dirname "$0")/.." && pwd)
make=${MAKE:-make}
# shellcheck disable=SC2206 # a list of words
kernels=(${@:-${KERNELS:-6.1 6.12}})
version=$(sed -n 's/^VERSION := //p' "$repo/libagile/Makefile")
tree=$repo/build/dkms/tree

n=0
failed=0
ok() {
	local name=$1 out
	shift
	n=$((n + 1))
	if out=$("$@" 2>&1); then
		echo "ok $n - $name"
	else
		failed=$((failed + 1))
		echo "not ok $n - $name"
		printf '%s\n' "$out" | tail -n 25 | sed 's/^/# /'
	fi
}

rm -rf "$tree"
mkdir -p "$tree/dkms" "$tree/src" "$tree/install"

# dkms with the private tree, and its signing key there.
pdkms() {
	mok_signing_key=$tree/mok.key mok_certificate=$tree/mok.pub \
		dkms "$@" --dkmstree "$tree/dkms" --sourcetree "$tree/src" \
		--installtree "$tree/install"
}

src_tree() {
	"$make" --no-print-directory -C "$repo" dkms-src &&
		cp -R "$repo/build/dkms/agile-$version" "$tree/src/" &&
		grep -qx "PACKAGE_VERSION=\"$version\"" "$tree/src/agile-$version/dkms.conf"
}
ok "make dkms-src: /usr/src/agile-$version's tree, dkms.conf version $version" src_tree
# dkms matches BUILD_EXCLUSIVE_KERNEL with bash's =~: 6.1 and newer only.
exclusive() {
	local re k
	re=$(sed -n 's/^BUILD_EXCLUSIVE_KERNEL="\(.*\)"$/\1/p' \
		"$tree/src/agile-$version/dkms.conf")
	[ -n "$re" ] || return 1
	for k in 6.1.0-40-amd64 6.12.48+deb13-amd64 6.9.1 6.19.0 7.0.0 10.2.0; do
		[[ $k =~ $re ]] || { echo "$k refused"; return 1; }
	done
	for k in 5.15.0-100-generic 6.0.19 4.19.0 5.10.0; do
		[[ $k =~ $re ]] && { echo "$k accepted"; return 1; }
	done
	return 0
}
ok "dkms.conf's BUILD_EXCLUSIVE_KERNEL: 6.1 and newer, not 6.0 or 5.x" exclusive
ok "dkms add agile/$version (private dkms tree)" pdkms add -m agile -v "$version"

build_for() {
	local k=$1 env_file=$repo/build/kernels/$1/kbuild.env ko
	local KDIR='' KRELEASE='' KMAKE_ARGS=''

	if [ ! -f "$env_file" ]; then
		"$repo/tools/vm/kernels.sh" "$k" || return 1
	fi
	# shellcheck source=/dev/null
	. "$env_file"
	AGILE_KMAKE_ARGS=$KMAKE_ARGS pdkms build -m agile -v "$version" \
		-k "$KRELEASE" --kernelsourcedir "$KDIR" || {
		cat "$tree/dkms/agile/$version/build/make.log" 2>/dev/null
		return 1
	}
	ko=$(find "$tree/dkms/agile/$version/$KRELEASE" -name 'agile.ko*' | head -n 1)
	[ -n "$ko" ] || {
		echo "no agile.ko under $tree/dkms/agile/$version/$KRELEASE"
		return 1
	}
	case $ko in
	*.xz) xz -dc "$ko" >"$tree/agile-$k.ko" ;;
	*.zst) zstd -qdc "$ko" >"$tree/agile-$k.ko" ;;
	*) cp "$ko" "$tree/agile-$k.ko" ;;
	esac
	modinfo -F vermagic "$tree/agile-$k.ko" | grep -q "^$KRELEASE " || {
		echo "vermagic: $(modinfo -F vermagic "$tree/agile-$k.ko"), not $KRELEASE"
		return 1
	}
	[ "$(modinfo -F version "$tree/agile-$k.ko")" = "$version" ] || {
		echo "modinfo version: '$(modinfo -F version "$tree/agile-$k.ko")', not $version"
		return 1
	}
	pdkms status -m agile -v "$version" -k "$KRELEASE" | grep -q ": built" || {
		pdkms status -m agile -v "$version" -k "$KRELEASE"
		return 1
	}
}
for k in "${kernels[@]}"; do
	ok "dkms build agile/$version for Linux $k: agile.ko with its vermagic and version, status built" \
		build_for "$k"
done

echo "1..$n"
[ $failed = 0 ]
