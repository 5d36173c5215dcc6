// SPDX-License-Identifier: MIT
/*
 * coll-procs-order - reproducible ranks among processes, on each backend.
 */
#define _GNU_SOURCE
#include <math.h>

#include "colltest.h"
#include "tap.h"
#include "collprocs.h"

/*
 * Reproducible ranks: members join in opposite orders (delays) with
 * distinct agile_coll_opts.order values; each must get rank == its order's
 * place, and an allreduce of order-sensitive floats (wide exponents,
 * both signs: the sum depends on the order of the additions) must give
 * the same bits in every run and on every member.
 */
#define ORDER_COUNT 300001

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

static void ordered_ranks(uint32_t n, int runs)
{
	uint64_t first = 0;
	bool ranks_ok = true, same = true, ran = true;

	for (int run = 0; run < runs; run++) {
		uint64_t key = ct_random_key();
		pid_t pid[MAX_MEMBERS];

		memset(reports, 0, sizeof(*reports) * (MAX_MEMBERS + 1));
		for (uint32_t k = 0; k < n; k++) {
			pid[k] = fork();
			if (pid[k] == 0) {
				struct agile_coll_opts o;
				struct agile_coll *coll;
				float *send =
					malloc(ORDER_COUNT * sizeof(float));
				float *recv =
					malloc(ORDER_COUNT * sizeof(float));
				uint64_t h;

				alarm(120);
				/* k-th to join in odd runs, (n-1-k)-th in even */
				usleep((run % 2 ? k : n - 1 - k) * 20000);
				opts_for(&o, 2, 0, 4u << 20);
				/* orders with gaps: the ranks are their places */
				o.order = 100 + 7 * k;
				if (!send || !recv ||
				    agile_coll_procs_join(key, n, &o, JOIN_NS,
							  &coll))
					_exit(1);
				for (size_t j = 0; j < ORDER_COUNT; j++) {
					int m = (int)((k * 7919 + j * 104729) %
						      2001) -
						1000;

					send[j] = ldexpf(
						(float)m,
						(int)((k * 13 + j) % 48) - 24);
				}
				if (agile_coll_allreduce(
					    coll, send, recv, ORDER_COUNT,
					    AGILE_COLL_FLOAT, AGILE_COLL_SUM))
					_exit(2);
				h = fnv(recv, ORDER_COUNT * sizeof(float));
				reports[k].fails = agile_coll_rank(coll) !=
						   (int)k;
				memcpy(reports[k].msg, &h, sizeof(h));
				agile_coll_destroy(coll);
				_exit(0);
			}
		}
		for (uint32_t k = 0; k < n; k++) {
			int status = 1;
			uint64_t h;

			waitpid(pid[k], &status, 0);
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				ran = false;
				continue;
			}
			memcpy(&h, reports[k].msg, sizeof(h));
			if (reports[k].fails)
				ranks_ok = false;
			if (!run && !k)
				first = h;
			else if (h != first)
				same = false;
		}
	}
	tap_ok(ran && ranks_ok,
	       "%s: %u members joining in opposite orders: ranks follow "
	       "opts.order",
	       be, n);
	tap_ok(ran && same,
	       "%s: %u members, %d runs: an order-sensitive float allreduce "
	       "gives the same bits every run, on every member",
	       be, n, runs);
}

static void run_backend(bool quick)
{
	ordered_ranks(3, quick ? 2 : 4);
	if (!quick)
		ordered_ranks(5, 4);
}

int main(void)
{
	return cp_main(run_backend);
}
