// SPDX-License-Identifier: GPL-2.0-only
/*
 * FOLL_LONGTERM pins of /dev/agile mappings, as hipHostRegister() and
 * cudaHostRegister() take them, through the test-only module's
 * /dev/agile_pin_test.  The kernel writes a marker into each pinned page
 * through its own mapping; the marker must show in ours and in what the
 * module's WAIT reads.  Skipped when agile_pin_test.ko is not loaded.
 */
#include "agile_test.h"
#include "agile_pin_test.h"

#define PIN_DEV_PATH "/dev/agile_pin_test"

FIXTURE(pin)
{
	int fd;
	int pin_fd;
	long page;
};

FIXTURE_SETUP(pin)
{
	self->page = sysconf(_SC_PAGESIZE);
	self->pin_fd = open(PIN_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (self->pin_fd < 0 && errno == ENOENT)
		SKIP(_exit(AGILE_SKIP_EXIT), "%s missing", PIN_DEV_PATH);
	ASSERT_LE(0, self->pin_fd);
	AGILE_OPEN(self->fd);
}

FIXTURE_TEARDOWN(pin)
{
	if (self->fd >= 0)
		close(self->fd);
	if (self->pin_fd >= 0)
		close(self->pin_fd);
}

/* Pages pinned (then unpinned), or -errno. */
static int pin_range(int pin_fd, const void *addr, __u64 length, __u32 flags,
		     __u32 marker)
{
	struct agile_pin_test_args args = {
		.addr = (__u64)(uintptr_t)addr,
		.length = length,
		.flags = flags,
		.marker = marker,
	};

	return agile_ioctl(pin_fd, AGILE_PIN_TEST_IOC_PIN, &args);
}

/* Control: anonymous memory pins, so a failure below is agile's. */
TEST_F(pin, anonymous_control)
{
	unsigned char *p;

	p = mmap(NULL, 2 * (size_t)self->page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(2, pin_range(self->pin_fd, p, 2 * (__u64)self->page,
			       AGILE_PIN_TEST_WRITE, 0x100));
	ASSERT_EQ(0x100U, *(__u32 *)p);
	ASSERT_EQ(0x101U, *(__u32 *)(p + self->page));
	munmap(p, 2 * (size_t)self->page);
}

TEST_F(pin, doorbells)
{
	struct agile_ctx_init init;
	struct agile_doorbell *db;
	__u32 per_page, pages, i;

	/* Three pages of doorbells. */
	per_page = (__u32)self->page / AGILE_DOORBELL_STRIDE;
	ASSERT_EQ(0, agile_ctx_init(self->fd, 2 * per_page + 1, 64, &init));
	pages = (__u32)(init.doorbell_bytes / (__u64)self->page);
	ASSERT_EQ(3U, pages);
	db = agile_map_rw(self->fd, init.doorbell_offset, init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);

	ASSERT_EQ((int)pages, pin_range(self->pin_fd, db, init.doorbell_bytes,
					AGILE_PIN_TEST_WRITE, 0xa000));
	for (i = 0; i < pages; i++) {
		/* The marker is the first doorbell word of each page... */
		ASSERT_EQ(0xa000 + i, agile_db_value(db, i * per_page));
		/* ...and the module's WAIT reads the same page. */
		ASSERT_EQ(0, agile_wait(self->fd, i * per_page, AGILE_CMP_EQ,
					0xa000 + i, 0, NULL));
	}
	/* And the other way: a SIGNAL lands in the page that was pinned. */
	ASSERT_EQ(0, agile_signal(self->fd, per_page, 0xb001));
	ASSERT_EQ(0xb001U, agile_db_value(db, per_page));
	munmap(db, init.doorbell_bytes);
}

TEST_F(pin, task_registers)
{
	struct agile_ctx_init init;
	struct agile_task_reg *reg;
	__u32 pages, i;

	ASSERT_EQ(0,
		  agile_ctx_init(self->fd, 4, AGILE_TASK_REG_MAX_SIZE, &init));
	pages = (__u32)(init.task_reg_bytes / (__u64)self->page);
	reg = agile_map_rw(self->fd, init.task_reg_offset, init.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, reg);
	ASSERT_EQ((int)pages, pin_range(self->pin_fd, reg, init.task_reg_bytes,
					AGILE_PIN_TEST_WRITE, 0xc000));
	for (i = 0; i < pages; i++)
		ASSERT_EQ(0xc000 + i,
			  *(volatile __u32 *)((char *)reg + i * self->page));
	munmap(reg, init.task_reg_bytes);
}

/* A pin without the marker changes nothing; part of an area pins too. */
TEST_F(pin, read_only_and_subrange)
{
	struct agile_ctx_init init;
	unsigned char *reg;

	ASSERT_EQ(0, agile_ctx_init(self->fd, 8, 1024, &init));
	reg = agile_map_rw(self->fd, init.task_reg_offset, init.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, reg);
	memset(reg, 0x5a, init.task_reg_bytes);
	ASSERT_EQ((int)(init.task_reg_bytes / (__u64)self->page),
		  pin_range(self->pin_fd, reg, init.task_reg_bytes, 0, 0));
	ASSERT_EQ(0x5a, reg[0]);
	ASSERT_EQ(1, pin_range(self->pin_fd, reg + self->page,
			       (__u64)self->page, AGILE_PIN_TEST_WRITE, 7));
	ASSERT_EQ(7U, *(__u32 *)(reg + self->page));
	ASSERT_EQ(0x5a, reg[0]);
	munmap(reg, init.task_reg_bytes);
}

/* The mapping outlives the file: its pages still pin. */
TEST_F(pin, after_close)
{
	struct agile_ctx_init init;
	struct agile_doorbell *db;

	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, &init));
	db = agile_map_rw(self->fd, init.doorbell_offset, init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);
	ASSERT_EQ(0, agile_signal(self->fd, 1, 11));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(1, pin_range(self->pin_fd, db, init.doorbell_bytes,
			       AGILE_PIN_TEST_WRITE, 0xd00d));
	ASSERT_EQ(0xd00dU, agile_db_value(db, 0));
	ASSERT_EQ(11U, agile_db_value(db, 1));
	munmap(db, init.doorbell_bytes);
}

/* A range running past the end of the mapping is refused whole. */
TEST_F(pin, past_the_end)
{
	struct agile_ctx_init init;
	unsigned char *area, *db;
	__u64 bytes;
	int ret;

	ASSERT_EQ(0, agile_ctx_init(self->fd, 4, 64, &init));
	bytes = init.doorbell_bytes;
	/* Reserve one more page and keep it inaccessible. */
	area = mmap(NULL, bytes + self->page, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, area);
	db = mmap(area, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		  self->fd, (off_t)init.doorbell_offset);
	ASSERT_EQ(area, db);
	ret = pin_range(self->pin_fd, db, bytes + self->page,
			AGILE_PIN_TEST_WRITE, 0xee);
	ASSERT_GT(0, ret);
	/* Nothing was written: the pin failed before any marker. */
	ASSERT_EQ(0U, agile_db_value((struct agile_doorbell *)db, 0));
	munmap(area, bytes + self->page);
}

TEST_HARNESS_MAIN
