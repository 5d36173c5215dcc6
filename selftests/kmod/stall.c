// SPDX-License-Identifier: GPL-2.0-only
/*
 * No lock that another user's file needs is held across a user copy: a
 * process whose result page faults and is never resolved (a userfaultfd
 * page here; a FUSE file in a user namespace does the same for an
 * unprivileged user) stays blocked in its own ioctl, and nobody else
 * waits behind it.  For GROUP_JOIN (the registry lock every member's
 * release takes), SEG_CREATE on a group's context (shared by its
 * members) and CTX_INIT (a file shared across fork()): other processes'
 * calls proceed, and a killed process exits at once instead of hanging
 * in D state in its ->release or in a lock.  And a join whose page was
 * faulted in completes, as if it had never waited.
 *
 * The trapped process write-protects the page that holds its ioctl's
 * argument with userfaultfd (UFFDIO_REGISTER_MODE_WP): the kernel reads
 * the argument, and its write of the result faults into a handler thread
 * that reports the fault and resolves it only when told.  Needs root
 * (userfaultfd for kernel faults) and userfaultfd write-protection
 * (Linux 5.7+); skipped otherwise.
 */
#include "agile_test.h"

#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/syscall.h>

#define NOBODY 65534
#define NR_SLOTS 4
#define MAX_CHILDREN 8

/* A generous wait: a working module answers in milliseconds. */
#define STALL_WAIT_MS AGILE_TEST_WAIT_MS
/* Several such waits may time out in one test on a broken module. */
#define STALL_TIMEOUT_S 120

static __u64 test_key(unsigned int n)
{
	return 0x57a1000000000000ULL | ((__u64)getpid() << 16) | n;
}

static void group_args(struct agile_group_join *g, __u64 key, __u32 flags)
{
	memset(g, 0, sizeof(*g));
	g->key = key;
	g->nr_slots = NR_SLOTS;
	g->task_reg_size = 64;
	g->max_members = 8;
	g->mode = 0666;
	g->flags = flags;
}

/* What a child reports over its pipe. */
enum { R_FAULT = 1, R_DONE, R_SKIP, R_ERROR };

struct report {
	int tag;
	int ret;
	__u32 val; /* member index, segment id */
	int ret2;
	int ret3;
};

static void send_report(int fd, int tag, int ret, __u32 val)
{
	struct report r = { .tag = tag, .ret = ret, .val = val };

	if (write(fd, &r, sizeof(r)) != sizeof(r))
		_exit(3);
}

/* The next report of a child into *@r: 0, or -ETIMEDOUT. */
static int read_report(int fd, struct report *r, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (poll(&pfd, 1, timeout_ms) != 1)
		return -ETIMEDOUT;
	return read(fd, r, sizeof(*r)) == sizeof(*r) ? 0 : -EPIPE;
}

FIXTURE(stall)
{
	pid_t pids[MAX_CHILDREN];
	int nr;
	int fd; /* the test's own file */
};

FIXTURE_SETUP(stall)
{
	AGILE_OPEN(self->fd);
	if (geteuid())
		SKIP(_exit(AGILE_SKIP_EXIT),
		     "needs root (userfaultfd for kernel faults)");
}

/* Kill every child: the trapped one last frees what a broken module holds. */
FIXTURE_TEARDOWN(stall)
{
	int i, status;

	for (i = 0; i < self->nr; i++)
		kill(self->pids[i], SIGKILL);
	for (i = 0; i < self->nr; i++)
		waitpid(self->pids[i], &status, 0);
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * Fork @fn(@arg) with a report pipe; *@report gets its read end.  The
 * child is killed and reaped by the teardown unless reaped before.
 */
static pid_t spawn(FIXTURE_DATA(stall) * self, int (*fn)(void *, int),
		   void *arg, int *report)
{
	int p[2];
	pid_t pid;

	if (self->nr == MAX_CHILDREN || pipe2(p, O_CLOEXEC))
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		_exit(fn(arg, p[1]));
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -1;
	}
	self->pids[self->nr++] = pid;
	*report = p[0];
	return pid;
}

/* Reap @pid, which the teardown then leaves alone. */
static int reap(FIXTURE_DATA(stall) * self, pid_t pid, int timeout_ms)
{
	int i, status = agile_reap_within(pid, timeout_ms);

	if (status < 0)
		return status;
	for (i = 0; i < self->nr; i++)
		if (self->pids[i] == pid)
			self->pids[i] = self->pids[--self->nr];
	return status;
}

/* ---- the trapped process ---- */

struct trap {
	int fd; /* the file to use, or -1: open one */
	__u64 join_first; /* a group to join first, or 0 */
	unsigned long cmd;
	size_t size;
	union {
		struct agile_ctx_init init;
		struct agile_group_join join;
		struct agile_seg_create seg;
	} arg;
	int cmd_pipe; /* read end: a byte resolves the fault */
};

struct trap_thread {
	int uffd;
	void *page;
	long page_size;
	int report;
	int cmd_pipe;
};

/* Report each fault; resolve it (write access again) when told. */
static void *trap_handler(void *p)
{
	struct trap_thread *t = p;
	struct uffdio_writeprotect wp = {
		.range = { .start = (__u64)(uintptr_t)t->page,
			   .len = (__u64)t->page_size },
		.mode = 0,
	};
	struct uffd_msg msg;
	char c;

	for (;;) {
		if (read(t->uffd, &msg, sizeof(msg)) != sizeof(msg))
			break;
		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		send_report(t->report, R_FAULT, 0, 0);
		if (read(t->cmd_pipe, &c, 1) != 1)
			break;
		/* Clearing the protection wakes the faulting thread. */
		if (ioctl(t->uffd, UFFDIO_WRITEPROTECT, &wp))
			send_report(t->report, R_ERROR, -errno, 0);
	}
	return NULL;
}

static __u32 trap_result(const struct trap *t, const void *page)
{
	switch (t->cmd) {
	case AGILE_IOC_GROUP_JOIN:
		return ((const struct agile_group_join *)page)->member;
	case AGILE_IOC_SEG_CREATE:
		return ((const struct agile_seg_create *)page)->id;
	default:
		return 0;
	}
}

static int trap_main(void *arg, int report)
{
	struct trap *t = arg;
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_WP };
	struct uffdio_writeprotect wp = { .mode = UFFDIO_WRITEPROTECT_MODE_WP };
	struct trap_thread tt = { .report = report, .cmd_pipe = t->cmd_pipe };
	struct report r = { 0 };
	struct agile_group_join g;
	pthread_t thread;
	int fd = t->fd, ret;

	if (fd < 0)
		fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		send_report(report, R_ERROR, -errno, 0);
		return 1;
	}
	if (t->join_first) {
		group_args(&g, t->join_first, 0);
		ret = agile_ioctl(fd, AGILE_IOC_GROUP_JOIN, &g);
		if (ret) {
			send_report(report, R_ERROR, ret, 0);
			return 1;
		}
	}
	tt.page_size = sysconf(_SC_PAGESIZE);
	tt.uffd = syscall(__NR_userfaultfd, O_CLOEXEC);
	if (tt.uffd < 0 || ioctl(tt.uffd, UFFDIO_API, &api)) {
		send_report(report, R_SKIP, -errno, 0);
		return 0;
	}
	tt.page = mmap(NULL, tt.page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tt.page == MAP_FAILED) {
		send_report(report, R_ERROR, -errno, 0);
		return 1;
	}
	/* Present before it is protected: the kernel reads it first. */
	memcpy(tt.page, &t->arg, t->size);
	reg.range.start = (__u64)(uintptr_t)tt.page;
	reg.range.len = (__u64)tt.page_size;
	wp.range = reg.range;
	if (ioctl(tt.uffd, UFFDIO_REGISTER, &reg) ||
	    ioctl(tt.uffd, UFFDIO_WRITEPROTECT, &wp)) {
		send_report(report, R_SKIP, -errno, 0);
		return 0;
	}
	if (pthread_create(&thread, NULL, trap_handler, &tt)) {
		send_report(report, R_ERROR, -EAGAIN, 0);
		return 1;
	}
	ret = agile_ioctl(fd, t->cmd, tt.page);
	r.tag = R_DONE;
	r.ret = ret;
	r.val = trap_result(t, tt.page);
	/* What the caller's struct holds in its first bytes now. */
	memcpy(&r.ret2, tt.page, sizeof(r.ret2));
	if (write(report, &r, sizeof(r)) != sizeof(r))
		return 3;
	return 0;
}

/*
 * Start the trapped process and wait until its ioctl faults on the
 * protected page: it is then blocked there for good, unless told.
 * *@cmd gets the pipe that resolves the fault.  0, or -1 with a skip.
 */
static int start_trap(struct __test_metadata *_metadata,
		      FIXTURE_DATA(stall) * self, struct trap *t, pid_t *pid,
		      int *report, int *cmd)
{
	struct report r;
	int p[2];

	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	t->cmd_pipe = p[0];
	*pid = spawn(self, trap_main, t, report);
	close(p[0]);
	*cmd = p[1];
	ASSERT_LT(0, *pid);
	ASSERT_EQ(0, read_report(*report, &r, STALL_WAIT_MS))
	{
		TH_LOG("the trapped ioctl never reported");
	}
	if (r.tag == R_SKIP)
		return -1;
	ASSERT_EQ(R_FAULT, r.tag) TH_LOG("tag %d ret %d", r.tag, r.ret);
	return 0;
}

/* Still blocked: no result reported and not exited. */
static bool still_blocked(pid_t pid, int report)
{
	struct report r;
	int status;

	return read_report(report, &r, 0) == -ETIMEDOUT &&
	       waitpid(pid, &status, WNOHANG) == 0;
}

/* ---- the other processes ---- */

struct other {
	int fd; /* the file to use, or -1: open one */
	bool nobody; /* drop to nobody after opening */
	__u64 key; /* group to join first, or 0 */
	__u32 join_flags;
	bool seg; /* then SEG_CREATE */
	bool ctx_init; /* CTX_INIT and GROUP_JOIN on @fd (expect EBUSY) */
};

/*
 * Do what @arg says, report the results in one report, then sleep until
 * killed: a killed process must exit at once, whatever it holds.
 */
static int other_main(void *arg, int report)
{
	struct other *o = arg;
	struct agile_seg_create seg;
	struct agile_group_join g;
	struct report r = { .tag = R_DONE };
	int fd = o->fd;

	if (fd < 0)
		fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0 || (o->nobody && agile_become(NOBODY, false))) {
		send_report(report, R_ERROR, -errno, 0);
		return 1;
	}
	if (o->key) {
		group_args(&g, o->key, o->join_flags);
		r.ret = agile_ioctl(fd, AGILE_IOC_GROUP_JOIN, &g);
		r.val = g.member;
	}
	if (o->seg) {
		memset(&seg, 0, sizeof(seg));
		seg.bytes = 4096;
		r.ret2 = agile_ioctl(fd, AGILE_IOC_SEG_CREATE, &seg);
		r.val = seg.id;
	}
	if (o->ctx_init) {
		r.ret2 = agile_ctx_init(fd, NR_SLOTS, 64, NULL);
		group_args(&g, test_key(99), AGILE_GROUP_CREATE);
		r.ret3 = agile_ioctl(fd, AGILE_IOC_GROUP_JOIN, &g);
	}
	if (write(report, &r, sizeof(r)) != sizeof(r))
		return 3;
	for (;;)
		pause();
}

/* Start another process and read its report within the wait. */
static pid_t start_other(struct __test_metadata *_metadata,
			 FIXTURE_DATA(stall) * self, struct other *o,
			 struct report *r)
{
	int report, ret;
	pid_t pid;

	pid = spawn(self, other_main, o, &report);
	if (pid < 0)
		return -1;
	ret = read_report(report, r, STALL_WAIT_MS);
	close(report);
	if (ret) {
		TH_LOG("process %d did not report within %d ms: blocked",
		       (int)pid, STALL_WAIT_MS);
		return -1;
	}
	return pid;
}

/* Kill @pid and check that it exits at once (within the generous wait). */
static void kill_exits(struct __test_metadata *_metadata,
		       FIXTURE_DATA(stall) * self, pid_t pid)
{
	int status;

	ASSERT_EQ(0, kill(pid, SIGKILL));
	status = reap(self, pid, STALL_WAIT_MS);
	ASSERT_NE(-ETIMEDOUT, status)
	{
		TH_LOG("killed process %d still there after %d ms (state %c)",
		       (int)pid, STALL_WAIT_MS, agile_proc_state(pid));
	}
	ASSERT_TRUE(WIFSIGNALED(status));
}

/*
 * A join whose result page faults forever: the group's other member and
 * another user's member in its own group exit at once when killed (their
 * release takes the registry lock), and other joins proceed.
 */
TEST_F_TIMEOUT(stall, group_join, STALL_TIMEOUT_S)
{
	struct other member = { .fd = -1, .key = test_key(1) };
	struct other stranger = { .fd = -1,
				  .nobody = true,
				  .key = test_key(2),
				  .join_flags = AGILE_GROUP_CREATE };
	struct other creator = { .fd = -1,
				 .key = test_key(3),
				 .join_flags = AGILE_GROUP_CREATE };
	struct trap t = { .fd = -1,
			  .cmd = AGILE_IOC_GROUP_JOIN,
			  .size = sizeof(t.arg.join) };
	struct agile_group_join g;
	pid_t trapped, pid_m, pid_s, pid_c;
	int report, cmd;
	struct report r;

	group_args(&g, test_key(1), AGILE_GROUP_CREATE);
	ASSERT_EQ(0, agile_ioctl(self->fd, AGILE_IOC_GROUP_JOIN, &g));
	pid_m = start_other(_metadata, self, &member, &r);
	ASSERT_LT(0, pid_m);
	ASSERT_EQ(0, r.ret);
	ASSERT_EQ(1U, r.val);
	pid_s = start_other(_metadata, self, &stranger, &r);
	ASSERT_LT(0, pid_s);
	ASSERT_EQ(0, r.ret);

	group_args(&t.arg.join, test_key(1), 0);
	if (start_trap(_metadata, self, &t, &trapped, &report, &cmd))
		SKIP(return, "no userfaultfd write-protection here");

	/* Killed members exit at once, though their release ends groups. */
	kill_exits(_metadata, self, pid_m);
	kill_exits(_metadata, self, pid_s);

	/* Another join, of another key, proceeds. */
	pid_c = start_other(_metadata, self, &creator, &r);
	ASSERT_LT(0, pid_c) TH_LOG("a join waited behind the faulting one");
	ASSERT_EQ(0, r.ret);
	ASSERT_EQ(0U, r.val);
	kill_exits(_metadata, self, pid_c);
	ASSERT_TRUE(still_blocked(trapped, report));
	close(report);
	close(cmd);
}

/*
 * The faulting join commits only once its page is faulted in: a join
 * that comes meanwhile takes the next index, and the resumed one the one
 * after, with its result copied.
 */
TEST_F_TIMEOUT(stall, group_join_resumes, STALL_TIMEOUT_S)
{
	struct other member = { .fd = -1, .key = test_key(4) };
	struct trap t = { .fd = -1,
			  .cmd = AGILE_IOC_GROUP_JOIN,
			  .size = sizeof(t.arg.join) };
	struct agile_group_join g;
	int report, cmd;
	struct report r;
	pid_t trapped;

	group_args(&g, test_key(4), AGILE_GROUP_CREATE);
	ASSERT_EQ(0, agile_ioctl(self->fd, AGILE_IOC_GROUP_JOIN, &g));
	group_args(&t.arg.join, test_key(4), 0);
	if (start_trap(_metadata, self, &t, &trapped, &report, &cmd))
		SKIP(return, "no userfaultfd write-protection here");

	ASSERT_LT(0, start_other(_metadata, self, &member, &r));
	ASSERT_EQ(0, r.ret);
	ASSERT_EQ(1U, r.val);

	ASSERT_EQ(1, write(cmd, "u", 1));
	ASSERT_EQ(0, read_report(report, &r, STALL_WAIT_MS));
	ASSERT_EQ(R_DONE, r.tag);
	ASSERT_EQ(0, r.ret);
	ASSERT_EQ(2U, r.val);
	close(report);
	close(cmd);
}

/*
 * A join that fails after its page was faulted in (the group filled up
 * meanwhile) leaves the caller's struct as it was: the page is faulted
 * in for writing without being written.
 */
TEST_F_TIMEOUT(stall, group_join_fails_cleanly, STALL_TIMEOUT_S)
{
	struct trap t = { .fd = -1,
			  .cmd = AGILE_IOC_GROUP_JOIN,
			  .size = sizeof(t.arg.join) };
	int report, cmd, key_low, fd;
	struct agile_group_join g;
	struct report r;
	pid_t trapped;

	group_args(&g, test_key(6), AGILE_GROUP_CREATE);
	g.max_members = 2;
	ASSERT_EQ(0, agile_ioctl(self->fd, AGILE_IOC_GROUP_JOIN, &g));
	group_args(&t.arg.join, test_key(6), 0);
	t.arg.join.max_members = 2;
	memcpy(&key_low, &t.arg.join, sizeof(key_low));
	ASSERT_NE(0, key_low & 0xff);
	if (start_trap(_metadata, self, &t, &trapped, &report, &cmd))
		SKIP(return, "no userfaultfd write-protection here");

	/* The last place goes to another joiner meanwhile. */
	fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	group_args(&g, test_key(6), 0);
	g.max_members = 2;
	ASSERT_EQ(0, agile_ioctl(fd, AGILE_IOC_GROUP_JOIN, &g));
	ASSERT_EQ(1U, g.member);

	ASSERT_EQ(1, write(cmd, "u", 1));
	ASSERT_EQ(0, read_report(report, &r, STALL_WAIT_MS));
	ASSERT_EQ(R_DONE, r.tag);
	ASSERT_EQ(-ENOSPC, r.ret);
	ASSERT_EQ(key_low, r.ret2);
	close(fd);
	close(report);
	close(cmd);
}

/*
 * A member's SEG_CREATE whose result page faults forever: another
 * member's SEG_CREATE proceeds (with the next id), and that member exits
 * at once when killed.  The faulting one's id is reserved, not mapped,
 * until its page is faulted in; then it is published.
 */
TEST_F_TIMEOUT(stall, seg_create, STALL_TIMEOUT_S)
{
	struct other member = { .fd = -1, .key = test_key(5), .seg = true };
	struct trap t = { .fd = -1,
			  .join_first = test_key(5),
			  .cmd = AGILE_IOC_SEG_CREATE,
			  .size = sizeof(t.arg.seg) };
	struct agile_seg_create seg;
	struct agile_group_join g;
	int report, cmd;
	struct report r;
	pid_t trapped, pid_m;
	void *p;

	group_args(&g, test_key(5), AGILE_GROUP_CREATE);
	ASSERT_EQ(0, agile_ioctl(self->fd, AGILE_IOC_GROUP_JOIN, &g));
	t.arg.seg.bytes = 4096;
	if (start_trap(_metadata, self, &t, &trapped, &report, &cmd))
		SKIP(return, "no userfaultfd write-protection here");

	pid_m = start_other(_metadata, self, &member, &r);
	ASSERT_LT(0, pid_m)
	{
		TH_LOG("a SEG_CREATE waited behind the faulting one");
	}
	ASSERT_EQ(0, r.ret);
	ASSERT_EQ(0, r.ret2);
	ASSERT_EQ(1U, r.val);
	memset(&seg, 0, sizeof(seg));
	seg.bytes = 4096;
	ASSERT_EQ(0, agile_ioctl(self->fd, AGILE_IOC_SEG_CREATE, &seg));
	ASSERT_EQ(2U, seg.id);
	/* Id 0 is reserved, not published: nothing to map yet. */
	p = agile_map_rw(self->fd, AGILE_MMAP_SEGMENTS, 4096);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EINVAL, errno);
	kill_exits(_metadata, self, pid_m);
	ASSERT_TRUE(still_blocked(trapped, report));

	ASSERT_EQ(1, write(cmd, "u", 1));
	ASSERT_EQ(0, read_report(report, &r, STALL_WAIT_MS));
	ASSERT_EQ(R_DONE, r.tag);
	ASSERT_EQ(0, r.ret);
	ASSERT_EQ(0U, r.val);
	p = agile_map_rw(self->fd, AGILE_MMAP_SEGMENTS, 4096);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, 4096);
	close(report);
	close(cmd);
}

/*
 * A CTX_INIT whose result page faults forever, on a file shared with
 * another process: that process's CTX_INIT and GROUP_JOIN on the file
 * fail with EBUSY at once, and it exits at once when killed.  When the
 * trapped process dies, its copy fails and the file is free again.
 */
TEST_F_TIMEOUT(stall, ctx_init, STALL_TIMEOUT_S)
{
	struct other sharer = { .fd = self->fd, .ctx_init = true };
	struct trap t = { .fd = self->fd,
			  .cmd = AGILE_IOC_CTX_INIT,
			  .size = sizeof(t.arg.init) };
	int report, cmd, status;
	struct report r;
	pid_t trapped, pid;

	t.arg.init.nr_slots = NR_SLOTS;
	t.arg.init.task_reg_size = 64;
	if (start_trap(_metadata, self, &t, &trapped, &report, &cmd))
		SKIP(return, "no userfaultfd write-protection here");

	pid = start_other(_metadata, self, &sharer, &r);
	ASSERT_LT(0, pid) TH_LOG("CTX_INIT waited behind the faulting one");
	ASSERT_EQ(-EBUSY, r.ret2);
	ASSERT_EQ(-EBUSY, r.ret3);
	kill_exits(_metadata, self, pid);
	ASSERT_TRUE(still_blocked(trapped, report));
	ASSERT_EQ(-EBUSY, agile_ctx_init(self->fd, NR_SLOTS, 64, NULL));

	/* The trapped process dies: its CTX_INIT leaves no trace. */
	ASSERT_EQ(0, kill(trapped, SIGKILL));
	status = reap(self, trapped, STALL_WAIT_MS);
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(0, agile_ctx_init(self->fd, NR_SLOTS, 64, NULL));
	close(report);
	close(cmd);
}

TEST_HARNESS_MAIN
