// SPDX-License-Identifier: GPL-2.0-only
/*
 * /dev/agile EXPORT_DMABUF: bad inputs; the dma-buf's mmap sees the same
 * pages as the agile mappings, both ways; CPU-access syncs; lifetimes
 * (the agile file closed while the dma-buf lives, and the reverse); an
 * import by the test-only module's importer (agile_pin_test.ko), which
 * reads and writes the pages it was given, both ways against the agile
 * mapping; and an import by a real DRM driver, vgem, through PRIME.
 */
#include "agile_test.h"
#include "agile_pin_test.h"

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
	ASSERT_EQ(-EINVAL,
		  export_dmabuf(self->fd, AGILE_DMABUF_SEGMENT, 1, O_CLOEXEC));
	ASSERT_EQ(-EINVAL, export_dmabuf(self->fd, AGILE_DMABUF_SEGMENT,
					 AGILE_MAX_SEGMENTS, O_CLOEXEC));
	ASSERT_EQ(-EINVAL, export_dmabuf(self->fd, AGILE_DMABUF_DOORBELLS, 1,
					 O_CLOEXEC));
	ASSERT_EQ(-EINVAL, export_dmabuf(self->fd, AGILE_DMABUF_TASK_REGS, 1,
					 O_CLOEXEC));
	ASSERT_EQ(-EINVAL, export_dmabuf(self->fd, AGILE_DMABUF_DOORBELLS, 0,
					 O_NONBLOCK));
	ASSERT_EQ(-EINVAL,
		  export_dmabuf(self->fd, AGILE_DMABUF_DOORBELLS, 0, O_WRONLY));
	memset(&exp, 0, sizeof(exp));
	for (i = 0; i < ARRAY_SIZE(exp.reserved); i++) {
		exp.reserved[i] = 1;
		ASSERT_EQ(-EINVAL,
			  agile_ioctl(self->fd, AGILE_IOC_EXPORT_DMABUF, &exp));
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

#define PIN_DEV_PATH "/dev/agile_pin_test"

/* /dev/agile_pin_test, or -1 when agile_pin_test.ko is not loaded. */
static int open_importer(struct __test_metadata *_metadata)
{
	int fd = open(PIN_DEV_PATH, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		EXPECT_EQ(ENOENT, errno)
		{
			TH_LOG("%s: %s", PIN_DEV_PATH, strerror(errno));
		}
	return fd;
}

/*
 * The importer imports @buf, reads the word at @offset through the pages
 * it was given (or its vmap), then stores @marker there.  0 with the word
 * it read in *@seen, or -errno.
 */
static int import_swap(int pin_fd, int buf, __u64 offset, __u32 flags,
		       __u32 marker, __u32 *seen)
{
	struct agile_pin_test_dmabuf args = {
		.fd = buf,
		.flags = flags,
		.offset = offset,
		.marker = marker,
		.seen = 0xdeadbeef,
	};
	int ret = agile_ioctl(pin_fd, AGILE_PIN_TEST_IOC_DMABUF, &args);

	if (!ret && seen)
		*seen = args.seen;
	return ret;
}

/*
 * A device driver that imports the dma-buf reaches the very memory of the
 * agile mapping: what the user stores through /dev/agile's mapping, the
 * importer reads through its attachment's pages and through its vmap;
 * what it stores there, the user reads back.  First, middle and last
 * words of a three-page segment, so that the importer walks its
 * scatterlist past the first page.
 */
TEST_F(exp, importer_sees_stores)
{
	static const __u32 paths[] = { 0, AGILE_PIN_TEST_DMABUF_VMAP };
	__u64 bytes = self->seg.mmap_bytes;
	unsigned int i, p;
	volatile __u32 *a;
	__u64 offsets[3];
	__u32 seen, v;
	int pin_fd, buf;

	pin_fd = open_importer(_metadata);
	if (pin_fd < 0)
		SKIP(return, "%s missing", PIN_DEV_PATH);
	buf = export_dmabuf(self->fd, AGILE_DMABUF_SEGMENT, 0,
			    O_CLOEXEC | O_RDWR);
	ASSERT_LE(0, buf) TH_LOG("export: %s", strerror(-buf));
	a = agile_map_rw(self->fd, self->seg.mmap_offset, bytes);
	ASSERT_NE(MAP_FAILED, a);
	offsets[0] = 0;
	offsets[1] = bytes / 2 + 8;
	offsets[2] = bytes - sizeof(__u32);

	for (p = 0; p < ARRAY_SIZE(paths); p++) {
		for (i = 0; i < ARRAY_SIZE(offsets); i++) {
			v = 0x5e000000 + (p << 8) + i;
			a[offsets[i] / 4] = v;
			seen = 0;
			ASSERT_EQ(0, import_swap(pin_fd, buf, offsets[i],
						 paths[p], ~v, &seen))
			{
				TH_LOG("path %u offset %llu", p,
				       (unsigned long long)offsets[i]);
			}
			ASSERT_EQ(v, seen)
			{
				TH_LOG("path %u offset %llu", p,
				       (unsigned long long)offsets[i]);
			}
			ASSERT_EQ(~v, a[offsets[i] / 4]);
		}
		/* The words around the last one are untouched. */
		ASSERT_EQ(~(0x5e000000 + (p << 8) + 1), a[offsets[1] / 4]);
		ASSERT_EQ(0U, a[offsets[1] / 4 + 1]);
	}
	munmap((void *)a, bytes);

	/* The dma-buf alone keeps the pages importable. */
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, import_swap(pin_fd, buf, 0, 0, 0x600d, &seen));
	ASSERT_EQ(~(0x5e000000U + (1 << 8)), seen);
	ASSERT_EQ(0, import_swap(pin_fd, buf, 0, AGILE_PIN_TEST_DMABUF_VMAP, 0,
				 &seen));
	ASSERT_EQ(0x600dU, seen);
	close(buf);
	close(pin_fd);
}

/* The same for the doorbell area: the module's WAIT sees the importer. */
TEST_F(exp, importer_doorbells)
{
	__u64 slot_off = 5 * (__u64)AGILE_DOORBELL_STRIDE;
	struct agile_doorbell *db;
	__u32 seen = 0;
	int pin_fd, buf;

	pin_fd = open_importer(_metadata);
	if (pin_fd < 0)
		SKIP(return, "%s missing", PIN_DEV_PATH);
	buf = export_dmabuf(self->fd, AGILE_DMABUF_DOORBELLS, 0,
			    O_CLOEXEC | O_RDWR);
	ASSERT_LE(0, buf);
	db = agile_map_rw(self->fd, self->init.doorbell_offset,
			  self->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);

	/* A store through the agile mapping... */
	db[5].value = 0x1234;
	ASSERT_EQ(0, import_swap(pin_fd, buf, slot_off, 0, 0x4321, &seen));
	ASSERT_EQ(0x1234U, seen);
	ASSERT_EQ(0x4321U, agile_db_value(db, 5));
	ASSERT_EQ(0, agile_wait(self->fd, 5, AGILE_CMP_EQ, 0x4321, 0, NULL));
	/* ...and a SIGNAL by the module, both read by the importer. */
	ASSERT_EQ(0, agile_signal(self->fd, NR_SLOTS - 1, 0x77));
	ASSERT_EQ(0, import_swap(pin_fd, buf,
				 (NR_SLOTS - 1) * (__u64)AGILE_DOORBELL_STRIDE,
				 AGILE_PIN_TEST_DMABUF_VMAP, 0x78, &seen));
	ASSERT_EQ(0x77U, seen);
	ASSERT_EQ(0x78U, agile_db_value(db, NR_SLOTS - 1));
	ASSERT_EQ(0, agile_wait(self->fd, NR_SLOTS - 1, AGILE_CMP_EQ, 0x78, 0,
				NULL));
	munmap(db, self->init.doorbell_bytes);
	close(buf);
	close(pin_fd);
}

TEST_F(exp, importer_bad_inputs)
{
	__u64 bytes = self->seg.mmap_bytes;
	struct agile_pin_test_dmabuf args;
	unsigned int i;
	int pin_fd, buf;

	pin_fd = open_importer(_metadata);
	if (pin_fd < 0)
		SKIP(return, "%s missing", PIN_DEV_PATH);
	buf = export_dmabuf(self->fd, AGILE_DMABUF_SEGMENT, 0,
			    O_CLOEXEC | O_RDWR);
	ASSERT_LE(0, buf);

	ASSERT_EQ(-EINVAL, import_swap(pin_fd, buf, 0, 4, 0, NULL));
	ASSERT_EQ(-EINVAL, import_swap(pin_fd, buf, 0,
				       AGILE_PIN_TEST_DMABUF_VMAP |
					       AGILE_PIN_TEST_DMABUF_TO_DEVICE,
				       0, NULL));
	ASSERT_EQ(-EINVAL, import_swap(pin_fd, buf, 0, ~0U, 0, NULL));
	ASSERT_EQ(-EINVAL, import_swap(pin_fd, buf, 2, 0, 0, NULL));
	ASSERT_EQ(-EINVAL, import_swap(pin_fd, buf, bytes, 0, 0, NULL));
	ASSERT_EQ(-EINVAL, import_swap(pin_fd, buf, bytes - 2, 0, 0, NULL));
	ASSERT_EQ(-EINVAL, import_swap(pin_fd, buf, ~3ULL,
				       AGILE_PIN_TEST_DMABUF_VMAP, 0, NULL));
	/* Not a dma-buf, and not a file. */
	ASSERT_EQ(-EINVAL, import_swap(pin_fd, self->fd, 0, 0, 0, NULL));
	ASSERT_EQ(-EBADF, import_swap(pin_fd, -1, 0, 0, 0, NULL));
	memset(&args, 0, sizeof(args));
	args.fd = buf;
	for (i = 0; i < ARRAY_SIZE(args.reserved); i++) {
		args.reserved[i] = 1;
		ASSERT_EQ(-EINVAL,
			  agile_ioctl(pin_fd, AGILE_PIN_TEST_IOC_DMABUF,
				      &args));
		args.reserved[i] = 0;
	}
	ASSERT_EQ(-EFAULT,
		  agile_ioctl(pin_fd, AGILE_PIN_TEST_IOC_DMABUF, NULL));
	/* None of it wrote anything; a good call still works. */
	ASSERT_EQ(0, import_swap(pin_fd, buf, 0, 0, 0, NULL));
	close(buf);
	close(pin_fd);
}

/*
 * A CPU-access sync uses the direction of each mapping, not the
 * caller's: the importer maps DMA_TO_DEVICE, stores through the page,
 * then begins CPU access DMA_FROM_DEVICE; syncing its mapping "from the
 * device" would copy the bounce buffer (what the page held at map time)
 * back over the store.  Only where DMA bounces (swiotlb=force: the
 * 6.1-debug guest boots with it; AGILE_VM_APPEND=swiotlb=force for the
 * others) does the direction show; elsewhere the test checks the path
 * and skips.
 */
TEST_F(exp, importer_sync_uses_mapping_direction)
{
	struct agile_pin_test_dmabuf args;
	volatile __u32 *a;
	int pin_fd, buf;

	pin_fd = open_importer(_metadata);
	if (pin_fd < 0)
		SKIP(return, "%s missing", PIN_DEV_PATH);
	buf = export_dmabuf(self->fd, AGILE_DMABUF_SEGMENT, 0,
			    O_CLOEXEC | O_RDWR);
	ASSERT_LE(0, buf);
	a = agile_map_rw(self->fd, self->seg.mmap_offset, self->seg.mmap_bytes);
	ASSERT_NE(MAP_FAILED, a);
	a[1] = 0x5151;

	memset(&args, 0, sizeof(args));
	args.fd = buf;
	args.flags = AGILE_PIN_TEST_DMABUF_TO_DEVICE;
	args.offset = 4;
	args.marker = 0x7272;
	ASSERT_EQ(0, agile_ioctl(pin_fd, AGILE_PIN_TEST_IOC_DMABUF, &args));
	ASSERT_EQ(0x5151U, args.seen);
	ASSERT_EQ(0x7272U, args.after) TH_LOG("bounced %u", args.bounced);
	ASSERT_EQ(0x7272U, a[1]);
	munmap((void *)a, self->seg.mmap_bytes);
	close(buf);
	close(pin_fd);
	if (!args.bounced)
		SKIP(return,
			   "DMA does not bounce here (boot with swiotlb=force)");
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
 * that vgem exports back for the handle (PRIME_HANDLE_TO_FD): our own
 * dma-buf again.  That an importer reaches the same memory as the agile
 * mapping, both ways, importer_sees_stores and importer_doorbells show
 * with the test-only module's importer.
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
	{
		TH_LOG("PRIME_FD_TO_HANDLE: %s", strerror(errno));
	}
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
		{
			TH_LOG("PRIME_HANDLE_TO_FD: %s", strerror(errno));
		}
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
