// SPDX-License-Identifier: MIT
/*
 * allreduce.c - processes on one node sum a vector together.
 *
 * Forks N processes that join one communicator by a key (a device group:
 * /dev/agile's GROUP_JOIN where the module is loaded, else the user
 * backend's shared memory), and each contributes a vector of doubles in
 * which element i is rank + i.  After agile_coll_allreduce every process
 * holds the sum, which the parent's children check against the formula:
 * N * i + N (N - 1) / 2.  The vectors come from agile_coll_alloc, so they
 * already lie in the exchange segments and nothing is copied in or out.
 *
 *	cc -O2 allreduce.c $(pkg-config --cflags --libs agile) -o allreduce
 *	./allreduce [processes [elements]]
 *
 * Exits 0 when every process saw the right sum.
 */
#define _GNU_SOURCE
#include <agile/agile.h>
#include <agile/coll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int member(uint64_t key, uint32_t nr, size_t count)
{
	struct agile_coll_opts opts;
	struct agile_coll *coll;
	double *vec;
	size_t bad = 0;
	int rank, ret;

	agile_coll_opts_init(&opts);
	opts.max_bytes = count * sizeof(double);
	ret = agile_coll_procs_join(key, nr, &opts, 30ULL * 1000000000ULL,
				    &coll);
	if (ret) {
		fprintf(stderr, "join: %s\n", agile_strerror(ret));
		return 1;
	}
	rank = agile_coll_rank(coll);
	vec = agile_coll_alloc(coll, count * sizeof(double));
	if (!vec && count) {
		fprintf(stderr, "rank %d: agile_coll_alloc failed\n", rank);
		agile_coll_destroy(coll);
		return 1;
	}
	for (size_t i = 0; i < count; i++)
		vec[i] = (double)rank + (double)i;
	ret = agile_coll_allreduce(coll, vec, vec, count, AGILE_COLL_DOUBLE,
				   AGILE_COLL_SUM);
	if (ret) {
		fprintf(stderr, "rank %d: allreduce: %s\n", rank,
			agile_strerror(ret));
	} else {
		for (size_t i = 0; i < count; i++)
			if (vec[i] !=
			    (double)nr * (double)i + (double)nr * (nr - 1) / 2)
				bad++;
		if (rank == 0)
			printf("%u processes summed %zu doubles (backend %s): %s\n",
			       nr, count,
			       getenv("AGILE_BACKEND") ?
				       getenv("AGILE_BACKEND") :
				       "auto",
			       bad ? "WRONG" : "correct");
	}
	agile_coll_free(coll, vec);
	agile_coll_barrier(coll);
	agile_coll_destroy(coll);
	return ret || bad;
}

int main(int argc, char **argv)
{
	uint32_t nr = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 3;
	size_t count = argc > 2 ? strtoull(argv[2], NULL, 0) : 1 << 20;
	uint64_t key;
	int failed = 0;

	if (nr < 1 || nr > AGILE_GROUP_MAX_MEMBERS) {
		fprintf(stderr, "usage: %s [processes 1..%d [elements]]\n",
			argv[0], AGILE_GROUP_MAX_MEMBERS);
		return 2;
	}
	/* A key of our own: the pid and the time. */
	key = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
	for (uint32_t i = 0; i < nr; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			exit(member(key, nr, count));
	}
	for (uint32_t i = 0; i < nr; i++) {
		int status;

		if (wait(&status) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			failed = 1;
	}
	return failed;
}
