#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/test-archives.sh - the static libraries keep out of the
# application's namespace: libagile.a and libagile-mpi.a define no global
# but agile* (libagile/Makefile's static_lib), and a program that defines
# names the library uses inside (user_alloc, coll_cma_agree,
# sched_worker_main...: the internals' names before they were made local)
# links with them statically and runs, its own functions never called by
# the library.  The MPI one is linked as the MPI tests link it (mpicc,
# libagile-mpi.a then libagile.a) and runs under mpirun -np 1.  TAP on
# stdout, one line per check; exit 1 when one fails.  About 10 s, the
# libraries' build aside.
#
# Environment: MAKE (default make).
set -u

repo=$(cd "$(dirname "$0")/.." && pwd)
make=${MAKE:-make}
lib=$repo/build/libagile
work=$(mktemp -d "${TMPDIR:-/tmp}/agile-archives.XXXXXX")
trap 'rm -rf "$work"' EXIT
# What a static libagile.a needs after it: agile.pc's Libs.private and
# Requires.private (pkg-config --static --libs agile).
libs=(-lhwloc -ldrm -ldl -lm -pthread)
cflags=(-std=c11 -O2 -Wall -Wextra -Werror -I"$repo/libagile/include" -I"$repo/uapi")

n=0
failed=0
# ok <description> <command...>: one TAP line; the output only on failure.
ok() {
	local name=$1 out
	shift
	n=$((n + 1))
	if out=$("$@" 2>&1); then
		echo "ok $n - $name"
	else
		failed=$((failed + 1))
		echo "not ok $n - $name"
		printf '%s\n' "$out" | tail -n 20 | sed 's/^/# /'
	fi
}
skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

ok "make -C libagile lib mpi" "$make" --no-print-directory -C "$repo/libagile" lib mpi
mpi=0
[ -f "$lib/libagile-mpi.a" ] && command -v mpicc >/dev/null && mpi=1

# only_agile <archive>: nm's defined globals, each agile*.
only_agile() {
	local others
	[ -f "$1" ] || return 1
	others=$(nm -g --defined-only "$1" | awk 'NF == 3 && $3 !~ /^agile/ { print $3 }')
	echo "$(nm -g --defined-only "$1" | awk 'NF == 3' | wc -l) globals"
	[ -z "$others" ] && return 0
	echo "globals not agile*: $(printf '%s\n' "$others" | wc -l):" "${others//$'\n'/ }"
	return 1
}
ok "libagile.a defines only agile* globals" only_agile "$lib/libagile.a"
if [ $mpi = 1 ]; then
	ok "libagile-mpi.a defines only agile* globals" only_agile "$lib/libagile-mpi.a"
else
	skip "libagile-mpi.a defines only agile* globals" "not built (no mpicc)"
fi

# The application's own functions under the library's internal names:
# the library must neither clash with them nor call them.
cat >"$work/names.h" <<-'EOF'
	#include <stdio.h>
	#include <stdlib.h>
	#define APP_OWN(name)                                              \
		void name(void);                                           \
		void name(void)                                            \
		{                                                          \
			fprintf(stderr, "the library called the "          \
					"application's " #name "\n");      \
			abort();                                           \
		}
	APP_OWN(user_alloc)
	APP_OWN(user_free)
	APP_OWN(user_futex)
	APP_OWN(coll_cma_agree)
	APP_OWN(coll_shm_init)
	APP_OWN(coll_take_opts)
	APP_OWN(procs_rendezvous)
	APP_OWN(sched_worker_main)
	APP_OWN(sched_wake_all)
	APP_OWN(segmap_fail)
	APP_OWN(segmap_rmap_get)
EOF
cat >"$work/app.c" <<-'EOF'
	#include <agile/dev.h>
	#include <agile/error.h>
	#include <agile/sched.h>
	#include <agile/version.h>
	#include <stdint.h>
	#include "names.h"

	static int count(int64_t lo, int64_t hi, void *arg)
	{
		__atomic_fetch_add((int64_t *)arg, hi - lo, __ATOMIC_RELAXED);
		return 0;
	}

	int main(void)
	{
		struct agile_sched_opts opts;
		struct agile_sched *sched;
		struct agile_dev_opts dopts;
		struct agile_dev *dev;
		int64_t sum = 0;

		/* true: the library is older than the headers */
		if (agile_version_check(AGILE_VERSION_MAJOR, AGILE_VERSION_MINOR))
			return 1;
		/* sched_worker_main and sched_wake_all inside. */
		if (agile_sched_opts_init(&opts))
			return 2;
		opts.nr_workers = 2;
		if (agile_sched_create(&opts, &sched))
			return 3;
		if (agile_sched_parallel_for(sched, 0, 1000, 10, count, &sum) ||
		    sum != 1000)
			return 4;
		if (agile_sched_destroy(sched))
			return 5;
		/* user_alloc and user_free inside. */
		if (agile_dev_opts_init(&dopts))
			return 6;
		dopts.backend = AGILE_BACKEND_USER;
		if (agile_dev_open(&dopts, &dev) || agile_dev_close(dev))
			return 7;
		printf("agile %d.%d: %s\n", agile_version_major(),
		       agile_version_minor(), agile_strerror(0));
		return 0;
	}
EOF
app() {
	(cd "$work" && gcc "${cflags[@]}" -o app app.c "$lib/libagile.a" "${libs[@]}") &&
		! ldd "$work/app" | grep -q libagile && timeout 60 "$work/app"
}
ok "a program defining user_alloc, coll_cma_agree... links libagile.a and runs" app

cat >"$work/app-mpi.c" <<-'EOF'
	#include <agile/coll_mpi.h>
	#include "names.h"
	APP_OWN(mpi_all_equal)
	APP_OWN(mpi_reqs_wait)
	APP_OWN(coll_net_allreduce)
	APP_OWN(coll_mpi_commutes)
	APP_OWN(coll_reduce)
	APP_OWN(segmap_scope_mpi)

	int main(int argc, char **argv)
	{
		struct agile_coll *coll;
		int64_t v = 21;

		if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
			return 1;
		if (agile_coll_mpi_create(MPI_COMM_WORLD, NULL, &coll))
			return 2;
		if (agile_coll_allreduce(coll, &v, &v, 1, AGILE_COLL_INT64,
					 AGILE_COLL_SUM) ||
		    v != 21)
			return 3;
		if (agile_coll_destroy(coll))
			return 4;
		MPI_Finalize();
		return 0;
	}
EOF
app_mpi() {
	# shellcheck disable=SC2054 # "tcp,self" is one argument
	local mpirun_args=(--oversubscribe --bind-to none --mca btl tcp,self --mca pml ob1
		--mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
	[ "$(id -u)" -eq 0 ] && mpirun_args+=(--allow-run-as-root)
	(cd "$work" && mpicc "${cflags[@]}" -o app-mpi app-mpi.c "$lib/libagile-mpi.a" \
		"$lib/libagile.a" "${libs[@]}") &&
		timeout 120 mpirun "${mpirun_args[@]}" -np 1 "$work/app-mpi"
}
if [ $mpi = 1 ]; then
	ok "an MPI program defining mpi_all_equal, coll_reduce... links libagile-mpi.a and runs" app_mpi
else
	skip "an MPI program links libagile-mpi.a" "not built (no mpicc)"
fi

echo "1..$n"
[ $failed = 0 ]
