// SPDX-License-Identifier: MIT
/*
 * sys.c - how many CPUs this process may use: its affinity mask, capped
 * by the CPU quota of its cgroup and every ancestor's (cgroup v2 cpu.max,
 * v1 cpu.cfs_quota_us / cpu.cfs_period_us).  A container given 2 CPUs'
 * worth of time on a 16-core host sees 16 CPUs in its mask; sizing a pool
 * by the mask there runs 16 threads in 2 CPUs' time, each preempted at
 * every quota period.  The mounts are found in mountinfo, as the kernel
 * documents them, not assumed at /sys/fs/cgroup.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys.h"

/* One cgroup hierarchy that can hold a CPU quota. */
struct cg_mount {
	char root[PATH_MAX]; /* the hierarchy's path mounted there */
	char point[PATH_MAX]; /* where it is mounted */
	bool found;
};

/* mountinfo escapes blanks and backslashes as \ooo: undo it in place. */
static void unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
					(s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = 0;
}

/* @list (comma-separated) holds @word. */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (!strncmp(p, word, n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
}

/*
 * The cgroup2 mount and the v1 mount of the cpu controller in
 * @mountinfo.  Line: ID PARENT MAJ:MIN ROOT POINT OPTS [TAGS...] - TYPE
 * SOURCE SUPEROPTS (proc(5)).
 */
static void find_mounts(const char *mountinfo, struct cg_mount *v2,
			struct cg_mount *v1)
{
	char line[3 * PATH_MAX], root[PATH_MAX], point[PATH_MAX];
	FILE *f = fopen(mountinfo, "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char type[64], source[PATH_MAX], super[1024];
		const char *tail = strstr(line, " - ");
		struct cg_mount *m = NULL;

		if (!tail ||
		    sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) !=
			    2 ||
		    sscanf(tail, " - %63s %4095s %1023s", type, source,
			   super) != 3)
			continue;
		if (!strcmp(type, "cgroup2") && !v2->found)
			m = v2;
		else if (!strcmp(type, "cgroup") && !v1->found &&
			 has_word(super, "cpu"))
			m = v1;
		if (!m)
			continue;
		unescape(root);
		unescape(point);
		snprintf(m->root, sizeof(m->root), "%s", root);
		snprintf(m->point, sizeof(m->point), "%s", point);
		m->found = true;
	}
	fclose(f);
}

/*
 * This process's cgroup paths in @cgroup_file: the v2 one ("0::PATH")
 * and the v1 cpu controller's ("N:...cpu...:PATH"), "" where none.
 */
static void find_paths(const char *cgroup_file, char *v2, char *v1, size_t size)
{
	char line[PATH_MAX + 256];
	FILE *f = fopen(cgroup_file, "re");

	v2[0] = v1[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *ctrl = strchr(line, ':'), *path;

		if (!ctrl)
			continue;
		path = strchr(++ctrl, ':');
		if (!path)
			continue;
		*path++ = 0;
		path[strcspn(path, "\n")] = 0;
		if (!strcmp(line, "0:") && !*ctrl)
			snprintf(v2, size, "%s", path);
		else if (has_word(ctrl, "cpu"))
			snprintf(v1, size, "%s", path);
	}
	fclose(f);
}

/* ceil(@quota / @period) CPUs; 0 for no limit or nonsense. */
static uint32_t quota_cpus(long long quota, long long period)
{
	long long n;

	if (quota <= 0 || period <= 0)
		return 0;
	n = (quota + period - 1) / period;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* The limit set in one cgroup directory @dir; 0: none there. */
static uint32_t dir_limit(const char *dir, bool v2)
{
	char path[2 * PATH_MAX + 32], max[32];
	long long quota = -1, period = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir,
		 v2 ? "cpu.max" : "cpu.cfs_quota_us");
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (v2) {
		/* "max PERIOD" or "QUOTA PERIOD" */
		if (fscanf(f, "%31s %lld", max, &period) == 2 &&
		    strcmp(max, "max"))
			quota = strtoll(max, NULL, 10);
	} else if (fscanf(f, "%lld", &quota) != 1) {
		quota = -1;
	}
	fclose(f);
	if (!v2) {
		snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir);
		f = fopen(path, "re");
		if (!f)
			return 0;
		if (fscanf(f, "%lld", &period) != 1)
			period = 0;
		fclose(f);
	}
	return quota_cpus(quota, period);
}

/*
 * The smallest limit from the cgroup at @path of hierarchy @m up to the
 * mount's top: a parent's quota binds its children.  0: none.
 */
static uint32_t hierarchy_limit(const struct cg_mount *m, const char *path,
				bool v2)
{
	char dir[2 * PATH_MAX];
	size_t top, rlen = strlen(m->root);
	uint32_t best = 0;

	if (!m->found || !*path)
		return 0;
	/*
	 * A path outside the mount's root (another namespace's cgroup) has
	 * no directory here: the mount's top is all that can be read.
	 */
	if (!strcmp(m->root, "/"))
		rlen = 0;
	else if (strncmp(path, m->root, rlen) ||
		 (path[rlen] && path[rlen] != '/'))
		path = "";
	else
		path += rlen;
	snprintf(dir, sizeof(dir), "%s%s", m->point, path);
	top = strlen(m->point);
	for (;;) {
		uint32_t n = dir_limit(dir, v2);
		char *slash;

		if (n && (!best || n < best))
			best = n;
		if (strlen(dir) <= top)
			break;
		slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < top)
			break;
		*slash = 0;
	}
	return best;
}

uint32_t agile_sys_cpu_quota_at(const char *mountinfo, const char *cgroup_file)
{
	struct cg_mount v2 = { .found = false }, v1 = { .found = false };
	char path2[PATH_MAX], path1[PATH_MAX];
	uint32_t a, b;

	find_mounts(mountinfo, &v2, &v1);
	find_paths(cgroup_file, path2, path1, sizeof(path2));
	a = hierarchy_limit(&v2, path2, true);
	b = hierarchy_limit(&v1, path1, false);
	return !a ? b : !b ? a : a < b ? a : b;
}

uint32_t agile_sys_cpus(void)
{
	uint32_t n = 0, quota;
	cpu_set_t set;

	if (!sched_getaffinity(0, sizeof(set), &set))
		n = (uint32_t)CPU_COUNT(&set);
	if (!n) {
		long online = sysconf(_SC_NPROCESSORS_ONLN);

		n = online > 0 ? (uint32_t)online : 1;
	}
	quota = agile_sys_cpu_quota_at("/proc/self/mountinfo",
				       "/proc/self/cgroup");
	return quota && quota < n ? quota : n;
}
