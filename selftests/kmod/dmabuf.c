// SPDX-License-Identifier: GPL-2.0-only
/*
 * /dev/agile EXPORT_DMABUF: bad inputs; the dma-buf's mmap sees the same
 * pages as the agile mappings, both ways; CPU-access syncs; lifetimes
 * (the agile file closed while the dma-buf lives, and the reverse); and
 * an import by a real DRM driver, vgem, through PRIME.
 */
#include "agile_test.h"

#include <linux/dma-buf.h>
#include <libdrm/drm.h>

#define NR_SLOTS 40
#define TASK_REG_SIZE 256

static int export_dmabuf(int fd, __u32 what, __u32 id, __u32 flags)
{
	struct agile_export_dmabuf exp;
	int ret;

	memset(&exp, 0, sizeof(exp));
	exp.what = what;
	exp.id = id;
	exp.flags = flags;
	exp.fd = -1;
	ret = agile_ioctl(fd, AGILE_IOC_EXPORT_DMABUF, &exp);
	return ret ? ret : exp.fd;
}

static int seg_create(int fd, __u64 bytes, struct agile_seg_create *seg)
{
	memset(seg, 0, sizeof(*seg));
	seg->bytes = bytes;
	return agile_ioctl(fd, AGILE_IOC_SEG_CREATE, seg);
}

static int dmabuf_sync(int fd, __u64 flags)
{
	struct dma_buf_sync sync = { .flags = flags };

	return ioctl(fd, DMA_BUF_IOCTL_SYNC, &sync) ? -errno : 0;
}

FIXTURE(exp)
{
	int fd;
	long page;
	struct agile_ctx_init init;
	struct agile_seg_create seg;
};

FIXTURE_SETUP(exp)
{
	self->page = sysconf(_SC_PAGESIZE);
	AGILE_OPEN(self->fd);
	ASSERT_EQ(0, agile_ctx_init(self->fd, NR_SLOTS, TASK_REG_SIZE,
				    &self->init));
	ASSERT_EQ(0, seg_create(self->fd, 3 * self->page, &self->seg));
}

FIXTURE_TEARDOWN(exp)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(exp, bad_inputs)
{
	struct agile_export_dmabuf exp;
	unsigned int i;

	ASSERT_EQ(-EINVAL, export_dmabuf(self->fd, 3, 0, O_CLOEXEC));
	ASSERT_EQ(-EINVAL, export_dmabuf(self->fd, ~0U, 0, O_CLOEXEC));
	ASSERT_EQ(-EINVAL, export_dmabuf(self->fd, AGILE_DMABUF_SEGMENT, 1,
					 O_CLOEXEC));
	ASSERT_EQ(-EINVAL, export_dmabuf(self->fd, AGILE_DMABUF_SEGMENT,
					 AGILE_MAX_SEGMENTS, O_CLOEXEC));
	ASSERT_EQ(-EINVAL, export_dmabuf(self->fd, AGILE_DMABUF_DOORBELLS, 1,
					 O_CLOEXEC));
	ASSERT_EQ(-EINVAL, export_dmabuf(self->fd, AGILE_DMABUF_TASK_REGS, 1,
					 O_CLOEXEC));
	ASSERT_EQ(-EINVAL, export_dmabuf(self->fd, AGILE_DMABUF_DOORBELLS, 0,
					 O_NONBLOCK));
	ASSERT_EQ(-EINVAL, export_dmabuf(self->fd, AGILE_DMABUF_DOORBELLS, 0,
					 O_WRONLY));
	memset(&exp, 0, sizeof(exp));
	for (i = 0; i < ARRAY_SIZE(exp.reserved); i++) {
		exp.reserved[i] = 1;
		ASSERT_EQ(-EINVAL, agile_ioctl(self->fd,
					       AGILE_IOC_EXPORT_DMABUF, &exp));
		exp.reserved[i] = 0;
	}
	ASSERT_EQ(-EFAULT,
		  agile_ioctl(self->fd, AGILE_IOC_EXPORT_DMABUF, NULL));
}

TEST(before_ctx_init_ebadfd)
{
	int fd;

	AGILE_OPEN(fd);
	ASSERT_EQ(-EBADFD, export_dmabuf(fd, AGILE_DMABUF_DOORBELLS, 0,
					 O_CLOEXEC | O_RDWR));
	close(fd);
}

/* Stores through either mapping are seen through the other. */
static void check_shared(struct __test_metadata *_metadata, int agile_fd,
			 __u64 offset, __u64 bytes, int buf)
{
	unsigned char *a, *d;

	ASSERT_EQ((off_t)bytes, lseek(buf, 0, SEEK_END));
	a = agile_map_rw(agile_fd, offset, bytes);
	ASSERT_NE(MAP_FAILED, a) TH_LOG("agile mmap: %s", strerror(errno));
	d = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, d) TH_LOG("dma-buf mmap: %s", strerror(errno));
	ASSERT_EQ(0, dmabuf_sync(buf, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW));
	a[0] = 0x11;
	a[bytes - 1] = 0x22;
	ASSERT_EQ(0x11, d[0]);
	ASSERT_EQ(0x22, d[bytes - 1]);
	d[bytes / 2] = 0x33;
	ASSERT_EQ(0x33, a[bytes / 2]);
	ASSERT_EQ(0, dmabuf_sync(buf, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW));
	munmap(a, bytes);
	munmap(d, bytes);
}

TEST_F(exp, doorbells_shared)
{
	int buf = export_dmabuf(self->fd, AGILE_DMABUF_DOORBELLS, 0,
				O_CLOEXEC | O_RDWR);

	ASSERT_LE(0, buf) TH_LOG("export: %s", strerror(-buf));
	ASSERT_EQ(FD_CLOEXEC, fcntl(buf, F_GETFD));
	check_shared(_metadata, self->fd, self->init.doorbell_offset,
		     self->init.doorbell_bytes, buf);
	close(buf);
}

TEST_F(exp, task_regs_shared)
{
	int buf = export_dmabuf(self->fd, AGILE_DMABUF_TASK_REGS, 0, O_RDWR);

	ASSERT_LE(0, buf) TH_LOG("export: %s", strerror(-buf));
	ASSERT_EQ(0, fcntl(buf, F_GETFD));
	check_shared(_metadata, self->fd, self->init.task_reg_offset,
		     self->init.task_reg_bytes, buf);
	close(buf);
}

TEST_F(exp, segment_shared)
{
	int buf = export_dmabuf(self->fd, AGILE_DMABUF_SEGMENT, 0,
				O_CLOEXEC | O_RDWR);

	ASSERT_LE(0, buf) TH_LOG("export: %s", strerror(-buf));
	check_shared(_metadata, self->fd, self->seg.mmap_offset,
		     self->seg.mmap_bytes, buf);
	close(buf);
}

TEST_F(exp, dmabuf_mmap_rules)
{
	__u64 bytes = self->seg.mmap_bytes;
	void *p;
	int buf = export_dmabuf(self->fd, AGILE_DMABUF_SEGMENT, 0,
				O_CLOEXEC | O_RDWR);

	ASSERT_LE(0, buf);
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, buf, 0);
	ASSERT_EQ(MAP_FAILED, p);
	p = mmap(NULL, bytes, PROT_READ | PROT_EXEC, MAP_SHARED, buf, 0);
	ASSERT_EQ(MAP_FAILED, p);
	p = mmap(NULL, bytes - self->page, PROT_READ, MAP_SHARED, buf,
		 self->page);
	ASSERT_EQ(MAP_FAILED, p);
	p = mmap(NULL, self->page, PROT_READ, MAP_SHARED, buf, 0);
	ASSERT_EQ(MAP_FAILED, p);
	close(buf);

	/* A read-only export cannot be mapped writable. */
	buf = export_dmabuf(self->fd, AGILE_DMABUF_SEGMENT, 0, O_CLOEXEC);
	ASSERT_LE(0, buf);
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
	ASSERT_EQ(MAP_FAILED, p);
	p = mmap(NULL, bytes, PROT_READ, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, bytes);
	close(buf);
}

/* The dma-buf keeps the pages after the agile file is closed. */
TEST_F(exp, close_agile_first)
{
	unsigned long long before = 0, during = 0, after = 0;
	__u64 bytes = self->seg.mmap_bytes;
	unsigned char *a, *d;
	int buf;

	a = agile_map_rw(self->fd, self->seg.mmap_offset, bytes);
	ASSERT_NE(MAP_FAILED, a);
	a[5] = 0x77;
	munmap(a, bytes);
	buf = export_dmabuf(self->fd, AGILE_DMABUF_SEGMENT, 0,
			    O_CLOEXEC | O_RDWR);
	ASSERT_LE(0, buf);
	ASSERT_EQ(0, agile_sysfs_read("contexts", &before));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, agile_sysfs_read("contexts", &during));
	ASSERT_EQ(before, during);

	d = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, d) TH_LOG("dma-buf mmap: %s", strerror(errno));
	ASSERT_EQ(0x77, d[5]);
	d[6] = 0x78;
	ASSERT_EQ(0, dmabuf_sync(buf, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW));
	ASSERT_EQ(0, dmabuf_sync(buf, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW));
	close(buf);
	/* The mapping holds its pages after the last file is gone. */
	ASSERT_EQ(0x78, d[6]);
	munmap(d, bytes);
	ASSERT_EQ(0, agile_sysfs_read("contexts", &after));
	ASSERT_EQ(before - 1, after);
}

/* The agile file works on after its dma-buf is closed. */
TEST_F(exp, close_dmabuf_first)
{
	struct agile_doorbell *db;
	int buf;

	buf = export_dmabuf(self->fd, AGILE_DMABUF_DOORBELLS, 0,
			    O_CLOEXEC | O_RDWR);
	ASSERT_LE(0, buf);
	close(buf);
	db = agile_map_rw(self->fd, self->init.doorbell_offset,
			  self->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);
	ASSERT_EQ(0, agile_signal(self->fd, 3, 9));
	ASSERT_EQ(9U, agile_db_value(db, 3));
	munmap(db, self->init.doorbell_bytes);
	/* And exports again. */
	buf = export_dmabuf(self->fd, AGILE_DMABUF_DOORBELLS, 0, O_RDWR);
	ASSERT_LE(0, buf);
	close(buf);
}

/* The first /dev/dri/card* whose driver is vgem, or -1. */
static int open_vgem(void)
{
	char path[64], name[16];
	struct drm_version v;
	int i, fd;

	for (i = 0; i < 16; i++) {
		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&v, 0, sizeof(v));
		memset(name, 0, sizeof(name));
		v.name = name;
		v.name_len = sizeof(name) - 1;
		if (!ioctl(fd, DRM_IOCTL_VERSION, &v) && !strcmp(name, "vgem"))
			return fd;
		close(fd);
	}
	return -1;
}

/*
 * vgem imports the dma-buf (attach + map_dma_buf with its device), then
 * maps it.  vgem's MODE_MAP_DUMB refuses imported objects
 * (drm_gem_dumb_map_offset), so where it does the test maps the buffer
 * that vgem exports back for the handle (PRIME_HANDLE_TO_FD).
 */
TEST_F(exp, vgem_import)
{
	struct drm_prime_handle prime = { .flags = DRM_CLOEXEC | DRM_RDWR };
	struct drm_gem_close gem_close = {};
	struct drm_mode_map_dumb map = {};
	__u64 bytes = self->seg.mmap_bytes;
	unsigned char *a, *g;
	int card, buf, back = -1;

	card = open_vgem();
	if (card < 0)
		SKIP(return, "no vgem device (modprobe vgem)");
	buf = export_dmabuf(self->fd, AGILE_DMABUF_SEGMENT, 0,
			    O_CLOEXEC | O_RDWR);
	ASSERT_LE(0, buf);
	prime.fd = buf;
	ASSERT_EQ(0, ioctl(card, DRM_IOCTL_PRIME_FD_TO_HANDLE, &prime))
		TH_LOG("PRIME_FD_TO_HANDLE: %s", strerror(errno));
	ASSERT_NE(0U, prime.handle);

	map.handle = prime.handle;
	if (!ioctl(card, DRM_IOCTL_MODE_MAP_DUMB, &map)) {
		g = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, card,
			 (off_t)map.offset);
	} else {
		TH_LOG("MAP_DUMB: %s; mapping vgem's PRIME export",
		       strerror(errno));
		prime.fd = -1;
		ASSERT_EQ(0, ioctl(card, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime))
			TH_LOG("PRIME_HANDLE_TO_FD: %s", strerror(errno));
		back = prime.fd;
		g = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, back,
			 0);
	}
	ASSERT_NE(MAP_FAILED, g) TH_LOG("vgem mmap: %s", strerror(errno));
	a = agile_map_rw(self->fd, self->seg.mmap_offset, bytes);
	ASSERT_NE(MAP_FAILED, a);
	a[0] = 0xa1;
	a[bytes - 1] = 0xa2;
	ASSERT_EQ(0xa1, g[0]);
	ASSERT_EQ(0xa2, g[bytes - 1]);
	g[bytes / 2] = 0xb3;
	ASSERT_EQ(0xb3, a[bytes / 2]);
	munmap(a, bytes);
	munmap(g, bytes);

	/* vgem's handle keeps the dma-buf after every fd of it is closed. */
	if (back >= 0)
		close(back);
	close(buf);
	close(self->fd);
	self->fd = -1;
	gem_close.handle = prime.handle;
	ASSERT_EQ(0, ioctl(card, DRM_IOCTL_GEM_CLOSE, &gem_close));
	close(card);
}

TEST_HARNESS_MAIN
