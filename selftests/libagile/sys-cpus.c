// SPDX-License-Identifier: MIT
/*
 * sys-cpus - how many CPUs the library sizes its pools by: the affinity
 * mask capped by the cgroup CPU quota (agile_sys_cpus).
 *
 * - The quota is read from made-up mountinfo and cgroup files over a
 *   made-up cgroup tree: cgroup v2 (cpu.max, a parent's quota binding its
 *   child, "max" meaning none, a mount of a sub-tree, an escaped blank
 *   in a mount point), cgroup v1 (the cpu controller's cfs quota and
 *   period, found through its mount's super options, not its name), both
 *   at once (the smaller wins), none at all, and rounding up (1.5 CPUs'
 *   time is 2 CPUs).
 * - In a process restricted to one CPU, the runtime's CPU device gets
 *   one EU by default and the scheduler one worker, on a machine with
 *   more CPUs; with the whole mask, as many as agile_sys_cpus says.
 */
#define _GNU_SOURCE
#include <agile/runtime.h>
#include <agile/sched.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys.h"
#include "tap.h"

static char top[PATH_MAX];

/* Writes @text to @top/@rel, making its directories. */
static void put(const char *rel, const char *text)
{
	char path[2 * PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	for (char *p = path + strlen(top) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

/* The quota that @mountinfo (with @@ for the tree's top) and @cgroup give. */
static uint32_t quota(const char *mountinfo, const char *cgroup)
{
	char mi[2 * PATH_MAX], cg[2 * PATH_MAX], text[8192];
	size_t used = 0;

	for (const char *p = mountinfo; *p && used + PATH_MAX < sizeof(text);
	     p++) {
		if (p[0] == '@' && p[1] == '@') {
			used += (size_t)snprintf(
				text + used, sizeof(text) - used, "%s", top);
			p++;
		} else {
			text[used++] = *p;
		}
	}
	text[used] = 0;
	put("proc/mountinfo", text);
	put("proc/cgroup", cgroup);
	snprintf(mi, sizeof(mi), "%s/proc/mountinfo", top);
	snprintf(cg, sizeof(cg), "%s/proc/cgroup", top);
	return agile_sys_cpu_quota_at(mi, cg);
}

#define V2_MOUNT \
	"30 22 0:26 / @@/v2 rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
#define V1_MOUNT                                                         \
	"31 22 0:27 / @@/v1/cpux rw,relatime shared:10 - cgroup cgroup " \
	"rw,cpuacct,cpu\n"
#define OTHER_MOUNTS                                            \
	"22 1 0:21 / @@/sys rw - sysfs sysfs rw\n"              \
	"32 22 0:28 / @@/v1/mem rw - cgroup cgroup rw,memory\n" \
	"33 22 0:29 / @@/v1/cpuset rw - cgroup cgroup rw,cpuset\n"

static void quota_files(void)
{
	/* v2: /app/job (2.5 CPUs' time) under /app (4), /app/free: none */
	put("v2/cpu.max", "max 100000\n");
	put("v2/app/cpu.max", "400000 100000\n");
	put("v2/app/job/cpu.max", "250000 100000\n");
	put("v2/app/free/cpu.max", "max 100000\n");
	put("v2/app/free/leaf/cpu.max", "max 100000\n");
	put("v2/tight/cpu.max", "50000 100000\n");
	put("v2/tight/sub/cpu.max", "max 100000\n");
	/* v1: /batch 3 CPUs' time, /batch/one unlimited below it */
	put("v1/cpux/cpu.cfs_quota_us", "-1\n");
	put("v1/cpux/cpu.cfs_period_us", "100000\n");
	put("v1/cpux/batch/cpu.cfs_quota_us", "300000\n");
	put("v1/cpux/batch/cpu.cfs_period_us", "100000\n");
	put("v1/cpux/batch/one/cpu.cfs_quota_us", "-1\n");
	put("v1/cpux/batch/one/cpu.cfs_period_us", "100000\n");
	/* a decoy: a cpuset hierarchy's files are not the cpu controller's */
	put("v1/cpuset/batch/cpu.cfs_quota_us", "100000\n");
	put("v1/cpuset/batch/cpu.cfs_period_us", "100000\n");
	/* a sub-tree mount (a container's view) with a blank in its point */
	put("v2 sub/cpu.max", "150000 100000\n");
}

static void test_quota(void)
{
	uint32_t n;

	quota_files();
	n = quota(V2_MOUNT OTHER_MOUNTS, "0::/app/job\n");
	tap_ok(n == 3, "v2: 2.5 CPUs' time is 3 CPUs (got %u)", n);
	n = quota(V2_MOUNT OTHER_MOUNTS, "0::/app/free/leaf\n");
	tap_ok(n == 4, "v2: an ancestor's quota binds (got %u)", n);
	n = quota(V2_MOUNT OTHER_MOUNTS, "0::/tight/sub\n");
	tap_ok(n == 1, "v2: half a CPU's time is 1 CPU (got %u)", n);
	n = quota(V2_MOUNT OTHER_MOUNTS, "0::/\n");
	tap_ok(n == 0, "v2: the root cgroup has no quota (got %u)", n);
	n = quota(V2_MOUNT OTHER_MOUNTS, "0::/nowhere/at/all\n");
	tap_ok(n == 0, "v2: a cgroup without files has none (got %u)", n);
	n = quota(OTHER_MOUNTS V1_MOUNT,
		  "4:memory:/app/job\n3:cpu,cpuacct:/batch/one\n"
		  "2:cpuset:/batch\n");
	tap_ok(n == 3, "v1: the cpu controller's quota, its parent's (got %u)",
	       n);
	n = quota(OTHER_MOUNTS V1_MOUNT V2_MOUNT,
		  "3:cpu,cpuacct:/batch\n0::/app/job\n");
	tap_ok(n == 3, "v1 and v2: the smaller (got %u)", n);
	n = quota(OTHER_MOUNTS V1_MOUNT V2_MOUNT,
		  "3:cpu,cpuacct:/batch\n0::/tight\n");
	tap_ok(n == 1, "v1 and v2: the smaller, the other way (got %u)", n);
	n = quota(OTHER_MOUNTS, "2:cpuset:/batch\n0::/app/job\n");
	tap_ok(n == 0, "no cpu hierarchy mounted: none (got %u)", n);
	n = quota("40 22 0:26 /box @@/v2\\040sub rw - cgroup2 cgroup2 rw\n",
		  "0::/box\n");
	tap_ok(n == 2, "a sub-tree mounted, a blank escaped (got %u)", n);
	n = quota("40 22 0:26 /box @@/v2\\040sub rw - cgroup2 cgroup2 rw\n",
		  "0::/elsewhere\n");
	tap_ok(n == 2, "a cgroup outside the mount: its top is read (got %u)",
	       n);
	tap_ok(agile_sys_cpu_quota_at("/nonexistent/mountinfo",
				      "/nonexistent/cgroup") == 0,
	       "no files: no quota");
}

/* The defaults in a child restricted to @cpu alone; 0 when they are 1. */
static int one_cpu_child(int cpu)
{
	struct agile_rt_ctx_opts o;
	struct agile_sched_opts so;
	struct agile_rt_queue *q;
	struct agile_rt_stats st;
	struct agile_sched_stats ss;
	struct agile_sched *s;
	agile_rt_ctx ctx;
	cpu_set_t set;
	uint32_t devs[1] = { 0 };

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return 10;
	if (agile_sys_cpus() != 1)
		return 11;
	agile_rt_ctx_opts_init(&o);
	o.devices = devs;
	o.nr_devices = 1;
	if (agile_rt_ctx_create(&o, &ctx))
		return 12;
	if (agile_rt_queue_create(ctx, NULL, &q))
		return 13;
	if (agile_rt_stats(q, &st) || st.nr_devices != 1)
		return 14;
	if (st.devices[0].nr_eus != 1)
		return 20 + (int)(st.devices[0].nr_eus > 9 ?
					  9 :
					  st.devices[0].nr_eus);
	agile_rt_queue_destroy(q);
	agile_rt_ctx_release(ctx);
	agile_sched_opts_init(&so);
	so.flags = AGILE_SCHED_QUIET;
	if (agile_sched_create(&so, &s))
		return 30;
	if (agile_sched_stats(s, &ss) || ss.nr_workers != 1)
		return 31;
	agile_sched_destroy(s);
	return 0;
}

static void test_defaults(void)
{
	struct agile_rt_ctx_opts o;
	struct agile_rt_queue *q;
	struct agile_rt_stats st;
	agile_rt_ctx ctx;
	uint32_t devs[1] = { 0 }, want = agile_sys_cpus();
	cpu_set_t set;
	int status, cpu = 0;
	pid_t pid;

	tap_ok(want >= 1, "agile_sys_cpus: %u", want);
	if (!sched_getaffinity(0, sizeof(set), &set))
		while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set))
			cpu++;
	tap_ok(want <= (uint32_t)CPU_COUNT(&set),
	       "no more than the affinity mask's %d", CPU_COUNT(&set));

	agile_rt_ctx_opts_init(&o);
	o.devices = devs;
	o.nr_devices = 1;
	if (!tap_ok_call(agile_rt_ctx_create(&o, &ctx), "a CPU context"))
		return;
	if (tap_ok_call(agile_rt_queue_create(ctx, NULL, &q), "its queue")) {
		memset(&st, 0, sizeof(st));
		tap_ok_call(agile_rt_stats(q, &st), "its stats");
		tap_ok(st.devices[0].nr_eus == (want > AGILE_MAX_LANES ?
							AGILE_MAX_LANES :
							want),
		       "default CPU EUs: %u, one per usable CPU (%u)",
		       st.devices[0].nr_eus, want);
		agile_rt_queue_destroy(q);
	}
	agile_rt_ctx_release(ctx);

	pid = fork();
	if (pid == 0)
		_exit(one_cpu_child(cpu));
	status = -1;
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "restricted to CPU %d: 1 EU and 1 worker by default (child %d)",
	       cpu, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(void)
{
	char cmd[PATH_MAX + 16];
	const char *tmp = getenv("TMPDIR");

	snprintf(top, sizeof(top), "%s/sys-cpus.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(top)) {
		perror("mkdtemp");
		return 1;
	}
	test_quota();
	test_defaults();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd))
		tap_diag("could not remove %s", top);
	return tap_done();
}
