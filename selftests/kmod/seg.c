// SPDX-License-Identifier: GPL-2.0-only
/*
 * /dev/agile data segments: SEG_CREATE's results and bad inputs, zeroed
 * pages, the mmap rules at a segment's offset, the per-context limit and
 * the sysfs max_segment_bytes tunable.
 */
#include "agile_test.h"

#include <grp.h>

#define NOBODY 65534

static int seg_create(int fd, __u64 bytes, struct agile_seg_create *out)
{
	struct agile_seg_create local;
	struct agile_seg_create *seg = out ? out : &local;

	memset(seg, 0, sizeof(*seg));
	seg->bytes = bytes;
	return agile_ioctl(fd, AGILE_IOC_SEG_CREATE, seg);
}

static bool all_zero(const void *p, __u64 bytes)
{
	const unsigned char *c = p;
	__u64 i;

	for (i = 0; i < bytes; i++)
		if (c[i])
			return false;
	return true;
}

FIXTURE(seg)
{
	int fd;
	long page;
};

FIXTURE_SETUP(seg)
{
	self->page = sysconf(_SC_PAGESIZE);
	AGILE_OPEN(self->fd);
	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, NULL));
}

FIXTURE_TEARDOWN(seg)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(seg, create_and_map)
{
	struct agile_seg_create a, b;
	unsigned char *pa, *pb;

	ASSERT_EQ(0, seg_create(self->fd, 1, &a));
	ASSERT_EQ(0U, a.id);
	ASSERT_EQ(0U, a.pad2);
	ASSERT_EQ(AGILE_MMAP_SEGMENTS, a.mmap_offset);
	ASSERT_EQ((__u64)self->page, a.mmap_bytes);
	ASSERT_EQ(0, seg_create(self->fd, 3 * self->page + 1, &b));
	ASSERT_EQ(1U, b.id);
	ASSERT_EQ(AGILE_MMAP_SEGMENTS + (1ULL << AGILE_MMAP_SEGMENT_SHIFT),
		  b.mmap_offset);
	ASSERT_EQ(4ULL * self->page, b.mmap_bytes);

	pa = agile_map_rw(self->fd, a.mmap_offset, a.mmap_bytes);
	ASSERT_NE(MAP_FAILED, pa) TH_LOG("mmap: %s", strerror(errno));
	pb = agile_map_rw(self->fd, b.mmap_offset, b.mmap_bytes);
	ASSERT_NE(MAP_FAILED, pb) TH_LOG("mmap: %s", strerror(errno));
	ASSERT_TRUE(all_zero(pa, a.mmap_bytes));
	ASSERT_TRUE(all_zero(pb, b.mmap_bytes));
	memset(pa, 0x5a, a.mmap_bytes);
	ASSERT_TRUE(all_zero(pb, b.mmap_bytes));
	pb[b.mmap_bytes - 1] = 7;
	munmap(pa, a.mmap_bytes);

	/* A second mapping of a segment sees the first one's stores. */
	pa = agile_map_rw(self->fd, a.mmap_offset, a.mmap_bytes);
	ASSERT_NE(MAP_FAILED, pa);
	ASSERT_EQ(0x5a, pa[a.mmap_bytes - 1]);
	munmap(pa, a.mmap_bytes);

	/* The mapping outlives the file. */
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(7, pb[b.mmap_bytes - 1]);
	munmap(pb, b.mmap_bytes);
}

TEST_F(seg, bad_inputs)
{
	struct agile_seg_create seg;
	unsigned int i;

	memset(&seg, 0, sizeof(seg));
	ASSERT_EQ(-EINVAL, agile_ioctl(self->fd, AGILE_IOC_SEG_CREATE, &seg));
	seg.bytes = self->page;
	seg.flags = 1;
	ASSERT_EQ(-EINVAL, agile_ioctl(self->fd, AGILE_IOC_SEG_CREATE, &seg));
	seg.flags = 0;
	seg.pad = 1;
	ASSERT_EQ(-EINVAL, agile_ioctl(self->fd, AGILE_IOC_SEG_CREATE, &seg));
	seg.pad = 0;
	for (i = 0; i < ARRAY_SIZE(seg.reserved); i++) {
		seg.reserved[i] = 1ULL << 63;
		ASSERT_EQ(-EINVAL,
			  agile_ioctl(self->fd, AGILE_IOC_SEG_CREATE, &seg));
		seg.reserved[i] = 0;
	}
	ASSERT_EQ(-EFAULT, agile_ioctl(self->fd, AGILE_IOC_SEG_CREATE, NULL));
	/* Nothing was created by the rejected calls. */
	ASSERT_EQ(0, seg_create(self->fd, 1, &seg));
	ASSERT_EQ(0U, seg.id);
}

TEST_F(seg, over_max_enospc)
{
	struct agile_info info;

	ASSERT_EQ(0, agile_info(self->fd, &info));
	ASSERT_EQ(-ENOSPC,
		  seg_create(self->fd, info.max_segment_bytes + 1, NULL));
	ASSERT_EQ(-ENOSPC, seg_create(self->fd, ~0ULL, NULL));
}

TEST_F(seg, too_many_enospc)
{
	struct agile_seg_create seg;
	unsigned int i;

	for (i = 0; i < AGILE_MAX_SEGMENTS; i++) {
		ASSERT_EQ(0, seg_create(self->fd, 1, &seg));
		ASSERT_EQ(i, seg.id);
	}
	ASSERT_EQ(-ENOSPC, seg_create(self->fd, 1, NULL));
}

TEST(before_ctx_init_ebadfd)
{
	int fd;

	AGILE_OPEN(fd);
	ASSERT_EQ(-EBADFD, seg_create(fd, 4096, NULL));
	close(fd);
}

TEST_F(seg, mmap_rules)
{
	struct agile_seg_create seg;
	void *p;

	ASSERT_EQ(0, seg_create(self->fd, 2 * self->page, &seg));
	/* Offsets of segments that do not exist, or inside one. */
	p = agile_map_rw(self->fd,
			 seg.mmap_offset + (1ULL << AGILE_MMAP_SEGMENT_SHIFT),
			 seg.mmap_bytes);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EINVAL, errno);
	p = agile_map_rw(self->fd, seg.mmap_offset + self->page, self->page);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EINVAL, errno);
	p = agile_map_rw(self->fd, AGILE_MMAP_SEGMENTS - self->page,
			 self->page);
	ASSERT_EQ(MAP_FAILED, p);
	/* Wrong lengths. */
	p = agile_map_rw(self->fd, seg.mmap_offset, self->page);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EINVAL, errno);
	p = agile_map_rw(self->fd, seg.mmap_offset, 3 * self->page);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EINVAL, errno);
	/* MAP_PRIVATE and exec are refused. */
	p = agile_map(self->fd, seg.mmap_offset, seg.mmap_bytes,
		      PROT_READ | PROT_WRITE, MAP_PRIVATE);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EINVAL, errno);
	p = agile_map(self->fd, seg.mmap_offset, seg.mmap_bytes,
		      PROT_READ | PROT_EXEC, MAP_SHARED);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EPERM, errno);
	/* mprotect cannot add exec later. */
	p = agile_map(self->fd, seg.mmap_offset, seg.mmap_bytes, PROT_READ,
		      MAP_SHARED);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_NE(0, mprotect(p, seg.mmap_bytes, PROT_READ | PROT_EXEC));
	munmap(p, seg.mmap_bytes);
}

/* Two contexts' segment 0 are different pages. */
TEST_F(seg, contexts_apart)
{
	struct agile_seg_create a, b;
	unsigned char *pa, *pb;
	int fd2;

	AGILE_OPEN(fd2);
	ASSERT_EQ(0, agile_ctx_init(fd2, 4, 64, NULL));
	ASSERT_EQ(0, seg_create(self->fd, 1, &a));
	ASSERT_EQ(0, seg_create(fd2, 1, &b));
	ASSERT_EQ(a.mmap_offset, b.mmap_offset);
	pa = agile_map_rw(self->fd, a.mmap_offset, a.mmap_bytes);
	pb = agile_map_rw(fd2, b.mmap_offset, b.mmap_bytes);
	ASSERT_NE(MAP_FAILED, pa);
	ASSERT_NE(MAP_FAILED, pb);
	pa[0] = 1;
	ASSERT_EQ(0, pb[0]);
	munmap(pa, a.mmap_bytes);
	munmap(pb, b.mmap_bytes);
	close(fd2);
}

#define REQUIRE_ROOT()                              \
	do {                                        \
		if (geteuid())                      \
			SKIP(return, "needs root"); \
	} while (0)

/* sysfs max_segment_bytes: range-checked, followed by SEG_CREATE and INFO. */
TEST_F(seg, sysfs_max_segment_bytes)
{
	unsigned long long saved = 0, val = 0;
	struct agile_info info;

	REQUIRE_ROOT();
	ASSERT_EQ(0, agile_sysfs_read("max_segment_bytes", &saved));
	ASSERT_EQ(256ULL << 20, saved);
	ASSERT_EQ(-EINVAL, agile_sysfs_write("max_segment_bytes", "0\n"));
	ASSERT_EQ(-EINVAL,
		  agile_sysfs_write_u64("max_segment_bytes", self->page - 1));
	ASSERT_EQ(-EINVAL,
		  agile_sysfs_write_u64("max_segment_bytes", (1ULL << 30) + 1));
	ASSERT_EQ(-EINVAL, agile_sysfs_write("max_segment_bytes", "x\n"));
	ASSERT_EQ(0, agile_sysfs_read("max_segment_bytes", &val));
	ASSERT_EQ(saved, val);

	ASSERT_EQ(0, agile_sysfs_write_u64("max_segment_bytes", self->page));
	ASSERT_EQ(0, agile_info(self->fd, &info));
	ASSERT_EQ((__u64)self->page, info.max_segment_bytes);
	ASSERT_EQ(-ENOSPC, seg_create(self->fd, self->page + 1, NULL));
	ASSERT_EQ(0, seg_create(self->fd, self->page, NULL));
	ASSERT_EQ(0, agile_sysfs_write_u64("max_segment_bytes", 1ULL << 30));
	ASSERT_EQ(0, agile_sysfs_write_u64("max_segment_bytes", saved));
}

static int nobody_writes(void *arg)
{
	char path[256];
	int fd;

	(void)arg;
	agile_sysfs_path(path, sizeof(path), "max_segment_bytes");
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	/* Opened as root, written without CAP_SYS_ADMIN. */
	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		return 2;
	if (agile_sysfs_write_fd(fd, "4096\n") != -EPERM)
		return 3;
	close(fd);
	/* And nobody cannot open it for writing at all. */
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0 || errno != EACCES)
		return 4;
	return 0;
}

TEST_F(seg, sysfs_nonroot_refused)
{
	unsigned long long before = 0, after = 0;
	int status;

	REQUIRE_ROOT();
	ASSERT_EQ(0, agile_sysfs_read("max_segment_bytes", &before));
	status = agile_run_child(nobody_writes, NULL);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, agile_sysfs_read("max_segment_bytes", &after));
	ASSERT_EQ(before, after);
}

TEST_HARNESS_MAIN
