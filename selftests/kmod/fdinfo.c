// SPDX-License-Identifier: GPL-2.0-only
/*
 * /proc/PID/fdinfo/FD of /dev/agile (kmod/fdinfo.c, agile(4)): every key
 * after known operations, the counters equal to AGILE_IOC_STATS, a slot
 * decoded, the sleepers of a queued waiter, segments, a group's facts and
 * its end, the bound on the slots shown for a context of 4096 slots in
 * use, another process's context readable by root and refused to another
 * user by procfs.
 */
#include "agile_test.h"

#define NOBODY 65534
/* What kmod/fdinfo.c shows at most (AGILE_FDINFO_MAX_SLOTS). */
#define MAX_SHOWN 32U
#define FDINFO_MAX 65536

static ssize_t fdinfo_self(int fd, char *buf, size_t size)
{
	return agile_fdinfo_read(getpid(), fd, buf, size);
}

/* The value of @key, or "(missing)": for string comparisons. */
static const char *fdinfo_str(const char *buf, const char *key, char *value,
			      size_t size)
{
	return agile_fdinfo_find(buf, key, value, size) ?: "(missing)";
}

static unsigned int count_lines(const char *buf, const char *prefix)
{
	unsigned int n = 0;
	const char *p = buf;

	while ((p = strstr(p, prefix))) {
		if (p == buf || p[-1] == '\n')
			n++;
		p += strlen(prefix);
	}
	return n;
}

FIXTURE(fdinfo)
{
	int fd;
	char *buf;
};

FIXTURE_SETUP(fdinfo)
{
	self->buf = malloc(FDINFO_MAX);
	ASSERT_NE(NULL, self->buf);
	AGILE_OPEN(self->fd);
}

FIXTURE_TEARDOWN(fdinfo)
{
	if (self->fd >= 0)
		close(self->fd);
	free(self->buf);
}

/* Before CTX_INIT the file has no context, and says so. */
TEST_F(fdinfo, no_context)
{
	ASSERT_LT(0, fdinfo_self(self->fd, self->buf, FDINFO_MAX));
	ASSERT_NE(NULL, strstr(self->buf, "\nctx:\tnone\n"))
	{
		TH_LOG("%s", self->buf);
	}
	ASSERT_EQ(NULL, strstr(self->buf, "nr_slots"));
}

/*
 * Every key of a plain context, the counters as AGILE_IOC_STATS reports
 * them after 3 SIGNALs and 2 WAITs, and the one slot in use decoded.
 */
TEST_F(fdinfo, keys_counters_and_slot)
{
	static const char *const keys[] = {
		"ctx",
		"nr_slots",
		"task_reg_size",
		"pages",
		"signals",
		"waits",
		"wakeups_signal",
		"wakeups_poll",
		"timeouts",
		"interrupted",
		"spin_hits",
		"sleepers",
		"ended",
		"segments",
		"segment_pages",
		"group",
		"slots_in_use",
		"slots_not_shown",
		"poll_checks",
		"poll_owner_uid",
		"poll_owner_contexts",
		"poll_owner_turns",
		"poll_owner_checks",
		"poll_owner_ns",
	};
	struct agile_ctx_init init;
	struct agile_stats stats;
	struct agile_task_reg *reg;
	char line[256], want[256], missing[256];
	unsigned int i;
	char *regs;

	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 128, &init));
	ASSERT_EQ(0, agile_signal(self->fd, 1, 5));
	ASSERT_EQ(0, agile_signal(self->fd, 1, 6));
	ASSERT_EQ(0, agile_signal(self->fd, 1, 7));
	ASSERT_EQ(0, agile_wait(self->fd, 1, AGILE_CMP_EQ, 7, 0, NULL));
	ASSERT_EQ(-ETIMEDOUT,
		  agile_wait(self->fd, 1, AGILE_CMP_EQ, 8, 0, NULL));
	regs = agile_map_rw(self->fd, init.task_reg_offset,
			    init.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, regs);
	reg = (struct agile_task_reg *)(regs + 1 * 128);
	reg->opcode = AGILE_OP_USER_BASE + 1;
	reg->nr_parts = 2;
	reg->flags = 0x10;
	reg->error = -22;
	reg->error_lane = 1;
	reg->status = 0x1;
	reg->args[0] = 0xabc;
	reg->args[3] = 0x1234567890ULL;

	ASSERT_LT(0, fdinfo_self(self->fd, self->buf, FDINFO_MAX));
	missing[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		if (!agile_fdinfo_find(self->buf, keys[i], line, sizeof(line)))
			snprintf(missing + strlen(missing),
				 sizeof(missing) - strlen(missing), " %s",
				 keys[i]);
	}
	ASSERT_STREQ("", missing);
	ASSERT_EQ(4ULL, agile_fdinfo_u64(self->buf, "nr_slots"));
	ASSERT_EQ(128ULL, agile_fdinfo_u64(self->buf, "task_reg_size"));
	/* One page of 4 doorbells, one of 4 registers of 128 bytes. */
	ASSERT_EQ(2ULL, agile_fdinfo_u64(self->buf, "pages"));
	ASSERT_EQ(0, agile_stats(self->fd, &stats));
	ASSERT_EQ(3ULL, stats.signals);
	ASSERT_EQ(stats.signals, agile_fdinfo_u64(self->buf, "signals"));
	ASSERT_EQ(2ULL, stats.waits);
	ASSERT_EQ(stats.waits, agile_fdinfo_u64(self->buf, "waits"));
	ASSERT_EQ(1ULL, stats.timeouts);
	ASSERT_EQ(stats.timeouts, agile_fdinfo_u64(self->buf, "timeouts"));
	ASSERT_EQ(1ULL, stats.spin_hits);
	ASSERT_EQ(stats.spin_hits, agile_fdinfo_u64(self->buf, "spin_hits"));
	ASSERT_EQ(stats.wakeups_signal,
		  agile_fdinfo_u64(self->buf, "wakeups_signal"));
	ASSERT_EQ(stats.wakeups_poll,
		  agile_fdinfo_u64(self->buf, "wakeups_poll"));
	ASSERT_EQ(stats.interrupted,
		  agile_fdinfo_u64(self->buf, "interrupted"));
	ASSERT_EQ(0ULL, agile_fdinfo_u64(self->buf, "sleepers"));
	ASSERT_EQ(0ULL, agile_fdinfo_u64(self->buf, "ended"));
	ASSERT_EQ(0ULL, agile_fdinfo_u64(self->buf, "segments"));
	ASSERT_STREQ("none",
		     fdinfo_str(self->buf, "group", line, sizeof(line)));

	ASSERT_EQ(1U, count_lines(self->buf, "slot:\t"));
	ASSERT_EQ(1ULL, agile_fdinfo_u64(self->buf, "slots_in_use"));
	ASSERT_EQ(0ULL, agile_fdinfo_u64(self->buf, "slots_not_shown"));
	snprintf(
		want, sizeof(want),
		"1 value=7 sleepers=0 opcode=%u nr_parts=2 flags=0x10 error=-22 error_lane=1 status=0x1 args=0xabc,0x0,0x0,0x1234567890",
		AGILE_OP_USER_BASE + 1);
	ASSERT_STREQ(want, fdinfo_str(self->buf, "slot", line, sizeof(line)));
	munmap(regs, init.task_reg_bytes);
}

/* A queued waiter counts in sleepers and in its slot's line. */
TEST_F(fdinfo, sleepers)
{
	struct agile_fence_thread ft;
	struct agile_ctx_init init;
	struct agile_doorbell *db;
	char line[256];

	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, &init));
	db = agile_map_rw(self->fd, init.doorbell_offset, init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);
	ASSERT_EQ(0, agile_fence_thread_start(&ft, self->fd, 2, AGILE_CMP_EQ, 9,
					      AGILE_TIMEOUT_INFINITE));
	ASSERT_EQ(0, agile_db_wait_sleepers(db, 2, 1, AGILE_TEST_WAIT_MS));

	ASSERT_LT(0, fdinfo_self(self->fd, self->buf, FDINFO_MAX));
	EXPECT_EQ(1ULL, agile_fdinfo_u64(self->buf, "sleepers"));
	EXPECT_EQ(1ULL, agile_fdinfo_u64(self->buf, "slots_in_use"));
	EXPECT_STREQ(
		"2 value=0 sleepers=1 opcode=0 nr_parts=0 flags=0x0 error=0 error_lane=0 status=0x0 args=0x0,0x0,0x0,0x0",
		fdinfo_str(self->buf, "slot", line, sizeof(line)));

	ASSERT_EQ(0, agile_signal(self->fd, 2, 9));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);
	ASSERT_LT(0, fdinfo_self(self->fd, self->buf, FDINFO_MAX));
	EXPECT_EQ(0ULL, agile_fdinfo_u64(self->buf, "sleepers"));
	/*
	 * One wake-up: SIGNAL's, or the poller's when it saw the new value
	 * first (it polls every slot with a sleeper).
	 */
	EXPECT_EQ(1ULL, agile_fdinfo_u64(self->buf, "wakeups_signal") +
				agile_fdinfo_u64(self->buf, "wakeups_poll"));
	munmap(db, init.doorbell_bytes);
}

TEST_F(fdinfo, segments)
{
	struct agile_seg_create seg;

	ASSERT_EQ(0, agile_ctx_init(self->fd, 1, 64, NULL));
	memset(&seg, 0, sizeof(seg));
	seg.bytes = 1;
	ASSERT_EQ(0, agile_ioctl(self->fd, AGILE_IOC_SEG_CREATE, &seg));
	memset(&seg, 0, sizeof(seg));
	seg.bytes = 3 * (__u64)getpagesize();
	ASSERT_EQ(0, agile_ioctl(self->fd, AGILE_IOC_SEG_CREATE, &seg));
	ASSERT_LT(0, fdinfo_self(self->fd, self->buf, FDINFO_MAX));
	EXPECT_EQ(2ULL, agile_fdinfo_u64(self->buf, "segments"));
	EXPECT_EQ(4ULL, agile_fdinfo_u64(self->buf, "segment_pages"));
}

/* A group's facts, a second member, and its end when that one leaves. */
TEST_F(fdinfo, group)
{
	__u64 key = 0xa91f000000000000ULL | ((__u64)getpid() << 8);
	struct agile_group_join g;
	char line[64], want[64];
	int fd2;

	memset(&g, 0, sizeof(g));
	g.key = key;
	g.nr_slots = 2;
	g.task_reg_size = 64;
	g.max_members = 3;
	g.mode = 0640;
	g.flags = AGILE_GROUP_CREATE | AGILE_GROUP_EXCL;
	ASSERT_EQ(0, agile_ioctl(self->fd, AGILE_IOC_GROUP_JOIN, &g));
	ASSERT_LT(0, fdinfo_self(self->fd, self->buf, FDINFO_MAX));
	snprintf(want, sizeof(want), "%#llx", (unsigned long long)key);
	ASSERT_STREQ(want, fdinfo_str(self->buf, "group", line, sizeof(line)));
	EXPECT_EQ((unsigned long long)geteuid(),
		  agile_fdinfo_u64(self->buf, "group_owner_uid"));
	EXPECT_EQ((unsigned long long)getegid(),
		  agile_fdinfo_u64(self->buf, "group_owner_gid"));
	EXPECT_STREQ("0640",
		     fdinfo_str(self->buf, "group_mode", line, sizeof(line)));
	EXPECT_EQ(3ULL, agile_fdinfo_u64(self->buf, "group_max_members"));
	EXPECT_EQ(1ULL, agile_fdinfo_u64(self->buf, "group_members"));
	EXPECT_EQ(1ULL, agile_fdinfo_u64(self->buf, "group_open"));
	EXPECT_EQ(0ULL, agile_fdinfo_u64(self->buf, "group_ended"));

	AGILE_OPEN(fd2);
	g.flags = 0;
	ASSERT_EQ(0, agile_ioctl(fd2, AGILE_IOC_GROUP_JOIN, &g));
	ASSERT_LT(0, fdinfo_self(fd2, self->buf, FDINFO_MAX));
	EXPECT_EQ(2ULL, agile_fdinfo_u64(self->buf, "group_members"));
	EXPECT_EQ(2ULL, agile_fdinfo_u64(self->buf, "group_open"));
	close(fd2);

	ASSERT_LT(0, fdinfo_self(self->fd, self->buf, FDINFO_MAX));
	EXPECT_EQ(2ULL, agile_fdinfo_u64(self->buf, "group_members"));
	EXPECT_EQ(1ULL, agile_fdinfo_u64(self->buf, "group_open"));
	EXPECT_EQ(1ULL, agile_fdinfo_u64(self->buf, "group_ended"));
	EXPECT_EQ(1ULL, agile_fdinfo_u64(self->buf, "ended"));
}

/*
 * 4096 slots, all in use: the first MAX_SHOWN are shown, the rest
 * counted, and the whole text stays a few KiB.
 */
TEST_F(fdinfo, bounded)
{
	unsigned long long max_slots = 0;
	struct agile_ctx_init init;
	struct agile_doorbell *db;
	unsigned int i, nr = 4096;
	char line[256];
	ssize_t len;

	ASSERT_EQ(0, agile_sysfs_read("max_slots", &max_slots));
	if (max_slots < nr)
		SKIP(return, "max_slots %llu < %u", max_slots, nr);
	ASSERT_EQ(0, agile_ctx_init(self->fd, nr, 64, &init));
	db = agile_map_rw(self->fd, init.doorbell_offset, init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);
	for (i = 0; i < nr; i++)
		agile_db_store(db, i, i + 1);

	len = fdinfo_self(self->fd, self->buf, FDINFO_MAX);
	ASSERT_LT(0, len);
	EXPECT_GT(8192, len)
	{
		TH_LOG("%zd bytes", len);
	}
	EXPECT_EQ(MAX_SHOWN, count_lines(self->buf, "slot:\t"));
	EXPECT_EQ(nr, agile_fdinfo_u64(self->buf, "slots_in_use"));
	EXPECT_EQ(nr - MAX_SHOWN,
		  agile_fdinfo_u64(self->buf, "slots_not_shown"));
	/* In slot order: slot 0 first. */
	EXPECT_EQ(0, strncmp(fdinfo_str(self->buf, "slot", line, sizeof(line)),
			     "0 value=1 ", 10));
	munmap(db, init.doorbell_bytes);
}

/*
 * The poller's work, per context and per owner: a context of root's and
 * one of nobody's (made by CTX_INIT as uid 65534), each polled while a
 * thread sleeps on it, show their own checks, and each its owner's uid,
 * listed contexts, turns, checks and time; a context that never slept
 * was never checked.
 */
TEST_F(fdinfo, poll_per_user)
{
	unsigned long long root_checks, nobody_checks;
	struct agile_fence_thread ft_root, ft_nobody;
	struct agile_ctx_init init, init_nobody;
	struct agile_doorbell *db, *db_nobody;
	struct agile_stats stats;
	int fd_nobody;

	if (geteuid())
		SKIP(return, "needs root to make a context as nobody");
	ASSERT_EQ(0, agile_ctx_init(self->fd, 1, 64, &init));
	AGILE_OPEN(fd_nobody);
	/* Before any thread: see agile_ctx_init_as(). */
	ASSERT_EQ(0, agile_ctx_init_as(fd_nobody, NOBODY, 1, 64, &init_nobody));
	db = agile_map_rw(self->fd, init.doorbell_offset, init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);
	db_nobody = agile_map_rw(fd_nobody, init_nobody.doorbell_offset,
				 init_nobody.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db_nobody);

	ASSERT_LT(0, fdinfo_self(fd_nobody, self->buf, FDINFO_MAX));
	EXPECT_EQ((unsigned long long)NOBODY,
		  agile_fdinfo_u64(self->buf, "poll_owner_uid"));
	EXPECT_EQ(0ULL, agile_fdinfo_u64(self->buf, "poll_checks"));
	EXPECT_EQ(0ULL, agile_fdinfo_u64(self->buf, "poll_owner_contexts"));

	/* Root's sleeper first, polled for a few ticks alone. */
	ASSERT_EQ(0,
		  agile_fence_thread_start(&ft_root, self->fd, 0, AGILE_CMP_EQ,
					   1, AGILE_TIMEOUT_INFINITE));
	ASSERT_EQ(0, agile_db_wait_sleepers(db, 0, 1, AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, agile_wait_poll_ticks(3));
	ASSERT_LT(0, fdinfo_self(self->fd, self->buf, FDINFO_MAX));
	EXPECT_EQ(0ULL, agile_fdinfo_u64(self->buf, "poll_owner_uid"));
	EXPECT_LE(1ULL, agile_fdinfo_u64(self->buf, "poll_owner_contexts"));
	EXPECT_LE(1ULL, agile_fdinfo_u64(self->buf, "poll_checks"));
	EXPECT_LE(agile_fdinfo_u64(self->buf, "poll_checks"),
		  agile_fdinfo_u64(self->buf, "poll_owner_checks"));
	EXPECT_LE(1ULL, agile_fdinfo_u64(self->buf, "poll_owner_turns"));
	EXPECT_LT(0ULL, agile_fdinfo_u64(self->buf, "poll_owner_ns"));
	EXPECT_GT(~0ULL, agile_fdinfo_u64(self->buf, "poll_owner_ns"));

	/* Then nobody's: its own counters, beside root's. */
	ASSERT_EQ(0, agile_fence_thread_start(&ft_nobody, fd_nobody, 0,
					      AGILE_CMP_EQ, 1,
					      AGILE_TIMEOUT_INFINITE));
	ASSERT_EQ(0,
		  agile_db_wait_sleepers(db_nobody, 0, 1, AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, agile_wait_poll_ticks(3));
	ASSERT_LT(0, fdinfo_self(fd_nobody, self->buf, FDINFO_MAX));
	EXPECT_EQ((unsigned long long)NOBODY,
		  agile_fdinfo_u64(self->buf, "poll_owner_uid"));
	EXPECT_EQ(1ULL, agile_fdinfo_u64(self->buf, "poll_owner_contexts"));
	EXPECT_LE(1ULL, agile_fdinfo_u64(self->buf, "poll_checks"));
	nobody_checks = agile_fdinfo_u64(self->buf, "poll_owner_checks");
	EXPECT_LE(agile_fdinfo_u64(self->buf, "poll_checks"), nobody_checks);
	EXPECT_LT(0ULL, agile_fdinfo_u64(self->buf, "poll_owner_ns"));
	/* Root's sleeper was polled longer, and apart. */
	ASSERT_LT(0, fdinfo_self(self->fd, self->buf, FDINFO_MAX));
	root_checks = agile_fdinfo_u64(self->buf, "poll_owner_checks");
	EXPECT_LT(nobody_checks, root_checks);
	EXPECT_GT(~0ULL, root_checks);

	/* Plain stores: the poller wakes both. */
	agile_db_store(db, 0, 1);
	agile_db_store(db_nobody, 0, 1);
	ASSERT_EQ(0, agile_fence_thread_join(&ft_root));
	ASSERT_EQ(0, ft_root.ret);
	ASSERT_EQ(0, agile_fence_thread_join(&ft_nobody));
	ASSERT_EQ(0, ft_nobody.ret);
	ASSERT_EQ(0, agile_stats(fd_nobody, &stats));
	EXPECT_EQ(1ULL, stats.wakeups_poll);
	munmap(db, init.doorbell_bytes);
	munmap(db_nobody, init_nobody.doorbell_bytes);
	close(fd_nobody);
}

struct holder {
	int ready[2];
	int done[2];
};

/* A child holding a context whose slot 0 is 42 after one SIGNAL. */
static int hold_context(void *arg)
{
	struct holder *h = arg;
	int fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
	char c = 0;

	if (fd < 0 || agile_ctx_init(fd, 2, 64, NULL) ||
	    agile_signal(fd, 0, 42))
		return 1;
	if (write(h->ready[1], &fd, sizeof(fd)) != sizeof(fd))
		return 1;
	return read(h->done[0], &c, 1) == 1 ? 0 : 1;
}

/* nobody reading root's fdinfo: procfs refuses (ptrace access check). */
static int read_as_nobody(void *arg)
{
	const char *path = arg;
	int fd;

	if (agile_become(NOBODY, true))
		return 2;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return 1;
	return errno == EACCES ? 0 : 3;
}

/* Root reads another process's context; another user may not. */
TEST_F(fdinfo, other_process)
{
	struct holder h;
	char path[64], line[256];
	int child_fd, status;
	pid_t pid;

	if (geteuid())
		SKIP(return, "needs root");
	ASSERT_EQ(0, pipe(h.ready));
	ASSERT_EQ(0, pipe(h.done));
	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(hold_context(&h));
	ASSERT_EQ((ssize_t)sizeof(child_fd),
		  read(h.ready[0], &child_fd, sizeof(child_fd)));

	ASSERT_LT(0, agile_fdinfo_read(pid, child_fd, self->buf, FDINFO_MAX));
	EXPECT_EQ(1ULL, agile_fdinfo_u64(self->buf, "signals"));
	EXPECT_STREQ(
		"0 value=42 sleepers=0 opcode=0 nr_parts=0 flags=0x0 error=0 error_lane=0 status=0x0 args=0x0,0x0,0x0,0x0",
		fdinfo_str(self->buf, "slot", line, sizeof(line)));

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, child_fd);
	status = agile_run_child(read_as_nobody, path);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
	{
		TH_LOG("nobody's open of %s: status %#x", path, status);
	}

	ASSERT_EQ(1, write(h.done[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_HARNESS_MAIN
