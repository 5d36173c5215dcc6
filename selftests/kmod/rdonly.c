// SPDX-License-Identifier: GPL-2.0-only
/*
 * What changes state needs a file opened for writing: on an O_RDONLY file
 * CTX_INIT, creating a group, SIGNAL, SEG_CREATE and a writable
 * EXPORT_DMABUF fail with EBADF, and leave nothing behind.  A read-only
 * file may join an existing group as a read-only member (the read bit of
 * its class of the group's mode suffices): it waits (WAIT, WAIT_ANY),
 * maps and exports read-only, and sees the other members' stores.  Every
 * ioctl checks its arguments before the mode: bad input is EINVAL there.
 */
#include "agile_test.h"

#define NOBODY 65534
#define NR_SLOTS 4

static __u64 test_key(unsigned int n)
{
	return 0x4d0e000000000000ULL | ((__u64)getpid() << 16) | n;
}

static void group_args(struct agile_group_join *g, __u64 key, __u32 flags,
		       __u32 mode)
{
	memset(g, 0, sizeof(*g));
	g->key = key;
	g->nr_slots = NR_SLOTS;
	g->task_reg_size = 64;
	g->max_members = 4;
	g->mode = mode;
	g->flags = flags;
	g->member = 0xdeadbeef;
}

static int group_join(int fd, struct agile_group_join *g)
{
	return agile_ioctl(fd, AGILE_IOC_GROUP_JOIN, g);
}

static int open_ro(void)
{
	int fd = open(AGILE_DEV_PATH, O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int sysfs_int(const char *name)
{
	unsigned long long v = 0;

	return agile_sysfs_read(name, &v) ? -1 : (int)v;
}

static int seg_create(int fd, __u64 bytes, struct agile_seg_create *seg)
{
	memset(seg, 0, sizeof(*seg));
	seg->bytes = bytes;
	return agile_ioctl(fd, AGILE_IOC_SEG_CREATE, seg);
}

static int export(int fd, __u32 what, __u32 flags)
{
	struct agile_export_dmabuf exp = {
		.what = what,
		.flags = flags,
		.fd = -1,
	};
	int ret = agile_ioctl(fd, AGILE_IOC_EXPORT_DMABUF, &exp);

	return ret ? ret : exp.fd;
}

/* CTX_INIT on a read-only file: EBADF, no context; bad input EINVAL. */
TEST(ctx_init_ebadf)
{
	struct agile_ctx_init init;
	int fd, contexts;

	AGILE_OPEN(fd);
	close(fd);
	fd = open_ro();
	ASSERT_LE(0, fd);
	contexts = sysfs_int("contexts");
	ASSERT_EQ(-EBADF, agile_ctx_init(fd, NR_SLOTS, 64, &init));
	ASSERT_EQ(-EINVAL, agile_ctx_init(fd, 0, 64, NULL));
	ASSERT_EQ(contexts, sysfs_int("contexts"));
	/* Still nothing to use. */
	ASSERT_EQ(-EBADFD, agile_signal(fd, 0, 1));
	ASSERT_EQ(-EBADFD, agile_wait(fd, 0, AGILE_CMP_EQ, 0, 0, NULL));
	memset(&init, 0, sizeof(init));
	ASSERT_EQ(-EBADFD, agile_ioctl(fd, AGILE_IOC_SEG_CREATE, &init));
	close(fd);
}

/* Creating a group on a read-only file: EBADF, no group made. */
TEST(group_create_ebadf)
{
	struct agile_group_join g;
	__u64 key = test_key(1);
	int fd, groups;

	AGILE_OPEN(fd);
	close(fd);
	fd = open_ro();
	ASSERT_LE(0, fd);
	groups = sysfs_int("groups");
	group_args(&g, key, AGILE_GROUP_CREATE, 0600);
	ASSERT_EQ(-EBADF, group_join(fd, &g));
	ASSERT_EQ(0xdeadbeefU, g.member);
	group_args(&g, key, AGILE_GROUP_CREATE | AGILE_GROUP_EXCL, 0600);
	ASSERT_EQ(-EBADF, group_join(fd, &g));
	ASSERT_EQ(groups, sysfs_int("groups"));
	/* Bad input is still EINVAL, and no key means ENOENT. */
	group_args(&g, key, AGILE_GROUP_CREATE, 0777);
	ASSERT_EQ(-EINVAL, group_join(fd, &g));
	group_args(&g, key, 0, 0);
	ASSERT_EQ(-ENOENT, group_join(fd, &g));
	close(fd);
}

FIXTURE(member)
{
	int rw; /* the creator, read-write */
	int ro; /* a read-only member */
	struct agile_group_join g;
	struct agile_doorbell *db; /* the creator's mapping */
};

FIXTURE_SETUP(member)
{
	struct agile_group_join j;

	AGILE_OPEN(self->rw);
	self->ro = open_ro();
	ASSERT_LE(0, self->ro);
	group_args(&self->g, test_key(2), AGILE_GROUP_CREATE, 0600);
	ASSERT_EQ(0, group_join(self->rw, &self->g));
	self->db = agile_map_rw(self->rw, self->g.doorbell_offset,
				self->g.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, self->db);
	group_args(&j, test_key(2), 0, 0);
	ASSERT_EQ(0, group_join(self->ro, &j));
	ASSERT_EQ(1U, j.member);
	ASSERT_EQ(2U, j.nr_members);
}

FIXTURE_TEARDOWN(member)
{
	if (self->db && self->db != MAP_FAILED)
		munmap(self->db, self->g.doorbell_bytes);
	close(self->ro);
	close(self->rw);
}

/* SIGNAL: EBADF, nothing stored; the other ops work. */
TEST_F(member, signal_ebadf)
{
	struct agile_stats st;

	ASSERT_EQ(-EBADF, agile_signal(self->ro, 1, 5));
	ASSERT_EQ(-EBADF,
		  agile_signal_flags(self->ro, 1, 0, AGILE_SIGNAL_WAKE_ONLY));
	ASSERT_EQ(0U, agile_db_value(self->db, 1));
	/* Bad input first: EINVAL. */
	ASSERT_EQ(-EINVAL, agile_signal(self->ro, NR_SLOTS, 5));
	ASSERT_EQ(0, agile_barrier(self->ro));
	ASSERT_EQ(0, agile_stats(self->ro, &st));
	ASSERT_EQ(0ULL, st.signals);
	ASSERT_EQ(0, agile_signal(self->rw, 1, 5));
	ASSERT_EQ(0, agile_wait(self->ro, 1, AGILE_CMP_EQ, 5, 0, NULL));
}

/* A read-only member sleeps in WAIT and WAIT_ANY, woken by the creator. */
TEST_F(member, waits)
{
	struct agile_fence_thread ft;
	struct agile_wait_cond conds[2] = {
		{ .slot = 2, .cmp = AGILE_CMP_EQ, .value = 9 },
		{ .slot = 3, .cmp = AGILE_CMP_EQ, .value = 9 },
	};
	__u32 index = 0;

	ASSERT_EQ(0, agile_fence_thread_start(&ft, self->ro, 2, AGILE_CMP_EQ, 7,
					      AGILE_TIMEOUT_INFINITE));
	ASSERT_EQ(0, agile_wait_asleep(&ft.probe, self->db, 2, 1,
				       AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, agile_signal(self->rw, 2, 7));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);
	ASSERT_EQ(7U, ft.fence.observed);

	agile_db_store(self->db, 3, 9);
	ASSERT_EQ(0, agile_wait_any(self->ro, conds, 2, 0, NSEC_PER_SEC, &index,
				    NULL));
	ASSERT_EQ(1U, index);
}

/* SEG_CREATE: EBADF; the creator's segments map read-only. */
TEST_F(member, segments)
{
	struct agile_seg_create seg;
	unsigned char *w, *r;
	void *p;

	ASSERT_EQ(-EBADF, seg_create(self->ro, 4096, &seg));
	ASSERT_EQ(0, seg_create(self->rw, 4096, &seg));
	/* The refused call took no id. */
	ASSERT_EQ(0U, seg.id);
	w = agile_map_rw(self->rw, seg.mmap_offset, seg.mmap_bytes);
	ASSERT_NE(MAP_FAILED, w);
	w[10] = 0x3c;
	r = agile_map(self->ro, seg.mmap_offset, seg.mmap_bytes, PROT_READ,
		      MAP_SHARED);
	ASSERT_NE(MAP_FAILED, r) TH_LOG("mmap: %s", strerror(errno));
	ASSERT_EQ(0x3c, r[10]);
	p = agile_map_rw(self->ro, seg.mmap_offset, seg.mmap_bytes);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EACCES, errno);
	munmap(r, seg.mmap_bytes);
	munmap(w, seg.mmap_bytes);
}

/* Mappings: read-only only, and write cannot be added later. */
TEST_F(member, mmap_read_only)
{
	struct agile_doorbell *db;
	void *p;

	db = agile_map(self->ro, self->g.doorbell_offset,
		       self->g.doorbell_bytes, PROT_READ, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, db);
	agile_db_store(self->db, 0, 0x55);
	ASSERT_EQ(0x55U, agile_db_value(db, 0));
	ASSERT_EQ(-1,
		  mprotect(db, self->g.doorbell_bytes, PROT_READ | PROT_WRITE));
	ASSERT_EQ(EACCES, errno);
	munmap(db, self->g.doorbell_bytes);
	p = agile_map_rw(self->ro, self->g.task_reg_offset,
			 self->g.task_reg_bytes);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EACCES, errno);
}

/* EXPORT_DMABUF: O_RDWR is EBADF, a read-only export works. */
TEST_F(member, export)
{
	struct agile_doorbell *db;
	int buf;

	ASSERT_EQ(-EBADF,
		  export(self->ro, AGILE_DMABUF_DOORBELLS, O_RDWR | O_CLOEXEC));
	ASSERT_EQ(-EBADF, export(self->ro, AGILE_DMABUF_TASK_REGS, O_RDWR));
	ASSERT_EQ(-EINVAL, export(self->ro, AGILE_DMABUF_DOORBELLS, 0x8000));
	buf = export(self->ro, AGILE_DMABUF_DOORBELLS, O_CLOEXEC);
	ASSERT_LE(0, buf);
	agile_db_store(self->db, 1, 0x66);
	db = mmap(NULL, self->g.doorbell_bytes, PROT_READ, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, db);
	ASSERT_EQ(0x66U, agile_db_value(db, 1));
	munmap(db, self->g.doorbell_bytes);
	db = mmap(NULL, self->g.doorbell_bytes, PROT_READ | PROT_WRITE,
		  MAP_SHARED, buf, 0);
	ASSERT_EQ(MAP_FAILED, db);
	ASSERT_EQ(EACCES, errno);
	close(buf);
	/* The writable member exports writable. */
	buf = export(self->rw, AGILE_DMABUF_DOORBELLS, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	close(buf);
}

/*
 * Every ioctl checks its arguments before the access mode: on a
 * read-only member bad input is EINVAL (ENOSPC over a limit), never
 * EBADF, for the calls that need a writable file as for the others.
 */
TEST_F(member, bad_args_before_mode)
{
	struct agile_wait_cond cond = { .slot = NR_SLOTS, .cmp = AGILE_CMP_EQ };
	struct agile_wait_any any = { .nr_conds = 1 };
	struct agile_export_dmabuf exp;
	struct agile_seg_create seg;
	struct agile_fence f;
	unsigned long long max_seg = 0;

	/* SIGNAL: a bad slot, a reserved field, unknown flags. */
	ASSERT_EQ(-EINVAL, agile_signal(self->ro, NR_SLOTS, 1));
	memset(&f, 0, sizeof(f));
	f.op = AGILE_FENCE_SIGNAL;
	f.reserved[1] = 1;
	ASSERT_EQ(-EINVAL, agile_fence(self->ro, &f));
	f.reserved[1] = 0;
	f.flags = 0x80000000U;
	ASSERT_EQ(-EINVAL, agile_fence(self->ro, &f));
	/* WAIT, BARRIER and an unknown op: no mode needed, EINVAL still. */
	ASSERT_EQ(-EINVAL,
		  agile_wait(self->ro, NR_SLOTS, AGILE_CMP_EQ, 0, 0, NULL));
	memset(&f, 0, sizeof(f));
	f.op = AGILE_FENCE_BARRIER;
	f.reserved[0] = 1;
	ASSERT_EQ(-EINVAL, agile_fence(self->ro, &f));
	f.reserved[0] = 0;
	f.op = 0x7fff;
	ASSERT_EQ(-EINVAL, agile_fence(self->ro, &f));
	/* WAIT_ANY: a bad slot. */
	any.conds = (__u64)(uintptr_t)&cond;
	ASSERT_EQ(-EINVAL, agile_ioctl(self->ro, AGILE_IOC_WAIT_ANY, &any));

	/* SEG_CREATE: zero bytes, flags, padding, reserved; over the max. */
	ASSERT_EQ(-EINVAL, seg_create(self->ro, 0, &seg));
	memset(&seg, 0, sizeof(seg));
	seg.bytes = 4096;
	seg.flags = 1;
	ASSERT_EQ(-EINVAL, agile_ioctl(self->ro, AGILE_IOC_SEG_CREATE, &seg));
	seg.flags = 0;
	seg.pad = 1;
	ASSERT_EQ(-EINVAL, agile_ioctl(self->ro, AGILE_IOC_SEG_CREATE, &seg));
	seg.pad = 0;
	seg.reserved[3] = 1;
	ASSERT_EQ(-EINVAL, agile_ioctl(self->ro, AGILE_IOC_SEG_CREATE, &seg));
	ASSERT_EQ(0, agile_sysfs_read("max_segment_bytes", &max_seg));
	ASSERT_EQ(-ENOSPC, seg_create(self->ro, max_seg + 1, &seg));
	/* Good arguments: the mode. */
	ASSERT_EQ(-EBADF, seg_create(self->ro, 4096, &seg));

	/* EXPORT_DMABUF with O_RDWR: an unknown area, an id, no segment. */
	ASSERT_EQ(-EINVAL, export(self->ro, 7, O_RDWR));
	memset(&exp, 0, sizeof(exp));
	exp.what = AGILE_DMABUF_DOORBELLS;
	exp.id = 1;
	exp.flags = O_RDWR;
	ASSERT_EQ(-EINVAL,
		  agile_ioctl(self->ro, AGILE_IOC_EXPORT_DMABUF, &exp));
	exp.id = 0;
	exp.reserved[2] = 1;
	ASSERT_EQ(-EINVAL,
		  agile_ioctl(self->ro, AGILE_IOC_EXPORT_DMABUF, &exp));
	ASSERT_EQ(-EINVAL, export(self->ro, AGILE_DMABUF_SEGMENT, O_RDWR));
	ASSERT_EQ(-EINVAL,
		  export(self->ro, AGILE_DMABUF_TASK_REGS, O_RDWR | 0x8000));
	/* Good arguments: the mode. */
	ASSERT_EQ(-EBADF, export(self->ro, AGILE_DMABUF_TASK_REGS, O_RDWR));
}

/*
 * A read-only member needs only the read bit of its class: as nobody,
 * 0604 lets a read-only file join but not a read-write one, and 0602
 * lets neither.  The files are opened as root, before the ids change.
 */
struct perm_arg {
	__u64 key_r; /* mode 0604 */
	__u64 key_w; /* mode 0602 */
};

static int nobody_joins(void *p)
{
	struct perm_arg *a = p;
	struct agile_group_join g;
	int ro = open_ro(), ro2 = open_ro();
	int rw = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);

	if (ro < 0 || ro2 < 0 || rw < 0 || agile_become(NOBODY, false))
		return 10;
	group_args(&g, a->key_r, 0, 0);
	if (group_join(rw, &g) != -EACCES)
		return 20;
	if (group_join(ro, &g) || g.member != 1)
		return 21;
	group_args(&g, a->key_w, 0, 0);
	if (group_join(ro2, &g) != -EACCES)
		return 22;
	return 0;
}

TEST(read_bit_suffices)
{
	struct perm_arg a = { .key_r = test_key(3), .key_w = test_key(4) };
	struct agile_group_join g;
	int fd_r, fd_w, status;

	AGILE_OPEN(fd_r);
	AGILE_OPEN(fd_w);
	if (geteuid())
		SKIP(return, "needs root to drop to nobody");
	group_args(&g, a.key_r, AGILE_GROUP_CREATE, 0604);
	ASSERT_EQ(0, group_join(fd_r, &g));
	group_args(&g, a.key_w, AGILE_GROUP_CREATE, 0602);
	ASSERT_EQ(0, group_join(fd_w, &g));
	status = agile_run_child(nobody_joins, &a);
	ASSERT_TRUE(WIFEXITED(status));
	/* The exit code names the check: see nobody_joins(). */
	ASSERT_EQ(0, WEXITSTATUS(status));
	close(fd_r);
	close(fd_w);
}

TEST_HARNESS_MAIN
