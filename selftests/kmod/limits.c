// SPDX-License-Identifier: GPL-2.0-only
/*
 * What a user may hold.  The pages of contexts and segments count against
 * the RLIMIT_MEMLOCK of the user that made them, across all its
 * processes: over it CTX_INIT, GROUP_JOIN (creating) and SEG_CREATE fail
 * with ENOMEM, and succeed again once the holder is gone; a group's
 * context counts for its creator, a segment for the member that made it;
 * CAP_IPC_LOCK exempts, and root without it is bound like anyone.  The
 * pages show in the process's VmPin and in sysfs "pages".  Each user holds
 * at most max_contexts_per_user contexts (ENOSPC above; another user is
 * not affected; CAP_SYS_RESOURCE exempts).
 *
 * The checks run in forked children that become nobody (65534) or 65533,
 * members of the device's group, with a small RLIMIT_MEMLOCK; their exit
 * codes name the check that failed.  Needs root; skipped otherwise.
 */
#include "agile_test.h"

#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#define NOBODY 65534
#define OTHER_UID 65533

/* 16 pages of 4 KiB: the small RLIMIT_MEMLOCK of these tests. */
#define LIMIT_PAGES 16

static long page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

/* VmPin of this process in pages, or -1. */
static long vm_pin_pages(void)
{
	char line[128];
	long kb = -1;
	FILE *f;

	f = fopen("/proc/self/status", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024 / page_size();
}

/* The soft limit; the hard one stays high enough to raise it again. */
static int set_memlock(unsigned long bytes)
{
	struct rlimit rl = { .rlim_cur = bytes, .rlim_max = 1UL << 30 };

	return setrlimit(RLIMIT_MEMLOCK, &rl) ? -errno : 0;
}

/* Become @uid, a member of the device's group, with a memlock limit. */
static int become_limited(uid_t uid, unsigned long pages)
{
	int ret = set_memlock(pages * page_size());

	return ret ?: agile_become(uid, true);
}

static int open_dev(void)
{
	return open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
}

/*
 * A context of 2 pages (1 slot) or 66 pages (64 slots: 2 doorbell pages
 * and 64 task registers of 4 KiB, with 4 KiB pages).
 */
static int ctx_pages(int fd, long pages)
{
	__u32 slots = pages == 66 ? 64 : 1;

	return agile_ctx_init(fd, slots, AGILE_TASK_REG_MAX_SIZE, NULL);
}

static int seg_create(int fd, __u64 bytes)
{
	struct agile_seg_create seg;

	memset(&seg, 0, sizeof(seg));
	seg.bytes = bytes;
	return agile_ioctl(fd, AGILE_IOC_SEG_CREATE, &seg);
}

static void group_args(struct agile_group_join *g, __u64 key, __u32 flags)
{
	memset(g, 0, sizeof(*g));
	g->key = key;
	g->nr_slots = 1;
	g->task_reg_size = 64;
	g->max_members = 4;
	g->mode = 0666;
	g->flags = flags;
}

static __u64 test_key(unsigned int n)
{
	return 0x11a1000000000000ULL | ((__u64)getpid() << 16) | n;
}

static void run_child(struct __test_metadata *_metadata, int (*fn)(void *),
		      void *arg)
{
	int status = agile_run_child(fn, arg);

	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("status %#x", status);
	/* The exit code names the check: see the child. */
	ASSERT_EQ(0, WEXITSTATUS(status));
}

#define REQUIRE_ROOT()                              \
	do {                                        \
		int _fd;                            \
		AGILE_OPEN(_fd);                    \
		close(_fd);                         \
		if (geteuid())                      \
			SKIP(return, "needs root"); \
	} while (0)

static int exit_code(int status)
{
	if (status < 0)
		return 99;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

/* Fork @fn; its exit code, or 100 + the signal that ended it. */
static int fork_wait(int (*fn)(void *), void *arg)
{
	return exit_code(agile_run_child(fn, arg));
}

/*
 * Fork @fn now (while the caller is still root, so that it may become
 * another user) to run once open_gate() is called.
 */
static pid_t fork_gated(int (*fn)(void *), void *arg, int *gate)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		_exit(read(p[0], &c, 1) == 1 ? fn(arg) : 98);
	}
	close(p[0]);
	*gate = p[1];
	return pid;
}

/* Let the gated child run; its exit code. */
static int open_gate(pid_t pid, int gate)
{
	int status;

	if (pid < 0)
		return 97;
	if (write(gate, "g", 1) != 1)
		return 96;
	close(gate);
	return exit_code(waitpid(pid, &status, 0) == pid ? status : -1);
}

/* ---- RLIMIT_MEMLOCK, per user ---- */

/* Another process of the same user: CTX_INIT of 2 pages. */
static int second_process(void *arg)
{
	int fd = open_dev();

	if (fd < 0)
		return 50;
	return ctx_pages(fd, 2) == *(int *)arg ? 0 : 51;
}

/*
 * As nobody with 16 pages of memlock: a context of 66 pages is ENOMEM;
 * one of 2 and a segment of 14 fill the limit, and VmPin shows them; a
 * segment more, or another process's context, is ENOMEM; once the
 * holder's file is closed, the other process's context succeeds.
 */
static int memlock_child(void *arg)
{
	int fd, want, ret;

	if (become_limited(NOBODY, LIMIT_PAGES))
		return 10;
	fd = open_dev();
	if (fd < 0)
		return 11;
	if (vm_pin_pages() != 0)
		return 12;
	if (ctx_pages(fd, 66) != -ENOMEM)
		return 20;
	/* The failed call left the file free, and nothing charged. */
	if (vm_pin_pages() != 0)
		return 21;
	if (ctx_pages(fd, 2))
		return 22;
	if (vm_pin_pages() != 2)
		return 23;
	if (seg_create(fd, 15 * page_size()) != -ENOMEM)
		return 24;
	if (seg_create(fd, 14 * page_size()))
		return 25;
	if (vm_pin_pages() != LIMIT_PAGES)
		return 26;
	if (seg_create(fd, 1) != -ENOMEM)
		return 27;

	/* The limit is the user's: another process of it is over too. */
	want = -ENOMEM;
	ret = fork_wait(second_process, &want);
	if (ret)
		return ret;
	close(fd);
	if (vm_pin_pages() != 0)
		return 30;
	want = 0;
	return fork_wait(second_process, &want);
}

TEST(memlock_per_user)
{
	REQUIRE_ROOT();
	run_child(_metadata, memlock_child, NULL);
}

/* Creating a group is charged like CTX_INIT. */
static int group_memlock_child(void *arg)
{
	struct agile_group_join g;
	int fd;

	if (become_limited(NOBODY, 1))
		return 10;
	fd = open_dev();
	if (fd < 0)
		return 11;
	group_args(&g, test_key(1), AGILE_GROUP_CREATE);
	if (agile_ioctl(fd, AGILE_IOC_GROUP_JOIN, &g) != -ENOMEM)
		return 20;
	if (set_memlock(2 * page_size()))
		return 12;
	if (agile_ioctl(fd, AGILE_IOC_GROUP_JOIN, &g))
		return 21;
	return vm_pin_pages() == 2 ? 0 : 22;
}

TEST(memlock_group_create)
{
	REQUIRE_ROOT();
	run_child(_metadata, group_memlock_child, NULL);
}

/*
 * A group's context counts for its creator; a segment for the member
 * that made it.  The creator (nobody) makes the group; a joiner of
 * another uid with no memlock at all joins (nothing charged to it), but
 * cannot make a segment, which the creator can.
 */
struct attribution {
	__u64 key;
};

static int joiner_child(void *p)
{
	struct attribution *a = p;
	struct agile_group_join g;
	int fd;

	if (become_limited(OTHER_UID, 0))
		return 40;
	fd = open_dev();
	if (fd < 0)
		return 41;
	group_args(&g, a->key, 0);
	if (agile_ioctl(fd, AGILE_IOC_GROUP_JOIN, &g))
		return 42;
	if (vm_pin_pages() != 0)
		return 43;
	if (seg_create(fd, 1) != -ENOMEM)
		return 44;
	return 0;
}

static int creator_child(void *p)
{
	struct attribution *a = p;
	struct agile_group_join g;
	int fd, ret, gate;
	pid_t joiner;

	joiner = fork_gated(joiner_child, a, &gate);
	if (become_limited(NOBODY, LIMIT_PAGES))
		return 10;
	fd = open_dev();
	if (fd < 0)
		return 11;
	group_args(&g, a->key, AGILE_GROUP_CREATE);
	if (agile_ioctl(fd, AGILE_IOC_GROUP_JOIN, &g))
		return 20;
	/* The joiner ends the group when it exits: it is its last use. */
	ret = open_gate(joiner, gate);
	if (ret)
		return ret;
	if (vm_pin_pages() != 2)
		return 21;
	if (seg_create(fd, page_size()))
		return 22;
	return vm_pin_pages() == 3 ? 0 : 23;
}

TEST(memlock_group_attribution)
{
	struct attribution a = { .key = test_key(2) };

	REQUIRE_ROOT();
	run_child(_metadata, creator_child, &a);
}

/* ---- CAP_IPC_LOCK ---- */

static int drop_cap(int cap)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[CAP_TO_INDEX(cap)].effective &= ~CAP_TO_MASK(cap);
	data[CAP_TO_INDEX(cap)].permitted &= ~CAP_TO_MASK(cap);
	data[CAP_TO_INDEX(cap)].inheritable &= ~CAP_TO_MASK(cap);
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

/*
 * Root with CAP_IPC_LOCK ignores a memlock limit of 16 pages; without
 * it, root is bound like anyone.
 */
static int root_child(void *arg)
{
	int fd, fd2;

	if (set_memlock(LIMIT_PAGES * page_size()))
		return 10;
	fd = open_dev();
	fd2 = open_dev();
	if (fd < 0 || fd2 < 0)
		return 11;
	if (ctx_pages(fd, 66))
		return 20;
	/* Exempt pages still show in VmPin. */
	if (vm_pin_pages() != 66)
		return 21;
	if (seg_create(fd, 64 * page_size()))
		return 22;
	if (drop_cap(CAP_IPC_LOCK))
		return 12;
	if (ctx_pages(fd2, 66) != -ENOMEM)
		return 23;
	if (seg_create(fd, 17 * page_size()) != -ENOMEM)
		return 24;
	if (seg_create(fd, 16 * page_size()))
		return 25;
	return 0;
}

TEST(cap_ipc_lock_exempts)
{
	REQUIRE_ROOT();
	run_child(_metadata, root_child, NULL);
}

/* ---- VmPin and the sysfs page count ---- */

static int vm_pin_child(void *arg)
{
	unsigned long long pages0 = 0, pages = 0;
	struct agile_ctx_init init;
	void *area;
	int fd;

	if (agile_sysfs_read("pages", &pages0))
		return 10;
	fd = open_dev();
	if (fd < 0)
		return 11;
	if (agile_ctx_init(fd, 64, 4096, &init))
		return 12;
	if (vm_pin_pages() != 66)
		return 20;
	if (agile_sysfs_read("pages", &pages) || pages != pages0 + 66)
		return 21;
	if (seg_create(fd, 10 * page_size()))
		return 13;
	if (vm_pin_pages() != 76)
		return 22;
	if (agile_sysfs_read("pages", &pages) || pages != pages0 + 76)
		return 23;
	/* Mapping the pages pins nothing more. */
	area = agile_map_rw(fd, init.task_reg_offset, init.task_reg_bytes);
	if (area == MAP_FAILED)
		return 14;
	if (vm_pin_pages() != 76)
		return 24;
	/* The mapping holds the file, and the file the pages. */
	close(fd);
	if (vm_pin_pages() != 76)
		return 25;
	munmap(area, init.task_reg_bytes);
	if (vm_pin_pages() != 0)
		return 26;
	if (agile_sysfs_read("pages", &pages) || pages != pages0)
		return 27;
	return 0;
}

TEST(vm_pin_and_pages)
{
	REQUIRE_ROOT();
	run_child(_metadata, vm_pin_child, NULL);
}

/* ---- max_contexts_per_user ---- */

FIXTURE(cap)
{
	unsigned long long saved;
	bool restore;
};

FIXTURE_SETUP(cap)
{
	int fd;

	AGILE_OPEN(fd);
	close(fd);
	if (geteuid())
		SKIP(_exit(AGILE_SKIP_EXIT), "needs root");
	ASSERT_EQ(0, agile_sysfs_read("max_contexts_per_user", &self->saved));
	self->restore = true;
	ASSERT_EQ(0, agile_sysfs_write_u64("max_contexts_per_user", 3));
}

FIXTURE_TEARDOWN(cap)
{
	if (self->restore)
		EXPECT_EQ(0, agile_sysfs_write_u64("max_contexts_per_user",
						   self->saved));
}

static int other_user_child(void *arg)
{
	int fd;

	if (become_limited(OTHER_UID, LIMIT_PAGES))
		return 60;
	fd = open_dev();
	if (fd < 0)
		return 61;
	return agile_ctx_init(fd, 1, 64, NULL) ? 62 : 0;
}

/*
 * Nobody holds 3 contexts (CTX_INIT and a group's): a fourth CTX_INIT or
 * group creation is ENOSPC, joining an existing group is not a new
 * context; another user is not affected; closing one frees a place.
 */
static int cap_child(void *arg)
{
	struct agile_group_join g;
	int fd[6], i, ret, gate;
	pid_t other;

	other = fork_gated(other_user_child, NULL, &gate);
	if (become_limited(NOBODY, LIMIT_PAGES))
		return 10;
	for (i = 0; i < 6; i++) {
		fd[i] = open_dev();
		if (fd[i] < 0)
			return 11;
	}
	if (agile_ctx_init(fd[0], 1, 64, NULL) ||
	    agile_ctx_init(fd[1], 1, 64, NULL))
		return 20;
	group_args(&g, test_key(3), AGILE_GROUP_CREATE);
	if (agile_ioctl(fd[2], AGILE_IOC_GROUP_JOIN, &g))
		return 21;
	if (agile_ctx_init(fd[3], 1, 64, NULL) != -ENOSPC)
		return 22;
	group_args(&g, test_key(4), AGILE_GROUP_CREATE);
	if (agile_ioctl(fd[3], AGILE_IOC_GROUP_JOIN, &g) != -ENOSPC)
		return 23;
	/* Joining shares the creator's context: no new one. */
	group_args(&g, test_key(3), 0);
	if (agile_ioctl(fd[4], AGILE_IOC_GROUP_JOIN, &g))
		return 24;
	ret = open_gate(other, gate);
	if (ret)
		return ret;
	close(fd[0]);
	if (agile_ctx_init(fd[5], 1, 64, NULL))
		return 25;
	return 0;
}

TEST_F(cap, contexts_per_user)
{
	int fd[4], i;

	run_child(_metadata, cap_child, NULL);
	/* Root (CAP_SYS_RESOURCE) is not bound by the cap. */
	for (i = 0; i < 4; i++) {
		AGILE_OPEN(fd[i]);
		ASSERT_EQ(0, agile_ctx_init(fd[i], 1, 64, NULL));
	}
	for (i = 0; i < 4; i++)
		close(fd[i]);
}

TEST_F(cap, root_without_sys_resource)
{
	int fd[4], i, ret;

	for (i = 0; i < 4; i++)
		AGILE_OPEN(fd[i]);
	ASSERT_EQ(0, drop_cap(CAP_SYS_RESOURCE));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, agile_ctx_init(fd[i], 1, 64, NULL));
	ret = agile_ctx_init(fd[3], 1, 64, NULL);
	for (i = 0; i < 4; i++)
		close(fd[i]);
	ASSERT_EQ(-ENOSPC, ret);
}

TEST_HARNESS_MAIN
