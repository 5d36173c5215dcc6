// SPDX-License-Identifier: MIT
/*
 * env-invalid - every environment variable libagile reads, set to a value
 * it does not take, is named on stderr with that value (libagile/src/env.h)
 * by the call that reads it, once per process, and the call does what the
 * message says (fails with -EINVAL, or goes on with the default).  The
 * variables only a GPU reads (AGILE_GPU_STOP_TIMEOUT_MS, AGILE_GPU_WATCHDOG)
 * and libagile-mpi's AGILE_COLL_NODE_ID are not reached here.
 */
#define _GNU_SOURCE
#include <agile/coll.h>
#include <agile/dev.h>
#include <agile/eu.h>
#include <agile/launch.h>
#include <agile/runtime.h>
#include <agile/sched.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "colltest.h"
#include "tap.h"

#define BAD "no-such-value"
#define JOIN_NS (30ULL * 1000 * 1000 * 1000)

/* stderr goes to this file while a variable is tried (said()). */
static char log_path[] = "/tmp/env-invalid-XXXXXX";
static int log_fd, saved_stderr;

/* How many lines of the log name $@name set to BAD. */
static int said(const char *name)
{
	char needle[128], line[512];
	int lines = 0;
	FILE *f = fopen(log_path, "r");

	snprintf(needle, sizeof(needle),
		 "agile: %s=\"%s\" is not valid: ", name, BAD);
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		lines += strstr(line, needle) == line;
	fclose(f);
	return lines;
}

static void bad(const char *name)
{
	setenv(name, BAD, 1);
}

static int dev_open_close(void)
{
	struct agile_dev *dev;
	int err = agile_dev_open(NULL, &dev);

	if (!err)
		agile_dev_close(dev);
	return err;
}

static int sched_one(void)
{
	struct agile_sched_opts o;
	struct agile_sched *s;
	int err;

	agile_sched_opts_init(&o);
	o.nr_workers = 2;
	err = agile_sched_create(&o, &s);
	if (!err)
		agile_sched_destroy(s);
	return err;
}

static int eu_pool(uint32_t flags)
{
	struct agile_eu_pool_opts o;
	struct agile_eu_pool *pool;
	struct agile_kernels *k;
	struct agile_dev *dev;
	int err = agile_dev_open(NULL, &dev);

	if (err)
		return err;
	err = agile_kernels_create(&k);
	if (!err) {
		agile_eu_pool_opts_init(&o);
		o.flags = flags;
		err = agile_eu_pool_create(dev, k, &o, &pool);
		if (!err)
			agile_eu_pool_destroy(pool);
		agile_kernels_destroy(k);
	}
	agile_dev_close(dev);
	return err;
}

static int coll_threads(void)
{
	struct agile_coll_team *team;
	int err = agile_coll_threads_create(2, NULL, &team);

	if (!err)
		agile_coll_threads_destroy(team);
	return err;
}

/* Two processes join; the child with $AGILE_COLL_CMA set to BAD. */
static int coll_procs_cma(void)
{
	uint64_t key = ct_random_key();
	struct agile_coll *coll;
	int status = 0, err;
	pid_t pid = fork();

	if (pid == 0) {
		alarm(60);
		bad("AGILE_COLL_CMA");
		err = agile_coll_procs_join(key, 2, NULL, JOIN_NS, &coll);
		if (!err)
			agile_coll_destroy(coll);
		_exit(err ? 1 : 0);
	}
	err = agile_coll_procs_join(key, 2, NULL, JOIN_NS, &coll);
	if (!err)
		agile_coll_destroy(coll);
	waitpid(pid, &status, 0);
	return err					 ? err :
	       !WIFEXITED(status) || WEXITSTATUS(status) ? -ECHILD :
							   0;
}

int main(void)
{
	struct agile_rt_place_opts place;
	struct agile_launch_pool *lp;
	struct agile_dev_opts dopts;
	int err;

	log_fd = mkstemp(log_path);
	saved_stderr = dup(2);
	if (log_fd < 0 || saved_stderr < 0 || dup2(log_fd, 2) < 0) {
		tap_ok(0, "stderr into %s", log_path);
		return tap_done();
	}

	bad("AGILE_BACKEND");
	err = dev_open_close();
	tap_ok(err == -EINVAL && said("AGILE_BACKEND") == 1,
	       "AGILE_BACKEND: agile_dev_open fails with EINVAL (%d), named",
	       err);
	err = dev_open_close();
	tap_ok(err == -EINVAL && said("AGILE_BACKEND") == 1,
	       "AGILE_BACKEND: named once per process, not once per call");
	unsetenv("AGILE_BACKEND");

	bad("AGILE_SPIN_NS");
	agile_dev_opts_init(&dopts);
	tap_ok(dopts.spin_ns == AGILE_DEV_SPIN_NS_DEFAULT &&
		       said("AGILE_SPIN_NS") == 1,
	       "AGILE_SPIN_NS: the default spin, named");
	unsetenv("AGILE_SPIN_NS");

	bad("AGILE_DEBUG");
	err = dev_open_close();
	tap_ok(!err && said("AGILE_DEBUG") == 1,
	       "AGILE_DEBUG: agile_dev_open works (%d), named", err);
	unsetenv("AGILE_DEBUG");

	bad("AGILE_RT_GPU_BUSY_PCT");
	err = agile_rt_place_opts_init(&place);
	tap_ok(err == -EINVAL && said("AGILE_RT_GPU_BUSY_PCT") == 1,
	       "AGILE_RT_GPU_BUSY_PCT: EINVAL (%d), named", err);
	unsetenv("AGILE_RT_GPU_BUSY_PCT");
	bad("AGILE_RT_CPU_BUSY_PCT");
	err = agile_rt_place_opts_init(&place);
	tap_ok(err == -EINVAL && said("AGILE_RT_CPU_BUSY_PCT") == 1,
	       "AGILE_RT_CPU_BUSY_PCT: EINVAL (%d), named", err);
	unsetenv("AGILE_RT_CPU_BUSY_PCT");

	bad("AGILE_SCHED_PIN");
	bad("AGILE_SCHED_SPREAD");
	err = sched_one();
	tap_ok(!err && said("AGILE_SCHED_PIN") == 1,
	       "AGILE_SCHED_PIN: the pool starts unpinned (%d), named", err);
	tap_ok(!err && said("AGILE_SCHED_SPREAD") == 1,
	       "AGILE_SCHED_SPREAD: the pool starts (%d), named", err);
	unsetenv("AGILE_SCHED_PIN");
	unsetenv("AGILE_SCHED_SPREAD");

	bad("AGILE_GRID_THREADS");
	err = agile_launch_pool_create(0, &lp);
	if (!err)
		agile_launch_pool_destroy(lp);
	tap_ok(err == -EINVAL && said("AGILE_GRID_THREADS") == 1,
	       "AGILE_GRID_THREADS: EINVAL (%d), named", err);
	unsetenv("AGILE_GRID_THREADS");

	bad("AGILE_EU_POOL");
	err = eu_pool(0);
	tap_ok(err == -EINVAL && said("AGILE_EU_POOL") == 1,
	       "AGILE_EU_POOL: EINVAL (%d), named", err);
	unsetenv("AGILE_EU_POOL");
	bad("AGILE_GPU_SHARE");
	err = eu_pool(AGILE_EU_POOL_AUTO);
	tap_ok(err == -EINVAL && said("AGILE_GPU_SHARE") == 1,
	       "AGILE_GPU_SHARE: a GPU pool fails with EINVAL (%d), named",
	       err);
	unsetenv("AGILE_GPU_SHARE");

	bad("AGILE_COLL_STREAM_FROM");
	bad("AGILE_COLL_SEQ_LIMIT");
	err = coll_threads();
	tap_ok(!err && said("AGILE_COLL_STREAM_FROM") == 1,
	       "AGILE_COLL_STREAM_FROM: the team works (%d), named", err);
	tap_ok(!err && said("AGILE_COLL_SEQ_LIMIT") == 1,
	       "AGILE_COLL_SEQ_LIMIT: the team works (%d), named", err);
	unsetenv("AGILE_COLL_STREAM_FROM");
	unsetenv("AGILE_COLL_SEQ_LIMIT");

	err = coll_procs_cma();
	tap_ok(!err && said("AGILE_COLL_CMA") == 1,
	       "AGILE_COLL_CMA: two processes join (%d), named", err);

	dup2(saved_stderr, 2);
	if (tap_failures) {
		char line[512];
		FILE *f = fopen(log_path, "r");

		while (f && fgets(line, sizeof(line), f))
			tap_diag("stderr: %s", line);
		if (f)
			fclose(f);
	}
	unlink(log_path);
	return tap_done();
}
