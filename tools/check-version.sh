#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/check-version.sh - libagile's version is written in three places
# that must agree: VERSION in libagile/Makefile (major.minor.patch: the
# shared library's file name and agile.pc), AGILE_VERSION_MAJOR/MINOR in
# libagile/include/agile/version.h (compiled into agile_version_*), and
# the newest node of libagile/src/libagile.map (AGILE_<major>.<minor>).
# And the packages' version, debian/changelog's newest entry, is VERSION
# itself (dkms.conf and the module's MODULE_VERSION, kmod/agile_version.h.in,
# get VERSION from the Makefile by sed where the module is built).
# Prints one line when they do; names them and exits 1 when not.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
lib=$repo/libagile

make_version=$(sed -n 's/^VERSION := \([0-9]*\.[0-9]*\)\.[0-9]*$/\1/p' \
	"$lib/Makefile")
header_major=$(sed -n 's/^#define AGILE_VERSION_MAJOR \([0-9]*\)$/\1/p' \
	"$lib/include/agile/version.h")
header_minor=$(sed -n 's/^#define AGILE_VERSION_MINOR \([0-9]*\)$/\1/p' \
	"$lib/include/agile/version.h")
# The last node opened in the map is the newest (each inherits the one
# before it).
map_version=$(sed -n 's/^AGILE_\([0-9]*\.[0-9]*\) {$/\1/p' \
	"$lib/src/libagile.map" | tail -n 1)

header_version=$header_major.$header_minor
full_version=$(sed -n 's/^VERSION := //p' "$lib/Makefile")
deb_version=$(sed -n '1s/^agile (\([^)]*\)).*/\1/p' "$repo/debian/changelog")
if [ -z "$make_version" ] || [ -z "$header_major" ] ||
	[ -z "$header_minor" ] || [ -z "$map_version" ] ||
	[ "$make_version" != "$header_version" ] ||
	[ "$make_version" != "$map_version" ] ||
	[ "$full_version" != "$deb_version" ]; then
	echo "check-version: libagile's versions disagree:" >&2
	echo "  libagile/Makefile VERSION:           ${make_version:-?}" >&2
	echo "  agile/version.h AGILE_VERSION_*:     $header_version" >&2
	echo "  libagile.map newest node AGILE_x.y: ${map_version:-?}" >&2
	echo "  debian/changelog newest entry:       ${deb_version:-?} (VERSION $full_version)" >&2
	exit 1
fi
echo "check-version: libagile $make_version (Makefile, version.h, libagile.map, debian/changelog)"
