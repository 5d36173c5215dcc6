// SPDX-License-Identifier: GPL-2.0-only
/*
 * sysfs under /sys/class/misc/agile/: every file readable, modes, range
 * checks on the rw files, writers without CAP_SYS_ADMIN refused, ro files
 * refuse writes, counters move, and changed settings take effect safely.
 * Every test that changes a setting restores it in the fixture teardown.
 */
#include "agile_test.h"

#include <grp.h>
#include <linux/capability.h>
#include <sys/syscall.h>

#define NOBODY 65534

static const char *const rw_files[] = {
	"poll_interval_us",	 "spin_ns",	    "max_slots",
	"max_contexts_per_user", "poll_max_checks", "poll_cpu_permille",
};

static const char *const ro_files[] = {
	"contexts",	  "signals",	  "waits",
	"wakeups_signal", "wakeups_poll", "timeouts",
	"groups",	  "pages",	  "max_segments_per_context",
	"poll_ticks",	  "poll_checks",  "poll_ns",
	"poll_contexts",  "poll_users",	  "poll_budget",
	"poll_stretched",
};

/* Module-wide counters, in ro_files[] order after "contexts". */
struct counters {
	unsigned long long signals, waits, wakeups_signal, wakeups_poll,
		timeouts;
};

static int read_counters(struct counters *c)
{
	return agile_sysfs_read("signals", &c->signals)			      ?:
		       agile_sysfs_read("waits", &c->waits)		      ?:
		       agile_sysfs_read("wakeups_signal", &c->wakeups_signal) ?:
		       agile_sysfs_read("wakeups_poll", &c->wakeups_poll)     ?:
		       agile_sysfs_read("timeouts", &c->timeouts);
}

FIXTURE(sysfs)
{
	bool saved;
	unsigned long long saved_values[ARRAY_SIZE(rw_files)];
};

FIXTURE_SETUP(sysfs)
{
	unsigned int i;

	if (access(AGILE_SYSFS_DIR, F_OK))
		SKIP(_exit(AGILE_SKIP_EXIT), "%s missing", AGILE_SYSFS_DIR);
	for (i = 0; i < ARRAY_SIZE(rw_files); i++)
		ASSERT_EQ(0, agile_sysfs_read(rw_files[i],
					      &self->saved_values[i]));
	self->saved = true;
}

FIXTURE_TEARDOWN(sysfs)
{
	unsigned long long now;
	unsigned int i;

	if (!self->saved)
		return;
	for (i = 0; i < ARRAY_SIZE(rw_files); i++) {
		if (!agile_sysfs_read(rw_files[i], &now) &&
		    now == self->saved_values[i])
			continue;
		EXPECT_EQ(0, agile_sysfs_write_u64(rw_files[i],
						   self->saved_values[i]))
		{
			TH_LOG("could not restore %s", rw_files[i]);
		}
	}
}

#define REQUIRE_ROOT()                              \
	do {                                        \
		if (geteuid())                      \
			SKIP(return, "needs root"); \
	} while (0)

TEST_F(sysfs, read_every_file)
{
	unsigned long long val;
	const char *name;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(rw_files) + ARRAY_SIZE(ro_files); i++) {
		name = i < ARRAY_SIZE(rw_files) ?
			       rw_files[i] :
			       ro_files[i - ARRAY_SIZE(rw_files)];
		ASSERT_EQ(0, agile_sysfs_read(name, &val)) TH_LOG("%s", name);
	}
}

TEST_F(sysfs, modes)
{
	char path[256];
	struct stat st;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(rw_files); i++) {
		agile_sysfs_path(path, sizeof(path), rw_files[i]);
		ASSERT_EQ(0, stat(path, &st));
		ASSERT_EQ(0644U, st.st_mode & 07777) TH_LOG("%s", path);
		ASSERT_EQ(0U, st.st_uid);
	}
	for (i = 0; i < ARRAY_SIZE(ro_files); i++) {
		agile_sysfs_path(path, sizeof(path), ro_files[i]);
		ASSERT_EQ(0, stat(path, &st));
		ASSERT_EQ(0444U, st.st_mode & 07777) TH_LOG("%s", path);
	}
}

/* The rw files and INFO agree. */
TEST_F(sysfs, info_agrees)
{
	unsigned long long poll = 0, spin = 0, slots = 0;
	struct agile_info info;
	int fd;

	AGILE_OPEN(fd);
	ASSERT_EQ(0, agile_info(fd, &info));
	close(fd);
	ASSERT_EQ(0, agile_sysfs_read("poll_interval_us", &poll));
	ASSERT_EQ(0, agile_sysfs_read("spin_ns", &spin));
	ASSERT_EQ(0, agile_sysfs_read("max_slots", &slots));
	ASSERT_EQ(poll, info.poll_interval_us);
	ASSERT_EQ(spin, info.spin_ns);
	ASSERT_EQ(slots, info.max_slots);
}

/* Range checks, one variant per rw file. */
FIXTURE(range)
{
	bool saved;
	unsigned long long saved_value;
};

FIXTURE_VARIANT(range)
{
	const char *name;
	unsigned long long min, max;
};

FIXTURE_VARIANT_ADD(range, poll_interval_us)
{
	.name = "poll_interval_us",
	.min = 10,
	.max = 1000000,
};

FIXTURE_VARIANT_ADD(range, spin_ns)
{
	.name = "spin_ns",
	.min = 0,
	.max = 10000000,
};

FIXTURE_VARIANT_ADD(range, max_slots)
{
	.name = "max_slots",
	.min = 1,
	.max = 65536,
};

FIXTURE_VARIANT_ADD(range, max_contexts_per_user)
{
	.name = "max_contexts_per_user",
	.min = 1,
	.max = 1 << 20,
};

FIXTURE_VARIANT_ADD(range, poll_max_checks)
{
	.name = "poll_max_checks",
	.min = AGILE_WAIT_ANY_MAX,
	.max = 65536,
};

FIXTURE_VARIANT_ADD(range, poll_cpu_permille)
{
	.name = "poll_cpu_permille",
	.min = 1,
	.max = 1000,
};

FIXTURE_SETUP(range)
{
	if (access(AGILE_SYSFS_DIR, F_OK))
		SKIP(_exit(AGILE_SKIP_EXIT), "%s missing", AGILE_SYSFS_DIR);
	ASSERT_EQ(0, agile_sysfs_read(variant->name, &self->saved_value));
	self->saved = true;
}

FIXTURE_TEARDOWN(range)
{
	unsigned long long now;

	if (self->saved &&
	    (agile_sysfs_read(variant->name, &now) || now != self->saved_value))
		EXPECT_EQ(0, agile_sysfs_write_u64(variant->name,
						   self->saved_value));
}

/* The INFO field of tunable @name; false if INFO has none. */
static bool info_field(int fd, const char *name, __u32 *value)
{
	struct agile_info info;

	*value = 0xdeadbeef;
	if (!strcmp(name, "poll_max_checks") ||
	    !strcmp(name, "poll_cpu_permille"))
		return false;
	if (agile_info(fd, &info))
		return true;
	if (!strcmp(name, "poll_interval_us"))
		*value = info.poll_interval_us;
	else if (!strcmp(name, "spin_ns"))
		*value = info.spin_ns;
	else
		*value = info.max_slots;
	return true;
}

static void check_value(struct __test_metadata *_metadata, const char *name,
			unsigned long long want)
{
	unsigned long long val = 0;
	__u32 info_value;
	int fd;

	ASSERT_EQ(0, agile_sysfs_read(name, &val));
	ASSERT_EQ(want, val) TH_LOG("%s", name);
	/* INFO reports the others. */
	if (!strcmp(name, "max_contexts_per_user"))
		return;
	AGILE_OPEN(fd);
	if (info_field(fd, name, &info_value))
		ASSERT_EQ(want, (unsigned long long)info_value)
		{
			TH_LOG("INFO disagrees with %s", name);
		}
	close(fd);
}

TEST_F(range, limits)
{
	const char *name = variant->name;
	char buf[64];

	REQUIRE_ROOT();
	ASSERT_EQ(0, agile_sysfs_write_u64(name, variant->min));
	check_value(_metadata, name, variant->min);
	ASSERT_EQ(0, agile_sysfs_write_u64(name, variant->max));
	check_value(_metadata, name, variant->max);

	/* Just outside: refused, the value stays. */
	ASSERT_EQ(-EINVAL, agile_sysfs_write_u64(name, variant->max + 1));
	check_value(_metadata, name, variant->max);
	if (variant->min > 0) {
		ASSERT_EQ(-EINVAL,
			  agile_sysfs_write_u64(name, variant->min - 1));
		check_value(_metadata, name, variant->max);
	}

	/* Without a newline, and a mid-range value. */
	snprintf(buf, sizeof(buf), "%llu", (variant->min + variant->max) / 2);
	ASSERT_EQ(0, agile_sysfs_write(name, buf));
	check_value(_metadata, name, (variant->min + variant->max) / 2);
}

TEST_F(range, unparsable)
{
	static const char *const bad[] = {
		"abc\n",
		"\n",
		"-1\n",
		"-0x10\n",
		"12abc\n",
		"1.5\n",
		"99999999999999999999\n",
		"4294967296\n",
		"18446744073709551616\n",
		"10 20\n",
	};
	unsigned long long before = 0;
	const char *str;
	unsigned int i;

	REQUIRE_ROOT();
	ASSERT_EQ(0, agile_sysfs_read(variant->name, &before));
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		str = bad[i];
		ASSERT_EQ(-EINVAL, agile_sysfs_write(variant->name, str))
		{
			TH_LOG("%s <- %s", variant->name, str);
		}
	}
	check_value(_metadata, variant->name, before);
}

/* Writing the current value back is accepted and changes nothing. */
TEST_F(range, rewrite_same)
{
	unsigned long long before = 0;

	REQUIRE_ROOT();
	ASSERT_EQ(0, agile_sysfs_read(variant->name, &before));
	ASSERT_EQ(0, agile_sysfs_write_u64(variant->name, before));
	check_value(_metadata, variant->name, before);
}

static int drop_to_nobody(void)
{
	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		return -errno;
	return 0;
}

/* In a child running as nobody: open(O_WRONLY) of every file fails. */
static int nobody_opens(void *arg)
{
	char path[256];
	unsigned int i;
	int fd;

	if (drop_to_nobody())
		return 200;
	for (i = 0; i < ARRAY_SIZE(rw_files) + ARRAY_SIZE(ro_files); i++) {
		agile_sysfs_path(path, sizeof(path),
				 i < ARRAY_SIZE(rw_files) ?
					 rw_files[i] :
					 ro_files[i - ARRAY_SIZE(rw_files)]);
		fd = open(path, O_WRONLY);
		if (fd >= 0)
			return 100 + i;
		if (errno != EACCES)
			return errno;
		/* Reading stays allowed. */
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return 150 + i;
		close(fd);
	}
	return 0;
}

TEST_F(sysfs, nonroot_open_refused)
{
	int status;

	REQUIRE_ROOT();
	status = agile_run_child(nobody_opens, NULL);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
}

/*
 * A writer that holds a file opened by root but lacks CAP_SYS_ADMIN is
 * refused by the module itself with EPERM.
 */
struct write_arg {
	int fds[ARRAY_SIZE(rw_files)];
	bool keep_root;
};

static int drop_cap_sys_admin(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &=
		~CAP_TO_MASK(CAP_SYS_ADMIN);
	data[CAP_TO_INDEX(CAP_SYS_ADMIN)].permitted &=
		~CAP_TO_MASK(CAP_SYS_ADMIN);
	data[CAP_TO_INDEX(CAP_SYS_ADMIN)].inheritable &=
		~CAP_TO_MASK(CAP_SYS_ADMIN);
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	return 0;
}

static int unprivileged_writes(void *p)
{
	struct write_arg *arg = p;
	unsigned int i;
	int ret;

	if (arg->keep_root ? drop_cap_sys_admin() : drop_to_nobody())
		return 200;
	for (i = 0; i < ARRAY_SIZE(rw_files); i++) {
		/* In range for every file. */
		ret = agile_sysfs_write_fd(arg->fds[i], "100\n");
		if (ret != -EPERM)
			return ret ? (-ret & 0x7f) : 100 + i;
	}
	if (arg->keep_root) {
		/* Root's DAC lets it open; the module still refuses. */
		ret = agile_sysfs_write("spin_ns", "100\n");
		if (ret != -EPERM)
			return ret ? (-ret & 0x7f) : 110;
	}
	return 0;
}

static void check_unprivileged_writes(struct __test_metadata *_metadata,
				      FIXTURE_DATA(sysfs) * self,
				      bool keep_root)
{
	struct write_arg arg = { .keep_root = keep_root };
	unsigned long long val = 0;
	char path[256];
	unsigned int i;
	int status;

	for (i = 0; i < ARRAY_SIZE(rw_files); i++) {
		agile_sysfs_path(path, sizeof(path), rw_files[i]);
		arg.fds[i] = open(path, O_WRONLY | O_CLOEXEC);
		ASSERT_LE(0, arg.fds[i]);
	}
	status = agile_run_child(unprivileged_writes, &arg);
	for (i = 0; i < ARRAY_SIZE(rw_files); i++)
		close(arg.fds[i]);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status))
	{
		TH_LOG("exit %d: an errno, or 100 + file written, 200 setup",
		       WEXITSTATUS(status));
	}
	for (i = 0; i < ARRAY_SIZE(rw_files); i++) {
		ASSERT_EQ(0, agile_sysfs_read(rw_files[i], &val));
		ASSERT_EQ(self->saved_values[i], val) TH_LOG("%s", rw_files[i]);
	}
}

TEST_F(sysfs, nonroot_writer_eperm)
{
	REQUIRE_ROOT();
	check_unprivileged_writes(_metadata, self, false);
}

TEST_F(sysfs, no_cap_sys_admin_eperm)
{
	REQUIRE_ROOT();
	check_unprivileged_writes(_metadata, self, true);
}

/* The read-only files refuse writers, root included. */
TEST_F(sysfs, ro_files_refuse_writes)
{
	unsigned long long before = 0, after = 0;
	char path[256];
	unsigned int i;
	int fd;

	REQUIRE_ROOT();
	for (i = 0; i < ARRAY_SIZE(ro_files); i++) {
		agile_sysfs_path(path, sizeof(path), ro_files[i]);
		ASSERT_EQ(0, agile_sysfs_read(ro_files[i], &before));
		fd = open(path, O_WRONLY);
		if (fd >= 0) {
			EXPECT_NE(0, agile_sysfs_write_fd(fd, "0\n"))
			{
				TH_LOG("%s accepted a write", path);
			}
			close(fd);
		} else {
			ASSERT_EQ(EACCES, errno) TH_LOG("%s", path);
		}
		ASSERT_EQ(0, agile_sysfs_read(ro_files[i], &after));
		/*
		 * Counters never go down; the poller may drop a context a
		 * test before left on its list in between.
		 */
		if (strcmp(ro_files[i], "poll_contexts"))
			ASSERT_LE(before, after) TH_LOG("%s", path);
	}
}

/* The module-wide counters move with every context's operations. */
TEST_F(sysfs, counters_move)
{
	struct counters before, after;
	struct agile_ctx_init init;
	struct agile_fence_thread ft;
	struct agile_doorbell *db;
	int fd;

	AGILE_OPEN(fd);
	ASSERT_EQ(0, agile_ctx_init(fd, 4, 64, &init));
	db = agile_map_rw(fd, init.doorbell_offset, init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);
	ASSERT_EQ(0, read_counters(&before));

	ASSERT_EQ(0, agile_signal(fd, 0, 1));
	ASSERT_EQ(0, agile_wait(fd, 0, AGILE_CMP_EQ, 1, 0, NULL));
	ASSERT_EQ(-ETIMEDOUT, agile_wait(fd, 1, AGILE_CMP_EQ, 1, 0, NULL));
	/* A sleep ended by SIGNAL (or, racing it, by the poller). */
	ASSERT_EQ(0, agile_fence_thread_start(&ft, fd, 2, AGILE_CMP_EQ, 1,
					      AGILE_TIMEOUT_INFINITE));
	ASSERT_EQ(0,
		  agile_wait_asleep(&ft.probe, db, 2, 1, AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, agile_signal(fd, 2, 1));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);
	/* A sleep only the poller can end. */
	ASSERT_EQ(0, agile_fence_thread_start(&ft, fd, 3, AGILE_CMP_EQ, 1,
					      20 * NSEC_PER_SEC));
	ASSERT_EQ(0,
		  agile_wait_asleep(&ft.probe, db, 3, 1, AGILE_TEST_WAIT_MS));
	agile_db_store(db, 3, 1);
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);

	ASSERT_EQ(0, read_counters(&after));
	ASSERT_LE(before.signals + 2, after.signals);
	ASSERT_LE(before.waits + 4, after.waits);
	ASSERT_LE(before.timeouts + 1, after.timeouts);
	ASSERT_LE(before.wakeups_poll + 1, after.wakeups_poll);
	ASSERT_LE(before.wakeups_signal + before.wakeups_poll + 2,
		  after.wakeups_signal + after.wakeups_poll);
	munmap(db, init.doorbell_bytes);
	close(fd);
}

/* "contexts" counts the contexts alive now. */
TEST_F(sysfs, contexts_count)
{
	unsigned long long base = 0, val = 0;
	int fd1, fd2;

	ASSERT_EQ(0, agile_sysfs_read("contexts", &base));
	AGILE_OPEN(fd1);
	AGILE_OPEN(fd2);
	ASSERT_EQ(0, agile_ctx_init(fd1, 4, 64, NULL));
	ASSERT_EQ(0, agile_ctx_init(fd2, 4, 64, NULL));
	ASSERT_EQ(0, agile_sysfs_read("contexts", &val));
	ASSERT_EQ(base + 2, val);
	close(fd1);
	ASSERT_EQ(0, agile_sysfs_read("contexts", &val));
	ASSERT_EQ(base + 1, val);
	close(fd2);
	ASSERT_EQ(0, agile_sysfs_read("contexts", &val));
	ASSERT_EQ(base, val);
}

/*
 * poll_interval_us may change at any time, even while a waiter sleeps:
 * SIGNAL wakes stay immediate and plain stores are still seen.
 */
TEST_F(sysfs, poll_interval_change)
{
	struct agile_ctx_init init;
	struct agile_fence_thread ft;
	struct agile_doorbell *db;
	struct agile_stats st;
	int fd;

	REQUIRE_ROOT();
	AGILE_OPEN(fd);
	ASSERT_EQ(0, agile_ctx_init(fd, 4, 64, &init));
	db = agile_map_rw(fd, init.doorbell_offset, init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);

	/* Slowest poller: the SIGNAL, not the poller, ends the sleep. */
	ASSERT_EQ(0, agile_sysfs_write("poll_interval_us", "1000000\n"));
	ASSERT_EQ(0, agile_fence_thread_start(&ft, fd, 0, AGILE_CMP_EQ, 1,
					      AGILE_TIMEOUT_INFINITE));
	ASSERT_EQ(0,
		  agile_wait_asleep(&ft.probe, db, 0, 1, AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, agile_signal(fd, 0, 1));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);

	/* Asleep under the slow poller, sped up, then a plain store. */
	ASSERT_EQ(0, agile_fence_thread_start(&ft, fd, 1, AGILE_CMP_EQ, 1,
					      30 * NSEC_PER_SEC));
	ASSERT_EQ(0,
		  agile_wait_asleep(&ft.probe, db, 1, 1, AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, agile_sysfs_write("poll_interval_us", "10\n"));
	agile_db_store(db, 1, 1);
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);

	/* Fastest poller: timeouts still end waits, nothing else does. */
	ASSERT_EQ(-ETIMEDOUT, agile_wait(fd, 2, AGILE_CMP_EQ, 1,
					 100 * NSEC_PER_MSEC, NULL));

	/* Slowed down while asleep: a plain store is seen within ~1 s. */
	ASSERT_EQ(0, agile_fence_thread_start(&ft, fd, 3, AGILE_CMP_EQ, 1,
					      30 * NSEC_PER_SEC));
	ASSERT_EQ(0,
		  agile_wait_asleep(&ft.probe, db, 3, 1, AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, agile_sysfs_write("poll_interval_us", "1000000\n"));
	agile_db_store(db, 3, 1);
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);
	ASSERT_GT(20 * NSEC_PER_SEC, ft.elapsed_ns);

	ASSERT_EQ(0, agile_stats(fd, &st));
	ASSERT_EQ(2ULL, st.wakeups_poll);
	ASSERT_EQ(1ULL, st.wakeups_signal);
	ASSERT_EQ(1ULL, st.timeouts);
	munmap(db, init.doorbell_bytes);
	close(fd);
}

/* max_slots bounds new contexts only. */
TEST_F(sysfs, max_slots_change)
{
	struct agile_info info;
	int old_fd, fd;

	REQUIRE_ROOT();
	AGILE_OPEN(old_fd);
	ASSERT_EQ(0, agile_ctx_init(old_fd, 16, 64, NULL));
	ASSERT_EQ(0, agile_sysfs_write("max_slots", "8\n"));

	AGILE_OPEN(fd);
	ASSERT_EQ(0, agile_info(fd, &info));
	ASSERT_EQ(8U, info.max_slots);
	ASSERT_EQ(-ENOSPC, agile_ctx_init(fd, 9, 64, NULL));
	ASSERT_EQ(0, agile_ctx_init(fd, 8, 64, NULL));
	ASSERT_EQ(0, agile_signal(fd, 7, 1));
	/* The older, larger context keeps all its slots. */
	ASSERT_EQ(0, agile_signal(old_fd, 15, 1));
	ASSERT_EQ(0, agile_wait(old_fd, 15, AGILE_CMP_EQ, 1, 0, NULL));
	close(fd);
	close(old_fd);
}

/* spin_ns at both ends of its range: waits still end correctly. */
TEST_F(sysfs, spin_ns_change)
{
	static const char *const values[] = { "0\n", "10000000\n" };
	struct agile_ctx_init init;
	struct agile_fence_thread ft;
	struct agile_doorbell *db;
	struct agile_info info;
	unsigned int i;
	int fd;

	REQUIRE_ROOT();
	AGILE_OPEN(fd);
	ASSERT_EQ(0, agile_ctx_init(fd, 4, 64, &init));
	db = agile_map_rw(fd, init.doorbell_offset, init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, db);
	for (i = 0; i < ARRAY_SIZE(values); i++) {
		ASSERT_EQ(0, agile_sysfs_write("spin_ns", values[i]));
		ASSERT_EQ(0, agile_info(fd, &info));
		ASSERT_EQ(strtoul(values[i], NULL, 10),
			  (unsigned long)info.spin_ns);
		/* timeout 0 checks once, spin or not. */
		ASSERT_EQ(-ETIMEDOUT,
			  agile_wait(fd, i, AGILE_CMP_EQ, 1, 0, NULL));
		ASSERT_EQ(-ETIMEDOUT, agile_wait(fd, i, AGILE_CMP_EQ, 1,
						 50 * NSEC_PER_MSEC, NULL));
		ASSERT_EQ(0, agile_fence_thread_start(&ft, fd, i, AGILE_CMP_EQ,
						      1, 20 * NSEC_PER_SEC));
		ASSERT_EQ(0, agile_wait_asleep(&ft.probe, db, i, 1,
					       AGILE_TEST_WAIT_MS));
		ASSERT_EQ(0, agile_signal(fd, i, 1));
		ASSERT_EQ(0, agile_fence_thread_join(&ft));
		ASSERT_EQ(0, ft.ret);
	}
	munmap(db, init.doorbell_bytes);
	close(fd);
}

TEST_HARNESS_MAIN
