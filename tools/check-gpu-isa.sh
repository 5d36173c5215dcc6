#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/check-gpu-isa.sh - read back the persistent GPU kernel's generated
# code and check the memory ordering of its doorbell protocol (docs/gpu.md,
# "Memory ordering"), so that it cannot silently regress.
#
# Usage: tools/check-gpu-isa.sh ptx FILE.ptx...
#        tools/check-gpu-isa.sh hip FILE.co GFX...
#
# ptx: PTX of libagile/gpu/persistent.cu (nvcc -ptx, one file per
# compute_XX).  hip: the offload bundle hipcc --genco writes, unbundled per
# gfx target and disassembled with the LLVM tools hipcc's clang comes with
# (clang-offload-bundler, llvm-objdump).  In agile_gpu_persistent it
# asserts, for each:
#
#   1. the doorbell is polled inside a loop (a poll load lies under a
#      backward branch) with system-scope loads that no cache keeps:
#        PTX     ld.relaxed.sys (or ld.volatile), never ld.acquire;
#        gfx9    global_load_dword ... glc      (gfx908, gfx90a: glc is
#                                                the system-scope load)
#        gfx10+  global_load_dword ... glc dlc  (gfx1030)
#        gfx94x  global_load_dword ... sc0 sc1
#      and that the loop holds no acquire (no cache invalidation per poll);
#   2. exactly one system-scope acquire after the loop, before the first
#      read of the task register:
#        PTX     one fence.acq_rel.sys / fence.sc.sys / membar.sys
#        gfx908  buffer_wbinvl1_vol    gfx90a  buffer_invl2
#        gfx10+  buffer_gl1_inv        gfx94x  buffer_inv sc1
#      (one such invalidation in the whole kernel: the work-group
#      barrier's own acquire is work-group scope and never has one);
#   3. exactly one doorbell store (IDLE), and exactly one system-scope
#      release between the last other store and it:
#        PTX     one fence, then st.relaxed.sys; no st.release
#        gfx908  s_waitcnt vmcnt(0)    gfx90a  buffer_wbl2
#        gfx10+  s_waitcnt_vscnt null, 0x0    gfx94x  buffer_wbl2
#      and no acquire invalidation there (a full fence would add one);
#   4. the arguments are read from the task register (host memory) at one
#      site (PTX: and AMD where the work-group has several waves: before
#      the first work-group barrier), i.e. by lane 0 while it stages them
#      into shared memory; the lanes read the shared copy.
#
# Exit 0 when every file passes, 1 otherwise.

set -u

fails=0
fail() {
	echo "check-gpu-isa: FAIL: $*"
	fails=$((fails + 1))
}

# The body of kernel agile_gpu_persistent in PTX, one instruction a line.
ptx_body() {
	awk '/\.entry agile_gpu_persistent\(/ { f = 1 } f { print } f && /^}/ { exit }' "$1"
}

check_ptx() {
	local file=$1 body out

	body=$(ptx_body "$file")
	if [ -z "$body" ]; then
		fail "$file: no agile_gpu_persistent"
		return
	fi
	if ! out=$(printf '%s\n' "$body" | awk '
		function bad(m) { print m; nbad++ }
		{ line[NR] = $0 }
		/^\$L__[A-Za-z0-9_]+:/ { lab = $1; sub(":", "", lab); at[lab] = NR }
		/ld\.(relaxed|acquire)\.sys|ld\.volatile/ {
			npoll++; poll[npoll] = NR
			if ($0 ~ /\.acquire/) bad("doorbell polled with an acquire load: " $0)
		}
		/fence\.(acq_rel|sc|acquire|release)\.sys|membar\.sys/ { nf++; fence[nf] = NR }
		/(st|atom|red)\.release|ld\.acquire/ { bad("ordered load/store (a hidden fence): " $0) }
		/st\.(relaxed\.sys|volatile)/ { nst++; st[nst] = NR }
		/ld\.global/ && !base && nf >= 1 && NR > fence[1] {
			b = $0; sub(/.*\[/, "", b); sub(/[]+].*/, "", b); base = b
		}
		/bar\.sync|barrier\.sync/ && !bar1 { bar1 = NR }
		/[ \t]bra(\.uni)?[ \t]/ { n = $NF; sub(";", "", n); br[NR] = n }
		END {
			if (!npoll) { bad("no system-scope relaxed doorbell load"); exit }
			inloop = 0
			for (i = 1; i <= npoll; i++)
				for (b in br)
					if (b + 0 > poll[i] && (br[b] in at) && at[br[b]] <= poll[i])
						inloop = 1
			if (!inloop) bad("no doorbell load inside a loop")
			if (nf != 2) bad("expected 2 system-scope fences (acquire, release), found " nf + 0)
			if (nf >= 1 && fence[1] < poll[npoll])
				bad("a system-scope fence comes before the poll loop ends (line " fence[1] ")")
			if (nst != 1) bad("expected 1 system-scope store (IDLE), found " nst + 0)
			if (nst >= 1 && nf >= 2) {
				if (fence[nf] > st[1]) bad("no fence before the IDLE store")
				for (l = fence[nf] + 1; l < st[1]; l++)
					if (line[l] ~ /st\.global|st\.u|st\.v/)
						bad("a store between the release fence and IDLE: " line[l])
			}
			if (!base) bad("no task-register read after the acquire fence")
			else
				for (l = 1; l <= NR; l++)
					if (line[l] ~ ("ld\\.global[^[]*\\[" base "\\+(3[2-9]|[4-9][0-9])") && l > bar1)
						bad("argument read from host memory after the barrier (every lane): " line[l])
			exit nbad > 0
		}'); then
		fail "$file:"
		printf '%s\n' "$out" | sed 's/^/    /'
	else
		echo "check-gpu-isa: ok: $file (PTX)"
	fi
}

# The LLVM tools of the clang hipcc runs: $HIP_CLANG_PATH, else the folder
# hipcc -### names (clang-offload-bundler's options differ between LLVM
# versions, so not any LLVM will do), else the newest found.
find_llvm_tool() {
	local d dirs=()

	if [ -z "${HIP_CLANG_PATH:-}" ] && command -v hipcc >/dev/null; then
		HIP_CLANG_PATH=$(hipcc -### -x hip -c /dev/null -o /dev/null \
			--offload-arch=gfx908 2>&1 |
			sed -n 's|^ *"\(/[^"]*\)/clang".*|\1|p' | head -n 1)
	fi
	for d in /usr/lib/llvm-*/bin; do
		dirs=("$d" "${dirs[@]}")
	done
	for d in ${HIP_CLANG_PATH:-} /opt/rocm/llvm/bin /opt/rocm*/llvm/bin \
		"${dirs[@]}"; do
		if [ -x "$d/$1" ]; then
			echo "$d/$1"
			return 0
		fi
	done
	command -v "$1"
}

check_gfx() {
	local co=$1 gfx=$2 tmp=$3 s poll_bits acq rel

	case $gfx in
	gfx94*) poll_bits='sc0 sc1' acq='buffer_inv sc1' rel='buffer_wbl2' ;;
	gfx90a) poll_bits='glc' acq='buffer_invl2' rel='buffer_wbl2' ;;
	gfx9*) poll_bits='glc' acq='buffer_wbinvl1_vol' rel='s_waitcnt vmcnt\\(0\\)' ;;
	gfx1*) poll_bits='glc dlc' acq='buffer_gl1_inv' rel='s_waitcnt_vscnt null, 0x0' ;;
	*)
		fail "$gfx: no rules for this target"
		return
		;;
	esac
	if ! "$bundler" --unbundle --type=o --input="$co" \
		--targets="hipv4-amdgcn-amd-amdhsa--$gfx" \
		--output="$tmp/$gfx.o" ||
		! "$objdump" -d --no-show-raw-insn --mcpu="$gfx" "$tmp/$gfx.o" \
			>"$tmp/$gfx.s"; then
		fail "$co: cannot disassemble $gfx"
		return
	fi
	s=$(awk '/<agile_gpu_persistent>:/ { f = 1; next } f && /^$/ { exit } f' "$tmp/$gfx.s")
	if [ -z "$s" ]; then
		fail "$co $gfx: no agile_gpu_persistent"
		return
	fi
	if ! out=$(printf '%s\n' "$s" | awk -v bits="$poll_bits" -v acq="$acq" -v rel="$rel" '
		function bad(m) { print m; nbad++ }
		function hex(h,  i, n) {
			n = 0; h = tolower(h); sub(/^0x/, "", h)
			for (i = 1; i <= length(h); i++) n = n * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
			return n
		}
		function saddr(l,  a) { a = l; sub(/^[ \t]*[a-z_0-9]+ [^,]+, [^,]+, /, "", a); sub(/ .*/, "", a); return a }
		{
			insn = $0; sub(/[ \t]*\/\/.*/, "", insn); line[NR] = insn
			addr[NR] = -1
			if (match($0, /\/\/ [0-9A-F]+:/)) addr[NR] = hex(substr($0, RSTART + 3, RLENGTH - 4))
			if (match($0, /<agile_gpu_persistent\+0x[0-9a-f]+>/)) tgt[NR] = hex(substr($0, RSTART + 22, RLENGTH - 23))
		}
		NR == 1 { base0 = addr[1] }
		# The doorbell: the first global load with cache bits.
		/global_load_dword / && !db && / (glc|sc0|sc1)/ { db = saddr(line[NR]) }
		db && line[NR] ~ /global_load_dword / && saddr(line[NR]) == db {
			npoll++; poll[npoll] = NR
			if (line[NR] !~ (" " bits "$") && line[NR] !~ (" " bits " "))
				bad("doorbell load without \"" bits "\": " line[NR])
		}
		line[NR] ~ acq { nacq++; acql[nacq] = NR }
		db && line[NR] ~ /global_store_dword / && saddr(line[NR]) == db { nst++; st[nst] = NR }
		/s_barrier/ && !bar1 { bar1 = NR }
		END {
			if (!npoll) { bad("no doorbell load with cache bits"); exit 1 }
			inloop = 0
			for (l in tgt)
				for (i = 1; i <= npoll; i++)
					if (l + 0 > poll[i] && tgt[l] + base0 <= addr[poll[i]] && line[l] ~ /s_c?branch/)
						inloop = 1
			if (!inloop) bad("no doorbell load inside a loop")
			if (nacq != 1) bad("expected 1 system-scope acquire (" acq "), found " nacq + 0)
			for (i = 1; i <= nacq; i++)
				if (acql[i] < poll[npoll]) bad("acquire inside the poll loop: line " acql[i])
			# The task register: the first other global load after the poll.
			for (l = poll[npoll] + 1; l <= NR; l++)
				if (line[l] ~ /global_load_dword/ && saddr(line[l]) != db) { reg = saddr(line[l]); break }
			if (!reg) bad("no task-register read after the poll")
			else {
				ok = 0
				for (i = 1; i <= nacq; i++)
					if (acql[i] > poll[npoll] && acql[i] < l) ok = 1
				if (!ok) bad("task register read before the acquire: " line[l])
			}
			# The arguments (offset 32 on): each byte loaded at one site,
			# before the first barrier where there is one (a 64-lane
			# work-group is one wave on gfx9, which needs none).
			for (l = 1; l <= NR && reg; l++) {
				if (line[l] !~ /global_load_dword/ || saddr(line[l]) != reg) continue
				off = 0
				if (match(line[l], /offset:[0-9]+/)) off = substr(line[l], RSTART + 7, RLENGTH - 7) + 0
				if (off < 32) continue
				w = 4
				if (match(line[l], /global_load_dwordx[0-9]/)) w = 4 * substr(line[l], RSTART + 18, 1)
				if (bar1 && l > bar1)
					bad("argument read from host memory after the barrier (every lane): " line[l])
				for (o = off; o < off + w; o++)
					if (o in seen) { bad("argument read from host memory at two sites: " line[l]); break }
				for (o = off; o < off + w; o++) seen[o] = 1
			}
			if (nst != 1) { bad("expected 1 doorbell store (IDLE), found " nst + 0); exit 1 }
			for (l = st[1] - 1; l > 0 && line[l] !~ /(global|flat|buffer)_store/; l--) {
				if (line[l] ~ rel) nrel++
				if (line[l] ~ acq) bad("an acquire (a full fence) before the IDLE store: " line[l])
			}
			if (nrel != 1) bad("expected 1 system-scope release (" rel ") before the IDLE store, found " nrel + 0)
			exit nbad > 0
		}'); then
		fail "$co $gfx:"
		printf '%s\n' "$out" | sed 's/^/    /'
	else
		echo "check-gpu-isa: ok: $co $gfx"
	fi
}

case ${1:-} in
ptx)
	shift
	for f in "$@"; do
		check_ptx "$f"
	done
	;;
hip)
	shift
	co=$1
	shift
	bundler=$(find_llvm_tool clang-offload-bundler)
	objdump=$(find_llvm_tool llvm-objdump)
	if [ -z "$bundler" ] || [ -z "$objdump" ]; then
		echo "check-gpu-isa: SKIP: no clang-offload-bundler/llvm-objdump for $co"
		exit 0
	fi
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	for gfx in "$@"; do
		check_gfx "$co" "$gfx" "$tmp"
	done
	;;
*)
	echo "usage: $0 ptx FILE.ptx... | hip FILE.co GFX..." >&2
	exit 2
	;;
esac
[ $fails -eq 0 ]
