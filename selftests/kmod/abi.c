// SPDX-License-Identifier: GPL-2.0-only
/*
 * /dev/agile ABI: INFO, unknown commands, CTX_INIT and each of its bad
 * inputs, the EBADFD rule before CTX_INIT, STATS, EFAULT on bad pointers.
 */
#include "agile_test.h"

#include <grp.h>

static long page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

static __u64 page_align(__u64 bytes)
{
	__u64 page = (__u64)page_size();

	return (bytes + page - 1) & ~(page - 1);
}

/* An unmapped user address: EFAULT for every copy_{from,to}_user. */
static void *unmapped_address(void)
{
	void *p = mmap(NULL, (size_t)page_size(), PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED)
		munmap(p, (size_t)page_size());
	return p;
}

FIXTURE(file)
{
	int fd;
};

FIXTURE_SETUP(file)
{
	AGILE_OPEN(self->fd);
}

FIXTURE_TEARDOWN(file)
{
	if (self->fd >= 0)
		close(self->fd);
}

static void check_info(struct __test_metadata *_metadata,
		       const struct agile_info *info)
{
	unsigned int i;

	ASSERT_EQ((__u32)AGILE_ABI_VERSION, info->abi_version);
	ASSERT_EQ(AGILE_FEAT_WAIT_ANY, info->features & AGILE_FEAT_WAIT_ANY);
	ASSERT_EQ(AGILE_FEAT_POLL_WAKE, info->features & AGILE_FEAT_POLL_WAKE);
	ASSERT_EQ(AGILE_FEAT_SLEEPER_COUNT,
		  info->features & AGILE_FEAT_SLEEPER_COUNT);
	ASSERT_EQ(AGILE_FEAT_SEGMENTS, info->features & AGILE_FEAT_SEGMENTS);
	ASSERT_EQ(AGILE_FEAT_DMABUF, info->features & AGILE_FEAT_DMABUF);
	ASSERT_EQ(AGILE_FEAT_GROUPS, info->features & AGILE_FEAT_GROUPS);
	ASSERT_LE((__u64)page_size(), info->max_segment_bytes);
	ASSERT_GE(1ULL << 30, info->max_segment_bytes);
	ASSERT_LE(1U, info->max_slots);
	ASSERT_GE(65536U, info->max_slots);
	ASSERT_EQ((__u32)AGILE_DOORBELL_STRIDE, info->doorbell_stride);
	ASSERT_EQ((__u32)AGILE_TASK_REG_MIN_SIZE, info->task_reg_min_size);
	ASSERT_EQ((__u32)AGILE_TASK_REG_MAX_SIZE, info->task_reg_max_size);
	ASSERT_LE(10U, info->poll_interval_us);
	ASSERT_GE(1000000U, info->poll_interval_us);
	ASSERT_GE(10000000U, info->spin_ns);
	ASSERT_EQ((__u32)AGILE_WAIT_ANY_MAX, info->wait_any_max);
	ASSERT_EQ((__u32)page_size(), info->page_size);
	for (i = 0; i < ARRAY_SIZE(info->reserved); i++)
		ASSERT_EQ(0ULL, info->reserved[i]);
}

/* INFO fills every field, reserved included, before CTX_INIT. */
TEST_F(file, info_before_init)
{
	struct agile_info info;

	memset(&info, 0xa5, sizeof(info));
	ASSERT_EQ(0, agile_info(self->fd, &info));
	check_info(_metadata, &info);
}

TEST_F(file, info_after_init)
{
	struct agile_info info;

	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, NULL));
	memset(&info, 0xa5, sizeof(info));
	ASSERT_EQ(0, agile_info(self->fd, &info));
	check_info(_metadata, &info);
}

TEST_F(file, info_matches_sysfs)
{
	unsigned long long val = 0;
	struct agile_info info;

	ASSERT_EQ(0, agile_info(self->fd, &info));
	ASSERT_EQ(0, agile_sysfs_read("max_slots", &val));
	ASSERT_EQ(val, info.max_slots);
	ASSERT_EQ(0, agile_sysfs_read("poll_interval_us", &val));
	ASSERT_EQ(val, info.poll_interval_us);
	ASSERT_EQ(0, agile_sysfs_read("spin_ns", &val));
	ASSERT_EQ(val, info.spin_ns);
}

TEST_F(file, info_efault)
{
	ASSERT_EQ(-EFAULT, agile_info(self->fd, NULL));
	ASSERT_EQ(-EFAULT, agile_info(self->fd, unmapped_address()));
}

/* Commands that are not exactly one of AGILE_IOC_*. */
static const unsigned long bad_cmds[] = {
	_IO(AGILE_IOC_MAGIC, 0x05),
	_IOWR(AGILE_IOC_MAGIC, 0x05, struct agile_fence),
	_IOWR(AGILE_IOC_MAGIC, 0x06, struct agile_fence),
	_IOWR(AGILE_IOC_MAGIC, 0x07, struct agile_fence),
	_IOWR(AGILE_IOC_MAGIC, 0xff, struct agile_fence),
	/* Right number, wrong size or direction. */
	_IOR(AGILE_IOC_MAGIC, 0x00, __u32),
	_IOWR(AGILE_IOC_MAGIC, 0x00, struct agile_info),
	_IOW(AGILE_IOC_MAGIC, 0x01, struct agile_ctx_init),
	_IOWR(AGILE_IOC_MAGIC, 0x01, struct agile_fence),
	_IOW(AGILE_IOC_MAGIC, 0x02, struct agile_fence),
	_IOWR(AGILE_IOC_MAGIC, 0x02, struct agile_ctx_init),
	_IOR(AGILE_IOC_MAGIC, 0x03, struct agile_wait_any),
	_IOR(AGILE_IOC_MAGIC, 0x04, struct agile_info),
	_IO(AGILE_IOC_MAGIC, 0x04),
	/* Another driver's magic with our numbers and sizes. */
	_IOR('x', 0x00, struct agile_info),
	_IOWR('x', 0x02, struct agile_fence), 0, 0x5401, /* TCGETS */
};

static void check_bad_cmds(struct __test_metadata *_metadata, int fd)
{
	unsigned char buf[256];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad_cmds); i++) {
		memset(buf, 0, sizeof(buf));
		ASSERT_EQ(-ENOTTY, agile_ioctl(fd, bad_cmds[i], buf))
		{
			TH_LOG("cmd %#lx", bad_cmds[i]);
		}
	}
}

TEST_F(file, unknown_ioctl_before_init)
{
	check_bad_cmds(_metadata, self->fd);
}

TEST_F(file, unknown_ioctl_after_init)
{
	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, NULL));
	check_bad_cmds(_metadata, self->fd);
}

/* CTX_INIT returns the fixed offsets and page-aligned lengths. */
FIXTURE(init_size)
{
	int fd;
};

FIXTURE_VARIANT(init_size)
{
	__u32 nr_slots;
	__u32 task_reg_size;
};

FIXTURE_VARIANT_ADD(init_size, one_slot_min_reg)
{
	.nr_slots = 1,
	.task_reg_size = 64,
};

FIXTURE_VARIANT_ADD(init_size, page_of_doorbells)
{
	.nr_slots = 32,
	.task_reg_size = 128,
};

FIXTURE_VARIANT_ADD(init_size, odd_slots_max_reg)
{
	.nr_slots = 33,
	.task_reg_size = 4096,
};

FIXTURE_VARIANT_ADD(init_size, many_slots)
{
	.nr_slots = 1000,
	.task_reg_size = 256,
};

FIXTURE_SETUP(init_size)
{
	AGILE_OPEN(self->fd);
}

FIXTURE_TEARDOWN(init_size)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(init_size, ctx_init_layout)
{
	struct agile_ctx_init init;
	unsigned int i;

	memset(&init, 0, sizeof(init));
	init.nr_slots = variant->nr_slots;
	init.task_reg_size = variant->task_reg_size;
	ASSERT_EQ(0, agile_ioctl(self->fd, AGILE_IOC_CTX_INIT, &init));
	ASSERT_EQ(variant->nr_slots, init.nr_slots);
	ASSERT_EQ(variant->task_reg_size, init.task_reg_size);
	ASSERT_EQ(0U, init.flags);
	ASSERT_EQ(0U, init.pad);
	ASSERT_EQ(AGILE_MMAP_DOORBELLS, init.doorbell_offset);
	ASSERT_EQ(page_align((__u64)variant->nr_slots * AGILE_DOORBELL_STRIDE),
		  init.doorbell_bytes);
	ASSERT_EQ(AGILE_MMAP_TASK_REGS, init.task_reg_offset);
	ASSERT_EQ(page_align((__u64)variant->nr_slots * variant->task_reg_size),
		  init.task_reg_bytes);
	for (i = 0; i < ARRAY_SIZE(init.reserved); i++)
		ASSERT_EQ(0ULL, init.reserved[i]);
}

/*
 * Every rejected CTX_INIT leaves the file as it was: a good CTX_INIT on
 * the same file succeeds afterwards.
 */
static void check_init_rejected(struct __test_metadata *_metadata, int fd,
				struct agile_ctx_init *bad, int err)
{
	ASSERT_EQ(err, agile_ioctl(fd, AGILE_IOC_CTX_INIT, bad))
	{
		TH_LOG("nr_slots %u task_reg_size %u flags %#x pad %#x",
		       bad->nr_slots, bad->task_reg_size, bad->flags, bad->pad);
	}
	ASSERT_EQ(-EBADFD, agile_signal(fd, 0, 1));
}

TEST_F(file, ctx_init_bad_flags)
{
	struct agile_ctx_init init = { .nr_slots = 4, .task_reg_size = 64 };
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		init.flags = 1U << bit;
		check_init_rejected(_metadata, self->fd, &init, -EINVAL);
	}
	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, NULL));
}

TEST_F(file, ctx_init_bad_pad)
{
	struct agile_ctx_init init = { .nr_slots = 4, .task_reg_size = 64 };

	init.pad = 1;
	check_init_rejected(_metadata, self->fd, &init, -EINVAL);
	init.pad = 0x80000000;
	check_init_rejected(_metadata, self->fd, &init, -EINVAL);
	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, NULL));
}

TEST_F(file, ctx_init_bad_reserved)
{
	struct agile_ctx_init init;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(init.reserved); i++) {
		memset(&init, 0, sizeof(init));
		init.nr_slots = 4;
		init.task_reg_size = 64;
		init.reserved[i] = 1ULL << 63;
		check_init_rejected(_metadata, self->fd, &init, -EINVAL);
	}
	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, NULL));
}

/* Fields that are "from kernel" may hold anything on the way in. */
TEST_F(file, ctx_init_ignores_output_fields)
{
	struct agile_ctx_init init;

	memset(&init, 0, sizeof(init));
	init.nr_slots = 2;
	init.task_reg_size = 64;
	init.doorbell_offset = ~0ULL;
	init.doorbell_bytes = 12345;
	init.task_reg_offset = 1;
	init.task_reg_bytes = ~0ULL;
	ASSERT_EQ(0, agile_ioctl(self->fd, AGILE_IOC_CTX_INIT, &init));
	ASSERT_EQ(AGILE_MMAP_DOORBELLS, init.doorbell_offset);
	ASSERT_EQ(AGILE_MMAP_TASK_REGS, init.task_reg_offset);
	ASSERT_EQ(page_align(2 * AGILE_DOORBELL_STRIDE), init.doorbell_bytes);
	ASSERT_EQ(page_align(2 * 64), init.task_reg_bytes);
}

TEST_F(file, ctx_init_zero_slots)
{
	struct agile_ctx_init init = { .nr_slots = 0, .task_reg_size = 64 };

	check_init_rejected(_metadata, self->fd, &init, -EINVAL);
	ASSERT_EQ(0, agile_ctx_init(self->fd, 1, 64, NULL));
}

TEST_F(file, ctx_init_bad_task_reg_size)
{
	static const __u32 sizes[] = {
		0,    1,    2,	  32,	 63,	     65,
		96,   100,  127,  192,	 1000,	     4095,
		4097, 6144, 8192, 65536, 0x80000000, 0xffffffff,
	};
	struct agile_ctx_init init = { .nr_slots = 4 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		init.task_reg_size = sizes[i];
		check_init_rejected(_metadata, self->fd, &init, -EINVAL);
	}
	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 4096, NULL));
}

/*
 * nr_slots * task_reg_size or nr_slots * 128 overflowing __u32 is EINVAL,
 * checked before the max_slots limit (which would give ENOSPC).
 */
TEST_F(file, ctx_init_overflow)
{
	static const struct {
		__u32 nr_slots, task_reg_size;
	} cases[] = {
		{ (1U << 20) + 1, 4096 }, /* task regs: 2^32 + 4096 */
		{ 1U << 20, 4096 }, /* task regs: exactly 2^32 */
		{ (1U << 26) + 1, 64 }, /* both overflow */
		{ 1U << 25, 64 }, /* doorbells: exactly 2^32 */
		{ (1U << 25) + 3, 64 }, /* doorbells only */
		{ 0x80000000, 128 },	  { 0xffffffff, 64 },
		{ 0xffffffff, 4096 },
	};
	struct agile_ctx_init init;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(&init, 0, sizeof(init));
		init.nr_slots = cases[i].nr_slots;
		init.task_reg_size = cases[i].task_reg_size;
		check_init_rejected(_metadata, self->fd, &init, -EINVAL);
	}
	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, NULL));
}

/* Above max_slots without overflow: ENOSPC; exactly max_slots works. */
TEST_F(file, ctx_init_over_max_slots)
{
	struct agile_ctx_init init = { .task_reg_size = 64 };
	struct agile_info info;

	ASSERT_EQ(0, agile_info(self->fd, &info));
	init.nr_slots = info.max_slots + 1;
	check_init_rejected(_metadata, self->fd, &init, -ENOSPC);
	init.nr_slots = 1U << 24; /* far above, 2^31 bytes: no overflow */
	check_init_rejected(_metadata, self->fd, &init, -ENOSPC);
	ASSERT_EQ(0, agile_ctx_init(self->fd, info.max_slots, 64, NULL));
}

TEST_F(file, ctx_init_twice)
{
	struct agile_ctx_init init;

	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, NULL));
	ASSERT_EQ(-EBUSY, agile_ctx_init(self->fd, 4, 64, NULL));
	ASSERT_EQ(-EBUSY, agile_ctx_init(self->fd, 8, 128, &init));
	/* The first context is intact: its slot 3 exists, slot 4 does not. */
	ASSERT_EQ(0, agile_signal(self->fd, 3, 1));
	ASSERT_EQ(-EINVAL, agile_signal(self->fd, 4, 1));
}

TEST_F(file, ctx_init_efault)
{
	ASSERT_EQ(-EFAULT, agile_ioctl(self->fd, AGILE_IOC_CTX_INIT, NULL));
	ASSERT_EQ(-EFAULT, agile_ioctl(self->fd, AGILE_IOC_CTX_INIT,
				       unmapped_address()));
	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, NULL));
}

/* Everything that needs a context fails with EBADFD before CTX_INIT. */
TEST_F(file, ebadfd_before_init)
{
	struct agile_wait_cond cond = { .slot = 0, .cmp = AGILE_CMP_EQ };
	long page = page_size();
	__u32 observed;
	void *p;

	ASSERT_EQ(-EBADFD, agile_signal(self->fd, 0, 1));
	ASSERT_EQ(-EBADFD,
		  agile_signal_flags(self->fd, 0, 1, AGILE_SIGNAL_WAKE_ONLY));
	ASSERT_EQ(-EBADFD,
		  agile_wait(self->fd, 0, AGILE_CMP_EQ, 0, 0, &observed));
	ASSERT_EQ(-EBADFD, agile_wait(self->fd, 0, AGILE_CMP_EQ, 1,
				      NSEC_PER_SEC, &observed));
	ASSERT_EQ(-EBADFD, agile_barrier(self->fd));
	ASSERT_EQ(-EBADFD,
		  agile_wait_any(self->fd, &cond, 1, 0, 0, NULL, NULL));

	p = agile_map_rw(self->fd, AGILE_MMAP_DOORBELLS, (__u64)page);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EBADFD, errno);
	p = agile_map_rw(self->fd, AGILE_MMAP_TASK_REGS, (__u64)page);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EBADFD, errno);

	/* The file is still fresh: CTX_INIT works, and then the ops. */
	ASSERT_EQ(0, agile_ctx_init(self->fd, 1, 64, NULL));
	ASSERT_EQ(0, agile_signal(self->fd, 0, 1));
}

static void check_stats_zero(struct __test_metadata *_metadata,
			     const struct agile_stats *st)
{
	unsigned int i;

	ASSERT_EQ(0ULL, st->signals);
	ASSERT_EQ(0ULL, st->waits);
	ASSERT_EQ(0ULL, st->wakeups_signal);
	ASSERT_EQ(0ULL, st->wakeups_poll);
	ASSERT_EQ(0ULL, st->timeouts);
	ASSERT_EQ(0ULL, st->interrupted);
	ASSERT_EQ(0ULL, st->spin_hits);
	for (i = 0; i < ARRAY_SIZE(st->reserved); i++)
		ASSERT_EQ(0ULL, st->reserved[i]);
}

TEST_F(file, stats_before_init)
{
	struct agile_stats st;

	memset(&st, 0xa5, sizeof(st));
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	check_stats_zero(_metadata, &st);
}

TEST_F(file, stats_after_init)
{
	struct agile_stats st;

	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, NULL));
	memset(&st, 0xa5, sizeof(st));
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	check_stats_zero(_metadata, &st);
}

/* Counters move with the operations that own them, and only those. */
TEST_F(file, stats_count)
{
	struct agile_stats st;
	__u32 observed;

	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, NULL));
	ASSERT_EQ(0, agile_signal(self->fd, 1, 5));
	ASSERT_EQ(0, agile_signal(self->fd, 2, 6));
	ASSERT_EQ(0,
		  agile_signal_flags(self->fd, 2, 0, AGILE_SIGNAL_WAKE_ONLY));
	ASSERT_EQ(0, agile_barrier(self->fd));
	/* Holds at the first check: a spin hit. */
	ASSERT_EQ(0, agile_wait(self->fd, 1, AGILE_CMP_EQ, 5, 0, &observed));
	ASSERT_EQ(0, agile_wait(self->fd, 1, AGILE_CMP_GE, 5, NSEC_PER_SEC,
				&observed));
	/* Never holds: a timeout. */
	ASSERT_EQ(-ETIMEDOUT,
		  agile_wait(self->fd, 3, AGILE_CMP_EQ, 1, 0, &observed));

	memset(&st, 0xa5, sizeof(st));
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(3ULL, st.signals);
	ASSERT_EQ(3ULL, st.waits);
	ASSERT_EQ(2ULL, st.spin_hits);
	ASSERT_EQ(1ULL, st.timeouts);
	ASSERT_EQ(0ULL, st.wakeups_signal);
	ASSERT_EQ(0ULL, st.wakeups_poll);
	ASSERT_EQ(0ULL, st.interrupted);
}

/* Rejected operations are not counted. */
TEST_F(file, stats_ignore_rejected)
{
	struct agile_stats st;
	__u32 observed;

	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, NULL));
	ASSERT_EQ(-EINVAL, agile_signal(self->fd, 4, 5));
	ASSERT_EQ(-EINVAL,
		  agile_wait(self->fd, 4, AGILE_CMP_EQ, 0, 0, &observed));
	ASSERT_EQ(-EINVAL, agile_wait(self->fd, 0, 6, 0, 0, &observed));
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	check_stats_zero(_metadata, &st);
}

TEST_F(file, stats_efault)
{
	ASSERT_EQ(-EFAULT, agile_stats(self->fd, NULL));
	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, NULL));
	ASSERT_EQ(-EFAULT, agile_stats(self->fd, NULL));
	ASSERT_EQ(-EFAULT, agile_stats(self->fd, unmapped_address()));
}

TEST_F(file, fence_efault)
{
	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, NULL));
	ASSERT_EQ(-EFAULT, agile_fence(self->fd, NULL));
	ASSERT_EQ(-EFAULT, agile_fence(self->fd, unmapped_address()));
}

/* One context per open file: each file is set up and counted alone. */
TEST(contexts_per_file)
{
	struct agile_stats st;
	int fd1, fd2;

	AGILE_OPEN(fd1);
	AGILE_OPEN(fd2);
	ASSERT_EQ(0, agile_ctx_init(fd1, 2, 64, NULL));
	ASSERT_EQ(-EBADFD, agile_signal(fd2, 0, 1));
	ASSERT_EQ(0, agile_ctx_init(fd2, 8, 64, NULL));
	ASSERT_EQ(-EINVAL, agile_signal(fd1, 7, 1));
	ASSERT_EQ(0, agile_signal(fd2, 7, 1));
	ASSERT_EQ(0, agile_signal(fd2, 6, 1));
	ASSERT_EQ(0, agile_stats(fd1, &st));
	ASSERT_EQ(0ULL, st.signals);
	ASSERT_EQ(0, agile_stats(fd2, &st));
	ASSERT_EQ(2ULL, st.signals);
	close(fd1);
	close(fd2);
}

/* A dup()ed descriptor is the same file, hence the same context. */
TEST(dup_shares_context)
{
	struct agile_stats st;
	int fd, fd2;

	AGILE_OPEN(fd);
	fd2 = dup(fd);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, agile_ctx_init(fd, 2, 64, NULL));
	ASSERT_EQ(-EBUSY, agile_ctx_init(fd2, 2, 64, NULL));
	ASSERT_EQ(0, agile_signal(fd2, 1, 1));
	ASSERT_EQ(0, agile_stats(fd, &st));
	ASSERT_EQ(1ULL, st.signals);
	close(fd);
	ASSERT_EQ(0, agile_signal(fd2, 1, 2));
	close(fd2);
}

/*
 * The misc device node: a character device, not world-writable: mode
 * 0660 (the module's default dev_mode; the udev rule, or the guest's
 * runner in its place, gives it group "agile").
 */
TEST(device_node)
{
	struct stat st;
	int fd;

	AGILE_OPEN(fd);
	close(fd);
	ASSERT_EQ(0, stat(AGILE_DEV_PATH, &st));
	ASSERT_TRUE(S_ISCHR(st.st_mode));
	ASSERT_EQ(0660U, st.st_mode & 07777);
	ASSERT_EQ(0U, st.st_uid);
}

/* Exit code: 0 when a user outside the device's group cannot open it. */
static int stranger_opens(void *arg)
{
	int fd;

	if (agile_become(65534, false))
		return 10;
	fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd >= 0)
		return 11;
	return errno == EACCES ? 0 : 12;
}

TEST(stranger_refused)
{
	int fd, status;

	AGILE_OPEN(fd);
	close(fd);
	if (geteuid())
		SKIP(return, "needs root to drop to nobody");
	status = agile_run_child(stranger_opens, NULL);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
}

static int nobody_uses_device(void *arg)
{
	struct agile_ctx_init init;
	struct agile_doorbell *db;
	int fd;

	/* A member of the device's group ("agile"). */
	if (agile_become(65534, true))
		return 10;
	fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 11;
	if (agile_ctx_init(fd, 2, 64, &init))
		return 12;
	db = agile_map_rw(fd, init.doorbell_offset, init.doorbell_bytes);
	if (db == MAP_FAILED)
		return 13;
	if (agile_signal(fd, 1, 3) || agile_db_value(db, 1) != 3)
		return 14;
	if (agile_wait(fd, 1, AGILE_CMP_EQ, 3, NSEC_PER_SEC, NULL))
		return 15;
	return 0;
}

/* No privilege beyond the device's group is needed to use it. */
TEST(nonroot_can_use)
{
	int fd, status;

	AGILE_OPEN(fd);
	close(fd);
	if (geteuid())
		SKIP(return, "needs root to drop to nobody");
	status = agile_run_child(nobody_uses_device, NULL);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
