// SPDX-License-Identifier: MIT
/*
 * agilectl: look at and tune the agile module (/dev/agile) from the shell.
 *
 *   agilectl info            the ABI version, features, limits and tunables
 *   agilectl stats           the module-wide counters and every context's,
 *                            refreshed like top
 *   agilectl tune NAME=VALUE set a sysfs tunable (CAP_SYS_ADMIN)
 *   agilectl dump            a fresh context's slots, or another process's
 *                            context (-p PID), decoded
 *   agilectl trace           the module's tracepoints, decoded
 *
 * info also says which backend libagile would take here and why
 * (agile_dev_backend_choose: $AGILE_BACKEND, or whether the node exists),
 * even where the module is not loaded.
 *
 * Of the module, only what the ABI exposes: AGILE_IOC_INFO, the sysfs attributes of
 * /sys/class/misc/agile, AGILE_IOC_STATS and the pages of the caller's own
 * context, GROUP_JOIN's QUERY, /proc/PID/fdinfo/FD of the open /dev/agile
 * files (the module's show_fdinfo: a context's counters and its slots in
 * use, to whoever may ptrace the process, as for io_uring), and the
 * events/agile/ tracepoints.
 *
 * Exit status: 0 success, 1 failure, 2 usage error, 3 the device is
 * missing or refused (the message says why).  --version prints the
 * project's version (libagile/Makefile's VERSION, given by make).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <agile/dev.h>
#include <linux/agile.h>

#define EXIT_USAGE 2
#define EXIT_NODEV 3

static const char *device_path = "/dev/agile";
static const char *sysfs_dir = "/sys/class/misc/agile";
static const char *params_dir = "/sys/module/agile/parameters";

/* The tunables of kmod/sysfs.c, with the ranges it enforces. */
struct tunable {
	const char *name;
	unsigned long long min;
	unsigned long long max; /* 0: page size (max_segment_bytes's min) */
	const char *what;
};

static const struct tunable tunables[] = {
	{ "poll_interval_us", 10, 1000000,
	  "the poller's period, microseconds" },
	{ "poll_max_checks", AGILE_WAIT_ANY_MAX, 65536,
	  "most conditions the poller checks per period" },
	{ "poll_cpu_permille", 1, 1000,
	  "most of one CPU the poller takes, thousandths (1000: no cap)" },
	{ "spin_ns", 0, 10000000,
	  "nanoseconds a waiter spins in the kernel before it sleeps" },
	{ "max_slots", 1, 65536, "largest nr_slots of a context" },
	{ "max_segment_bytes", 0, 1ULL << 30,
	  "largest data segment, bytes (from one page)" },
	{ "max_contexts_per_user", 1, 1ULL << 20,
	  "most contexts one user holds" },
};

#define NR_TUNABLES (sizeof(tunables) / sizeof(tunables[0]))

/* The read-only sysfs counters, in the order stats shows them. */
struct counter {
	const char *name;
	int rate; /* a running total: show its rate */
	const char *what;
};

static const struct counter counters[] = {
	{ "contexts", 0, "live contexts" },
	{ "groups", 0, "live groups" },
	{ "pages", 0, "pages held by contexts and segments" },
	{ "signals", 1, "FENCE SIGNALs" },
	{ "waits", 1, "FENCE WAITs and WAIT_ANYs" },
	{ "wakeups_signal", 1, "sleeps ended by a SIGNAL" },
	{ "wakeups_poll", 1, "sleeps ended by the poller" },
	{ "timeouts", 1, "waits that timed out" },
	{ "poll_ticks", 1, "poller periods run" },
	{ "poll_checks", 1, "conditions the poller checked" },
	{ "poll_ns", 1, "nanoseconds spent in poller periods" },
	{ "poll_stretched", 1, "poller periods the CPU cap stretched" },
	{ "poll_contexts", 0, "contexts on the poller's list" },
	{ "poll_users", 0, "users with contexts on the poller's list" },
	{ "poll_budget", 0, "conditions the last poller period might check" },
};

#define NR_COUNTERS (sizeof(counters) / sizeof(counters[0]))

static const char *const feature_names[] = {
	"WAIT_ANY", "POLL_WAKE", "SLEEPER_COUNT", "SEGMENTS",
	"DMABUF",   "GROUPS",	 "GROUP_INFO",	  "GROUP_ENDED",
};

static const char *const cmp_names[] = { "EQ", "NE", "GE", "LT", "GT", "LE" };

static unsigned long long page_size(void)
{
	long size = sysconf(_SC_PAGESIZE);

	return size > 0 ? (unsigned long long)size : 4096;
}

static unsigned long long tunable_min(const struct tunable *t)
{
	return strcmp(t->name, "max_segment_bytes") ? t->min : page_size();
}

/*
 * Open the device, or explain why not.  Returns the fd, or -1 after the
 * message, with *status set to the exit status to use.
 */
static int open_device(int flags, int *status)
{
	struct stat st;
	int fd = open(device_path, flags | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	*status = EXIT_NODEV;
	switch (errno) {
	case ENOENT:
	case ENXIO:
	case ENODEV:
		fprintf(stderr,
			"agilectl: %s: %s: the agile module is not loaded (modprobe agile, as root)\n",
			device_path, strerror(errno));
		break;
	case EACCES:
	case EPERM:
		if (stat(device_path, &st) == 0)
			fprintf(stderr,
				"agilectl: %s: %s: the node is mode %04o, owner %u, group %u; join the node's group (the udev rule gives it group \"agile\": usermod -aG agile $USER, then log in again), or load the module with dev_mode=0666\n",
				device_path, strerror(errno),
				(unsigned int)(st.st_mode & 07777),
				(unsigned int)st.st_uid,
				(unsigned int)st.st_gid);
		else
			fprintf(stderr, "agilectl: %s: %s\n", device_path,
				strerror(errno));
		break;
	default:
		fprintf(stderr, "agilectl: %s: %s\n", device_path,
			strerror(errno));
		*status = EXIT_FAILURE;
	}
	return -1;
}

/* Read one number from dir/name; -errno on failure. */
static int read_number(const char *dir, const char *name,
		       unsigned long long *value)
{
	char path[PATH_MAX], buf[64];
	ssize_t len;
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	err = errno;
	close(fd);
	if (len < 0)
		return -err;
	buf[len] = '\0';
	if (buf[0] == '0' && buf[1] >= '0' && buf[1] <= '7')
		*value = strtoull(buf, NULL, 8); /* dev_mode: octal */
	else
		*value = strtoull(buf, NULL, 10);
	return 0;
}

static void print_features(uint32_t features)
{
	unsigned int bit;

	printf("features:          %#x", features);
	for (bit = 0; bit < 32; bit++) {
		if (!(features & (1U << bit)))
			continue;
		if (bit < sizeof(feature_names) / sizeof(feature_names[0]))
			printf(" %s", feature_names[bit]);
		else
			printf(" bit%u", bit);
	}
	printf("\n");
}

static void usage_info(FILE *f)
{
	fprintf(f,
		"usage: agilectl info\n"
		"The backend libagile would take here and why (first, even without\n"
		"the module), then the module's ABI version, feature bits and\n"
		"limits (AGILE_IOC_INFO), its tunables with their ranges (sysfs %s),\n"
		"its load-time parameters (%s) and its counters.\n"
		"Needs read access to %s.\n",
		sysfs_dir, params_dir, device_path);
}

/*
 * The backend agile_dev_open would take for a program run here with
 * this environment and the node agilectl looks at.
 */
static void print_library_backend(void)
{
	struct agile_dev_opts opts;
	const char *why;
	int backend;

	agile_dev_opts_init(&opts);
	opts.path = device_path;
	backend = agile_dev_backend_choose(&opts, &why);
	if (backend < 0)
		printf("library_backend:   none: agile_dev_open fails (%s)\n",
		       strerror(-backend));
	else
		printf("library_backend:   %s (%s; %s)\n",
		       agile_dev_backend_name(backend), why, device_path);
	fflush(stdout);
}

static int cmd_info(int argc, char **argv)
{
	struct agile_info info;
	unsigned long long value;
	unsigned int i;
	int fd, status = 0;

	if (argc > 1 &&
	    (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage_info(stdout);
		return 0;
	}
	if (argc > 1) {
		usage_info(stderr);
		return EXIT_USAGE;
	}
	print_library_backend();
	fd = open_device(O_RDONLY, &status);
	if (fd < 0)
		return status;
	memset(&info, 0, sizeof(info));
	if (ioctl(fd, AGILE_IOC_INFO, &info) < 0) {
		fprintf(stderr, "agilectl: AGILE_IOC_INFO: %s\n",
			strerror(errno));
		close(fd);
		return EXIT_FAILURE;
	}
	close(fd);

	printf("device:            %s\n", device_path);
	printf("abi_version:       %u (agilectl built for %u)%s\n",
	       info.abi_version, AGILE_ABI_VERSION,
	       info.abi_version == AGILE_ABI_VERSION ? "" : " MISMATCH");
	print_features(info.features);
	printf("max_slots:         %u\n", info.max_slots);
	printf("doorbell_stride:   %u\n", info.doorbell_stride);
	printf("task_reg_size:     %u .. %u (powers of two)\n",
	       info.task_reg_min_size, info.task_reg_max_size);
	printf("poll_interval_us:  %u\n", info.poll_interval_us);
	printf("spin_ns:           %u\n", info.spin_ns);
	printf("wait_any_max:      %u\n", info.wait_any_max);
	printf("page_size:         %u\n", info.page_size);
	printf("max_segment_bytes: %llu\n",
	       (unsigned long long)info.max_segment_bytes);
	printf("max_segments:      %u per context\n", AGILE_MAX_SEGMENTS);
	printf("max_group_members: %u\n", AGILE_GROUP_MAX_MEMBERS);

	printf("\ntunables (%s, agilectl tune NAME=VALUE):\n", sysfs_dir);
	for (i = 0; i < NR_TUNABLES; i++) {
		const struct tunable *t = &tunables[i];
		int err = read_number(sysfs_dir, t->name, &value);

		if (err) {
			printf("  %-22s ? (%s)\n", t->name, strerror(-err));
			continue;
		}
		printf("  %-22s %-10llu [%llu, %llu] %s\n", t->name, value,
		       tunable_min(t), t->max, t->what);
	}

	printf("\nparameters at load (%s):\n", params_dir);
	for (i = 0; i < NR_TUNABLES; i++) {
		if (read_number(params_dir, tunables[i].name, &value) == 0)
			printf("  %-22s %llu\n", tunables[i].name, value);
	}
	if (read_number(params_dir, "dev_mode", &value) == 0)
		printf("  %-22s %04llo\n", "dev_mode", value);

	printf("\ncounters (agilectl stats):\n");
	for (i = 0; i < NR_COUNTERS; i++) {
		if (read_number(sysfs_dir, counters[i].name, &value) == 0)
			printf("  %-22s %llu\n", counters[i].name, value);
	}
	return 0;
}

/*
 * Contexts of processes, through procfs: /proc/PID/fd/FD links to the
 * device (the same st_rdev) and their /proc/PID/fdinfo/FD, where the
 * module's show_fdinfo writes "key:\tvalue" lines (agile(4)).  procfs lets
 * only those who may ptrace a process read them.
 */

/* Most bytes of one fdinfo read: the module bounds what it writes. */
#define FDINFO_MAX 65536

/* The device's number: sysfs "dev" (MAJOR:MINOR), else the node's. */
static int agile_rdev(dev_t *rdev)
{
	char path[PATH_MAX], buf[32];
	unsigned int major_nr, minor_nr;
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/dev", sysfs_dir);
	f = fopen(path, "re");
	if (f) {
		int got = fgets(buf, sizeof(buf), f) &&
			  sscanf(buf, "%u:%u", &major_nr, &minor_nr) == 2;

		fclose(f);
		if (got) {
			*rdev = makedev(major_nr, minor_nr);
			return 0;
		}
	}
	if (stat(device_path, &st) == 0 && S_ISCHR(st.st_mode)) {
		*rdev = st.st_rdev;
		return 0;
	}
	return -ENODEV;
}

/* Whether /proc/@pid/fd/@fd is an open file of the device @rdev. */
static int is_agile_fd(int pid, int fd, dev_t rdev)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	return stat(path, &st) == 0 && S_ISCHR(st.st_mode) &&
	       st.st_rdev == rdev;
}

/* /proc/@pid/fdinfo/@fd into @buf, NUL-terminated; 0 or -errno. */
static int read_fdinfo(int pid, int fd, char *buf, size_t size)
{
	char path[64];
	size_t total = 0;
	ssize_t len;
	int pfd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
	pfd = open(path, O_RDONLY | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	while (total < size - 1 &&
	       (len = read(pfd, buf + total, size - 1 - total)) != 0) {
		if (len < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		total += (size_t)len;
	}
	close(pfd);
	buf[total] = '\0';
	return err;
}

/*
 * The value of @key in fdinfo text @buf, up to its newline (not
 * included), or NULL; *len gets its length.
 */
static const char *fdinfo_value(const char *buf, const char *key, size_t *len)
{
	size_t klen = strlen(key);
	const char *p;

	for (p = buf; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "") {
		if (!strncmp(p, key, klen) && p[klen] == ':' &&
		    p[klen + 1] == '\t') {
			p += klen + 2;
			*len = strcspn(p, "\n");
			return p;
		}
	}
	return NULL;
}

static unsigned long long fdinfo_number(const char *buf, const char *key)
{
	size_t len;
	const char *v = fdinfo_value(buf, key, &len);

	return v ? strtoull(v, NULL, 0) : 0;
}

/* One open file of the device, and what its fdinfo says. */
struct agile_fd {
	int pid;
	int fd;
	char comm[32];
	int has_ctx; /* "ctx:" is a number, not "none" */
	unsigned int ctx_id;
	unsigned int nr_slots;
	unsigned int sleepers;
	struct agile_stats stats;
	/* the poller's work for the context's owner (poll_owner_*) */
	int has_poll;
	unsigned long long owner_uid, owner_contexts, owner_turns;
	unsigned long long owner_checks, owner_ns;
};

static void fdinfo_stats(const char *buf, struct agile_stats *stats)
{
	memset(stats, 0, sizeof(*stats));
	stats->signals = fdinfo_number(buf, "signals");
	stats->waits = fdinfo_number(buf, "waits");
	stats->wakeups_signal = fdinfo_number(buf, "wakeups_signal");
	stats->wakeups_poll = fdinfo_number(buf, "wakeups_poll");
	stats->timeouts = fdinfo_number(buf, "timeouts");
	stats->interrupted = fdinfo_number(buf, "interrupted");
	stats->spin_hits = fdinfo_number(buf, "spin_hits");
}

static void read_comm(int pid, char *comm, size_t size)
{
	char path[64];
	FILE *f;

	snprintf(comm, size, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(comm, (int)size, f))
		comm[strcspn(comm, "\n")] = '\0';
	fclose(f);
}

/* Fill @af from /proc/@pid/fdinfo/@fd; 0 or -errno. */
static int agile_fd_read(struct agile_fd *af, int pid, int fd, char *buf)
{
	const char *v;
	size_t len;
	int err;

	memset(af, 0, sizeof(*af));
	af->pid = pid;
	af->fd = fd;
	err = read_fdinfo(pid, fd, buf, FDINFO_MAX);
	if (err)
		return err;
	read_comm(pid, af->comm, sizeof(af->comm));
	v = fdinfo_value(buf, "ctx", &len);
	if (!v)
		return -ENODATA; /* a module without show_fdinfo */
	af->has_ctx = isdigit((unsigned char)*v);
	af->ctx_id = (unsigned int)strtoul(v, NULL, 10);
	af->nr_slots = (unsigned int)fdinfo_number(buf, "nr_slots");
	af->sleepers = (unsigned int)fdinfo_number(buf, "sleepers");
	fdinfo_stats(buf, &af->stats);
	af->has_poll = fdinfo_value(buf, "poll_owner_uid", &len) != NULL;
	af->owner_uid = fdinfo_number(buf, "poll_owner_uid");
	af->owner_contexts = fdinfo_number(buf, "poll_owner_contexts");
	af->owner_turns = fdinfo_number(buf, "poll_owner_turns");
	af->owner_checks = fdinfo_number(buf, "poll_owner_checks");
	af->owner_ns = fdinfo_number(buf, "poll_owner_ns");
	return 0;
}

static int is_number(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* What a scan of /proc found. */
struct agile_scan {
	struct agile_fd *fds; /* open files of the device, readable */
	size_t nr_fds;
	size_t cap;
	unsigned int denied; /* files whose fdinfo could not be read */
	unsigned int hidden_procs; /* processes whose fds could not be listed */
};

static void scan_add(struct agile_scan *scan, const struct agile_fd *af)
{
	if (scan->nr_fds == scan->cap) {
		size_t cap = scan->cap ? 2 * scan->cap : 16;
		struct agile_fd *fds = realloc(scan->fds, cap * sizeof(*fds));

		if (!fds)
			return;
		scan->fds = fds;
		scan->cap = cap;
	}
	scan->fds[scan->nr_fds++] = *af;
}

/* The open files of device @rdev in every process we may look into. */
static void scan_processes(dev_t rdev, struct agile_scan *scan, char *buf)
{
	DIR *proc = opendir("/proc"), *fds;
	struct dirent *p, *f;
	char path[64];

	memset(scan, 0, sizeof(*scan));
	if (!proc)
		return;
	while ((p = readdir(proc))) {
		int pid;

		if (!is_number(p->d_name))
			continue;
		pid = atoi(p->d_name);
		snprintf(path, sizeof(path), "/proc/%d/fd", pid);
		fds = opendir(path);
		if (!fds) {
			if (errno == EACCES || errno == EPERM)
				scan->hidden_procs++;
			continue;
		}
		while ((f = readdir(fds))) {
			struct agile_fd af;
			int fd;

			if (!is_number(f->d_name))
				continue;
			fd = atoi(f->d_name);
			if (!is_agile_fd(pid, fd, rdev))
				continue;
			if (agile_fd_read(&af, pid, fd, buf))
				scan->denied++;
			else
				scan_add(scan, &af);
		}
		closedir(fds);
	}
	closedir(proc);
}

/* Distinct contexts among the files found (group members share one). */
static unsigned int scan_contexts(const struct agile_scan *scan)
{
	unsigned int n = 0;
	size_t i, j;

	for (i = 0; i < scan->nr_fds; i++) {
		if (!scan->fds[i].has_ctx)
			continue;
		for (j = 0; j < i; j++)
			if (scan->fds[j].has_ctx &&
			    scan->fds[j].ctx_id == scan->fds[i].ctx_id)
				break;
		if (j == i)
			n++;
	}
	return n;
}

/*
 * The poller's work by the owner of the contexts shown (the user that
 * made them; fdinfo's poll_owner_* keys, alike on each of its contexts):
 * one row per owner, from its first context in @scan.
 */
static void print_poll_owners(const struct agile_scan *scan)
{
	int header = 0;
	size_t i, j;

	for (i = 0; i < scan->nr_fds; i++) {
		const struct agile_fd *af = &scan->fds[i];

		if (!af->has_ctx || !af->has_poll)
			continue;
		for (j = 0; j < i; j++)
			if (scan->fds[j].has_ctx && scan->fds[j].has_poll &&
			    scan->fds[j].owner_uid == af->owner_uid)
				break;
		if (j < i)
			continue;
		if (!header) {
			printf("\npoller by context owner (totals while the owner holds a context):\n");
			printf("%10s %8s %12s %14s %14s\n", "UID", "POLLED",
			       "TURNS", "CHECKS", "POLL_NS");
			header = 1;
		}
		printf("%10llu %8llu %12llu %14llu %14llu\n", af->owner_uid,
		       af->owner_contexts, af->owner_turns, af->owner_checks,
		       af->owner_ns);
	}
}

/*
 * The per-context table of stats: one row per open file of the device
 * that we may read, then one line for the contexts we could not see.
 * @nr_contexts: sysfs "contexts", or -1 when it could not be read.
 */
static void print_contexts(long long nr_contexts, char *buf)
{
	struct agile_scan scan;
	unsigned int visible;
	long long hidden;
	dev_t rdev;
	size_t i;

	if (agile_rdev(&rdev)) {
		printf("contexts: %s/dev and %s unreadable: processes not scanned\n",
		       sysfs_dir, device_path);
		return;
	}
	scan_processes(rdev, &scan, buf);
	visible = scan_contexts(&scan);
	printf("\ncontexts (/proc/PID/fdinfo of %s): %u shown\n", device_path,
	       visible);
	if (scan.nr_fds)
		printf("%7s %4s %-15s %6s %6s %5s %12s %12s %10s %10s %9s %6s %10s\n",
		       "PID", "FD", "COMMAND", "CTX", "SLOTS", "SLEEP",
		       "SIGNALS", "WAITS", "WAKE_SIG", "WAKE_POLL", "TIMEOUTS",
		       "INTR", "SPIN_HITS");
	for (i = 0; i < scan.nr_fds; i++) {
		const struct agile_fd *af = &scan.fds[i];
		const struct agile_stats *st = &af->stats;

		if (!af->has_ctx) {
			printf("%7d %4d %-15s %6s (no context yet)\n", af->pid,
			       af->fd, af->comm, "-");
			continue;
		}
		printf("%7d %4d %-15s %6u %6u %5u %12llu %12llu %10llu %10llu %9llu %6llu %10llu\n",
		       af->pid, af->fd, af->comm, af->ctx_id, af->nr_slots,
		       af->sleepers, (unsigned long long)st->signals,
		       (unsigned long long)st->waits,
		       (unsigned long long)st->wakeups_signal,
		       (unsigned long long)st->wakeups_poll,
		       (unsigned long long)st->timeouts,
		       (unsigned long long)st->interrupted,
		       (unsigned long long)st->spin_hits);
	}
	print_poll_owners(&scan);
	hidden = nr_contexts - (long long)visible;
	if (nr_contexts >= 0 && hidden > 0) {
		if (geteuid())
			printf("%lld contexts of other users not shown: run as root\n",
			       hidden);
		else
			printf("%lld contexts not shown: held by no open descriptor (only by mappings or dma-bufs)\n",
			       hidden);
	} else if (scan.denied) {
		printf("%u open files of %s not shown: their fdinfo is unreadable\n",
		       scan.denied, device_path);
	}
	free(scan.fds);
}

static void usage_stats(FILE *f)
{
	fprintf(f,
		"usage: agilectl stats [-d SECONDS] [-n COUNT]\n"
		"The module-wide counters of %s, refreshed every\n"
		"SECONDS (default 1; fractions allowed) like top, COUNT times (default:\n"
		"until interrupted).  Running totals show their rate per second over\n"
		"the last interval.  On a terminal the screen is redrawn; otherwise\n"
		"each sample is a block of lines.\n"
		"Then one row per open file of %s in every process the caller\n"
		"may look into (root: all), from /proc/PID/fdinfo/FD: pid, fd,\n"
		"command, the context's id, slots, sleeping waiters and its counters\n"
		"(totals), then the poller's work by context owner: uid, its contexts\n"
		"on the poller's list, turns, conditions checked, nanoseconds.\n"
		"Contexts the caller may not see are counted in one line.\n",
		sysfs_dir, device_path);
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void catch_interrupts(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_interrupt;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a blocking read of trace_pipe must return. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static void sleep_seconds(double seconds)
{
	struct timespec ts;

	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	while (!interrupted && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int cmd_stats(int argc, char **argv)
{
	unsigned long long prev[NR_COUNTERS], cur[NR_COUNTERS];
	int have[NR_COUNTERS];
	double delay = 1, prev_time = 0;
	long count = -1, sample;
	int tty = isatty(STDOUT_FILENO), opt;
	unsigned int i;
	char *end, *buf;

	static const struct option opts[] = {
		{ "delay", required_argument, NULL, 'd' },
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};

	optind = 1;
	while ((opt = getopt_long(argc, argv, "d:n:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			delay = strtod(optarg, &end);
			if (*end || !(delay > 0) || delay > 86400) {
				fprintf(stderr,
					"agilectl stats: -d %s: seconds above 0, at most 86400\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'n':
			count = strtol(optarg, &end, 10);
			if (*end || count < 1) {
				fprintf(stderr,
					"agilectl stats: -n %s: a count of 1 or more\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage_stats(stdout);
			return 0;
		default:
			usage_stats(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		usage_stats(stderr);
		return EXIT_USAGE;
	}
	if (access(sysfs_dir, F_OK) < 0) {
		fprintf(stderr,
			"agilectl stats: %s: %s: the agile module is not loaded (modprobe agile, as root)\n",
			sysfs_dir, strerror(errno));
		return EXIT_NODEV;
	}
	buf = malloc(FDINFO_MAX);
	if (!buf) {
		fprintf(stderr, "agilectl stats: out of memory\n");
		return EXIT_FAILURE;
	}
	catch_interrupts();
	for (sample = 0; !interrupted && (count < 0 || sample < count);
	     sample++) {
		double t, dt;
		time_t wall = time(NULL);
		char stamp[32];

		if (sample)
			sleep_seconds(delay);
		if (interrupted)
			break;
		t = now_seconds();
		dt = t - prev_time;
		for (i = 0; i < NR_COUNTERS; i++)
			have[i] = !read_number(sysfs_dir, counters[i].name,
					       &cur[i]);
		if (tty && count != 1)
			printf("\033[H\033[2J");
		strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime(&wall));
		printf("agile module counters (%s) at %s", sysfs_dir, stamp);
		if (sample)
			printf(", rates over %.2f s", dt);
		printf("\n%-16s %20s %14s  %s\n", "counter", "value",
		       sample ? "per second" : "", "meaning");
		for (i = 0; i < NR_COUNTERS; i++) {
			char rate[32] = "";

			if (!have[i]) {
				printf("%-16s %20s %14s  %s\n",
				       counters[i].name, "?", "",
				       counters[i].what);
				continue;
			}
			if (sample && counters[i].rate && cur[i] >= prev[i])
				snprintf(rate, sizeof(rate), "%.1f",
					 (double)(cur[i] - prev[i]) / dt);
			printf("%-16s %20llu %14s  %s\n", counters[i].name,
			       cur[i], rate, counters[i].what);
			prev[i] = cur[i];
		}
		print_contexts(have[0] ? (long long)cur[0] : -1, buf);
		if (!tty || count == 1)
			printf("\n");
		fflush(stdout);
		prev_time = t;
	}
	free(buf);
	return 0;
}

static void usage_tune(FILE *f)
{
	unsigned int i;

	fprintf(f,
		"usage: agilectl tune [NAME=VALUE...]\n"
		"Writes a tunable of %s (root: CAP_SYS_ADMIN).\n"
		"Without arguments, lists them.  The tunables and their ranges:\n",
		sysfs_dir);
	for (i = 0; i < NR_TUNABLES; i++)
		fprintf(f, "  %-22s [%llu, %llu] %s\n", tunables[i].name,
			tunable_min(&tunables[i]), tunables[i].max,
			tunables[i].what);
	fprintf(f,
		"A new value takes effect at once; the load-time defaults are the\n"
		"module parameters of the same names (modprobe agile NAME=VALUE).\n");
}

static const struct tunable *find_tunable(const char *name, size_t len)
{
	unsigned int i;

	for (i = 0; i < NR_TUNABLES; i++) {
		if (strlen(tunables[i].name) == len &&
		    !strncmp(tunables[i].name, name, len))
			return &tunables[i];
	}
	return NULL;
}

static int tune_one(const char *arg)
{
	const char *eq = strchr(arg, '=');
	const struct tunable *t;
	unsigned long long old;
	char path[PATH_MAX];
	ssize_t written;
	int fd, err;

	if (!eq) {
		fprintf(stderr, "agilectl tune: %s: not NAME=VALUE\n", arg);
		return EXIT_USAGE;
	}
	t = find_tunable(arg, (size_t)(eq - arg));
	if (!t) {
		fprintf(stderr,
			"agilectl tune: %.*s: no such tunable (agilectl tune --help lists them)\n",
			(int)(eq - arg), arg);
		return EXIT_USAGE;
	}
	snprintf(path, sizeof(path), "%s/%s", sysfs_dir, t->name);
	err = read_number(sysfs_dir, t->name, &old);
	if (err) {
		fprintf(stderr, "agilectl tune: %s: %s%s\n", path,
			strerror(-err),
			err == -ENOENT ? ": the agile module is not loaded" :
					 "");
		return err == -ENOENT ? EXIT_NODEV : EXIT_FAILURE;
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		fprintf(stderr, "agilectl tune: %s: %s%s\n", path,
			strerror(err),
			err == EACCES ? ": tunables are written by root" : "");
		return EXIT_FAILURE;
	}
	/* The module parses and range-checks; it is the authority. */
	written = write(fd, eq + 1, strlen(eq + 1));
	err = errno;
	close(fd);
	if (written < 0) {
		if (err == EINVAL)
			fprintf(stderr,
				"agilectl tune: %s=%s: out of range: %s takes a decimal integer from %llu to %llu (%s); still %llu\n",
				t->name, eq + 1, t->name, tunable_min(t),
				t->max, t->what, old);
		else if (err == EPERM)
			fprintf(stderr,
				"agilectl tune: %s: %s: needs CAP_SYS_ADMIN (run as root)\n",
				path, strerror(err));
		else
			fprintf(stderr, "agilectl tune: %s: %s\n", path,
				strerror(err));
		return EXIT_FAILURE;
	}
	printf("%s: %llu -> %s\n", t->name, old, eq + 1);
	return 0;
}

static int cmd_tune(int argc, char **argv)
{
	unsigned long long value;
	unsigned int i;
	int a, status;

	if (argc > 1 &&
	    (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage_tune(stdout);
		return 0;
	}
	if (argc == 1) {
		for (i = 0; i < NR_TUNABLES; i++) {
			int err = read_number(sysfs_dir, tunables[i].name,
					      &value);

			if (err) {
				fprintf(stderr, "agilectl tune: %s/%s: %s\n",
					sysfs_dir, tunables[i].name,
					strerror(-err));
				return err == -ENOENT ? EXIT_NODEV :
							EXIT_FAILURE;
			}
			printf("%s=%llu\n", tunables[i].name, value);
		}
		return 0;
	}
	for (a = 1; a < argc; a++) {
		status = tune_one(argv[a]);
		if (status)
			return status;
	}
	return 0;
}

static void usage_dump(FILE *f)
{
	fprintf(f,
		"usage: agilectl dump [-s SLOTS] [-r TASK_REG_SIZE] | -g KEY | -p PID [-f FD]\n"
		"Creates agilectl's own context (AGILE_IOC_CTX_INIT: SLOTS slots, default 4,\n"
		"task registers of TASK_REG_SIZE bytes, default %u), maps its two areas\n"
		"and prints every slot decoded: the doorbell (value, sleepers), the\n"
		"task register (opcode, parts, flags, error, status, first arguments),\n"
		"and the context's AGILE_IOC_STATS counters.\n"
		"-p PID: the context of each open file of %s in process PID (only\n"
		"FD with -f), read from /proc/PID/fdinfo/FD: sizes, sleepers, segments,\n"
		"group, counters and its slots in use decoded (the module lists at most\n"
		"32 and counts the rest).  procfs allows it where the caller may ptrace\n"
		"the process: its own user's processes, or any as root.\n"
		"-g KEY: the group with that key (AGILE_GROUP_QUERY: owner, mode,\n"
		"members, sizes, offsets), without joining it (a member that leaves\n"
		"ends the group for every member).\n",
		AGILE_TASK_REG_MIN_SIZE, device_path);
}

static int dump_group(unsigned long long key)
{
	struct agile_group_join query;
	int fd, status = 0;

	fd = open_device(O_RDONLY, &status);
	if (fd < 0)
		return status;
	memset(&query, 0, sizeof(query));
	query.key = key;
	/* Checked as for a join, then replaced by the group's: any valid. */
	query.nr_slots = 1;
	query.task_reg_size = AGILE_TASK_REG_MIN_SIZE;
	query.max_members = 1;
	query.flags = AGILE_GROUP_QUERY;
	if (ioctl(fd, AGILE_IOC_GROUP_JOIN, &query) < 0) {
		int err = errno;

		fprintf(stderr, "agilectl dump: group %#llx: %s%s\n", key,
			strerror(err),
			err == ENOENT ?
				" (no group has this key in agilectl's user and IPC namespaces)" :
			err == EPIPE ?
				" (the group has ended; its key is held until its last member goes)" :
			err == EINVAL ?
				" (a module without AGILE_GROUP_QUERY?)" :
				"");
		close(fd);
		return EXIT_FAILURE;
	}
	close(fd);
	printf("group %#llx\n", key);
	printf("  owner:           uid %u gid %u, mode %04o\n", query.owner_uid,
	       query.owner_gid, query.group_mode);
	printf("  members:         %u of %u\n", query.nr_members,
	       query.max_members);
	printf("  slots:           %u, task registers of %u bytes\n",
	       query.nr_slots, query.task_reg_size);
	printf("  doorbells:       mmap offset %#llx, %llu bytes\n",
	       (unsigned long long)query.doorbell_offset,
	       (unsigned long long)query.doorbell_bytes);
	printf("  task registers:  mmap offset %#llx, %llu bytes\n",
	       (unsigned long long)query.task_reg_offset,
	       (unsigned long long)query.task_reg_bytes);
	printf("The slots are not shown: reading them needs a join, and a member that\n"
	       "leaves ends the group for all of its members.\n");
	return 0;
}

/* @own: the caller's own mapping, whose user words are shown too. */
static void print_slot(unsigned int slot, const struct agile_doorbell *db,
		       const struct agile_task_reg *reg, unsigned int reg_size,
		       int own)
{
	unsigned int nr_args = (reg_size - sizeof(*reg)) / sizeof(reg->args[0]);
	unsigned int a, shown = nr_args < 4 ? nr_args : 4;
	uint32_t value = __atomic_load_n(&db->value, __ATOMIC_ACQUIRE);

	printf("slot %u\n", slot);
	printf("  doorbell:      value=%u (%s) sleepers=%u", value,
	       value == AGILE_DOORBELL_IDLE   ? "idle" :
	       value == AGILE_DOORBELL_POSTED ? "posted" :
						"protocol value",
	       __atomic_load_n(&db->sleepers, __ATOMIC_RELAXED));
	if (own)
		printf(" user[0]=%#x", db->user[0]);
	printf("\n");
	printf("  task register: opcode=%u (%s) nr_parts=%u flags=%#x error=%d error_lane=%u status=%#llx\n",
	       reg->opcode,
	       reg->opcode == AGILE_OP_DISCONNECT ? "DISCONNECT" :
	       reg->opcode >= AGILE_OP_USER_BASE  ? "user" :
						    "reserved",
	       reg->nr_parts, reg->flags, reg->error, reg->error_lane,
	       (unsigned long long)reg->status);
	printf("  args:         ");
	for (a = 0; a < shown; a++)
		printf(" [%u]=%#llx", a, (unsigned long long)reg->args[a]);
	if (shown < nr_args)
		printf(" ... (%u words)", nr_args);
	printf("\n");
}

static void print_stats_line(const struct agile_stats *stats)
{
	printf("stats: signals=%llu waits=%llu wakeups_signal=%llu wakeups_poll=%llu timeouts=%llu interrupted=%llu spin_hits=%llu\n",
	       (unsigned long long)stats->signals,
	       (unsigned long long)stats->waits,
	       (unsigned long long)stats->wakeups_signal,
	       (unsigned long long)stats->wakeups_poll,
	       (unsigned long long)stats->timeouts,
	       (unsigned long long)stats->interrupted,
	       (unsigned long long)stats->spin_hits);
}

/* One "slot:" value of fdinfo, decoded as dump decodes its own slots. */
static int print_fdinfo_slot(const char *line)
{
	union {
		struct agile_task_reg head;
		unsigned char bytes[AGILE_TASK_REG_MIN_SIZE];
	} reg;
	struct agile_doorbell db;
	unsigned long long status, args[4];
	unsigned int slot;

	memset(&db, 0, sizeof(db));
	memset(&reg, 0, sizeof(reg));
	if (sscanf(line,
		   "%u value=%u sleepers=%u opcode=%u nr_parts=%u flags=%x error=%d error_lane=%u status=%llx args=%llx,%llx,%llx,%llx",
		   &slot, &db.value, &db.sleepers, &reg.head.opcode,
		   &reg.head.nr_parts, &reg.head.flags, &reg.head.error,
		   &reg.head.error_lane, &status, &args[0], &args[1], &args[2],
		   &args[3]) != 13)
		return -EINVAL;
	reg.head.status = status;
	memcpy(reg.head.args, args, sizeof(args));
	print_slot(slot, &db, &reg.head, sizeof(reg), 0);
	return 0;
}

/* The context of open file @fd of process @pid, from its fdinfo. */
static int dump_fdinfo(int pid, int fd, char *buf)
{
	unsigned long long in_use, not_shown;
	struct agile_stats stats;
	char comm[32];
	const char *v, *p;
	size_t len;
	int err;

	err = read_fdinfo(pid, fd, buf, FDINFO_MAX);
	if (err) {
		fprintf(stderr, "agilectl dump: /proc/%d/fdinfo/%d: %s%s\n",
			pid, fd, strerror(-err),
			err == -EACCES ?
				" (another user's process: run as root)" :
				"");
		return EXIT_FAILURE;
	}
	read_comm(pid, comm, sizeof(comm));
	v = fdinfo_value(buf, "ctx", &len);
	if (!v) {
		fprintf(stderr,
			"agilectl dump: /proc/%d/fdinfo/%d: no ctx: key (a module without fdinfo?)\n",
			pid, fd);
		return EXIT_FAILURE;
	}
	printf("process %d (%s) fd %d: ", pid, comm, fd);
	if (!isdigit((unsigned char)*v)) {
		printf("no context yet (before CTX_INIT or GROUP_JOIN)\n");
		return 0;
	}
	printf("context %lu: %llu slots, task registers of %llu bytes, %llu pages\n",
	       strtoul(v, NULL, 10), fdinfo_number(buf, "nr_slots"),
	       fdinfo_number(buf, "task_reg_size"),
	       fdinfo_number(buf, "pages"));
	printf("sleepers:       %llu%s\n", fdinfo_number(buf, "sleepers"),
	       fdinfo_number(buf, "ended") ? ", ended (waits fail with EPIPE)" :
					     "");
	printf("segments:       %llu (%llu pages)\n",
	       fdinfo_number(buf, "segments"),
	       fdinfo_number(buf, "segment_pages"));
	v = fdinfo_value(buf, "group", &len);
	if (v && strncmp(v, "none", 4)) {
		size_t mlen;
		const char *mode = fdinfo_value(buf, "group_mode", &mlen);

		printf("group:          %.*s, owner uid %llu gid %llu, mode %.*s, members %llu of %llu, %llu open%s\n",
		       (int)len, v, fdinfo_number(buf, "group_owner_uid"),
		       fdinfo_number(buf, "group_owner_gid"),
		       mode ? (int)mlen : 1, mode ? mode : "?",
		       fdinfo_number(buf, "group_members"),
		       fdinfo_number(buf, "group_max_members"),
		       fdinfo_number(buf, "group_open"),
		       fdinfo_number(buf, "group_ended") ? ", ended" : "");
	} else {
		printf("group:          none\n");
	}
	for (p = buf; (p = strstr(p, "slot:\t")); p++) {
		if (p != buf && p[-1] != '\n')
			continue;
		if (print_fdinfo_slot(p + 6))
			printf("slot ? (unparsed: %.*s)\n",
			       (int)strcspn(p + 6, "\n"), p + 6);
	}
	in_use = fdinfo_number(buf, "slots_in_use");
	not_shown = fdinfo_number(buf, "slots_not_shown");
	printf("slots in use:   %llu (a doorbell value, sleeper or task register head not zero)",
	       in_use);
	if (not_shown)
		printf("; %llu more not listed by the module", not_shown);
	printf("\n");
	fdinfo_stats(buf, &stats);
	print_stats_line(&stats);
	return 0;
}

/* Every open file of the device in process @pid, or only @only_fd. */
static int dump_process(int pid, int only_fd)
{
	int status = 0, found = 0;
	struct dirent *f;
	char path[64];
	dev_t rdev;
	char *buf;
	DIR *fds;

	if (agile_rdev(&rdev)) {
		fprintf(stderr,
			"agilectl dump: %s/dev and %s: the agile module is not loaded\n",
			sysfs_dir, device_path);
		return EXIT_NODEV;
	}
	buf = malloc(FDINFO_MAX);
	if (!buf)
		return EXIT_FAILURE;
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	fds = opendir(path);
	if (!fds) {
		fprintf(stderr, "agilectl dump: %s: %s%s\n", path,
			strerror(errno),
			errno == ENOENT ?
				" (no such process)" :
			errno == EACCES ?
				" (another user's process: run as root)" :
				"");
		free(buf);
		return EXIT_FAILURE;
	}
	while ((f = readdir(fds))) {
		int fd;

		if (!is_number(f->d_name))
			continue;
		fd = atoi(f->d_name);
		if ((only_fd >= 0 && fd != only_fd) ||
		    !is_agile_fd(pid, fd, rdev))
			continue;
		if (found++)
			printf("\n");
		if (dump_fdinfo(pid, fd, buf))
			status = EXIT_FAILURE;
	}
	closedir(fds);
	free(buf);
	if (!found) {
		if (only_fd >= 0)
			fprintf(stderr,
				"agilectl dump: process %d: fd %d is not an open file of %s\n",
				pid, only_fd, device_path);
		else
			fprintf(stderr,
				"agilectl dump: process %d holds no open file of %s\n",
				pid, device_path);
		return EXIT_FAILURE;
	}
	return status;
}

static int cmd_dump(int argc, char **argv)
{
	struct agile_ctx_init init;
	struct agile_stats stats;
	unsigned long slots = 4, reg_size = AGILE_TASK_REG_MIN_SIZE;
	unsigned long long key = 0;
	int have_key = 0, fd, opt, status = 0;
	long pid = -1, only_fd = -1;
	char *doorbells, *regs, *end;
	unsigned int s;

	static const struct option opts[] = {
		{ "slots", required_argument, NULL, 's' },
		{ "task-reg-size", required_argument, NULL, 'r' },
		{ "group", required_argument, NULL, 'g' },
		{ "pid", required_argument, NULL, 'p' },
		{ "fd", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};

	optind = 1;
	while ((opt = getopt_long(argc, argv, "s:r:g:p:f:h", opts, NULL)) !=
	       -1) {
		switch (opt) {
		case 's':
			slots = strtoul(optarg, &end, 0);
			if (*end || slots < 1 || slots > 65536) {
				fprintf(stderr,
					"agilectl dump: -s %s: 1 to 65536 slots\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'r':
			reg_size = strtoul(optarg, &end, 0);
			if (*end || reg_size < AGILE_TASK_REG_MIN_SIZE ||
			    reg_size > AGILE_TASK_REG_MAX_SIZE ||
			    (reg_size & (reg_size - 1))) {
				fprintf(stderr,
					"agilectl dump: -r %s: a power of two from %u to %u\n",
					optarg, AGILE_TASK_REG_MIN_SIZE,
					AGILE_TASK_REG_MAX_SIZE);
				return EXIT_USAGE;
			}
			break;
		case 'g':
			key = strtoull(optarg, &end, 0);
			if (*end || !*optarg) {
				fprintf(stderr,
					"agilectl dump: -g %s: a 64-bit key\n",
					optarg);
				return EXIT_USAGE;
			}
			have_key = 1;
			break;
		case 'p':
		case 'f':
			if (opt == 'p')
				pid = strtol(optarg, &end, 10);
			else
				only_fd = strtol(optarg, &end, 10);
			if (*end || !*optarg ||
			    (opt == 'p' ? pid < 1 : only_fd < 0) ||
			    (opt == 'p' ? pid : only_fd) > INT_MAX) {
				fprintf(stderr, "agilectl dump: -%c %s: a %s\n",
					opt, optarg,
					opt == 'p' ? "process id" :
						     "file descriptor");
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage_dump(stdout);
			return 0;
		default:
			usage_dump(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		usage_dump(stderr);
		return EXIT_USAGE;
	}
	if (only_fd >= 0 && pid < 0) {
		fprintf(stderr, "agilectl dump: -f needs -p PID\n");
		return EXIT_USAGE;
	}
	if (have_key && pid > 0) {
		fprintf(stderr,
			"agilectl dump: -g and -p exclude each other\n");
		return EXIT_USAGE;
	}
	if (have_key)
		return dump_group(key);
	if (pid > 0)
		return dump_process((int)pid, (int)only_fd);

	fd = open_device(O_RDWR, &status);
	if (fd < 0)
		return status;
	memset(&init, 0, sizeof(init));
	init.nr_slots = (uint32_t)slots;
	init.task_reg_size = (uint32_t)reg_size;
	if (ioctl(fd, AGILE_IOC_CTX_INIT, &init) < 0) {
		fprintf(stderr, "agilectl dump: AGILE_IOC_CTX_INIT: %s%s\n",
			strerror(errno),
			errno == ENOSPC ?
				" (above max_slots, or max_contexts_per_user reached)" :
			errno == ENOMEM ? " (over RLIMIT_MEMLOCK?)" :
					  "");
		close(fd);
		return EXIT_FAILURE;
	}
	doorbells = mmap(NULL, init.doorbell_bytes, PROT_READ, MAP_SHARED, fd,
			 (off_t)init.doorbell_offset);
	regs = mmap(NULL, init.task_reg_bytes, PROT_READ, MAP_SHARED, fd,
		    (off_t)init.task_reg_offset);
	if (doorbells == MAP_FAILED || regs == MAP_FAILED) {
		fprintf(stderr, "agilectl dump: mmap: %s\n", strerror(errno));
		close(fd);
		return EXIT_FAILURE;
	}
	memset(&stats, 0, sizeof(stats));
	if (ioctl(fd, AGILE_IOC_STATS, &stats) < 0) {
		fprintf(stderr, "agilectl dump: AGILE_IOC_STATS: %s\n",
			strerror(errno));
		close(fd);
		return EXIT_FAILURE;
	}
	printf("agilectl's own context: %lu slots, task registers of %lu bytes\n",
	       slots, reg_size);
	printf("doorbells:      mmap offset %#llx, %llu bytes\n",
	       (unsigned long long)init.doorbell_offset,
	       (unsigned long long)init.doorbell_bytes);
	printf("task registers: mmap offset %#llx, %llu bytes\n",
	       (unsigned long long)init.task_reg_offset,
	       (unsigned long long)init.task_reg_bytes);
	printf("(another process's context: agilectl dump -p PID)\n");
	for (s = 0; s < slots; s++)
		print_slot(
			s,
			(const struct agile_doorbell
				 *)(doorbells +
				    (size_t)s * AGILE_DOORBELL_STRIDE),
			(const struct agile_task_reg *)(regs +
							(size_t)s * reg_size),
			(unsigned int)reg_size, 1);
	print_stats_line(&stats);
	munmap(doorbells, init.doorbell_bytes);
	munmap(regs, init.task_reg_bytes);
	close(fd);
	return 0;
}

static void usage_trace(FILE *f)
{
	fprintf(f,
		"usage: agilectl trace [-n COUNT] [-t TRACEFS]\n"
		"Enables the module's tracepoints (agile_signal, agile_wait_start,\n"
		"agile_wait_end) in a trace instance of its own under TRACEFS\n"
		"(default /sys/kernel/tracing, else /sys/kernel/debug/tracing) and prints\n"
		"each event decoded (comparisons by name, flags by name, a wait's result\n"
		"as an errno name) until Ctrl-C or COUNT events; removes the instance on\n"
		"exit.  Needs root (tracefs).  The global trace buffer is left alone.\n");
}

static const char *errno_name(int err)
{
	switch (err) {
	case 0:
		return "0";
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case EINTR:
		return "EINTR";
	case EPIPE:
		return "EPIPE";
	case EINVAL:
		return "EINVAL";
	case EFAULT:
		return "EFAULT";
	case 512: /* ERESTARTSYS: the kernel restarts the call */
		return "ERESTARTSYS";
	default:
		return NULL;
	}
}

/* Rewrite "key=value" fields of one event line into a readable form. */
static void decode_event(const char *line)
{
	const char *event = strstr(line, "agile_");
	char out[1024];
	size_t o = 0;
	const char *p;

	if (!event) {
		fputs(line, stdout);
		return;
	}
	/* The task, CPU and timestamp before the event stay as they are. */
	for (p = line; *p && o < sizeof(out) - 64;) {
		unsigned long v;
		long sv;
		char *end;

		if (!strncmp(p, " cmp=", 5) && p > event) {
			v = strtoul(p + 5, &end, 10);
			o += (size_t)snprintf(out + o, sizeof(out) - o,
					      " cmp=%s",
					      v < 6 ? cmp_names[v] : "?");
			p = end;
		} else if (!strncmp(p, " ret=", 5) && p > event) {
			const char *name;

			sv = strtol(p + 5, &end, 10);
			name = errno_name((int)-sv);
			if (name)
				o += (size_t)snprintf(out + o, sizeof(out) - o,
						      " ret=%s", name);
			else
				o += (size_t)snprintf(out + o, sizeof(out) - o,
						      " ret=%ld", sv);
			p = end;
		} else if (!strncmp(p, " flags=", 7) && p > event) {
			v = strtoul(p + 7, &end, 16);
			o += (size_t)snprintf(
				out + o, sizeof(out) - o, " flags=%s%s%s",
				v & AGILE_SIGNAL_WAKE_ONLY ? "WAKE_ONLY" : "",
				(v & AGILE_SIGNAL_WAKE_ONLY) &&
						(v & AGILE_WAIT_ABSTIME) ?
					"|" :
					"",
				v & AGILE_WAIT_ABSTIME	      ? "ABSTIME" :
				!(v & AGILE_SIGNAL_WAKE_ONLY) ? "0" :
								"");
			p = end;
		} else if (!strncmp(p, " timeout_ns=", 12) && p > event) {
			unsigned long long t = strtoull(p + 12, &end, 10);

			if (t == AGILE_TIMEOUT_INFINITE)
				o += (size_t)snprintf(out + o, sizeof(out) - o,
						      " timeout=infinite");
			else
				o += (size_t)snprintf(out + o, sizeof(out) - o,
						      " timeout=%.3fms",
						      (double)t / 1e6);
			p = end;
		} else {
			out[o++] = *p++;
		}
	}
	out[o] = '\0';
	fputs(out, stdout);
}

static char trace_instance[PATH_MAX / 2];

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	int fd, ret = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int cmd_trace(int argc, char **argv)
{
	const char *tracefs = NULL;
	long count = -1, seen = 0;
	char path[PATH_MAX], *end;
	FILE *pipe;
	char line[1024];
	int opt, err;

	static const struct option opts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "tracefs", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};

	optind = 1;
	while ((opt = getopt_long(argc, argv, "n:t:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			count = strtol(optarg, &end, 10);
			if (*end || count < 1) {
				fprintf(stderr,
					"agilectl trace: -n %s: a count of 1 or more\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 't':
			tracefs = optarg;
			break;
		case 'h':
			usage_trace(stdout);
			return 0;
		default:
			usage_trace(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		usage_trace(stderr);
		return EXIT_USAGE;
	}
	if (!tracefs) {
		tracefs = "/sys/kernel/tracing";
		if (access("/sys/kernel/tracing/instances", F_OK) < 0)
			tracefs = "/sys/kernel/debug/tracing";
	}
	snprintf(path, sizeof(path), "%s/events/agile", tracefs);
	if (access(path, F_OK) < 0) {
		err = errno;
		fprintf(stderr, "agilectl trace: %s: %s (%s)\n", path,
			strerror(err),
			err == EACCES ?
				"tracefs needs root" :
			access(tracefs, F_OK) == 0 ?
				"the agile module is not loaded" :
				"tracefs is not mounted: mount -t tracefs nodev /sys/kernel/tracing");
		return err == EACCES ? EXIT_FAILURE : EXIT_NODEV;
	}
	snprintf(trace_instance, sizeof(trace_instance),
		 "%s/instances/agilectl-%d", tracefs, (int)getpid());
	if (mkdir(trace_instance, 0700) < 0) {
		fprintf(stderr, "agilectl trace: mkdir %s: %s%s\n",
			trace_instance, strerror(errno),
			errno == EACCES || errno == EPERM ?
				" (tracefs needs root)" :
				"");
		return EXIT_FAILURE;
	}
	catch_interrupts();
	err = write_file(trace_instance, "events/agile/enable", "1");
	if (err) {
		fprintf(stderr, "agilectl trace: %s/events/agile/enable: %s\n",
			trace_instance, strerror(-err));
		rmdir(trace_instance);
		return EXIT_FAILURE;
	}
	snprintf(path, sizeof(path), "%s/trace_pipe", trace_instance);
	pipe = fopen(path, "re");
	if (!pipe) {
		fprintf(stderr, "agilectl trace: %s: %s\n", path,
			strerror(errno));
		write_file(trace_instance, "events/agile/enable", "0");
		rmdir(trace_instance);
		return EXIT_FAILURE;
	}
	fprintf(stderr,
		"agilectl trace: tracing agile events in %s; Ctrl-C stops\n",
		trace_instance);
	while (!interrupted && (count < 0 || seen < count)) {
		if (!fgets(line, sizeof(line), pipe)) {
			if (ferror(pipe) && errno == EINTR && !interrupted) {
				clearerr(pipe);
				continue;
			}
			break;
		}
		if (!strstr(line, "agile_"))
			continue;
		decode_event(line);
		fflush(stdout);
		seen++;
	}
	fclose(pipe);
	write_file(trace_instance, "events/agile/enable", "0");
	if (rmdir(trace_instance) < 0)
		fprintf(stderr, "agilectl trace: rmdir %s: %s\n",
			trace_instance, strerror(errno));
	fprintf(stderr, "agilectl trace: %ld events\n", seen);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: agilectl [-D DEVICE] [-S SYSFS] COMMAND [ARGS]\n"
		"       agilectl --version\n"
		"Look at and tune the agile module.\n"
		"  info                 libagile's backend; ABI version, features, limits, tunables\n"
		"  stats [-d S] [-n N]  module and context counters, like top\n"
		"  tune [NAME=VALUE]    list or set a sysfs tunable (root)\n"
		"  dump [-s N] [-g KEY] [-p PID] a fresh context's slots, a group's\n"
		"                       facts, or a process's contexts\n"
		"  trace [-n N]         the module's tracepoints, decoded (root)\n"
		"Each command takes --help.  -D: the device (default /dev/agile);\n"
		"-S: its sysfs directory (default /sys/class/misc/agile).\n"
		"Exit status: 0 success, 1 failure, 2 usage, 3 no usable device.\n");
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int argc, char **argv);
	} commands[] = {
		{ "info", cmd_info },	{ "stats", cmd_stats },
		{ "tune", cmd_tune },	{ "dump", cmd_dump },
		{ "trace", cmd_trace },
	};
	unsigned int i;
	int a = 1;

	while (a < argc && argv[a][0] == '-') {
		if (!strcmp(argv[a], "-h") || !strcmp(argv[a], "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[a], "--version")) {
			printf("agilectl %s\n", AGILE_PROJECT_VERSION);
			return 0;
		}
		if (!strcmp(argv[a], "-D") && a + 1 < argc) {
			device_path = argv[a + 1];
			a += 2;
		} else if (!strcmp(argv[a], "-S") && a + 1 < argc) {
			sysfs_dir = argv[a + 1];
			a += 2;
		} else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (a == argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!strcmp(argv[a], commands[i].name))
			return commands[i].run(argc - a, argv + a);
	}
	fprintf(stderr, "agilectl: %s: no such command\n", argv[a]);
	usage(stderr);
	return EXIT_USAGE;
}
