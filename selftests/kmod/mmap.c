// SPDX-License-Identifier: GPL-2.0-only
/*
 * /dev/agile mmap: exact offsets and lengths, MAP_SHARED only, no exec,
 * no growth, no copy into a fork child, zeroed pages, several mappings of
 * one area, mappings outliving the file, two contexts kept apart.
 */
#include "agile_test.h"

#define NR_SLOTS 40 /* doorbells: 5120 bytes, two pages */
#define TASK_REG_SIZE 256 /* task registers: 10240 bytes, three pages */

FIXTURE(ctx)
{
	int fd;
	long page;
	struct agile_ctx_init init;
};

FIXTURE_SETUP(ctx)
{
	self->page = sysconf(_SC_PAGESIZE);
	AGILE_OPEN(self->fd);
	ASSERT_EQ(0, agile_ctx_init(self->fd, NR_SLOTS, TASK_REG_SIZE,
				    &self->init));
	ASSERT_LT((__u64)self->page, self->init.doorbell_bytes);
	ASSERT_LT((__u64)self->page, self->init.task_reg_bytes);
}

FIXTURE_TEARDOWN(ctx)
{
	if (self->fd >= 0)
		close(self->fd);
}

static void unmap(void *p, __u64 bytes)
{
	munmap(p, (size_t)bytes);
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

TEST_F(ctx, map_both_areas)
{
	struct agile_doorbell *db;
	struct agile_task_reg *reg;

	db = agile_map_rw(self->fd, self->init.doorbell_offset,
			  self->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db) TH_LOG("mmap: %s", strerror(errno));
	reg = agile_map_rw(self->fd, self->init.task_reg_offset,
			   self->init.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, reg) TH_LOG("mmap: %s", strerror(errno));

	/* Both areas are writable to their last byte. */
	db[NR_SLOTS - 1].user[29] = 0x12345678;
	ASSERT_EQ(0x12345678U, db[NR_SLOTS - 1].user[29]);
	((unsigned char *)reg)[self->init.task_reg_bytes - 1] = 0x5a;
	ASSERT_EQ(0x5a, ((unsigned char *)reg)[self->init.task_reg_bytes - 1]);

	unmap(db, self->init.doorbell_bytes);
	unmap(reg, self->init.task_reg_bytes);
}

TEST_F(ctx, pages_zeroed)
{
	void *db, *reg;

	db = agile_map(self->fd, self->init.doorbell_offset,
		       self->init.doorbell_bytes, PROT_READ, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, db);
	reg = agile_map(self->fd, self->init.task_reg_offset,
			self->init.task_reg_bytes, PROT_READ, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, reg);
	ASSERT_TRUE(all_zero(db, self->init.doorbell_bytes));
	ASSERT_TRUE(all_zero(reg, self->init.task_reg_bytes));
	unmap(db, self->init.doorbell_bytes);
	unmap(reg, self->init.task_reg_bytes);
}

/* Largest registers, to cover many pages; a fresh context, zeroed. */
TEST(pages_zeroed_large)
{
	struct agile_ctx_init init;
	void *reg;
	int fd;

	AGILE_OPEN(fd);
	ASSERT_EQ(0, agile_ctx_init(fd, 64, AGILE_TASK_REG_MAX_SIZE, &init));
	ASSERT_EQ(64ULL * AGILE_TASK_REG_MAX_SIZE, init.task_reg_bytes);
	reg = agile_map_rw(fd, init.task_reg_offset, init.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, reg);
	ASSERT_TRUE(all_zero(reg, init.task_reg_bytes));
	unmap(reg, init.task_reg_bytes);
	close(fd);
}

TEST_F(ctx, bad_offset)
{
	const __u64 page = (__u64)self->page;
	const __u64 offsets[] = {
		page,
		2 * page,
		AGILE_MMAP_TASK_REGS - page,
		AGILE_MMAP_TASK_REGS + page,
		AGILE_MMAP_TASK_REGS * 2,
		1ULL << 40,
	};
	unsigned int i;
	void *p;

	for (i = 0; i < ARRAY_SIZE(offsets); i++) {
		p = agile_map_rw(self->fd, offsets[i], page);
		ASSERT_EQ(MAP_FAILED, p)
		{
			TH_LOG("offset %#llx", (unsigned long long)offsets[i]);
		}
		ASSERT_EQ(EINVAL, errno)
		{
			TH_LOG("offset %#llx", (unsigned long long)offsets[i]);
		}
	}
}

TEST_F(ctx, bad_length)
{
	const __u64 page = (__u64)self->page;
	const struct {
		__u64 offset, bytes;
	} cases[] = {
		{ self->init.doorbell_offset,
		  self->init.doorbell_bytes - page },
		{ self->init.doorbell_offset,
		  self->init.doorbell_bytes + page },
		{ self->init.doorbell_offset, page },
		{ self->init.task_reg_offset,
		  self->init.task_reg_bytes - page },
		{ self->init.task_reg_offset,
		  self->init.task_reg_bytes + page },
		{ self->init.task_reg_offset, 64 * page },
		/* The other area's length. */
		{ self->init.doorbell_offset, self->init.task_reg_bytes },
		{ self->init.task_reg_offset, self->init.doorbell_bytes },
	};
	unsigned int i;
	void *p;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		p = agile_map_rw(self->fd, cases[i].offset, cases[i].bytes);
		ASSERT_EQ(MAP_FAILED, p) TH_LOG("case %u", i);
		ASSERT_EQ(EINVAL, errno) TH_LOG("case %u", i);
	}
}

TEST_F(ctx, map_private)
{
	void *p;

	p = agile_map(self->fd, self->init.doorbell_offset,
		      self->init.doorbell_bytes, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EINVAL, errno);
	p = agile_map(self->fd, self->init.task_reg_offset,
		      self->init.task_reg_bytes, PROT_READ, MAP_PRIVATE);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EINVAL, errno);
}

TEST_F(ctx, prot_exec)
{
	void *p;

	p = agile_map(self->fd, self->init.doorbell_offset,
		      self->init.doorbell_bytes,
		      PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EPERM, errno);
	p = agile_map(self->fd, self->init.task_reg_offset,
		      self->init.task_reg_bytes, PROT_READ | PROT_EXEC,
		      MAP_SHARED);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EPERM, errno);
}

/* VM_MAYEXEC is cleared: exec cannot be added later either. */
TEST_F(ctx, mprotect_exec)
{
	struct agile_doorbell *db;

	db = agile_map_rw(self->fd, self->init.doorbell_offset,
			  self->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);
	ASSERT_EQ(-1, mprotect(db, self->init.doorbell_bytes,
			       PROT_READ | PROT_EXEC));
	ASSERT_EQ(EACCES, errno);
	/* Dropping and restoring write is fine. */
	ASSERT_EQ(0, mprotect(db, self->init.doorbell_bytes, PROT_READ));
	ASSERT_EQ(0, mprotect(db, self->init.doorbell_bytes,
			      PROT_READ | PROT_WRITE));
	db[0].value = 3;
	ASSERT_EQ(0, agile_wait(self->fd, 0, AGILE_CMP_EQ, 3, 0, NULL));
	unmap(db, self->init.doorbell_bytes);
}

/* VM_DONTEXPAND: mremap cannot grow a mapping, in place or moved. */
TEST_F(ctx, mremap_grow)
{
	__u64 bytes = self->init.doorbell_bytes;
	struct agile_doorbell *db;
	void *p;

	db = agile_map_rw(self->fd, self->init.doorbell_offset, bytes);
	ASSERT_NE(MAP_FAILED, db);
	p = mremap(db, bytes, bytes + self->page, 0);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EFAULT, errno);
	p = mremap(db, bytes, bytes + self->page, MREMAP_MAYMOVE);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EFAULT, errno);
	p = mremap(db, bytes, 4 * bytes, MREMAP_MAYMOVE);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EFAULT, errno);
	/* The original mapping is untouched. */
	db[1].value = 9;
	ASSERT_EQ(0, agile_wait(self->fd, 1, AGILE_CMP_EQ, 9, 0, NULL));
	unmap(db, bytes);
}

/* A same-size move keeps the pages. */
TEST_F(ctx, mremap_move)
{
	__u64 bytes = self->init.task_reg_bytes;
	unsigned char *reg, *moved;

	reg = agile_map_rw(self->fd, self->init.task_reg_offset, bytes);
	ASSERT_NE(MAP_FAILED, reg);
	reg[100] = 0x77;
	moved = mremap(reg, bytes, bytes, MREMAP_MAYMOVE);
	ASSERT_NE(MAP_FAILED, moved);
	ASSERT_EQ(0x77, moved[100]);
	unmap(moved, bytes);
}

TEST_F(ctx, several_mappings_see_each_other)
{
	struct agile_doorbell *db1, *db2;
	unsigned char *reg1, *reg2;
	__u32 slot;

	db1 = agile_map_rw(self->fd, self->init.doorbell_offset,
			   self->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db1);
	db2 = agile_map_rw(self->fd, self->init.doorbell_offset,
			   self->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db2);
	ASSERT_NE(db1, db2);
	reg1 = agile_map_rw(self->fd, self->init.task_reg_offset,
			    self->init.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, reg1);
	reg2 = agile_map_rw(self->fd, self->init.task_reg_offset,
			    self->init.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, reg2);

	for (slot = 0; slot < NR_SLOTS; slot++) {
		agile_db_store(db1, slot, slot + 1000);
		db2[slot].user[0] = slot;
		reg1[slot * TASK_REG_SIZE + 8] = (unsigned char)slot;
	}
	for (slot = 0; slot < NR_SLOTS; slot++) {
		ASSERT_EQ(slot + 1000, agile_db_value(db2, slot));
		ASSERT_EQ(slot, db1[slot].user[0]);
		ASSERT_EQ((unsigned char)slot, reg2[slot * TASK_REG_SIZE + 8]);
	}
	/* A SIGNAL lands in every mapping. */
	ASSERT_EQ(0, agile_signal(self->fd, NR_SLOTS - 1, 0xabcdef));
	ASSERT_EQ(0xabcdefU, agile_db_value(db1, NR_SLOTS - 1));
	ASSERT_EQ(0xabcdefU, agile_db_value(db2, NR_SLOTS - 1));

	unmap(db1, self->init.doorbell_bytes);
	/* The second mapping survives the first one's munmap. */
	ASSERT_EQ(1000U, agile_db_value(db2, 0));
	unmap(db2, self->init.doorbell_bytes);
	unmap(reg1, self->init.task_reg_bytes);
	unmap(reg2, self->init.task_reg_bytes);
}

/* The two areas are different pages: a write to one leaves the other. */
TEST_F(ctx, areas_distinct)
{
	unsigned char *db, *reg;
	__u64 i;

	db = agile_map_rw(self->fd, self->init.doorbell_offset,
			  self->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);
	reg = agile_map_rw(self->fd, self->init.task_reg_offset,
			   self->init.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, reg);
	memset(reg, 0xff, self->init.task_reg_bytes);
	ASSERT_TRUE(all_zero(db, self->init.doorbell_bytes));
	memset(reg, 0, self->init.task_reg_bytes);
	memset(db, 0xee, self->init.doorbell_bytes);
	for (i = 0; i < self->init.task_reg_bytes; i++)
		ASSERT_EQ(0, reg[i]);
	unmap(db, self->init.doorbell_bytes);
	unmap(reg, self->init.task_reg_bytes);
}

/* close() while mapped: the mapping keeps its pages and contents. */
TEST_F(ctx, close_while_mapped)
{
	struct agile_doorbell *db;
	unsigned char *reg;
	__u32 slot;

	db = agile_map_rw(self->fd, self->init.doorbell_offset,
			  self->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);
	reg = agile_map_rw(self->fd, self->init.task_reg_offset,
			   self->init.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, reg);
	ASSERT_EQ(0, agile_signal(self->fd, 7, 77));
	reg[self->init.task_reg_bytes - 1] = 0x42;

	ASSERT_EQ(0, close(self->fd));
	self->fd = -1;

	ASSERT_EQ(77U, agile_db_value(db, 7));
	ASSERT_EQ(0x42, reg[self->init.task_reg_bytes - 1]);
	for (slot = 0; slot < NR_SLOTS; slot++)
		agile_db_store(db, slot, slot * 3);
	memset(reg, 0x11, self->init.task_reg_bytes);
	for (slot = 0; slot < NR_SLOTS; slot++)
		ASSERT_EQ(slot * 3, agile_db_value(db, slot));
	ASSERT_EQ(0x11, reg[0]);
	unmap(db, self->init.doorbell_bytes);
	unmap(reg, self->init.task_reg_bytes);
}

/* A new file gets new, zeroed pages, never an old context's. */
TEST_F(ctx, new_file_new_pages)
{
	struct agile_ctx_init init2;
	struct agile_doorbell *db, *db2;
	int fd2;

	db = agile_map_rw(self->fd, self->init.doorbell_offset,
			  self->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);
	ASSERT_EQ(0, agile_signal(self->fd, 0, 5));
	close(self->fd);
	self->fd = -1;

	AGILE_OPEN(fd2);
	ASSERT_EQ(0, agile_ctx_init(fd2, NR_SLOTS, TASK_REG_SIZE, &init2));
	db2 = agile_map_rw(fd2, init2.doorbell_offset, init2.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db2);
	ASSERT_TRUE(all_zero(db2, init2.doorbell_bytes));
	ASSERT_EQ(0, agile_signal(fd2, 0, 6));
	ASSERT_EQ(5U, agile_db_value(db, 0));
	ASSERT_EQ(6U, agile_db_value(db2, 0));
	unmap(db, self->init.doorbell_bytes);
	unmap(db2, init2.doorbell_bytes);
	close(fd2);
}

struct touch_arg {
	volatile __u32 *word;
};

static int touch_child(void *p)
{
	struct touch_arg *arg = p;

	*arg->word = 1;
	return 0;
}

static int read_child(void *p)
{
	struct touch_arg *arg = p;

	return *arg->word == 0x5eed ? 0 : 1;
}

/* VM_DONTCOPY: the child of fork() has no mapping there at all. */
TEST_F(ctx, fork_child_sigsegv)
{
	struct agile_doorbell *db;
	struct touch_arg arg;
	unsigned char *reg;
	int status;

	db = agile_map_rw(self->fd, self->init.doorbell_offset,
			  self->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);
	reg = agile_map_rw(self->fd, self->init.task_reg_offset,
			   self->init.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, reg);
	agile_db_store(db, 0, 0x5eed);

	arg.word = &db[0].value;
	status = agile_run_child(read_child, &arg);
	ASSERT_TRUE(WIFSIGNALED(status)) TH_LOG("status %#x", status);
	ASSERT_EQ(SIGSEGV, WTERMSIG(status));

	arg.word = (volatile __u32 *)(reg + TASK_REG_SIZE);
	status = agile_run_child(touch_child, &arg);
	ASSERT_TRUE(WIFSIGNALED(status)) TH_LOG("status %#x", status);
	ASSERT_EQ(SIGSEGV, WTERMSIG(status));

	/* The parent's mappings are intact. */
	ASSERT_EQ(0x5eedU, agile_db_value(db, 0));
	reg[TASK_REG_SIZE] = 1;
	unmap(db, self->init.doorbell_bytes);
	unmap(reg, self->init.task_reg_bytes);
}

static int child_uses_fd(void *p)
{
	int fd = *(int *)p;

	/* The file (and its context) is shared across fork. */
	return agile_signal(fd, 2, 0xc0de) ? 1 : 0;
}

/* The child can still use the inherited file and map it anew. */
TEST_F(ctx, fork_child_uses_file)
{
	struct agile_doorbell *db;
	int status;

	db = agile_map_rw(self->fd, self->init.doorbell_offset,
			  self->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);
	status = agile_run_child(child_uses_fd, &self->fd);
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("status %#x", status);
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0xc0deU, agile_db_value(db, 2));
	unmap(db, self->init.doorbell_bytes);
}

struct zap_arg {
	int fd;
	__u64 offset, bytes;
	long page;
};

static int zap_child(void *p)
{
	struct zap_arg *arg = p;
	struct agile_doorbell *db;

	/* fork() did not copy the parent's mapping: map for ourselves. */
	db = agile_map_rw(arg->fd, arg->offset, arg->bytes);
	if (db == MAP_FAILED)
		return 2;
	if (agile_db_value(db, 0) != 0x5eed)
		return 3;
	if (madvise(db, (size_t)arg->page, MADV_DONTNEED))
		return 4;
	/*
	 * The pages were inserted at mmap time, never faulted in: once
	 * zapped, the .fault handler answers SIGBUS.
	 */
	return agile_db_value(db, 0) == 0x5eed ? 0 : 1;
}

TEST_F(ctx, fault_after_zap_sigbus)
{
	struct zap_arg arg = {
		.fd = self->fd,
		.offset = self->init.doorbell_offset,
		.bytes = self->init.doorbell_bytes,
		.page = self->page,
	};
	struct agile_doorbell *db;
	int status;

	db = agile_map_rw(self->fd, self->init.doorbell_offset,
			  self->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);
	agile_db_store(db, 0, 0x5eed);

	/* In a child, so the zap never reaches this process's mapping. */
	status = agile_run_child(zap_child, &arg);
	ASSERT_TRUE(WIFSIGNALED(status)) TH_LOG("status %#x", status);
	ASSERT_EQ(SIGBUS, WTERMSIG(status));

	/* The page itself is still the context's. */
	ASSERT_EQ(0x5eedU, agile_db_value(db, 0));
	unmap(db, self->init.doorbell_bytes);
}

/* Unmapping part of a mapping leaves the rest working. */
TEST_F(ctx, partial_munmap)
{
	unsigned char *reg;
	__u64 bytes = self->init.task_reg_bytes;

	reg = agile_map_rw(self->fd, self->init.task_reg_offset, bytes);
	ASSERT_NE(MAP_FAILED, reg);
	memset(reg, 0x33, bytes);
	ASSERT_EQ(0, munmap(reg, (size_t)self->page));
	ASSERT_EQ(0x33, reg[self->page]);
	reg[bytes - 1] = 0x44;
	ASSERT_EQ(0, munmap(reg + bytes - self->page, (size_t)self->page));
	ASSERT_EQ(0x33, reg[self->page + 1]);
	ASSERT_EQ(0, munmap(reg + self->page,
			    (size_t)(bytes - 2 * (__u64)self->page)));
}

/*
 * The VMA's flags as /proc/self/smaps reports them (two-letter codes of
 * fs/proc/task_mmu.c) for the mapping that starts at @addr; "" if absent.
 */
static void vma_flags(void *addr, char *flags, size_t len)
{
	char line[512], want[32];
	bool in_vma = false;
	FILE *f;

	flags[0] = '\0';
	snprintf(want, sizeof(want), "%lx-", (unsigned long)addr);
	f = fopen("/proc/self/smaps", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, want, strlen(want))) {
			in_vma = true;
		} else if (in_vma && !strncmp(line, "VmFlags:", 8)) {
			snprintf(flags, len, "%.*s", (int)len - 1, line + 8);
			break;
		}
	}
	fclose(f);
}

static bool has_flag(const char *flags, const char *code)
{
	char padded[8];

	snprintf(padded, sizeof(padded), " %s ", code);
	return strstr(flags, padded);
}

/*
 * Shared, no exec now or later, no growth, not copied by fork, not
 * dumped, and ordinary pages: neither VM_PFNMAP nor VM_IO, which would
 * make FOLL_LONGTERM pins fail.
 */
TEST_F(ctx, vm_flags)
{
	static const char *const set[] = { "sh", "dc", "de", "dd" };
	static const char *const clear[] = { "ex", "me", "pf", "io" };
	char flags[256];
	const char *code;
	unsigned int i, k;
	void *area[2];

	area[0] = agile_map_rw(self->fd, self->init.doorbell_offset,
			       self->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, area[0]);
	area[1] = agile_map_rw(self->fd, self->init.task_reg_offset,
			       self->init.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, area[1]);
	for (i = 0; i < 2; i++) {
		vma_flags(area[i], flags, sizeof(flags));
		ASSERT_NE(0, flags[0]) TH_LOG("no VmFlags in smaps");
		/* Blanks around every code, for has_flag(). */
		flags[strcspn(flags, "\n")] = ' ';
		for (k = 0; k < ARRAY_SIZE(set); k++) {
			code = set[k];
			ASSERT_TRUE(has_flag(flags, code))
			{
				TH_LOG("%s missing in%s", code, flags);
			}
		}
		for (k = 0; k < ARRAY_SIZE(clear); k++) {
			code = clear[k];
			ASSERT_FALSE(has_flag(flags, code))
			{
				TH_LOG("%s set in%s", code, flags);
			}
		}
	}
	munmap(area[0], self->init.doorbell_bytes);
	munmap(area[1], self->init.task_reg_bytes);
}

/* Two contexts never see each other's doorbells or registers. */
TEST(two_contexts_isolated)
{
	struct agile_ctx_init ia, ib;
	struct agile_doorbell *dba, *dbb;
	unsigned char *rega, *regb;
	__u32 observed;
	int fda, fdb;

	AGILE_OPEN(fda);
	AGILE_OPEN(fdb);
	ASSERT_EQ(0, agile_ctx_init(fda, 4, 64, &ia));
	ASSERT_EQ(0, agile_ctx_init(fdb, 4, 64, &ib));
	dba = agile_map_rw(fda, ia.doorbell_offset, ia.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, dba);
	dbb = agile_map_rw(fdb, ib.doorbell_offset, ib.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, dbb);
	rega = agile_map_rw(fda, ia.task_reg_offset, ia.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, rega);
	regb = agile_map_rw(fdb, ib.task_reg_offset, ib.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, regb);

	ASSERT_EQ(0, agile_signal(fda, 1, 11));
	agile_db_store(dba, 2, 22);
	rega[0] = 0x99;
	ASSERT_EQ(11U, agile_db_value(dba, 1));
	ASSERT_EQ(0U, agile_db_value(dbb, 1));
	ASSERT_EQ(0U, agile_db_value(dbb, 2));
	ASSERT_EQ(0, regb[0]);
	/* B's waits read B's doorbells. */
	ASSERT_EQ(-ETIMEDOUT,
		  agile_wait(fdb, 1, AGILE_CMP_EQ, 11, 0, &observed));
	ASSERT_EQ(0U, observed);
	ASSERT_EQ(-ETIMEDOUT, agile_wait(fdb, 2, AGILE_CMP_EQ, 22,
					 50 * NSEC_PER_MSEC, &observed));
	ASSERT_EQ(0, agile_wait(fda, 2, AGILE_CMP_EQ, 22, 0, &observed));
	ASSERT_EQ(22U, observed);

	munmap(dba, ia.doorbell_bytes);
	munmap(dbb, ib.doorbell_bytes);
	munmap(rega, ia.task_reg_bytes);
	munmap(regb, ib.task_reg_bytes);
	close(fda);
	close(fdb);
}

TEST_HARNESS_MAIN
