#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/check-layers.sh - data flows one way (STYLE.md, SPEC §3): a file of
# libagile may include headers of its own layer and of the layers below,
# never of a layer above or of a peer.  The order, lowest first:
#
#   0 common     libagile/src/*.h (sys.h), <agile/error.h>, the uapi header
#                (<agile/uapi.h>, <linux/agile.h>)
#   1 dev        src/dev/, <agile/dev.h>
#   2 kernels    src/kernels/, <agile/kernels.h>, <agile/launch.h>,
#                <agile/retarget.h>, <agile/retarget_types.h> (what
#                agile-retarget's C includes)
#   3 eu         src/eu/, libagile/gpu/ (the device side), <agile/eu.h>,
#                <agile/gpu.h>
#   4 sched      src/sched/, <agile/sched.h>, <agile/offload.h>
#   5 transport  src/transport/ (what coll and segmap both move bytes with)
#   6 coll       src/coll/, <agile/coll.h>, <agile/coll_mpi.h>
#   7 segmap     src/segmap/, <agile/segmap.h>, <agile/segmap_mpi.h> (it
#                reduces a segmented field through coll)
#   8 runtime    src/runtime/, <agile/runtime.h>, <agile/agile.h> (all)
#
# Public headers (libagile/include/agile/) are held to the same order.
# Prints each offending include and exits 1; one line when clean.
set -u
cd "$(dirname "$0")/.." || exit 2

# layer_of NAME: the layer of a folder or public header name ("" unknown).
layer_of() {
	case $1 in
	error | common | sys | version | uapi) echo "0 common" ;;
	dev) echo "1 dev" ;;
	kernels | launch | retarget | retarget_types | retarget_warp) echo "2 kernels" ;;
	eu | gpu) echo "3 eu" ;;
	sched | offload) echo "4 sched" ;;
	transport) echo "5 transport" ;;
	coll | coll_mpi) echo "6 coll" ;;
	segmap | segmap_mpi) echo "7 segmap" ;;
	runtime | agile) echo "8 runtime" ;;
	*) echo "" ;;
	esac
}

# The layer of an included path: "dev/user.h" -> dev, <agile/coll.h> ->
# coll, "sys.h" -> common, "../../gpu/agile_gpu.h" -> eu.
include_layer() {
	local path=$1 base

	case $path in
	agile/*) base=${path#agile/} base=${base%.h} ;;
	linux/agile.h) base=common ;;
	*/*)
		base=${path%/*}
		base=${base##*/}
		;;
	*) base=common ;;
	esac
	layer_of "$base"
}

bad=0
checked=0
shopt -s nullglob
for f in libagile/src/*.[ch] libagile/src/*/*.[ch] libagile/gpu/*.[ch] \
	libagile/gpu/*.cu libagile/include/agile/*.h; do
	case $f in
	libagile/src/*/*)
		d=${f#libagile/src/}
		own=$(layer_of "${d%%/*}")
		;;
	libagile/src/*) own=$(layer_of common) ;;
	libagile/gpu/*) own=$(layer_of gpu) ;;
	libagile/include/agile/*)
		h=${f##*/}
		own=$(layer_of "${h%.h}")
		;;
	esac
	if [ -z "$own" ]; then
		echo "check-layers: $f: in no layer (add its folder to tools/check-layers.sh)"
		bad=1
		continue
	fi
	checked=$((checked + 1))
	while IFS= read -r line; do
		inc=$(sed -E 's/^#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"].*/\1/' <<<"$line")
		case $line in
		*'<'*) case $inc in agile/* | linux/agile.h) ;; *) continue ;; esac ;;
		esac
		theirs=$(include_layer "$inc")
		[ -n "$theirs" ] || continue
		if [ "${theirs%% *}" -gt "${own%% *}" ] ||
			{ [ "${theirs%% *}" -eq "${own%% *}" ] &&
				[ "${theirs#* }" != "${own#* }" ]; }; then
			echo "check-layers: $f (${own#* }) includes $inc (${theirs#* })"
			bad=1
		fi
	done < <(grep -E '^#[[:space:]]*include' "$f")
done
if [ $bad -ne 0 ]; then
	echo "check-layers: FAILED: a layer includes one above it or a peer" >&2
	exit 1
fi
echo "check-layers: clean ($checked files: dev < kernels < eu < sched < transport < coll < segmap < runtime)"
