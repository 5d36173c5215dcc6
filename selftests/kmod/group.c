// SPDX-License-Identifier: GPL-2.0-only
/*
 * AGILE_IOC_GROUP_JOIN: creating and joining groups, member indices in
 * join order across processes, one context shared by every member
 * (doorbells, SIGNAL/WAIT, segments), the permission classes, every bad
 * input, and the end of a group: a member that closes or is killed makes
 * every wait of the others fail with EPIPE, and every join or query of
 * its key (EPIPE at once, for a late joiner) until the last member's file
 * is released, which frees the key; the context goes with its last
 * member.
 */
#include "agile_test.h"

#include <grp.h>
#include <poll.h>
#include <sched.h>

#define NOBODY 65534
#define NR_SLOTS 4
#define MAX_MEMBERS 8

/* A key no other test process uses: the test's pid and a number. */
static __u64 test_key(unsigned int n)
{
	return 0xa91e000000000000ULL | ((__u64)getpid() << 16) | n;
}

static void group_args(struct agile_group_join *g, __u64 key, __u32 flags,
		       __u32 mode)
{
	memset(g, 0, sizeof(*g));
	g->key = key;
	g->nr_slots = NR_SLOTS;
	g->task_reg_size = 64;
	g->max_members = MAX_MEMBERS;
	g->mode = mode;
	g->flags = flags;
	g->member = 0xdeadbeef;
}

static int group_join(int fd, struct agile_group_join *g)
{
	return agile_ioctl(fd, AGILE_IOC_GROUP_JOIN, g);
}

/* Join @key (0600); the member index, or -errno. */
/*
 * Join (with @flags: create) group @key, mode 0600, on @fd and map its
 * doorbells into *@db: 0 or a negative errno.
 */
static int group_join_mapped(int fd, __u64 key, __u32 flags,
			     struct agile_group_join *g,
			     struct agile_doorbell **db)
{
	int ret;

	group_args(g, key, flags, 0600);
	ret = group_join(fd, g);
	if (ret)
		return ret;
	*db = agile_map_rw(fd, g->doorbell_offset, g->doorbell_bytes);
	return *db == MAP_FAILED ? -errno : 0;
}

static int group_join_key(int fd, __u64 key, __u32 flags)
{
	struct agile_group_join g;
	int ret;

	group_args(&g, key, flags, 0600);
	ret = group_join(fd, &g);
	return ret ? ret : (int)g.member;
}

static int create_mode(int fd, __u64 key, __u32 mode)
{
	struct agile_group_join g;

	group_args(&g, key, AGILE_GROUP_CREATE | AGILE_GROUP_EXCL, mode);
	return group_join(fd, &g);
}

#define REQUIRE_ROOT()                              \
	do {                                        \
		if (geteuid())                      \
			SKIP(return, "needs root"); \
	} while (0)

static int sysfs_read_int(const char *name)
{
	unsigned long long val = 0;

	return agile_sysfs_read(name, &val) ? -1 : (int)val;
}

/* Poll sysfs @name until it reads @want; 0 or -ETIMEDOUT. */
static int sysfs_wait_for(const char *name, int want)
{
	__u64 deadline = agile_now_ns() + AGILE_TEST_WAIT_MS * NSEC_PER_MSEC;

	while (sysfs_read_int(name) != want) {
		if (agile_now_ns() > deadline)
			return -ETIMEDOUT;
		agile_sleep_ms(5);
	}
	return 0;
}

/*
 * A member in another process, driven over two pipes: it joins @key,
 * maps the doorbells, replies its member index, then runs commands and
 * replies each result until told to quit or the command pipe closes.
 */
enum { M_QUIT, M_STORE, M_SIGNAL, M_WAIT, M_CLOSE };

struct member_cmd {
	int op;
	__u32 slot;
	__u32 value;
};

struct member {
	pid_t pid;
	int cmd; /* to the child */
	int reply; /* from the child */
};

static void member_reply_int(int fd, int val)
{
	if (write(fd, &val, sizeof(val)) != sizeof(val))
		_exit(3);
}

static void __attribute__((noreturn))
member_child(__u64 key, __u32 flags, int cmd_fd, int reply_fd)
{
	struct agile_doorbell *db = MAP_FAILED;
	struct agile_group_join g;
	struct member_cmd c;
	int fd, ret;

	/*
	 * Drop what fork() copied, the parent's agile files above all: a
	 * member's file must be released when the member itself goes.
	 */
	for (fd = 3; fd < 1024; fd++)
		if (fd != cmd_fd && fd != reply_fd)
			close(fd);
	fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
	ret = fd < 0 ? -errno : group_join_mapped(fd, key, flags, &g, &db);
	member_reply_int(reply_fd, ret ? ret : (int)g.member);
	if (ret)
		_exit(1);
	while (read(cmd_fd, &c, sizeof(c)) == sizeof(c)) {
		switch (c.op) {
		case M_STORE:
			agile_db_store(db, c.slot, c.value);
			ret = 0;
			break;
		case M_SIGNAL:
			ret = agile_signal(fd, c.slot, c.value);
			break;
		case M_WAIT:
			ret = agile_wait(fd, c.slot, AGILE_CMP_EQ, c.value,
					 AGILE_TIMEOUT_INFINITE, NULL);
			break;
		case M_CLOSE:
			munmap(db, g.doorbell_bytes);
			ret = close(fd) ? -errno : 0;
			break;
		default:
			_exit(0);
		}
		member_reply_int(reply_fd, ret);
	}
	_exit(0);
}

/* The child's next reply into *@val: 0, -ETIMEDOUT or -EPIPE. */
static int member_reply(struct member *m, int *val)
{
	struct pollfd pfd = { .fd = m->reply, .events = POLLIN };

	if (poll(&pfd, 1, AGILE_TEST_WAIT_MS) != 1)
		return -ETIMEDOUT;
	return read(m->reply, val, sizeof(*val)) == sizeof(*val) ? 0 : -EPIPE;
}

/* Fork a member that joins @key; its member index or -errno. */
static int member_start(struct member *m, __u64 key, __u32 flags)
{
	int to_child[2], from_child[2], val, ret;

	if (pipe2(to_child, O_CLOEXEC))
		return -errno;
	if (pipe2(from_child, O_CLOEXEC)) {
		ret = -errno;
		close(to_child[0]);
		close(to_child[1]);
		return ret;
	}
	fflush(stdout);
	fflush(stderr);
	m->pid = fork();
	if (m->pid == 0)
		member_child(key, flags, to_child[0], from_child[1]);
	close(to_child[0]);
	close(from_child[1]);
	m->cmd = to_child[1];
	m->reply = from_child[0];
	if (m->pid < 0)
		return -EAGAIN;
	ret = member_reply(m, &val);
	return ret ? ret : val;
}

static int member_send(struct member *m, int op, __u32 slot, __u32 value)
{
	struct member_cmd c = { .op = op, .slot = slot, .value = value };

	return write(m->cmd, &c, sizeof(c)) == sizeof(c) ? 0 : -EPIPE;
}

/* Run one command in the member; its result, or -ETIMEDOUT/-EPIPE. */
static int member_call(struct member *m, int op, __u32 slot, __u32 value)
{
	int ret, val;

	ret = member_send(m, op, slot, value);
	if (!ret)
		ret = member_reply(m, &val);
	return ret ? ret : val;
}

/* Tell the member to quit and reap it; its wait status. */
static int member_stop(struct member *m)
{
	int status;

	member_send(m, M_QUIT, 0, 0);
	close(m->cmd);
	close(m->reply);
	if (waitpid(m->pid, &status, 0) != m->pid)
		return -errno;
	return status;
}

/* A thread sleeping in WAIT_ANY on slots 1 and 2 (EQ 1). */
struct any_thread {
	pthread_t thread;
	int fd;
	int ret;
};

static void *any_thread_fn(void *arg)
{
	static const struct agile_wait_cond conds[] = {
		{ .slot = 1, .cmp = AGILE_CMP_EQ, .value = 1 },
		{ .slot = 2, .cmp = AGILE_CMP_EQ, .value = 1 },
	};
	struct any_thread *at = arg;

	at->ret = agile_wait_any(at->fd, conds, 2, 0, AGILE_TIMEOUT_INFINITE,
				 NULL, NULL);
	return NULL;
}

TEST(info_feature)
{
	struct agile_info info;
	int fd;

	AGILE_OPEN(fd);
	ASSERT_EQ(0, agile_info(fd, &info));
	ASSERT_EQ(AGILE_FEAT_GROUPS, info.features & AGILE_FEAT_GROUPS);
	ASSERT_EQ(AGILE_FEAT_GROUP_INFO, info.features & AGILE_FEAT_GROUP_INFO);
	ASSERT_EQ(AGILE_FEAT_GROUP_ENDED,
		  info.features & AGILE_FEAT_GROUP_ENDED);
	close(fd);
}

/* The creator is member 0 and gets CTX_INIT's offsets and lengths. */
TEST(create_and_join)
{
	struct agile_group_join g, j;
	struct agile_ctx_init init;
	struct agile_doorbell *db0, *db1;
	int fd0, fd1, fd2, groups;
	__u64 key = test_key(1);
	unsigned char *tr;

	groups = sysfs_read_int("groups");
	AGILE_OPEN(fd0);
	AGILE_OPEN(fd1);
	AGILE_OPEN(fd2);
	ASSERT_EQ(0, agile_ctx_init(fd2, NR_SLOTS, 64, &init));
	group_args(&g, key, AGILE_GROUP_CREATE, 0600);
	/* Formerly reserved, now from kernel: ignored on input. */
	g.owner_uid = 0xdead;
	g.owner_gid = 0xbeef;
	g.group_mode = 0777;
	g.nr_members = 99;
	ASSERT_EQ(0, group_join(fd0, &g));
	ASSERT_EQ(0U, g.member);
	ASSERT_EQ(key, g.key);
	/* The owner, the mode and the count come back to the creator... */
	ASSERT_EQ((__u32)geteuid(), g.owner_uid);
	ASSERT_EQ((__u32)getegid(), g.owner_gid);
	ASSERT_EQ(0600U, g.group_mode);
	ASSERT_EQ(1U, g.nr_members);
	ASSERT_EQ(init.doorbell_offset, g.doorbell_offset);
	ASSERT_EQ(init.doorbell_bytes, g.doorbell_bytes);
	ASSERT_EQ(init.task_reg_offset, g.task_reg_offset);
	ASSERT_EQ(init.task_reg_bytes, g.task_reg_bytes);
	ASSERT_EQ(groups + 1, sysfs_read_int("groups"));

	group_args(&j, key, 0, 0);
	ASSERT_EQ(0, group_join(fd1, &j));
	ASSERT_EQ(1U, j.member);
	/* ...and to every joiner. */
	ASSERT_EQ((__u32)geteuid(), j.owner_uid);
	ASSERT_EQ((__u32)getegid(), j.owner_gid);
	ASSERT_EQ(0600U, j.group_mode);
	ASSERT_EQ(2U, j.nr_members);
	ASSERT_EQ(g.doorbell_bytes, j.doorbell_bytes);
	ASSERT_EQ(g.task_reg_bytes, j.task_reg_bytes);
	ASSERT_EQ(groups + 1, sysfs_read_int("groups"));

	/* Both files map the same pages. */
	db0 = agile_map_rw(fd0, g.doorbell_offset, g.doorbell_bytes);
	db1 = agile_map_rw(fd1, j.doorbell_offset, j.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db0);
	ASSERT_NE(MAP_FAILED, db1);
	agile_db_store(db0, 2, 0x1234);
	ASSERT_EQ(0x1234U, agile_db_value(db1, 2));
	ASSERT_EQ(0, agile_signal(fd1, 3, 77));
	ASSERT_EQ(77U, agile_db_value(db0, 3));
	tr = agile_map_rw(fd1, j.task_reg_offset, j.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, tr);
	tr[64 * 3] = 0x42;
	munmap(tr, j.task_reg_bytes);
	tr = agile_map_rw(fd0, g.task_reg_offset, g.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, tr);
	ASSERT_EQ(0x42, tr[64 * 3]);
	munmap(tr, g.task_reg_bytes);
	munmap(db0, g.doorbell_bytes);
	munmap(db1, j.doorbell_bytes);
	close(fd0);
	close(fd1);
	close(fd2);
	ASSERT_EQ(groups, sysfs_read_int("groups"));
}

TEST(enoent_without_create)
{
	int fd;

	AGILE_OPEN(fd);
	ASSERT_EQ(-ENOENT, group_join_key(fd, test_key(2), 0));
	/* The failed join left the file free for CTX_INIT. */
	ASSERT_EQ(0, agile_ctx_init(fd, NR_SLOTS, 64, NULL));
	close(fd);
}

TEST(eexist_with_excl)
{
	__u64 key = test_key(3);
	int fd0, fd1, fd2;

	AGILE_OPEN(fd0);
	AGILE_OPEN(fd1);
	AGILE_OPEN(fd2);
	ASSERT_EQ(0, group_join_key(fd0, key,
				    AGILE_GROUP_CREATE | AGILE_GROUP_EXCL));
	ASSERT_EQ(-EEXIST,
		  group_join_key(fd1, key,
				 AGILE_GROUP_CREATE | AGILE_GROUP_EXCL));
	/* CREATE alone joins an existing group; the index was not used. */
	ASSERT_EQ(1, group_join_key(fd1, key, AGILE_GROUP_CREATE));
	ASSERT_EQ(2, group_join_key(fd2, key, 0));
	close(fd0);
	close(fd1);
	close(fd2);
}

TEST(ebusy)
{
	__u64 key = test_key(4);
	int fd0, fd1, fd2;

	AGILE_OPEN(fd0);
	AGILE_OPEN(fd1);
	AGILE_OPEN(fd2);
	ASSERT_EQ(0, agile_ctx_init(fd0, NR_SLOTS, 64, NULL));
	ASSERT_EQ(-EBUSY, group_join_key(fd0, key, AGILE_GROUP_CREATE));
	ASSERT_EQ(-ENOENT, group_join_key(fd1, key, 0));

	ASSERT_EQ(0, group_join_key(fd1, key, AGILE_GROUP_CREATE));
	ASSERT_EQ(-EBUSY, group_join_key(fd1, key, 0));
	ASSERT_EQ(-EBUSY, group_join_key(fd1, test_key(5), AGILE_GROUP_CREATE));
	ASSERT_EQ(-EBUSY, agile_ctx_init(fd1, NR_SLOTS, 64, NULL));
	ASSERT_EQ(-ENOENT, group_join_key(fd2, test_key(5), 0));
	/* The refused calls took no member index. */
	ASSERT_EQ(1, group_join_key(fd2, key, 0));
	close(fd0);
	close(fd1);
	close(fd2);
}

static void check_rejected(struct __test_metadata *_metadata, int fd,
			   const struct agile_group_join *bad, int err)
{
	struct agile_group_join g = *bad;

	ASSERT_EQ(err, group_join(fd, &g))
	{
		TH_LOG("slots %u size %u max %u mode %#o flags %#x reserved %llx %llx",
		       bad->nr_slots, bad->task_reg_size, bad->max_members,
		       bad->mode, bad->flags,
		       (unsigned long long)bad->reserved[0],
		       (unsigned long long)bad->reserved[1]);
	}
	/* Nothing was written back. */
	ASSERT_EQ(0xdeadbeefU, g.member);
}

TEST(bad_fields_einval)
{
	static const __u32 modes[] = { 01000, 0700, 0070,  0007,      0001,
				       0100,  0010, 07777, 0xffffffff };
	static const __u32 sizes[] = { 0, 32, 63, 65, 96, 8192, 0x80000000 };
	static const __u32 maxes[] = { 0, AGILE_GROUP_MAX_MEMBERS + 1,
				       0xffffffff };
	struct agile_group_join g;
	__u64 key = test_key(6);
	unsigned int i;
	int fd, groups;

	groups = sysfs_read_int("groups");
	AGILE_OPEN(fd);
	for (i = 0; i < ARRAY_SIZE(g.reserved); i++) {
		group_args(&g, key, AGILE_GROUP_CREATE, 0600);
		g.reserved[i] = 1ULL << 63;
		check_rejected(_metadata, fd, &g, -EINVAL);
	}
	for (i = 3; i < 32; i++) {
		group_args(&g, key, AGILE_GROUP_CREATE | (1U << i), 0600);
		check_rejected(_metadata, fd, &g, -EINVAL);
		group_args(&g, key, 1U << i, 0600);
		check_rejected(_metadata, fd, &g, -EINVAL);
	}
	/* EXCL means something only with CREATE. */
	group_args(&g, key, AGILE_GROUP_EXCL, 0600);
	check_rejected(_metadata, fd, &g, -EINVAL);
	for (i = 0; i < ARRAY_SIZE(modes); i++) {
		group_args(&g, key, AGILE_GROUP_CREATE, modes[i]);
		check_rejected(_metadata, fd, &g, -EINVAL);
	}
	for (i = 0; i < ARRAY_SIZE(maxes); i++) {
		group_args(&g, key, AGILE_GROUP_CREATE, 0600);
		g.max_members = maxes[i];
		check_rejected(_metadata, fd, &g, -EINVAL);
	}
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		group_args(&g, key, AGILE_GROUP_CREATE, 0600);
		g.task_reg_size = sizes[i];
		check_rejected(_metadata, fd, &g, -EINVAL);
	}
	group_args(&g, key, AGILE_GROUP_CREATE, 0600);
	g.nr_slots = 0;
	check_rejected(_metadata, fd, &g, -EINVAL);
	/* Products that overflow 32 bits. */
	g.nr_slots = 0x80000000;
	check_rejected(_metadata, fd, &g, -EINVAL);
	g.nr_slots = 1U << 21;
	g.task_reg_size = 4096;
	check_rejected(_metadata, fd, &g, -EINVAL);

	/* No group was made by any of them. */
	ASSERT_EQ(groups, sysfs_read_int("groups"));
	ASSERT_EQ(-ENOENT, group_join_key(fd, key, 0));
	/* Mode 0 and the largest max_members are valid. */
	group_args(&g, key, AGILE_GROUP_CREATE, 0);
	g.max_members = AGILE_GROUP_MAX_MEMBERS;
	ASSERT_EQ(0, group_join(fd, &g));
	close(fd);
}

TEST(over_max_slots_enospc)
{
	struct agile_group_join g;
	struct agile_info info;
	int fd;

	AGILE_OPEN(fd);
	ASSERT_EQ(0, agile_info(fd, &info));
	group_args(&g, test_key(7), AGILE_GROUP_CREATE, 0600);
	g.nr_slots = info.max_slots + 1;
	check_rejected(_metadata, fd, &g, -ENOSPC);
	ASSERT_EQ(-ENOENT, group_join_key(fd, test_key(7), 0));
	close(fd);
}

/*
 * The group @key as QUERY reports it into *@q; 0 or -errno.  The sizes
 * asked with are valid, but not the group's: the group's come back.
 */
static int group_query(int fd, __u64 key, struct agile_group_join *q)
{
	group_args(q, key, AGILE_GROUP_QUERY, 0);
	q->nr_slots = 1;
	q->task_reg_size = 4096;
	q->max_members = AGILE_GROUP_MAX_MEMBERS;
	q->mode = 0444;
	return group_join(fd, q);
}

/*
 * QUERY reports a group without joining it, on any file, whoever asks:
 * owner, mode, sizes, member count and offsets; ENOENT for no group.
 */
TEST(query)
{
	struct agile_group_join g, q;
	__u64 key = test_key(40);
	int fd0, fd1, fd2;

	AGILE_OPEN(fd0);
	AGILE_OPEN(fd1);
	AGILE_OPEN(fd2);
	ASSERT_EQ(-ENOENT, group_query(fd1, key, &q));
	ASSERT_EQ(0xdeadbeefU, q.member);
	group_args(&g, key, AGILE_GROUP_CREATE, 0640);
	g.max_members = 5;
	ASSERT_EQ(0, group_join(fd0, &g));

	/* A file without a context asks; it stays free. */
	ASSERT_EQ(0, group_query(fd1, key, &q));
	ASSERT_EQ(key, q.key);
	ASSERT_EQ((__u32)NR_SLOTS, q.nr_slots);
	ASSERT_EQ(64U, q.task_reg_size);
	ASSERT_EQ(5U, q.max_members);
	ASSERT_EQ(0444U, q.mode);
	ASSERT_EQ(AGILE_GROUP_QUERY, q.flags);
	ASSERT_EQ(0U, q.member);
	ASSERT_EQ(1U, q.nr_members);
	ASSERT_EQ((__u32)geteuid(), q.owner_uid);
	ASSERT_EQ((__u32)getegid(), q.owner_gid);
	ASSERT_EQ(0640U, q.group_mode);
	ASSERT_EQ(g.doorbell_offset, q.doorbell_offset);
	ASSERT_EQ(g.doorbell_bytes, q.doorbell_bytes);
	ASSERT_EQ(g.task_reg_offset, q.task_reg_offset);
	ASSERT_EQ(g.task_reg_bytes, q.task_reg_bytes);
	ASSERT_EQ(-EBADFD, agile_signal(fd1, 0, 1));

	/* It took no member index: the next joiner is member 1. */
	group_args(&g, key, 0, 0);
	g.max_members = 5;
	ASSERT_EQ(0, group_join(fd1, &g));
	ASSERT_EQ(1U, g.member);
	/* A file with a context, even another group's, may ask. */
	ASSERT_EQ(0, agile_ctx_init(fd2, 1, 64, NULL));
	ASSERT_EQ(0, group_query(fd2, key, &q));
	ASSERT_EQ(2U, q.nr_members);
	ASSERT_EQ(0, group_query(fd0, key, &q));
	ASSERT_EQ(2U, q.nr_members);
	close(fd0);
	close(fd1);
	close(fd2);
	/* The group ended with its first member: gone for QUERY too. */
	AGILE_OPEN(fd0);
	ASSERT_EQ(-ENOENT, group_query(fd0, key, &q));
	close(fd0);
}

TEST(query_bad_inputs)
{
	long page = sysconf(_SC_PAGESIZE);
	struct agile_group_join q, *ro;
	__u64 key = test_key(41);
	unsigned int i;
	int fd;

	AGILE_OPEN(fd);
	ASSERT_EQ(0, group_join_key(fd, key, AGILE_GROUP_CREATE));
	/* QUERY with any other flag. */
	for (i = 0; i < 32; i++) {
		if ((1U << i) == AGILE_GROUP_QUERY)
			continue;
		group_args(&q, key, AGILE_GROUP_QUERY | (1U << i), 0600);
		ASSERT_EQ(-EINVAL, group_join(fd, &q)) TH_LOG("bit %u", i);
		ASSERT_EQ(0xdeadbeefU, q.member);
	}
	for (i = 0; i < ARRAY_SIZE(q.reserved); i++) {
		group_args(&q, key, AGILE_GROUP_QUERY, 0600);
		q.reserved[i] = 1;
		ASSERT_EQ(-EINVAL, group_join(fd, &q));
		ASSERT_EQ(0xdeadbeefU, q.member);
	}
	/* The other fields are checked as for a join. */
	group_args(&q, key, AGILE_GROUP_QUERY, 0700);
	ASSERT_EQ(-EINVAL, group_join(fd, &q));
	group_args(&q, key, AGILE_GROUP_QUERY, 0600);
	q.max_members = 0;
	ASSERT_EQ(-EINVAL, group_join(fd, &q));
	group_args(&q, key, AGILE_GROUP_QUERY, 0600);
	q.max_members = AGILE_GROUP_MAX_MEMBERS + 1;
	ASSERT_EQ(-EINVAL, group_join(fd, &q));
	group_args(&q, key, AGILE_GROUP_QUERY, 0600);
	q.nr_slots = 0;
	ASSERT_EQ(-EINVAL, group_join(fd, &q));
	group_args(&q, key, AGILE_GROUP_QUERY, 0600);
	q.task_reg_size = 100;
	ASSERT_EQ(-EINVAL, group_join(fd, &q));
	ASSERT_EQ(0xdeadbeefU, q.member);
	/* And valid ones that are not the group's do not matter. */
	group_args(&q, key, AGILE_GROUP_QUERY, 0);
	q.nr_slots = 1;
	q.task_reg_size = 128;
	q.max_members = 1;
	ASSERT_EQ(0, group_join(fd, &q));
	ASSERT_EQ((__u32)NR_SLOTS, q.nr_slots);
	ASSERT_EQ(64U, q.task_reg_size);
	ASSERT_EQ((__u32)MAX_MEMBERS, q.max_members);
	ASSERT_EQ(-EFAULT, agile_ioctl(fd, AGILE_IOC_GROUP_JOIN, NULL));
	/* Read-only memory: the query is made but cannot be reported. */
	ro = mmap(NULL, page, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	group_args(ro, key, AGILE_GROUP_QUERY, 0);
	ASSERT_EQ(0, mprotect(ro, page, PROT_READ));
	ASSERT_EQ(-EFAULT, group_join(fd, ro));
	munmap(ro, page);
	close(fd);
}

/*
 * Who joins learns the owner as its own user namespace sees it: another
 * user (nobody) may QUERY a 0600 group it cannot join.
 */
static int stranger_queries(void *arg)
{
	struct agile_group_join q;
	__u64 key = *(__u64 *)arg;
	int fd;

	fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0 || agile_become(NOBODY, false))
		return 10;
	if (group_query(fd, key, &q))
		return 20;
	if (q.owner_uid != 0 || q.group_mode != 0600 || q.nr_members != 1)
		return 21;
	if (group_join_key(fd, key, 0) != -EACCES)
		return 22;
	return 0;
}

TEST(query_needs_no_permission)
{
	__u64 key = test_key(42);
	int fd, status;

	REQUIRE_ROOT();
	AGILE_OPEN(fd);
	ASSERT_EQ(0, group_join_key(fd, key, AGILE_GROUP_CREATE));
	status = agile_run_child(stranger_queries, &key);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	close(fd);
}

/*
 * A squatter: another user creates the key first, mode 0666.  A creator
 * with EXCL gets EEXIST instead of joining it; QUERY, or the join's own
 * report without EXCL, shows the squatter as the owner.
 */
static int squatter(__u64 key, int reply, int hold)
{
	int fd, ret;
	char c;

	fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0 || agile_become(NOBODY, false))
		return 10;
	ret = create_mode(fd, key, 0666);
	if (write(reply, &ret, sizeof(ret)) != sizeof(ret))
		return 11;
	/* Hold the group until the test closes its end of @hold. */
	while (read(hold, &c, 1) > 0)
		;
	return ret ? 12 : 0;
}

TEST(excl_refuses_squatter)
{
	int reply[2], hold[2], ret, fd0, fd1, status;
	struct agile_group_join g, q;
	__u64 key = test_key(43);
	pid_t pid;

	REQUIRE_ROOT();
	ASSERT_EQ(0, pipe(reply));
	ASSERT_EQ(0, pipe(hold));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(reply[0]);
		close(hold[1]);
		_exit(squatter(key, reply[1], hold[0]));
	}
	close(reply[1]);
	close(hold[0]);
	ASSERT_EQ((ssize_t)sizeof(ret), read(reply[0], &ret, sizeof(ret)));
	ASSERT_EQ(0, ret);

	AGILE_OPEN(fd0);
	AGILE_OPEN(fd1);
	group_args(&g, key, AGILE_GROUP_CREATE | AGILE_GROUP_EXCL, 0600);
	ASSERT_EQ(-EEXIST, group_join(fd0, &g));
	ASSERT_EQ(0xdeadbeefU, g.member);
	ASSERT_EQ(0, group_query(fd0, key, &q));
	ASSERT_EQ((__u32)NOBODY, q.owner_uid);
	ASSERT_EQ(0666U, q.group_mode);
	/* Without EXCL the creator joins, and its report says whose. */
	group_args(&g, key, AGILE_GROUP_CREATE, 0600);
	ASSERT_EQ(0, group_join(fd1, &g));
	ASSERT_EQ(1U, g.member);
	ASSERT_EQ((__u32)NOBODY, g.owner_uid);
	ASSERT_EQ((__u32)NOBODY, g.owner_gid);
	ASSERT_EQ(0666U, g.group_mode);
	close(hold[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	close(reply[0]);
	close(fd0);
	close(fd1);
}

/*
 * Groups live in their creator's IPC and user namespaces: a process in a
 * new one does not see the host's group (ENOENT for a join or a query)
 * and makes its own with the same key, which others in that namespace
 * join; the host's group is untouched.  Exit codes name the check.
 */
struct ns_arg {
	__u64 key;
	int flags; /* CLONE_NEWIPC or CLONE_NEWUSER */
};

static int ns_joiner(void *arg)
{
	const struct ns_arg *a = arg;
	int fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return 40;
	/* The namespace's own group, joined from the same namespace. */
	return group_join_key(fd, a->key, 0) == 1 ? 0 : 41;
}

static int ns_child(void *arg)
{
	const struct ns_arg *a = arg;
	struct agile_group_join g, q;
	int fd, status;

	/* Opened before: in a new user namespace root is not root. */
	fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 10;
	if (unshare(a->flags))
		return 11;
	if (group_query(fd, a->key, &q) != -ENOENT)
		return 20;
	if (group_join_key(fd, a->key, 0) != -ENOENT)
		return 21;
	group_args(&g, a->key, AGILE_GROUP_CREATE | AGILE_GROUP_EXCL, 0600);
	if (group_join(fd, &g) || g.member != 0 || g.nr_members != 1)
		return 22;
	if (a->flags & CLONE_NEWUSER) {
		/* Root has no mapping in the new namespace: overflow ids. */
		if (g.owner_uid != NOBODY || g.owner_gid != NOBODY)
			return 23;
	} else if (g.owner_uid != 0) {
		return 24;
	}
	status = agile_run_child(ns_joiner, arg);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return WIFEXITED(status) ? WEXITSTATUS(status) : 25;
	return 0;
}

static void check_namespace(struct __test_metadata *_metadata, int flags,
			    unsigned int n)
{
	struct ns_arg a = { .key = test_key(n), .flags = flags };
	struct agile_group_join q;
	int fd, status;

	AGILE_OPEN(fd);
	ASSERT_EQ(0, group_join_key(fd, a.key, AGILE_GROUP_CREATE));
	status = agile_run_child(ns_child, &a);
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 11)
		SKIP(return, "unshare(%#x): not supported here", flags);
	ASSERT_EQ(0, WEXITSTATUS(status));
	/* The host's group saw none of it. */
	ASSERT_EQ(0, group_query(fd, a.key, &q));
	ASSERT_EQ(1U, q.nr_members);
	ASSERT_EQ(0U, q.owner_uid);
	close(fd);
}

TEST(ipc_namespace)
{
	REQUIRE_ROOT();
	check_namespace(_metadata, CLONE_NEWIPC, 44);
}

TEST(user_namespace)
{
	REQUIRE_ROOT();
	check_namespace(_metadata, CLONE_NEWUSER, 45);
}

/* Each of the three sizes must equal the creator's. */
TEST(size_mismatch_einval)
{
	struct agile_group_join g;
	__u64 key = test_key(8);
	int fd0, fd1;

	AGILE_OPEN(fd0);
	AGILE_OPEN(fd1);
	ASSERT_EQ(0, group_join_key(fd0, key, AGILE_GROUP_CREATE));
	group_args(&g, key, 0, 0);
	g.nr_slots = NR_SLOTS + 1;
	check_rejected(_metadata, fd1, &g, -EINVAL);
	group_args(&g, key, 0, 0);
	g.nr_slots = NR_SLOTS - 1;
	check_rejected(_metadata, fd1, &g, -EINVAL);
	group_args(&g, key, AGILE_GROUP_CREATE, 0);
	g.task_reg_size = 128;
	check_rejected(_metadata, fd1, &g, -EINVAL);
	group_args(&g, key, 0, 0);
	g.max_members = MAX_MEMBERS - 1;
	check_rejected(_metadata, fd1, &g, -EINVAL);
	group_args(&g, key, 0, 0);
	g.max_members = MAX_MEMBERS + 1;
	check_rejected(_metadata, fd1, &g, -EINVAL);
	/* A joiner's mode is ignored, but still checked. */
	group_args(&g, key, 0, 0777);
	check_rejected(_metadata, fd1, &g, -EINVAL);
	ASSERT_EQ(1, group_join_key(fd1, key, 0));
	close(fd0);
	close(fd1);
}

TEST(full_enospc)
{
	struct agile_group_join g;
	__u64 key = test_key(9);
	int fd0, fd1, fd2;

	AGILE_OPEN(fd0);
	AGILE_OPEN(fd1);
	AGILE_OPEN(fd2);
	group_args(&g, key, AGILE_GROUP_CREATE, 0600);
	g.max_members = 2;
	ASSERT_EQ(0, group_join(fd0, &g));
	group_args(&g, key, 0, 0);
	g.max_members = 2;
	ASSERT_EQ(0, group_join(fd1, &g));
	ASSERT_EQ(1U, g.member);
	group_args(&g, key, 0, 0);
	g.max_members = 2;
	check_rejected(_metadata, fd2, &g, -ENOSPC);
	close(fd0);
	close(fd1);

	/* A group of one is full at once. */
	AGILE_OPEN(fd0);
	group_args(&g, key, AGILE_GROUP_CREATE, 0600);
	g.max_members = 1;
	ASSERT_EQ(0, group_join(fd0, &g));
	group_args(&g, key, 0, 0);
	g.max_members = 1;
	check_rejected(_metadata, fd2, &g, -ENOSPC);
	/* The file that failed is still free. */
	ASSERT_EQ(0, agile_ctx_init(fd2, 1, 64, NULL));
	close(fd0);
	close(fd2);
}

TEST(efault)
{
	struct agile_group_join *ro;
	__u64 key = test_key(10);
	int fd0, fd1, groups, contexts;
	long page = sysconf(_SC_PAGESIZE);

	AGILE_OPEN(fd0);
	AGILE_OPEN(fd1);
	groups = sysfs_read_int("groups");
	contexts = sysfs_read_int("contexts");
	ASSERT_EQ(-EFAULT, agile_ioctl(fd0, AGILE_IOC_GROUP_JOIN, NULL));

	/* Readable but not writable: the join is made, then undone. */
	ro = mmap(NULL, page, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	group_args(ro, key, AGILE_GROUP_CREATE, 0600);
	ASSERT_EQ(0, mprotect(ro, page, PROT_READ));
	ASSERT_EQ(-EFAULT, group_join(fd0, ro));
	ASSERT_EQ(groups, sysfs_read_int("groups"));
	ASSERT_EQ(contexts, sysfs_read_int("contexts"));
	ASSERT_EQ(-ENOENT, group_join_key(fd0, key, 0));

	/* A joiner's failed copy gives its index back. */
	ASSERT_EQ(0, group_join_key(fd0, key, AGILE_GROUP_CREATE));
	ASSERT_EQ(0, mprotect(ro, page, PROT_READ | PROT_WRITE));
	group_args(ro, key, 0, 0);
	ASSERT_EQ(0, mprotect(ro, page, PROT_READ));
	ASSERT_EQ(-EFAULT, group_join(fd1, ro));
	ASSERT_EQ(1, group_join_key(fd1, key, 0));
	munmap(ro, page);
	close(fd0);
	close(fd1);
}

/* Unknown sizes of command 0x06 are not GROUP_JOIN. */
TEST(wrong_cmd_size_enotty)
{
	unsigned char buf[256] = { 0 };
	int fd;

	AGILE_OPEN(fd);
	ASSERT_EQ(-ENOTTY, agile_ioctl(fd,
				       _IOWR(AGILE_IOC_MAGIC, 0x06,
					     struct agile_ctx_init),
				       buf));
	ASSERT_EQ(-ENOTTY, agile_ioctl(fd,
				       _IOW(AGILE_IOC_MAGIC, 0x06,
					    struct agile_group_join),
				       buf));
	close(fd);
}

/* Member indices follow join order across processes. */
TEST(member_order_forked)
{
	struct member m[4];
	__u64 key = test_key(11);
	unsigned int i;
	int fd, status;

	AGILE_OPEN(fd);
	ASSERT_EQ(0, group_join_key(fd, key, AGILE_GROUP_CREATE));
	for (i = 0; i < ARRAY_SIZE(m); i++)
		ASSERT_EQ((int)i + 1, member_start(&m[i], key, 0));
	for (i = 0; i < ARRAY_SIZE(m); i++) {
		status = member_stop(&m[i]);
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(0, WEXITSTATUS(status));
	}
	close(fd);
}

/* Doorbell stores, SIGNAL and WAIT between two processes. */
TEST(doorbell_cross_process)
{
	struct agile_fence_thread ft;
	struct agile_group_join g;
	struct agile_doorbell *db;
	__u64 key = test_key(12);
	struct member m;
	int fd, status;

	AGILE_OPEN(fd);
	ASSERT_EQ(0, group_join_mapped(fd, key, AGILE_GROUP_CREATE, &g, &db));
	ASSERT_EQ(1, member_start(&m, key, 0));

	/* A plain store in the child's mapping. */
	ASSERT_EQ(0, member_call(&m, M_STORE, 1, 5));
	ASSERT_EQ(5U, agile_db_value(db, 1));

	/* Our SIGNAL wakes the child's WAIT. */
	ASSERT_EQ(0, member_send(&m, M_WAIT, 0, 7));
	ASSERT_EQ(0, agile_db_wait_sleepers(db, 0, 1, AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, agile_signal(fd, 0, 7));
	ASSERT_EQ(0, member_reply(&m, &status));
	ASSERT_EQ(0, status);

	/* The child's SIGNAL wakes our WAIT. */
	ASSERT_EQ(0, agile_fence_thread_start(&ft, fd, 3, AGILE_CMP_EQ, 9,
					      AGILE_TIMEOUT_INFINITE));
	ASSERT_EQ(0, agile_db_wait_sleepers(db, 3, 1, AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, member_call(&m, M_SIGNAL, 3, 9));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);
	ASSERT_EQ(9U, ft.fence.observed);

	status = member_stop(&m);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	munmap(db, g.doorbell_bytes);
	close(fd);
}

/* A segment made by member 1 is mapped by member 0 at its offset. */
TEST(segment_shared)
{
	struct agile_seg_create a, b;
	unsigned char *p0, *p1;
	__u64 key = test_key(13);
	int fd0, fd1;

	AGILE_OPEN(fd0);
	AGILE_OPEN(fd1);
	ASSERT_EQ(0, group_join_key(fd0, key, AGILE_GROUP_CREATE));
	ASSERT_EQ(1, group_join_key(fd1, key, 0));
	memset(&a, 0, sizeof(a));
	a.bytes = 100;
	ASSERT_EQ(0, agile_ioctl(fd1, AGILE_IOC_SEG_CREATE, &a));
	ASSERT_EQ(0U, a.id);
	p1 = agile_map_rw(fd1, a.mmap_offset, a.mmap_bytes);
	ASSERT_NE(MAP_FAILED, p1);
	p1[99] = 0x99;
	p0 = agile_map_rw(fd0, a.mmap_offset, a.mmap_bytes);
	ASSERT_NE(MAP_FAILED, p0) TH_LOG("mmap: %s", strerror(errno));
	ASSERT_EQ(0x99, p0[99]);
	p0[0] = 0x11;
	ASSERT_EQ(0x11, p1[0]);
	/* Ids are the context's: member 0's next segment is 1. */
	memset(&b, 0, sizeof(b));
	b.bytes = 1;
	ASSERT_EQ(0, agile_ioctl(fd0, AGILE_IOC_SEG_CREATE, &b));
	ASSERT_EQ(1U, b.id);
	munmap(p0, a.mmap_bytes);
	munmap(p1, a.mmap_bytes);
	close(fd0);
	close(fd1);
}

struct perm_case {
	__u64 key;
	uid_t uid;
	gid_t gid;
	int supplementary; /* a supplementary group, or -1 */
	int want;
};

/*
 * Open the device (0660: as root, before the groups change), become
 * uid/gid (and the one supplementary group), then join.
 */
static int perm_child(void *arg)
{
	const struct perm_case *pc = arg;
	gid_t supp = (gid_t)pc->supplementary;
	int fd, ret;

	fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 13;
	if (setgroups(pc->supplementary < 0 ? 0 : 1, &supp))
		return 10;
	if (setresgid(pc->gid, pc->gid, pc->gid))
		return 11;
	if (setresuid(pc->uid, pc->uid, pc->uid))
		return 12;
	ret = group_join_key(fd, pc->key, 0);
	if (pc->want < 0)
		return ret == pc->want ? 0 : 20;
	return ret == pc->want ? 0 : 21;
}

static void check_perm(struct __test_metadata *_metadata, __u64 key, uid_t uid,
		       gid_t gid, int supplementary, int want)
{
	struct perm_case pc = { key, uid, gid, supplementary, want };
	int status = agile_run_child(perm_child, &pc);

	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status))
	{
		TH_LOG("uid %u gid %u supplementary %d", uid, gid,
		       supplementary);
	}
}

/*
 * The creator's euid/egid and mode decide: owner, group, other class,
 * both r and w needed, no capability override.  A member that joined
 * and exited ends its group, so each successful join has its own key.
 */
TEST(permissions)
{
	int fd[7], self_fd;
	unsigned int i;

	REQUIRE_ROOT();
	for (i = 0; i < ARRAY_SIZE(fd); i++)
		AGILE_OPEN(fd[i]);
	ASSERT_EQ(0, create_mode(fd[0], test_key(20), 0600));
	ASSERT_EQ(0, create_mode(fd[1], test_key(21), 0606));
	ASSERT_EQ(0, create_mode(fd[2], test_key(22), 0060));
	ASSERT_EQ(0, create_mode(fd[3], test_key(23), 0060));
	ASSERT_EQ(0, create_mode(fd[4], test_key(24), 0604));
	ASSERT_EQ(0, create_mode(fd[5], test_key(25), 0602));
	ASSERT_EQ(0, create_mode(fd[6], test_key(26), 0066));

	/* Others: 0600 refuses, 0606 admits, r or w alone is not enough. */
	check_perm(_metadata, test_key(20), NOBODY, NOBODY, -1, -EACCES);
	check_perm(_metadata, test_key(24), NOBODY, NOBODY, -1, -EACCES);
	check_perm(_metadata, test_key(25), NOBODY, NOBODY, -1, -EACCES);
	check_perm(_metadata, test_key(21), NOBODY, NOBODY, -1, 1);
	/* Group class, by egid or by a supplementary group. */
	check_perm(_metadata, test_key(22), NOBODY, NOBODY, -1, -EACCES);
	check_perm(_metadata, test_key(22), NOBODY, 0, -1, 1);
	check_perm(_metadata, test_key(23), NOBODY, NOBODY, 0, 1);
	/* The owner class of 0066 has no bits: root itself is refused. */
	AGILE_OPEN(self_fd);
	ASSERT_EQ(-EACCES, group_join_key(self_fd, test_key(26), 0));
	ASSERT_EQ(1, group_join_key(self_fd, test_key(20), 0));
	close(self_fd);

	for (i = 0; i < ARRAY_SIZE(fd); i++)
		close(fd[i]);
}

/*
 * A member that closes its file and unmaps ends the group: the others'
 * sleeping WAIT and WAIT_ANY fail with EPIPE, so do new waits, SIGNAL
 * still stores; a join or query of the key fails with EPIPE (CREATE and
 * EXCL or not) while we hold the group, and the key is free once we have
 * closed and unmapped.
 */
TEST(end_on_close)
{
	static const struct agile_wait_cond cond = { .slot = 0,
						     .cmp = AGILE_CMP_EQ };
	struct agile_fence_thread ft;
	struct agile_group_join g, q;
	struct agile_doorbell *db;
	struct any_thread at = { .ret = 1 };
	__u64 key = test_key(30);
	int fd, fd2, status, groups;
	__u32 observed;
	struct member m;

	groups = sysfs_read_int("groups");
	AGILE_OPEN(fd);
	ASSERT_EQ(0, group_join_mapped(fd, key, AGILE_GROUP_CREATE, &g, &db));
	ASSERT_EQ(1, member_start(&m, key, 0));
	ASSERT_EQ(groups + 1, sysfs_read_int("groups"));

	ASSERT_EQ(0, agile_fence_thread_start(&ft, fd, 0, AGILE_CMP_EQ, 1,
					      AGILE_TIMEOUT_INFINITE));
	at.fd = fd;
	ASSERT_EQ(0, pthread_create(&at.thread, NULL, any_thread_fn, &at));
	ASSERT_EQ(0, agile_db_wait_sleepers(db, 0, 1, AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, agile_db_wait_sleepers(db, 1, 1, AGILE_TEST_WAIT_MS));

	ASSERT_EQ(0, member_call(&m, M_CLOSE, 0, 0));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(-EPIPE, ft.ret);
	ASSERT_EQ(0U, ft.fence.observed);
	ASSERT_EQ(0, pthread_join(at.thread, NULL));
	ASSERT_EQ(-EPIPE, at.ret);
	ASSERT_EQ(0U, agile_db_sleepers(db, 0));
	ASSERT_EQ(0U, agile_db_sleepers(db, 1));
	/* Ended, but we hold it: the key stays taken. */
	ASSERT_EQ(groups + 1, sysfs_read_int("groups"));

	/* New waits fail at once, even one whose condition holds. */
	ASSERT_EQ(-EPIPE, agile_wait(fd, 0, AGILE_CMP_EQ, 1,
				     AGILE_TIMEOUT_INFINITE, &observed));
	ASSERT_EQ(0U, observed);
	ASSERT_EQ(-EPIPE, agile_wait(fd, 0, AGILE_CMP_EQ, 0,
				     AGILE_TIMEOUT_INFINITE, NULL));
	ASSERT_EQ(-EPIPE, agile_wait(fd, 0, AGILE_CMP_EQ, 1, 0, NULL));
	ASSERT_EQ(-EPIPE, agile_wait_any(fd, &cond, 1, 0,
					 AGILE_TIMEOUT_INFINITE, NULL, NULL));
	/* SIGNAL keeps storing; bad input is still EINVAL. */
	ASSERT_EQ(0, agile_signal(fd, 2, 6));
	ASSERT_EQ(6U, agile_db_value(db, 2));
	ASSERT_EQ(-EINVAL, agile_wait(fd, NR_SLOTS, AGILE_CMP_EQ, 1, 0, NULL));

	/* A late joiner is told at once, however it asks. */
	AGILE_OPEN(fd2);
	ASSERT_EQ(-EPIPE, group_join_key(fd2, key, 0));
	ASSERT_EQ(-EPIPE, group_join_key(fd2, key, AGILE_GROUP_CREATE));
	ASSERT_EQ(-EPIPE,
		  group_join_key(fd2, key,
				 AGILE_GROUP_CREATE | AGILE_GROUP_EXCL));
	ASSERT_EQ(-EPIPE, group_query(fd2, key, &q));
	/* ... and the failed joins left the file free for CTX_INIT. */
	ASSERT_EQ(0, agile_ctx_init(fd2, NR_SLOTS, 64, NULL));
	close(fd2);

	status = member_stop(&m);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	munmap(db, g.doorbell_bytes);
	close(fd);

	/* Our file released: the key is free, for a new group. */
	ASSERT_EQ(0, sysfs_wait_for("groups", groups));
	AGILE_OPEN(fd2);
	ASSERT_EQ(0, group_join_key(fd2, key,
				    AGILE_GROUP_CREATE | AGILE_GROUP_EXCL));
	ASSERT_EQ(-ETIMEDOUT, agile_wait(fd2, 0, AGILE_CMP_EQ, 1, 0, NULL));
	close(fd2);
}

/* A member killed while it sleeps in WAIT ends the others' waits. */
TEST(end_on_kill)
{
	struct agile_fence_thread ft;
	struct agile_group_join g;
	struct agile_doorbell *db;
	__u64 key = test_key(31);
	struct member m;
	int fd, fd2, status;

	AGILE_OPEN(fd);
	ASSERT_EQ(0, group_join_mapped(fd, key, AGILE_GROUP_CREATE, &g, &db));
	ASSERT_EQ(1, member_start(&m, key, 0));

	ASSERT_EQ(0, member_send(&m, M_WAIT, 2, 1));
	ASSERT_EQ(0, agile_fence_thread_start(&ft, fd, 0, AGILE_CMP_EQ, 1,
					      AGILE_TIMEOUT_INFINITE));
	ASSERT_EQ(0, agile_db_wait_sleepers(db, 2, 1, AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, agile_db_wait_sleepers(db, 0, 1, AGILE_TEST_WAIT_MS));

	ASSERT_EQ(0, kill(m.pid, SIGKILL));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(-EPIPE, ft.ret);
	close(m.cmd);
	close(m.reply);
	ASSERT_EQ(m.pid, waitpid(m.pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(SIGKILL, WTERMSIG(status));
	ASSERT_EQ(0U, agile_db_sleepers(db, 2));
	ASSERT_EQ(-EPIPE, agile_wait(fd, 0, AGILE_CMP_EQ, 0, 0, NULL));
	/* A late joiner while we hold the group: EPIPE at once. */
	AGILE_OPEN(fd2);
	ASSERT_EQ(-EPIPE, group_join_key(fd2, key, AGILE_GROUP_CREATE));
	close(fd2);
	munmap(db, g.doorbell_bytes);
	close(fd);

	/* The key went with the group's last member. */
	AGILE_OPEN(fd);
	ASSERT_EQ(-ENOENT, group_join_key(fd, key, 0));
	close(fd);
}

/* The context is freed with its last member and mapping. */
TEST(freed_with_last_member)
{
	struct agile_group_join g;
	struct agile_doorbell *db;
	int fd0, fd1, contexts, groups, status;
	__u64 key = test_key(32);
	struct member m;

	contexts = sysfs_read_int("contexts");
	groups = sysfs_read_int("groups");
	ASSERT_LE(0, contexts);
	AGILE_OPEN(fd0);
	AGILE_OPEN(fd1);
	group_args(&g, key, AGILE_GROUP_CREATE, 0600);
	ASSERT_EQ(0, group_join(fd0, &g));
	ASSERT_EQ(1, group_join_key(fd1, key, 0));
	ASSERT_EQ(2, member_start(&m, key, 0));
	ASSERT_EQ(contexts + 1, sysfs_read_int("contexts"));
	ASSERT_EQ(groups + 1, sysfs_read_int("groups"));
	db = agile_map_rw(fd0, g.doorbell_offset, g.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);

	/* The forked member exits: the group ends, the context stays. */
	status = member_stop(&m);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(contexts + 1, sysfs_read_int("contexts"));
	close(fd1);
	close(fd0);
	/* The mapping holds the last file: the context, and the key. */
	ASSERT_EQ(contexts + 1, sysfs_read_int("contexts"));
	ASSERT_EQ(groups + 1, sysfs_read_int("groups"));
	munmap(db, g.doorbell_bytes);
	ASSERT_EQ(0, sysfs_wait_for("groups", groups));
	ASSERT_EQ(0, sysfs_wait_for("contexts", contexts));
}

TEST_HARNESS_MAIN
