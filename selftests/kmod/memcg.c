// SPDX-License-Identifier: GPL-2.0-only
/*
 * A context's pages are charged to the memory cgroup of the task that
 * ran CTX_INIT, and stay charged until the file and its last mapping are
 * both gone; so are a data segment's.  One larger than the cgroup's
 * memory.max fails with ENOMEM instead of invoking the OOM killer.  Needs
 * root and cgroup2 at /sys/fs/cgroup with the memory controller; skipped
 * otherwise.  The cgroup made here is removed, and the root's
 * subtree_control restored, before the test ends.
 */
#include "agile_test.h"

#define CGROUP_ROOT "/sys/fs/cgroup"
#define SLOTS 4096
#define REG_SIZE AGILE_TASK_REG_MAX_SIZE
#define AREA_BYTES ((long long)SLOTS * REG_SIZE) /* 16 MiB */
/* Per-CPU charge caches and the page-pointer array: well under this. */
#define SLACK_BYTES (2LL << 20)

static int write_str(const char *path, const char *str)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t len;

	if (fd < 0)
		return -errno;
	len = write(fd, str, strlen(str));
	if (len < 0)
		len = -errno;
	close(fd);
	return len < 0 ? (int)len : 0;
}

static long long read_ll(const char *path)
{
	char buf[64];
	ssize_t len;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = '\0';
	return strtoll(buf, NULL, 10);
}

static bool file_has_word(const char *path, const char *word)
{
	char buf[512], *tok, *save;
	ssize_t len;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	for (tok = strtok_r(buf, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save))
		if (!strcmp(tok, word))
			return true;
	return false;
}

FIXTURE(memcg)
{
	char dir[128];
	char current[160];
	bool enabled_memory; /* we turned on +memory in the root */
	bool made_dir;
};

FIXTURE_SETUP(memcg)
{
	int fd;

	AGILE_OPEN(fd);
	close(fd);
	if (geteuid())
		SKIP(_exit(AGILE_SKIP_EXIT), "needs root");
	if (!file_has_word(CGROUP_ROOT "/cgroup.controllers", "memory"))
		SKIP(_exit(AGILE_SKIP_EXIT), "no cgroup2 memory controller");
	if (!file_has_word(CGROUP_ROOT "/cgroup.subtree_control", "memory")) {
		ASSERT_EQ(0, write_str(CGROUP_ROOT "/cgroup.subtree_control",
				       "+memory"));
		self->enabled_memory = true;
	}
	snprintf(self->dir, sizeof(self->dir), CGROUP_ROOT "/agile-test-%d",
		 (int)getpid());
	ASSERT_EQ(0, mkdir(self->dir, 0755));
	self->made_dir = true;
	snprintf(self->current, sizeof(self->current), "%s/memory.current",
		 self->dir);
	ASSERT_LE(0, read_ll(self->current));
}

FIXTURE_TEARDOWN(memcg)
{
	/* The child that joined the cgroup has exited: it is empty. */
	if (self->made_dir)
		EXPECT_EQ(0, rmdir(self->dir));
	if (self->enabled_memory)
		EXPECT_EQ(0, write_str(CGROUP_ROOT "/cgroup.subtree_control",
				       "-memory"));
}

struct charge_arg {
	const char *dir;
	const char *current;
};

/*
 * In a child inside the cgroup.  Exit code: 0 all passed, 1x setup, 20
 * CTX_INIT not charged, 21 mmap charged again, 22 charge dropped while
 * still mapped, 23 charge kept after the last munmap.
 */
static int charge_child(void *p)
{
	struct charge_arg *arg = p;
	long long base, with_ctx, after_close, after_unmap;
	struct agile_ctx_init init;
	char procs[192], pid[32];
	void *reg;
	int fd;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", arg->dir);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (write_str(procs, pid))
		return 10;
	fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 11;

	base = read_ll(arg->current);
	if (agile_ctx_init(fd, SLOTS, REG_SIZE, &init))
		return 12;
	with_ctx = read_ll(arg->current);
	if (with_ctx - base < AREA_BYTES)
		return 20; /* not charged to this cgroup */

	reg = agile_map_rw(fd, init.task_reg_offset, init.task_reg_bytes);
	if (reg == MAP_FAILED)
		return 13;
	/* Mapping inserts the same pages: no new charge. */
	if (read_ll(arg->current) - with_ctx > SLACK_BYTES)
		return 21;

	close(fd);
	after_close = read_ll(arg->current);
	/* The mapping still holds the pages. */
	if (with_ctx - after_close > SLACK_BYTES)
		return 22;

	munmap(reg, init.task_reg_bytes);
	after_unmap = read_ll(arg->current);
	/* Now everything is gone: the charge with it. */
	if (after_close - after_unmap < AREA_BYTES - SLACK_BYTES)
		return 23;
	return 0;
}

TEST_F(memcg, pages_charged_until_last_user)
{
	struct charge_arg arg = { .dir = self->dir, .current = self->current };
	struct agile_info info;
	int fd, status;

	AGILE_OPEN(fd);
	ASSERT_EQ(0, agile_info(fd, &info));
	close(fd);
	if (info.max_slots < SLOTS)
		SKIP(return, "max_slots %u < %u", info.max_slots, SLOTS);
	status = agile_run_child(charge_child, &arg);
	ASSERT_TRUE(WIFEXITED(status));
	/* The exit code names the check: see charge_child(). */
	ASSERT_EQ(0, WEXITSTATUS(status));
}

#define SEG_BYTES (16LL << 20)

/*
 * In a child inside the cgroup.  Exit code: 0 passed, 1x setup, 30
 * SEG_CREATE not charged, 31 charge kept after the context is gone.
 */
static int seg_charge_child(void *p)
{
	struct charge_arg *arg = p;
	struct agile_seg_create seg;
	long long base, with_seg;
	char procs[192], pid[32];
	int fd;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", arg->dir);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (write_str(procs, pid))
		return 10;
	fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 11;
	if (agile_ctx_init(fd, 2, 64, NULL))
		return 12;
	base = read_ll(arg->current);
	memset(&seg, 0, sizeof(seg));
	seg.bytes = SEG_BYTES;
	if (agile_ioctl(fd, AGILE_IOC_SEG_CREATE, &seg))
		return 13;
	with_seg = read_ll(arg->current);
	if (with_seg - base < SEG_BYTES)
		return 30;
	close(fd);
	if (with_seg - read_ll(arg->current) < SEG_BYTES - SLACK_BYTES)
		return 31;
	return 0;
}

TEST_F(memcg, segment_charged)
{
	struct charge_arg arg = { .dir = self->dir, .current = self->current };
	int status;

	status = agile_run_child(seg_charge_child, &arg);
	ASSERT_TRUE(WIFEXITED(status));
	/* The exit code names the check: see seg_charge_child(). */
	ASSERT_EQ(0, WEXITSTATUS(status));
}

#define MEMCG_MAX (32LL << 20)
#define BIG_SEG_BYTES (64LL << 20)

/* The value of @key in a flat-keyed cgroup file such as memory.events. */
static long long read_key(const char *path, const char *key)
{
	char line[128], name[64];
	long long val = -1, v;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", name, &v) == 2 &&
		    !strcmp(name, key))
			val = v;
	fclose(f);
	return val;
}

/*
 * In a child inside a cgroup with memory.max of 32 MiB, as root (no
 * RLIMIT_MEMLOCK in the way).  Exit code: 0 passed, 1x setup, 40
 * SEG_CREATE did not fail with ENOMEM, 41 the file is unusable after.
 * Killed by the OOM killer instead: the test sees SIGKILL.
 */
static int over_max_child(void *p)
{
	struct charge_arg *arg = p;
	struct agile_seg_create seg;
	char procs[192], pid[32];
	int fd, ret;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", arg->dir);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (write_str(procs, pid))
		return 10;
	fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 11;
	if (agile_ctx_init(fd, 2, 64, NULL))
		return 12;
	memset(&seg, 0, sizeof(seg));
	seg.bytes = BIG_SEG_BYTES;
	ret = agile_ioctl(fd, AGILE_IOC_SEG_CREATE, &seg);
	if (ret != -ENOMEM)
		return 40;
	/* What failed left nothing behind: a small one still fits. */
	seg.bytes = 4096;
	if (agile_ioctl(fd, AGILE_IOC_SEG_CREATE, &seg) || seg.id != 0)
		return 41;
	return 0;
}

/*
 * A segment larger than the cgroup's memory.max fails with ENOMEM: the
 * module's page allocations do not retry or invoke the OOM killer, which
 * would kill a task of the cgroup (here the caller) instead.
 */
TEST_F(memcg, over_max_enomem_not_oom)
{
	struct charge_arg arg = { .dir = self->dir, .current = self->current };
	char path[192], max[32];
	struct agile_info info;
	long long kills;
	int fd, status;

	AGILE_OPEN(fd);
	ASSERT_EQ(0, agile_info(fd, &info));
	close(fd);
	if (info.max_segment_bytes < BIG_SEG_BYTES)
		SKIP(return, "max_segment_bytes %llu < %lld",
			   (unsigned long long)info.max_segment_bytes,
			   BIG_SEG_BYTES);
	snprintf(path, sizeof(path), "%s/memory.max", self->dir);
	snprintf(max, sizeof(max), "%lld\n", MEMCG_MAX);
	ASSERT_EQ(0, write_str(path, max));
	snprintf(path, sizeof(path), "%s/memory.events", self->dir);
	kills = read_key(path, "oom_kill");
	ASSERT_LE(0, kills);

	status = agile_run_child(over_max_child, &arg);
	ASSERT_TRUE(WIFEXITED(status))
	{
		TH_LOG("killed by signal %d", WTERMSIG(status));
	}
	/* The exit code names the check: see over_max_child(). */
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(kills, read_key(path, "oom_kill"));
}

TEST_HARNESS_MAIN
