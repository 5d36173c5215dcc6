/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers shared by the /dev/agile selftests.
 *
 * Every helper that wraps a system call returns 0 (or a count) on success
 * and -errno on failure, so a test reads ASSERT_EQ(-EINVAL, agile_...()).
 * Helpers never assert: they may run in threads and forked children, where
 * the harness's longjmp must not be used.
 */
#ifndef AGILE_TEST_H
#define AGILE_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap(), pthread_tryjoin_np(), gettid() */
#endif

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/agile.h>

/*
 * The 6.1 harness is not -Wextra clean: TEST()'s wrapper ignores its
 * variant and the timeout handler its ucontext.  Only this warning is
 * relaxed; -Wsign-compare and the rest stay errors, so the two sides of
 * an ASSERT_* have the same signedness.
 */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#include "kselftest_harness.h"

#define AGILE_DEV_PATH "/dev/agile"
#define AGILE_SYSFS_DIR "/sys/class/misc/agile"

#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_SEC 1000000000ULL

/*
 * Guests run under QEMU TCG, 10-50x slower than native: every bound a test
 * waits for is seconds long, and only an upper bound that a working module
 * meets by orders of magnitude ever fails a test.
 */
#define AGILE_TEST_WAIT_MS 10000

/* Harness exit code the parent reports as SKIP. */
#define AGILE_SKIP_EXIT 255

/*
 * Open /dev/agile in a test or a fixture setup.  A missing device (module
 * not loaded) skips the test: the child exits at once, because the 6.1
 * harness runs a test body even after its setup skipped.
 */
#define AGILE_OPEN(_fd)                                            \
	do {                                                       \
		(_fd) = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);  \
		if ((_fd) < 0 && errno == ENOENT)                  \
			SKIP(_exit(AGILE_SKIP_EXIT), "%s missing", \
			     AGILE_DEV_PATH);                      \
		ASSERT_LE(0, (_fd))                                \
		{                                                  \
			TH_LOG("open %s: %s", AGILE_DEV_PATH,      \
			       strerror(errno));                   \
		}                                                  \
	} while (0)

static inline int agile_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

static inline int agile_info(int fd, struct agile_info *info)
{
	return agile_ioctl(fd, AGILE_IOC_INFO, info);
}

static inline int agile_stats(int fd, struct agile_stats *stats)
{
	return agile_ioctl(fd, AGILE_IOC_STATS, stats);
}

static inline int agile_ctx_init(int fd, __u32 nr_slots, __u32 task_reg_size,
				 struct agile_ctx_init *out)
{
	struct agile_ctx_init local;
	struct agile_ctx_init *init = out ? out : &local;

	memset(init, 0, sizeof(*init));
	init->nr_slots = nr_slots;
	init->task_reg_size = task_reg_size;
	return agile_ioctl(fd, AGILE_IOC_CTX_INIT, init);
}

static inline int agile_fence(int fd, struct agile_fence *fence)
{
	return agile_ioctl(fd, AGILE_IOC_FENCE, fence);
}

static inline int agile_signal_flags(int fd, __u32 slot, __u32 value,
				     __u32 flags)
{
	struct agile_fence fence = {
		.op = AGILE_FENCE_SIGNAL,
		.slot = slot,
		.value = value,
		.flags = flags,
	};

	return agile_fence(fd, &fence);
}

static inline int agile_signal(int fd, __u32 slot, __u32 value)
{
	return agile_signal_flags(fd, slot, value, 0);
}

static inline int agile_barrier(int fd)
{
	struct agile_fence fence = { .op = AGILE_FENCE_BARRIER };

	return agile_fence(fd, &fence);
}

/* FENCE WAIT; *observed (if not NULL) gets the kernel's observed value. */
static inline int agile_wait_flags(int fd, __u32 slot, __u32 cmp, __u32 value,
				   __u64 timeout_ns, __u32 flags,
				   __u32 *observed)
{
	struct agile_fence fence = {
		.op = AGILE_FENCE_WAIT,
		.slot = slot,
		.value = value,
		.cmp = cmp,
		.flags = flags,
		.observed = 0xdeadbeef,
		.timeout_ns = timeout_ns,
	};
	int ret = agile_fence(fd, &fence);

	if (observed)
		*observed = fence.observed;
	return ret;
}

static inline int agile_wait(int fd, __u32 slot, __u32 cmp, __u32 value,
			     __u64 timeout_ns, __u32 *observed)
{
	return agile_wait_flags(fd, slot, cmp, value, timeout_ns, 0, observed);
}

static inline int agile_wait_any(int fd, const struct agile_wait_cond *conds,
				 __u32 nr_conds, __u32 flags, __u64 timeout_ns,
				 __u32 *index, __u32 *observed)
{
	struct agile_wait_any any = {
		.conds = (__u64)(uintptr_t)conds,
		.nr_conds = nr_conds,
		.flags = flags,
		.timeout_ns = timeout_ns,
		.index = 0xdeadbeef,
		.observed = 0xdeadbeef,
	};
	int ret = agile_ioctl(fd, AGILE_IOC_WAIT_ANY, &any);

	if (index)
		*index = any.index;
	if (observed)
		*observed = any.observed;
	return ret;
}

/* Map one area; returns MAP_FAILED with errno set on failure. */
static inline void *agile_map(int fd, __u64 offset, __u64 bytes, int prot,
			      int flags)
{
	return mmap(NULL, bytes, prot, flags, fd, (off_t)offset);
}

static inline void *agile_map_rw(int fd, __u64 offset, __u64 bytes)
{
	return agile_map(fd, offset, bytes, PROT_READ | PROT_WRITE, MAP_SHARED);
}

static inline __u64 agile_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

static inline void agile_sleep_ms(unsigned int ms)
{
	struct timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * 1000000L,
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * Doorbell accessors.  The loads are acquire and the stores release, as a
 * user-space protocol on these pages would use them.
 */
static inline __u32 agile_db_value(struct agile_doorbell *db, __u32 slot)
{
	return __atomic_load_n(&db[slot].value, __ATOMIC_ACQUIRE);
}

static inline void agile_db_store(struct agile_doorbell *db, __u32 slot,
				  __u32 value)
{
	__atomic_store_n(&db[slot].value, value, __ATOMIC_RELEASE);
}

static inline __u32 agile_db_sleepers(struct agile_doorbell *db, __u32 slot)
{
	return __atomic_load_n(&db[slot].sleepers, __ATOMIC_ACQUIRE);
}

/*
 * Wait until the kernel's mirrored sleeper count of @slot reads @want:
 * the waiter is then queued, so a SIGNAL sent now finds it.  0, or
 * -ETIMEDOUT after @timeout_ms.
 */
static inline int agile_db_wait_sleepers(struct agile_doorbell *db, __u32 slot,
					 __u32 want, unsigned int timeout_ms)
{
	__u64 deadline = agile_now_ns() + timeout_ms * NSEC_PER_MSEC;

	while (agile_db_sleepers(db, slot) != want) {
		if (agile_now_ns() > deadline)
			return -ETIMEDOUT;
		agile_sleep_ms(1);
	}
	return 0;
}

/* Voluntary context switches of thread @tid of this process, or -1. */
static inline long agile_thread_nvcsw(pid_t tid)
{
	char path[64], line[128];
	long nvcsw = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &nvcsw) == 1)
			break;
	fclose(f);
	return nvcsw;
}

/*
 * Tells whether a thread that is about to wait in the kernel has gone to
 * sleep there.  Queued (the sleeper count) is not enough for tests that
 * count wakeups: between queueing and sleeping the waiter re-checks its
 * condition, and a store seen there ends the wait with no wakeup.  A
 * blocking schedule() is the only voluntary context switch a waiter
 * makes inside the ioctl, so a rise of that count means "asleep".
 */
struct agile_sleep_probe {
	pid_t tid;
	long nvcsw;
	int armed;
};

/* Called by the waiting thread right before its ioctl. */
static inline void agile_probe_arm(struct agile_sleep_probe *probe)
{
	probe->tid = gettid();
	probe->nvcsw = agile_thread_nvcsw(probe->tid);
	__atomic_store_n(&probe->armed, 1, __ATOMIC_RELEASE);
}

static inline bool agile_probe_asleep(const struct agile_sleep_probe *probe)
{
	return __atomic_load_n(&probe->armed, __ATOMIC_ACQUIRE) &&
	       agile_thread_nvcsw(probe->tid) > probe->nvcsw;
}

/*
 * Wait until the probed thread sleeps and @slot's sleeper count reads
 * @want.  0, or -ETIMEDOUT after @timeout_ms.
 */
static inline int agile_wait_asleep(const struct agile_sleep_probe *probe,
				    struct agile_doorbell *db, __u32 slot,
				    __u32 want, unsigned int timeout_ms)
{
	__u64 deadline = agile_now_ns() + timeout_ms * NSEC_PER_MSEC;

	while (agile_db_sleepers(db, slot) != want ||
	       !agile_probe_asleep(probe)) {
		if (agile_now_ns() > deadline)
			return -ETIMEDOUT;
		agile_sleep_ms(1);
	}
	return 0;
}

/* A thread that runs one FENCE (normally a WAIT) and keeps its result. */
struct agile_fence_thread {
	pthread_t thread;
	int fd;
	struct agile_fence fence;
	struct agile_sleep_probe probe;
	int ret;
	__u64 elapsed_ns;
};

static inline void *agile_fence_thread_fn(void *arg)
{
	struct agile_fence_thread *ft = arg;
	__u64 start;

	agile_probe_arm(&ft->probe);
	start = agile_now_ns();
	ft->ret = agile_fence(ft->fd, &ft->fence);
	ft->elapsed_ns = agile_now_ns() - start;
	return NULL;
}

static inline int agile_fence_thread_start(struct agile_fence_thread *ft,
					   int fd, __u32 slot, __u32 cmp,
					   __u32 value, __u64 timeout_ns)
{
	memset(ft, 0, sizeof(*ft));
	ft->fd = fd;
	ft->ret = 1;
	ft->fence.op = AGILE_FENCE_WAIT;
	ft->fence.slot = slot;
	ft->fence.cmp = cmp;
	ft->fence.value = value;
	ft->fence.timeout_ns = timeout_ns;
	ft->fence.observed = 0xdeadbeef;
	return -pthread_create(&ft->thread, NULL, agile_fence_thread_fn, ft);
}

static inline int agile_fence_thread_join(struct agile_fence_thread *ft)
{
	return -pthread_join(ft->thread, NULL);
}

/*
 * A thread that interrupts @target once it sleeps on @slot of @fd: it
 * waits for the slot's sleeper count, sends one SIGALRM, and, with
 * @wake, then waits until the wait sleeps again after its restart (the
 * context's wait count went up and the slot has its sleeper back) before
 * it SIGNALs @wake_value into the slot, so that a restarted wait ends by
 * its condition.  A wait that was not restarted is not waited for past
 * AGILE_TEST_WAIT_MS, and ends by its own timeout at worst.
 */
struct agile_interrupter {
	pthread_t thread;
	pthread_t target;
	int fd;
	struct agile_doorbell *db;
	__u32 slot;
	bool wake;
	__u32 wake_value;
	int found; /* 0 once the target was seen asleep */
	int restarted; /* 0 once it was seen asleep again after the signal */
};

static inline __u64 agile_waits_count(int fd)
{
	struct agile_stats st;

	return agile_stats(fd, &st) ? 0 : st.waits;
}

static inline void *agile_interrupter_fn(void *arg)
{
	struct agile_interrupter *in = arg;
	__u64 deadline, waits;

	in->found =
		agile_db_wait_sleepers(in->db, in->slot, 1, AGILE_TEST_WAIT_MS);
	waits = agile_waits_count(in->fd);
	pthread_kill(in->target, SIGALRM);
	if (!in->wake)
		return NULL;
	deadline = agile_now_ns() + AGILE_TEST_WAIT_MS * NSEC_PER_MSEC;
	in->restarted = -ETIMEDOUT;
	while (agile_now_ns() < deadline) {
		if (agile_waits_count(in->fd) > waits &&
		    agile_db_sleepers(in->db, in->slot) == 1) {
			in->restarted = 0;
			break;
		}
		agile_sleep_ms(1);
	}
	agile_signal(in->fd, in->slot, in->wake_value);
	return NULL;
}

/* Interrupt the calling thread once it sleeps on @slot of @fd. */
static inline int agile_interrupter_start(struct agile_interrupter *in, int fd,
					  struct agile_doorbell *db, __u32 slot,
					  bool wake, __u32 wake_value)
{
	memset(in, 0, sizeof(*in));
	in->target = pthread_self();
	in->fd = fd;
	in->db = db;
	in->slot = slot;
	in->wake = wake;
	in->wake_value = wake_value;
	in->found = -EINPROGRESS;
	in->restarted = -EINPROGRESS;
	return -pthread_create(&in->thread, NULL, agile_interrupter_fn, in);
}

static inline int agile_interrupter_stop(struct agile_interrupter *in)
{
	return -pthread_join(in->thread, NULL);
}

/*
 * The state letter of process @pid in /proc/<pid>/stat ('S', 'D', 'T',
 * 'Z', ...), or '?' when it cannot be read.
 */
static inline char agile_proc_state(pid_t pid)
{
	char path[64], buf[512], *paren;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return '?';
	buf[len] = '\0';
	/* "pid (comm) S ...": comm may hold spaces and parentheses. */
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' ? paren[2] : '?';
}

/* Wait until process @pid is in state @state; 0 or -ETIMEDOUT. */
static inline int agile_wait_proc_state(pid_t pid, char state,
					unsigned int timeout_ms)
{
	__u64 deadline = agile_now_ns() + timeout_ms * NSEC_PER_MSEC;

	while (agile_proc_state(pid) != state) {
		if (agile_now_ns() > deadline)
			return -ETIMEDOUT;
		agile_sleep_ms(1);
	}
	return 0;
}

/*
 * Reap child @pid, waiting at most @timeout_ms: its wait status, or
 * -ETIMEDOUT while it still runs (it is not reaped then).
 */
static inline int agile_reap_within(pid_t pid, unsigned int timeout_ms)
{
	__u64 deadline = agile_now_ns() + timeout_ms * NSEC_PER_MSEC;
	int status;
	pid_t ret;

	for (;;) {
		ret = waitpid(pid, &status, WNOHANG);
		if (ret == pid)
			return status;
		if (ret < 0)
			return -errno;
		if (agile_now_ns() > deadline)
			return -ETIMEDOUT;
		agile_sleep_ms(5);
	}
}

/*
 * The doorbell fixture of fence.c and wait_any.c: open /dev/agile, make a
 * context of @nr_slots slots (64-byte task registers) and map its
 * doorbell area into *@db.  A fixture setup calls it with its _metadata:
 * unlike the helpers above it asserts (and skips when the module is not
 * loaded), so it belongs in the test process only, never in a thread or
 * a forked child.
 */
static inline void agile_db_fixture_setup(struct __test_metadata *_metadata,
					  int *fd, __u32 nr_slots,
					  struct agile_ctx_init *init,
					  struct agile_doorbell **db)
{
	AGILE_OPEN(*fd);
	ASSERT_EQ(0, agile_ctx_init(*fd, nr_slots, 64, init));
	*db = agile_map_rw(*fd, init->doorbell_offset, init->doorbell_bytes);
	ASSERT_NE(MAP_FAILED, *db);
}

/* Its teardown: whatever the setup got to. */
static inline void agile_db_fixture_teardown(int fd,
					     const struct agile_ctx_init *init,
					     struct agile_doorbell *db)
{
	if (db && db != MAP_FAILED)
		munmap(db, init->doorbell_bytes);
	if (fd >= 0)
		close(fd);
}

/* sysfs: /sys/class/misc/agile/<name> */
static inline void agile_sysfs_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", AGILE_SYSFS_DIR, name);
}

static inline int agile_sysfs_read(const char *name, unsigned long long *val)
{
	char path[256], buf[64], *end;
	ssize_t len;
	int fd;

	agile_sysfs_path(path, sizeof(path), name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	if (len < 0) {
		len = -errno;
		close(fd);
		return (int)len;
	}
	close(fd);
	buf[len] = '\0';
	errno = 0;
	*val = strtoull(buf, &end, 10);
	/* One decimal number and the newline sysfs ends a value with. */
	if (errno || end == buf || strcmp(end, "\n"))
		return -EBADMSG;
	return 0;
}

/* Wait until the poller has ticked @nr more times; 0 or -ETIMEDOUT. */
static inline int agile_wait_poll_ticks(unsigned long long nr)
{
	__u64 deadline = agile_now_ns() + AGILE_TEST_WAIT_MS * NSEC_PER_MSEC;
	unsigned long long start = 0, now = 0;

	if (agile_sysfs_read("poll_ticks", &start))
		return -EIO;
	for (;;) {
		if (!agile_sysfs_read("poll_ticks", &now) && now >= start + nr)
			return 0;
		if (agile_now_ns() > deadline)
			return -ETIMEDOUT;
		agile_sleep_ms(1);
	}
}

/* Write @str (exactly its bytes) to an open sysfs file; 0 or -errno. */
static inline int agile_sysfs_write_fd(int fd, const char *str)
{
	size_t len = strlen(str);
	ssize_t ret = pwrite(fd, str, len, 0);

	if (ret < 0)
		return -errno;
	return (size_t)ret == len ? 0 : -EIO;
}

static inline int agile_sysfs_write(const char *name, const char *str)
{
	char path[256];
	int fd, ret;

	agile_sysfs_path(path, sizeof(path), name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = agile_sysfs_write_fd(fd, str);
	close(fd);
	return ret;
}

static inline int agile_sysfs_write_u64(const char *name,
					unsigned long long val)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu\n", val);
	return agile_sysfs_write(name, buf);
}

/*
 * Become uid and gid @id (65534: nobody) with no supplementary group, or
 * with /dev/agile's group as the only one when @device_group, as a member
 * of group "agile" would be: the device is 0660 root:agile by default,
 * so only such a member may open it.  0 or -errno.
 */
static inline int agile_become(uid_t id, bool device_group)
{
	struct stat st;
	gid_t gid;

	if (stat(AGILE_DEV_PATH, &st))
		return -errno;
	gid = st.st_gid;
	if (setgroups(device_group ? 1 : 0, &gid) || setresgid(id, id, id) ||
	    setresuid(id, id, id))
		return -errno;
	return 0;
}

/*
 * Run @fn in a forked child and return its wait status (or -errno).  The
 * child must end with _exit(): harness asserts do not work there.
 */
static inline int agile_run_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(fn(arg));
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return status;
}

/*
 * CTX_INIT on @fd (opened by the caller) as real and effective uid @uid,
 * then back to root: the context is @uid's (the module counts it, and
 * its poller work, for the real uid of CTX_INIT's caller).  Root only,
 * and before the process has other threads: setresuid() signals each of
 * them, which would interrupt a thread asleep in a wait.  0 or -errno.
 */
static inline int agile_ctx_init_as(int fd, uid_t uid, __u32 nr_slots,
				    __u32 task_reg_size,
				    struct agile_ctx_init *out)
{
	int ret;

	if (setresuid(uid, uid, 0))
		return -errno;
	ret = agile_ctx_init(fd, nr_slots, task_reg_size, out);
	if (setresuid(0, 0, 0))
		return -errno;
	return ret;
}

/* Read /proc/@pid/fdinfo/@fd into @buf (NUL-terminated): length or -errno. */
static inline ssize_t agile_fdinfo_read(pid_t pid, int fd, char *buf,
					size_t size)
{
	char path[64];
	ssize_t len, total = 0;
	int pfd;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
	pfd = open(path, O_RDONLY | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	while ((len = read(pfd, buf + total, size - 1 - total)) > 0)
		total += len;
	if (len < 0)
		total = -errno;
	close(pfd);
	if (total >= 0)
		buf[total] = '\0';
	return total;
}

/* The text after "\n@key:\t" up to the end of its line, or NULL. */
static inline const char *agile_fdinfo_find(const char *buf, const char *key,
					    char *value, size_t size)
{
	char pattern[64];
	const char *p, *end;
	size_t len;

	snprintf(pattern, sizeof(pattern), "\n%s:\t", key);
	p = strstr(buf, pattern);
	if (!p)
		return NULL;
	p += strlen(pattern);
	end = strchrnul(p, '\n');
	len = (size_t)(end - p) < size - 1 ? (size_t)(end - p) : size - 1;
	memcpy(value, p, len);
	value[len] = '\0';
	return value;
}

/* The number of key @key; ~0ULL when it is missing or not a number. */
static inline unsigned long long agile_fdinfo_u64(const char *buf,
						  const char *key)
{
	char value[64], *end;
	unsigned long long v;

	if (!agile_fdinfo_find(buf, key, value, sizeof(value)))
		return ~0ULL;
	v = strtoull(value, &end, 0);
	return *end || end == value ? ~0ULL : v;
}

#endif /* AGILE_TEST_H */
