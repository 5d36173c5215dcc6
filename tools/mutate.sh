#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/mutate.sh [NAME...] - `make mutate`: do the tests catch a broken agile?
#
# Each mutant in tools/mutants.txt breaks one behaviour the test suite claims
# to check (no steals, no release fence, no sleeper wake, no EPIPE when a
# peer dies, no reserved-field check, ...) by replacing one exact line of one
# source file.  For every mutant this script copies the tree into
# build/mutate/tree (its own build/ is kept between runs, so only what the
# mutant touches is rebuilt), applies the change, builds what the mutant's
# suite needs and runs that suite.  A mutant is "caught" when the suite
# fails, "SURVIVED" when it passes: then the suite does not test what it
# claims, and make mutate fails.  Before any mutant, every suite in use runs
# once on the unmutated copy and must pass, so a catch is never a flaky or
# broken test.  A mutant whose line is not found exactly once is "stale"
# (the code moved on; update tools/mutants.txt), and one that does not
# build proves nothing: both fail make mutate too.
#
# Suites (the "suite" key of a mutant):
#   lib T...      make -C libagile check TESTS="T..." (native, user backend)
#   tsan T...     the same under ThreadSanitizer (make -C libagile check-tsan):
#                 what x86's strong ordering hides from a plain run
#   kmod P...     agile.ko for 6.1, agilectl and agile-demo, and the kmod
#                 selftest programs P... in the 6.1 guest
#                 (selftests/kmod/run.sh, AGILE_KMOD_PROGRAMS)
#   guestlib T... agile.ko for 6.1 and the libagile selftests T... on the kmod
#                 backend in the 6.1 guest (selftests/libagile/guest.sh)
#   mpi NP...     make -C libagile check-mpi MPI_NP="NP..." (selftests/libagile/
#                 coll-mpi.c under mpirun, NP processes each, no network
#                 namespace run)
#   gpu           the GPU code objects and PTX (make -C libagile/gpu code)
#                 and their read-back (check-isa: tools/check-gpu-isa.sh);
#                 needs hipcc and nvcc, or it cannot fail
#   kdebug P...   agile.ko for the 6.1-debug kernel (KASAN, lockdep, kmemleak,
#                 DEBUG_ATOMIC_SLEEP: tools/vm/debug.config) and the kmod
#                 programs P... in its guest: caught when a test fails or
#                 when a detector reports (init's splat, kmemleak and lockdep
#                 checks); the failing tests column shows the report
#
# Results: a table on stdout and in build/mutate/table.md (mutant, what it
# breaks, the suite, the verdict, the failing tests), the logs beside it.
# NAME... runs only those mutants.  AGILE_MUTATE_TEST_TIMEOUT (default 180)
# is how long one test program may run before it fails as hung.
set -u
cd "$(dirname "$0")/.." || exit 2
REPO=$PWD
OUT=$REPO/build/mutate
TREE=$OUT/tree
LIST=$REPO/tools/mutants.txt
make=${MAKE:-make}
# A mutant may make a test hang (no wake-ups, say): each test program gets
# this many seconds (AGILE_TEST_TIMEOUT of the runners), then fails.
TEST_TIMEOUT=${AGILE_MUTATE_TEST_TIMEOUT:-180}

die() {
	echo "mutate: $*" >&2
	exit 2
}

[ -f "$LIST" ] || die "$LIST missing"
mkdir -p "$OUT/logs"

# ---------------------------------------------------------------------------
# the mutant list: blocks of "key = value" lines under "[name]"

names=()
declare -A m_file m_find m_replace m_suite m_what
parse_list() {
	local line name="" key value
	while IFS= read -r line || [ -n "$line" ]; do
		case $line in
		'#'* | '') continue ;;
		'['*']')
			name=${line#[}
			name=${name%]}
			names+=("$name")
			continue
			;;
		esac
		[ -n "$name" ] || die "$LIST: '$line' before any [name]"
		key=${line%% = *}
		value=${line#* = }
		[ "$key" != "$line" ] || die "$LIST: '$line' is not 'key = value'"
		case $key in
		file) m_file[$name]=$value ;;
		# A mutant may change several lines of its file: each find is
		# paired with the replace that follows it.
		find) m_find[$name]+=$value$'\x1f' ;;
		replace) m_replace[$name]+=$value$'\x1f' ;;
		suite) m_suite[$name]=$value ;;
		what) m_what[$name]=$value ;;
		*) die "$LIST: unknown key '$key' in [$name]" ;;
		esac
	done <"$LIST"
	for name in "${names[@]}"; do
		for key in file find suite what; do
			case $key in
			file) value=${m_file[$name]:-} ;;
			find) value=${m_find[$name]:-} ;;
			suite) value=${m_suite[$name]:-} ;;
			what) value=${m_what[$name]:-} ;;
			esac
			[ -n "$value" ] || die "$LIST: [$name] has no $key"
		done
	done
}
parse_list

selected=("${names[@]}")
if [ $# -gt 0 ]; then
	selected=("$@")
	for name in "${selected[@]}"; do
		[ -n "${m_file[$name]:-}" ] || die "no mutant '$name' in $LIST"
	done
fi

# ---------------------------------------------------------------------------
# the copy of the tree

# sync_tree: the tracked and the untracked-but-not-ignored files, as they are
# in the working tree, into $TREE (its build/ stays).  Only files whose
# content differs are copied, and they get a new mtime, so make rebuilds what
# they feed and nothing else (a mutant left behind by an interrupted run is
# replaced and rebuilt too).
sync_tree() {
	local f
	mkdir -p "$TREE"
	while IFS= read -r -d '' f; do
		[ -f "$f" ] || continue
		cmp -s "$f" "$TREE/$f" && continue
		mkdir -p "$TREE/$(dirname "$f")"
		cp "$f" "$TREE/$f" || die "could not copy $f to $TREE"
	done < <(git ls-files -z --cached --others --exclude-standard)
}

# count_matches <file> <line>: how many lines of <file> are exactly <line>.
count_matches() {
	LINE=$2 awk 'BEGIN { want = ENVIRON["LINE"] } $0 == want { n++ } END { print n + 0 }' "$1"
}

# apply <name>: replace the mutant's lines in the copy.  1 when stale: a
# line to replace is not there exactly once, or a find has no replace.
apply() {
	local name=$1 file=$TREE/${m_file[$1]} finds replaces i
	[ -f "$file" ] || return 1
	IFS=$'\x1f' read -r -d '' -a finds <<<"${m_find[$name]}" || true
	IFS=$'\x1f' read -r -d '' -a replaces <<<"${m_replace[$name]:-}" || true
	# The here-string adds a newline after the last separator.
	[ "${finds[-1]}" = $'\n' ] && unset 'finds[-1]'
	[ "${#replaces[@]}" -gt 0 ] && [ "${replaces[-1]}" = $'\n' ] &&
		unset 'replaces[-1]'
	[ "${#finds[@]}" = "${#replaces[@]}" ] || return 1
	for i in "${!finds[@]}"; do
		[ "$(count_matches "$file" "${finds[$i]}")" = 1 ] || return 1
	done
	for i in "${!finds[@]}"; do
		LINE=${finds[$i]} NEW=${replaces[$i]} awk '
			BEGIN { want = ENVIRON["LINE"]; repl = ENVIRON["NEW"] }
			$0 == want { print repl; next } { print }' "$file" \
			>"$file.mutant" && mv "$file.mutant" "$file" || return 1
	done
}

# restore <name>: the mutated file back from the working tree.
restore() {
	cp "$REPO/${m_file[$1]}" "$TREE/${m_file[$1]}"
}

# ---------------------------------------------------------------------------
# suites

# guest_script <script> <exports...>: a copy of a guest script that sets
# environment variables first (the guest has no other way to get them).
guest_script() {
	local src=$1 dst
	shift
	dst=$OUT/guest-$(basename "$src")
	{
		echo '#!/bin/sh'
		for kv in "$@"; do printf 'export %q\n' "$kv"; done
		tail -n +2 "$src"
	} >"$dst"
	chmod +x "$dst"
	echo "$dst"
}

# build_suite <log> <suite words...>: build what the suite runs; 0 when
# it builds.  A mutant that does not build proves nothing about the tests.
build_suite() {
	local log=$1 kind=$2
	shift 2
	case $kind in
	lib)
		# The GPU code objects too: the stand-in runtime's tests
		# (eu-gpu*) skip without them.  Built once, then only when a
		# mutant touches the GPU code.
		(cd "$TREE" && { $make --no-print-directory -C libagile/gpu \
			code || true; } &&
			$make --no-print-directory -C libagile tests \
				TESTS="$*") >"$log" 2>&1 ;;
	tsan)
		(cd "$TREE" && { $make --no-print-directory -C libagile/gpu \
			code || true; } &&
			$make --no-print-directory -C libagile tsan \
				TESTS="$*") >"$log" 2>&1 ;;
	mpi)
		(cd "$TREE" && $make --no-print-directory -C libagile \
			mpi-tests) >"$log" 2>&1 ;;
	kmod)
		# agilectl_test drives the static agilectl and agile-demo.
		(cd "$TREE" && tools/build-kmod.sh 6.1 &&
			$make --no-print-directory -C selftests/kmod \
				OUT="$TREE/build/selftests/kmod" &&
			$make --no-print-directory \
				"$TREE/build/tools/agilectl" \
				"$TREE/build/tools/agile-demo") >"$log" 2>&1 ;;
	guestlib)
		(cd "$TREE" && tools/build-kmod.sh 6.1 &&
			$make --no-print-directory -C libagile guest-tests \
				TESTS="$*") >"$log" 2>&1 ;;
	gpu)
		(cd "$TREE" && $make --no-print-directory -C libagile/gpu \
			code) >"$log" 2>&1 ;;
	kdebug)
		(cd "$TREE" && tools/vm/kernels.sh 6.1-debug &&
			tools/build-kmod.sh 6.1-debug &&
			$make --no-print-directory -C selftests/kmod \
				OUT="$TREE/build/selftests/kmod") >"$log" 2>&1 ;;
	*)
		echo "unknown suite kind '$kind'" >"$log"
		return 1
		;;
	esac
}

# run_suite <log> <suite words...>: run a built suite; 0 when it passes.
# Prints the failing tests (the "not ok" lines) to <log>.fails.
run_suite() {
	local log=$1 kind=$2 script rc target
	shift 2
	: >"$log.fails"
	case $kind in
	lib | tsan)
		[ "$kind" = lib ] && target=check || target=check-tsan
		(cd "$TREE" && AGILE_TEST_TIMEOUT=$TEST_TIMEOUT \
			$make --no-print-directory -C libagile "$target" \
			TESTS="$*") >>"$log" 2>&1
		rc=$?
		grep -E '^not ok|FAILED' "$log" >"$log.fails"
		;;
	mpi)
		(cd "$TREE" && COLL_MPI_NETNS="" COLL_MPI_TIMEOUT=$TEST_TIMEOUT \
			$make --no-print-directory -C libagile check-mpi \
			MPI_NP="$*") >>"$log" 2>&1
		rc=$?
		grep -E '^not ok' "$log" >"$log.fails"
		;;
	gpu)
		(cd "$TREE" && $make --no-print-directory -C libagile/gpu \
			check-isa) >>"$log" 2>&1
		rc=$?
		grep -E 'check-gpu-isa: FAIL|^    ' "$log" >"$log.fails"
		;;
	kmod)
		script=$(guest_script "$TREE/selftests/kmod/run.sh" \
			"AGILE_KMOD_PROGRAMS=$*" "AGILE_TEST_TIMEOUT=$TEST_TIMEOUT")
		(cd "$TREE" && tools/vm/run-guest.sh 6.1 "$script") >>"$log" 2>&1
		rc=$?
		grep -E '^not ok' "$TREE/build/vm/6.1/guest.tap" >"$log.fails" 2>/dev/null
		;;
	guestlib)
		script=$(guest_script "$TREE/selftests/libagile/guest.sh" \
			"AGILE_LIBAGILE_PROGRAMS=$*" "AGILE_BACKENDS=kmod" \
			"AGILE_TEST_TIMEOUT=$TEST_TIMEOUT")
		(cd "$TREE" && tools/vm/run-guest.sh 6.1 "$script") >>"$log" 2>&1
		rc=$?
		grep -E '^not ok' "$TREE/build/vm/6.1/guest.tap" >"$log.fails" 2>/dev/null
		;;
	kdebug)
		script=$(guest_script "$TREE/selftests/kmod/run.sh" \
			"AGILE_KMOD_PROGRAMS=$*" "AGILE_TEST_TIMEOUT=$TEST_TIMEOUT")
		(cd "$TREE" && tools/vm/run-guest.sh 6.1-debug "$script") >>"$log" 2>&1
		rc=$?
		# A failed run: the detector's first lines say what it saw.
		{
			grep -E '^not ok' "$TREE/build/vm/6.1-debug/guest.tap" 2>/dev/null
			[ "$rc" = 0 ] || grep -m 3 -oE '(BUG: [A-Za-z].*|WARNING: [a-zA-Z].*|UBSAN: .*|unreferenced object.*|AGILE-INIT: (lockdep|kmemleak) .*)' "$log"
		} >"$log.fails"
		;;
	esac
	[ "$rc" = 0 ] && [ ! -s "$log.fails" ]
}

# ---------------------------------------------------------------------------
# baseline, then the mutants

sync_tree
(cd "$TREE" && tools/vm/kernels.sh 6.1 && tools/extract-kernel-src.sh) \
	>"$OUT/logs/prepare.log" 2>&1 || die "preparing the 6.1 kernel failed: see $OUT/logs/prepare.log"

declare -A baseline_done
for name in "${selected[@]}"; do
	suite=${m_suite[$name]}
	[ -z "${baseline_done[$suite]:-}" ] || continue
	baseline_done[$suite]=1
	log=$OUT/logs/baseline-$(printf '%s' "$suite" | tr -c 'A-Za-z0-9_-' '_').log
	echo "mutate: baseline: $suite"
	# shellcheck disable=SC2086 # the suite is words
	if ! build_suite "$log" $suite || ! run_suite "$log" $suite; then
		echo "mutate: the unmutated tree fails '$suite' (see $log):" >&2
		if [ -s "$log.fails" ]; then cat "$log.fails" >&2; else tail -n 20 "$log" >&2; fi
		exit 1
	fi
done

table=$OUT/table.md
{
	echo "| mutant | what it breaks | suite | verdict | failing tests |"
	echo "|---|---|---|---|---|"
} >"$table"
survived=0
for name in "${selected[@]}"; do
	log=$OUT/logs/$name.log
	echo "mutate: $name (${m_file[$name]})"
	if ! apply "$name"; then
		verdict=stale
		fails="the line to replace is not in ${m_file[$name]} exactly once"
		survived=$((survived + 1))
	else
		# shellcheck disable=SC2086 # the suite is words
		if ! build_suite "$log" ${m_suite[$name]}; then
			verdict="does not build"
			fails="see $(basename "$log")"
			survived=$((survived + 1))
		elif run_suite "$log" ${m_suite[$name]}; then
			verdict=SURVIVED
			fails="-"
			survived=$((survived + 1))
		else
			verdict=caught
			fails=$(sed -e 's/^not ok [0-9]* *-* *//' -e 's/|/\\|/g' "$log.fails" |
				head -n 4 | paste -sd ';' -)
			[ -n "$fails" ] || fails="build or run failed: see $(basename "$log")"
		fi
		restore "$name"
	fi
	printf '| %s | %s | %s | %s | %s |\n' "$name" "${m_what[$name]}" \
		"${m_suite[$name]}" "$verdict" "$fails" >>"$table"
done
# The tree is left unmutated, so its build is good for the next run.
cat "$table"
echo "mutate: ${#selected[@]} mutants, $((${#selected[@]} - survived)) caught," \
	"$survived survived or stale; logs in $OUT/logs"
[ $survived = 0 ]
