// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz - agile's own structure-aware fuzzer of /dev/agile (ioctl and mmap).
 *
 *   fuzz [-s SEED] [-t SECONDS | -n ITERATIONS] [-w WORKERS] [-T THREADS] [-D] [-H]
 *
 * The environment gives the defaults of -t and -s: AGILE_FUZZ_SECONDS
 * (else 10) and AGILE_FUZZ_SEED (else a random seed), so that the guests'
 * runner (selftests/kmod/run.sh) starts it as one plain command;
 * AGILE_FUZZ_HARDENED=1 is -H.
 *
 * Three behaviours of the module are detected at start, and the checks
 * follow what was found: state changes on O_RDONLY files refused (EBADF)
 * or allowed, timeouts above KTIME_MAX EINVAL or accepted, WAIT restarted
 * after SIGSTOP and SIGCONT or failing with EINTR.  -H requires the first
 * of each pair (issue 9's hardened ABI) and fails the run otherwise, and
 * that an O_RDONLY file's bad arguments fail as they would on any file,
 * not with EBADF (the arguments are checked before the access mode).
 *
 * trinity knows nothing of agile's ioctls, so this program does what it
 * would with them.  WORKERS processes of THREADS threads each pick random
 * operations over a shared pool of files, mappings and dma-bufs:
 *
 * - every ioctl with a valid struct (built from the file's known state),
 *   the same with one to three fields mutated (boundary values, bit flips,
 *   random values), with bad user pointers (NULL, a kernel address, a
 *   PROT_NONE page, a struct straddling into one, a read-only page), with
 *   short WAIT_ANY arrays, and unknown ioctl numbers of agile's type;
 * - mmap with the right and wrong offsets, lengths, flags and PROT_EXEC,
 *   MAP_PRIVATE, MAP_FIXED over an old mapping; munmap (whole and part),
 *   mremap, mprotect, madvise (MADV_DONTNEED and friends), mlock;
 * - plain loads and stores on the mapped doorbells and task registers,
 *   which the poller sees; dma-buf exports, their mmap, DMA_BUF_IOCTL_SYNC,
 *   closed early; sysfs reads and bad writes; reads of the files'
 *   /proc/self/fdinfo, which must name the file's context and stay
 *   bounded whatever the slots hold;
 * - scenarios with exact expectations on private files: a context's
 *   lifecycle, groups joined by forked children that are SIGKILLed (or
 *   stopped and continued) at random points, close while a thread waits,
 *   fork while mapped.
 *
 * Waits are bounded: a kicker thread per worker interrupts (SIGUSR1, a
 * handler without SA_RESTART) any wait that runs past its limit, so even
 * AGILE_TIMEOUT_INFINITE and huge timeouts end.  The parent is a watchdog:
 * an operation that runs for more than a minute fails the run, with the
 * stuck thread's kernel stack, and so does a child not reaped after
 * SIGKILL.
 *
 * Besides "no crash", every result is checked against the ABI
 * (uapi/linux/agile.h): an errno outside the documented set for that
 * ioctl, success of a struct that the ABI says is invalid (a non-zero
 * reserved field, a flag outside the mask, ...), ENOTTY for every unknown
 * number of agile's type, EFAULT for unreadable structs, sane from-kernel
 * fields, and once everything is closed, sysfs contexts and groups back
 * where they started.  The kernel's own splats (BUG, WARNING, KASAN,
 * lockdep) fail the guest run in tools/vm/init.
 *
 * The run is deterministic from the seed as far as scheduling allows: each
 * thread's choices come from its own generator seeded from SEED, the
 * worker and the thread; -w 1 -T 1 -n N replays one sequence exactly.
 *
 * Output: TAP, one test line; per-operation counts (with their errnos) as
 * diagnostics.  Runs as root in the test guests (it lowers max_slots and
 * max_segment_bytes through sysfs for its run, so that it fits in a small
 * guest, and restores them).
 *
 * The ABI knowledge lives in one place: the tables "ABI model" below, one
 * entry per ioctl with its struct's fields, its documented errnos and a
 * verdict function (what the ABI says a given struct must get).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/agile.h>
#include <linux/dma-buf.h>

#define DEV_PATH "/dev/agile"
#define SYSFS_DIR "/sys/class/misc/agile"

#define MAX_WORKERS 16
#define MAX_THREADS 8
#define MAX_FILES 12 /* per worker */
#define MAX_MAPS 24 /* per worker */
#define MAX_MSGS 64
#define MAX_KINDS 64
#define MSGS_PER_KIND 3
#define MSG_LEN 320
#define NR_ERR 136 /* errno histogram: 0 success, 1..134, other */

#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_SEC 1000000000ULL
#define KTIME_MAX_NS ((uint64_t)INT64_MAX)

/* The limits the fuzzer sets for its run, so that a small guest copes. */
#define FUZZ_MAX_SLOTS 1024
#define FUZZ_MAX_SEGMENT_BYTES (1U << 20)

/* An operation running longer than this is stuck: the watchdog fires. */
#define STUCK_NS (60 * NSEC_PER_SEC)
/* How long a SIGKILLed child may take to be reaped. */
#define REAP_NS (20 * NSEC_PER_SEC)
/* A wait running past its own timeout by this much is kicked. */
#define KICK_AFTER_NS (40 * NSEC_PER_MSEC)

/* The errnos that only the kernel's insides may use (ERESTARTSYS, ...). */
#define KERNEL_INTERNAL_ERRNO 512

/* ------------------------------------------------------------------ */
/* Random numbers: splitmix64 to seed, xorshift64* to draw. */

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rng_seed(uint64_t seed, uint64_t a, uint64_t b)
{
	uint64_t s = seed ^ (a * 0x100000001b3ULL) ^ (b << 40);
	uint64_t r = splitmix64(&s);

	return r ? r : 1;
}

static uint64_t rnd64(uint64_t *rng)
{
	uint64_t x = *rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static uint32_t rnd_below(uint64_t *rng, uint32_t n)
{
	return n ? (uint32_t)((rnd64(rng) >> 32) % n) : 0;
}

static bool rnd_pct(uint64_t *rng, uint32_t pct)
{
	return rnd_below(rng, 100) < pct;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / NSEC_PER_SEC),
		.tv_nsec = (long)(ns % NSEC_PER_SEC),
	};

	/* The kicker's SIGUSR1 may land here: sleep on. */
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ------------------------------------------------------------------ */
/* Operations and the shared report. */

enum op {
	OP_IDLE,
	OP_OPEN,
	OP_CLOSE,
	OP_IOCTL, /* a valid struct */
	OP_MUTATE, /* one to three fields mutated */
	OP_BADPTR, /* bad user pointers */
	OP_BADCMD, /* unknown ioctl numbers */
	OP_MMAP,
	OP_MMAP_BAD,
	OP_MUNMAP,
	OP_MREMAP,
	OP_MPROTECT,
	OP_MADVISE,
	OP_TOUCH, /* loads and stores on mapped pages */
	OP_DMABUF, /* ioctls and mmap on exported dma-bufs */
	OP_SYSFS,
	OP_FDINFO, /* /proc/self/fdinfo of an agile file */
	OP_SCN_CTX, /* scenario: a context's lifecycle */
	OP_SCN_GROUP, /* scenario: group, forked members killed */
	OP_SCN_CLOSE_WAIT, /* scenario: close while a thread waits */
	OP_SCN_FORK, /* scenario: fork while mapped */
	OP_KICK, /* the kicker's signals */
	NR_OPS
};

static const char *const op_names[NR_OPS] = {
	[OP_IDLE] = "idle",
	[OP_OPEN] = "open",
	[OP_CLOSE] = "close",
	[OP_IOCTL] = "ioctl-valid",
	[OP_MUTATE] = "ioctl-mutated",
	[OP_BADPTR] = "ioctl-bad-pointer",
	[OP_BADCMD] = "ioctl-unknown-number",
	[OP_MMAP] = "mmap",
	[OP_MMAP_BAD] = "mmap-bad",
	[OP_MUNMAP] = "munmap",
	[OP_MREMAP] = "mremap",
	[OP_MPROTECT] = "mprotect",
	[OP_MADVISE] = "madvise",
	[OP_TOUCH] = "touch-mapped-pages",
	[OP_DMABUF] = "dmabuf",
	[OP_SYSFS] = "sysfs",
	[OP_FDINFO] = "fdinfo",
	[OP_SCN_CTX] = "scenario-context",
	[OP_SCN_GROUP] = "scenario-group-kill",
	[OP_SCN_CLOSE_WAIT] = "scenario-close-while-waiting",
	[OP_SCN_FORK] = "scenario-fork-while-mapped",
	[OP_KICK] = "kick-waiter",
};

/* Relative weights of the operations a thread picks. */
static const unsigned int op_weights[NR_OPS] = {
	[OP_OPEN] = 30,	   [OP_CLOSE] = 20,    [OP_IOCTL] = 200,
	[OP_MUTATE] = 250, [OP_BADPTR] = 50,   [OP_BADCMD] = 30,
	[OP_MMAP] = 60,	   [OP_MMAP_BAD] = 40, [OP_MUNMAP] = 25,
	[OP_MREMAP] = 15,  [OP_MPROTECT] = 15, [OP_MADVISE] = 20,
	[OP_TOUCH] = 80,   [OP_DMABUF] = 20,   [OP_SYSFS] = 4,
	[OP_SCN_CTX] = 6,  [OP_SCN_GROUP] = 3, [OP_SCN_CLOSE_WAIT] = 4,
	[OP_SCN_FORK] = 3, [OP_FDINFO] = 20,
};

/* What a thread is doing, for the watchdog. */
struct tslot {
	uint32_t op;
	uint32_t tid;
	uint64_t iter;
	uint64_t op_start_ns;
};

struct desc;
#define NR_DESCS 10

/* Lives in a MAP_SHARED page: workers and their children write to it. */
struct report {
	uint64_t hist[NR_OPS + NR_DESCS][NR_ERR];
	uint64_t iterations;
	uint64_t violations;
	/* Violations by kind (their format string), the first few of each. */
	const char *kinds[MAX_KINDS];
	uint64_t kind_count[MAX_KINDS];
	uint32_t nr_msgs;
	char msgs[MAX_MSGS][MSG_LEN];
	uint32_t worker_pid[MAX_WORKERS];
	struct tslot ts[MAX_WORKERS][MAX_THREADS];
};

static struct report *report;

/* Options and facts fixed before the workers fork. */
static struct {
	uint64_t seed;
	unsigned int seconds;
	uint64_t iterations; /* 0: run for @seconds */
	unsigned int workers;
	unsigned int threads;
	uint64_t deadline_ns;
	long page;
	struct agile_info info;
	/* Detected once: the module refuses state changes on O_RDONLY. */
	bool ro_refused;
	/* Detected once: a timeout above KTIME_MAX is EINVAL. */
	bool timeout_strict;
	/* Detected once: WAIT goes on after SIGSTOP and SIGCONT. */
	bool wait_restarts;
	dev_t rdev; /* /dev/agile's device number */
	bool check_maps; /* -D: check the pool against /proc/self/maps */
	bool hardened; /* -H: require the hardened ABI */
} opt;

static void count(unsigned int counter, int err)
{
	unsigned int slot = err <= 0 ? 0 : err < NR_ERR - 1 ? err : NR_ERR - 1;

	__atomic_fetch_add(&report->hist[counter][slot], 1, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */
/* Files, mappings, threads and workers. */

enum fkind { FK_AGILE, FK_DMABUF };

/*
 * An open file of the pool.  Its model (has_ctx and what follows) is
 * under the worker's lock; has_ctx never goes back to false, and nr_slots
 * and task_reg_size never change once it is set.  @closed is set, under
 * the lock, before the fd is closed: a user that finds it set after its
 * call cannot tell which file the fd number named then, and checks
 * nothing.
 */
struct fent {
	int fd;
	int kind;
	int oflags;
	bool readable, writable;
	int refs;
	bool closed;
	bool has_ctx, group;
	uint32_t nr_slots, task_reg_size;
	uint64_t db_bytes, tr_bytes;
	uint32_t nr_segs;
	uint64_t seg_bytes[AGILE_MAX_SEGMENTS];
	uint64_t dmabuf_bytes;
};

enum mkind { MK_DOORBELLS, MK_TASK_REGS, MK_SEGMENT, MK_DMABUF };

/* A mapping of the pool; a thread takes it out of the pool to use it. */
struct ment {
	char *addr;
	size_t len;
	int prot;
	int kind;
	bool zapped; /* MADV_DONTNEED: every access is SIGBUS */
	bool holes; /* grew past its pages: no access */
	bool dofork; /* MADV_DOFORK: a child inherits it */
	bool trusted; /* its file was not closed under us at mmap time */
};

struct worker;

struct thread {
	struct worker *w;
	unsigned int idx;
	uint64_t rng;
	uint64_t iter;
	char *arena;
	struct tslot *slot;
	pthread_t pt;
	/* The kicker's view: set around every wait. */
	int in_wait;
	uint64_t wait_limit_ns;
};

struct worker {
	unsigned int idx;
	pthread_mutex_t lock;
	struct fent *files[MAX_FILES];
	unsigned int nr_files;
	struct ment *maps[MAX_MAPS];
	unsigned int nr_maps;
	struct thread th[MAX_THREADS];
	unsigned int nr_threads;
	int stop_kicker;
	uint32_t key_counter;
	uint64_t kicker_rng;
};

/* The thread running now, for the fault handler and violation(). */
static __thread struct thread *self;
static __thread sigjmp_buf probe_jb;
static __thread volatile int probing;
/* In a forked child: its name for messages. */
static __thread const char *child_name;

static void violation(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void violation(const char *fmt, ...)
{
	char buf[MSG_LEN];
	uint32_t slot, kind;
	va_list ap;
	int len;

	if (self && !child_name)
		len = snprintf(buf, sizeof(buf),
			       "w%u.t%u iter %" PRIu64 " %s: ", self->w->idx,
			       self->idx, self->iter, op_names[self->slot->op]);
	else
		len = snprintf(buf, sizeof(buf), "%s (pid %d): ",
			       child_name ? child_name : "fuzz", getpid());
	va_start(ap, fmt);
	vsnprintf(buf + len, sizeof(buf) - (size_t)len, fmt, ap);
	va_end(ap);
	__atomic_fetch_add(&report->violations, 1, __ATOMIC_RELAXED);
	/* Workers and children are forks: the same @fmt, the same pointer. */
	for (kind = 0; kind < MAX_KINDS; kind++) {
		const char *old = NULL;

		if (__atomic_compare_exchange_n(&report->kinds[kind], &old, fmt,
						false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE) ||
		    old == fmt)
			break;
	}
	if (kind < MAX_KINDS &&
	    __atomic_fetch_add(&report->kind_count[kind], 1,
			       __ATOMIC_RELAXED) >= MSGS_PER_KIND)
		return;
	slot = __atomic_fetch_add(&report->nr_msgs, 1, __ATOMIC_RELAXED);
	if (slot < MAX_MSGS)
		memcpy(report->msgs[slot], buf, sizeof(buf));
}

static const char *errname(int err)
{
	const char *name = err ? strerrorname_np(err) : "0";

	return name ? name : "E?";
}

/* ------------------------------------------------------------------ */
/* Faults on purpose: loads and stores that may hit SIGBUS or SIGSEGV. */

static void fault_handler(int sig)
{
	if (probing)
		siglongjmp(probe_jb, sig);
	/* A fault outside a probe: die of it, the parent reports it. */
	signal(sig, SIG_DFL);
}

static void kick_handler(int sig)
{
	(void)sig;
}

/* 0, or the signal that the access raised. */
static int probe(volatile uint32_t *p, bool write, uint32_t value,
		 uint32_t *out)
{
	int sig;

	probing = 1;
	sig = sigsetjmp(probe_jb, 1);
	if (!sig) {
		if (write)
			__atomic_store_n(p, value, __ATOMIC_RELEASE);
		else if (out)
			*out = __atomic_load_n(p, __ATOMIC_ACQUIRE);
		else
			(void)*p;
	}
	probing = 0;
	return sig;
}

static void install_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fault_handler;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	/* No SA_RESTART: a kicked wait ends with EINTR. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kick_handler;
	sigaction(SIGUSR1, &sa, NULL);
}

/* ------------------------------------------------------------------ */
/* The pool of files and mappings of a worker. */

static void lock(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
}

static void unlock(struct worker *w)
{
	pthread_mutex_unlock(&w->lock);
}

static unsigned int count_files(struct worker *w, int kind)
{
	unsigned int i, n = 0;

	for (i = 0; i < w->nr_files; i++)
		if (kind < 0 || w->files[i]->kind == kind)
			n++;
	return n;
}

/* A reference on a random file of @kind (-1: any), its model in @snap. */
static struct fent *file_get(struct thread *t, int kind, struct fent *snap)
{
	struct worker *w = t->w;
	struct fent *f = NULL;
	unsigned int i, pick;

	lock(w);
	pick = count_files(w, kind);
	if (pick) {
		pick = rnd_below(&t->rng, pick);
		for (i = 0; i < w->nr_files; i++) {
			if (kind >= 0 && w->files[i]->kind != kind)
				continue;
			if (!pick--) {
				f = w->files[i];
				break;
			}
		}
		f->refs++;
		*snap = *f;
	}
	unlock(w);
	return f;
}

static void file_put(struct worker *w, struct fent *f)
{
	bool last;

	lock(w);
	last = !--f->refs && f->closed;
	unlock(w);
	if (last)
		free(f);
}

/* Was @f closed while we used its fd number?  Then nothing is checked. */
static bool file_stale(struct fent *f)
{
	return __atomic_load_n(&f->closed, __ATOMIC_ACQUIRE);
}

/* Put a new fd into the pool; a full pool closes it instead. */
static struct fent *file_add(struct worker *w, int fd, int kind, int oflags)
{
	struct fent *f = calloc(1, sizeof(*f));

	if (!f) {
		close(fd);
		return NULL;
	}
	f->fd = fd;
	f->kind = kind;
	f->oflags = oflags;
	f->readable = (oflags & O_ACCMODE) != O_WRONLY;
	f->writable = (oflags & O_ACCMODE) != O_RDONLY;
	lock(w);
	if (w->nr_files == MAX_FILES) {
		unlock(w);
		close(fd);
		free(f);
		return NULL;
	}
	w->files[w->nr_files++] = f;
	unlock(w);
	return f;
}

/* Close a random file, whoever else is using it. */
static void file_close_random(struct thread *t)
{
	struct worker *w = t->w;
	struct fent *f;
	unsigned int i;
	bool last;
	int fd;

	lock(w);
	if (!w->nr_files) {
		unlock(w);
		return;
	}
	i = rnd_below(&t->rng, w->nr_files);
	f = w->files[i];
	w->files[i] = w->files[--w->nr_files];
	__atomic_store_n(&f->closed, true, __ATOMIC_RELEASE);
	fd = f->fd;
	last = !f->refs;
	unlock(w);
	count(OP_CLOSE, close(fd) ? errno : 0);
	if (last)
		free(f);
}

/* Take a random mapping out of the pool: it is ours until returned. */
static struct ment *map_take(struct thread *t)
{
	struct worker *w = t->w;
	struct ment *m = NULL;
	unsigned int i;

	lock(w);
	if (w->nr_maps) {
		i = rnd_below(&t->rng, w->nr_maps);
		m = w->maps[i];
		w->maps[i] = w->maps[--w->nr_maps];
	}
	unlock(w);
	return m;
}

static void map_drop(struct ment *m)
{
	munmap(m->addr, m->len);
	free(m);
}

static void map_return(struct worker *w, struct ment *m)
{
	lock(w);
	if (w->nr_maps < MAX_MAPS) {
		w->maps[w->nr_maps++] = m;
		m = NULL;
	}
	unlock(w);
	if (m)
		map_drop(m);
}

static void map_add(struct worker *w, void *addr, size_t len, int prot,
		    int kind, bool trusted)
{
	struct ment *m = calloc(1, sizeof(*m));

	if (!m) {
		munmap(addr, len);
		return;
	}
	m->addr = addr;
	m->len = len;
	m->prot = prot;
	m->kind = kind;
	m->trusted = trusted;
	map_return(w, m);
}

/* ------------------------------------------------------------------ */
/* The thread's arena: where structs and WAIT_ANY arrays are placed.
 *
 *   page 0  RW    structs
 *   page 1  NONE  guard: a struct at the end of page 0 straddles into it
 *   page 2  RO    read-only structs
 *   page 3  RW    WAIT_ANY conditions
 *   page 4  NONE  guard: short WAIT_ANY arrays end here
 */
#define ARENA_PAGES 5

static char *arena_page(struct thread *t, unsigned int n)
{
	return t->arena + (size_t)n * (size_t)opt.page;
}

/* 1 readable (writable with @write), 0 certainly not, -1 unknown. */
static int user_access_ok(struct thread *t, uint64_t addr, uint64_t len,
			  bool write)
{
	uint64_t a = (uintptr_t)t->arena, p = (uint64_t)opt.page;
	uint64_t end = addr + len;
	unsigned int g;

	if (!len)
		return 1;
	if (end < addr || addr >= 0x8000000000000000ULL)
		return 0;
	if (end <= 65536) /* below mmap_min_addr */
		return 0;
	if (addr >= a && end <= a + ARENA_PAGES * p) {
		for (g = 0; g < ARENA_PAGES; g++) {
			uint64_t lo = a + g * p, hi = lo + p;
			bool bad = g == 1 || g == 4 || (write && g == 2);

			if (bad && addr < hi && end > lo)
				return 0;
		}
		return 1;
	}
	return -1;
}

/* Write @len bytes into the read-only page at @off. */
static void *arena_rdonly_put(struct thread *t, size_t off, const void *src,
			      size_t len)
{
	char *page = arena_page(t, 2);

	mprotect(page, (size_t)opt.page, PROT_READ | PROT_WRITE);
	memcpy(page + off, src, len);
	mprotect(page, (size_t)opt.page, PROT_READ);
	return page + off;
}

/* ------------------------------------------------------------------ */
/* The ABI model: for each ioctl its struct's fields, the errnos the ABI
 * documents, and a verdict: what the ABI says a given struct must get.
 * A change of the ABI is a change here.
 */

enum fld_kind {
	FLD_IN, /* to kernel */
	FLD_OUT, /* from kernel: ignored on input */
	FLD_ZERO, /* reserved or padding: not zero is EINVAL */
};

struct field {
	const char *name;
	uint16_t off, size, elem;
	uint8_t kind;
};

#define FLD(type, member, kind)                                               \
	{                                                                     \
#member, offsetof(type, member), sizeof(((type *)0)->member), \
			sizeof(((type *)0)->member), kind                     \
	}
#define FLD_ARRAY(type, member, kind)                                         \
	{                                                                     \
#member, offsetof(type, member), sizeof(((type *)0)->member), \
			sizeof(((type *)0)->member[0]), kind                  \
	}

struct call;

struct desc {
	const char *name;
	unsigned long cmd;
	size_t size;
	const struct field *fields;
	unsigned int nr_fields;
	const int *errnos; /* the documented errnos, 0-terminated */
	const int *early; /* may come before the fields are looked at */
	bool needs_ctx; /* EBADFD before CTX_INIT or GROUP_JOIN */
	bool inits; /* gives the file its context: EBUSY after */
	bool writes_back; /* a read-only struct is EFAULT */
	bool state_changing; /* EBADF or EPERM on an O_RDONLY file */
	unsigned int weight;
	void (*build)(struct thread *t, const struct fent *f, void *arg);
	/* EINVAL, ENOSPC, EFAULT: the ABI's answer; 0: none required. */
	int (*verdict)(struct thread *t, const struct fent *f, const void *arg);
	/* After success: check the from-kernel fields, update the model. */
	void (*post)(struct thread *t, struct fent *f, const struct fent *snap,
		     void *arg);
};

#define ERRNOS(...) ((const int[]){ __VA_ARGS__, 0 })

static bool errno_in(const int *set, int err)
{
	for (; set && *set; set++)
		if (*set == err)
			return true;
	return false;
}

static bool mem_is_zero(const void *p, size_t len)
{
	const unsigned char *c = p;

	while (len--)
		if (*c++)
			return false;
	return true;
}

static uint32_t pick_slot(struct thread *t, const struct fent *f)
{
	uint32_t nr = f->has_ctx ? f->nr_slots : 1;

	/* Low slots more often, so that waiters and signallers meet. */
	return rnd_pct(&t->rng, 60) ? rnd_below(&t->rng, nr < 4 ? nr : 4) :
				      rnd_below(&t->rng, nr);
}

static uint32_t pick_value(struct thread *t)
{
	uint32_t r = rnd_below(&t->rng, 10);

	if (r < 6)
		return rnd_below(&t->rng, 4);
	if (r < 9)
		return rnd_below(&t->rng, 16);
	return (uint32_t)rnd64(&t->rng);
}

/* A short timeout, sometimes absolute, sometimes none. */
static uint64_t pick_timeout(struct thread *t, uint32_t *flags)
{
	uint32_t r = rnd_below(&t->rng, 20);

	*flags = 0;
	if (r < 5)
		return 0;
	if (r < 8)
		return rnd_below(&t->rng, 2000);
	if (r < 16)
		return rnd_below(&t->rng, 2000000);
	if (r < 19) {
		*flags = AGILE_WAIT_ABSTIME;
		return now_ns() + rnd_below(&t->rng, 2000000);
	}
	return AGILE_TIMEOUT_INFINITE; /* the kicker ends it */
}

/*
 * A timeout above KTIME_MAX, relative or absolute, other than
 * AGILE_TIMEOUT_INFINITE: EINVAL where the module was found to say so.
 */
static bool timeout_too_big(uint64_t timeout_ns, uint32_t flags)
{
	(void)flags;
	return opt.timeout_strict && timeout_ns != AGILE_TIMEOUT_INFINITE &&
	       timeout_ns > KTIME_MAX_NS;
}

/* -- INFO -- */

static const struct field info_fields[] = {
	FLD(struct agile_info, abi_version, FLD_OUT),
	FLD(struct agile_info, features, FLD_OUT),
	FLD(struct agile_info, max_slots, FLD_OUT),
	FLD(struct agile_info, page_size, FLD_OUT),
	FLD(struct agile_info, max_segment_bytes, FLD_OUT),
	FLD_ARRAY(struct agile_info, reserved, FLD_OUT),
};

static void build_none(struct thread *t, const struct fent *f, void *arg)
{
	(void)t;
	(void)f;
	(void)arg;
}

static int verdict_none(struct thread *t, const struct fent *f, const void *arg)
{
	(void)t;
	(void)f;
	(void)arg;
	return 0;
}

static void post_info(struct thread *t, struct fent *f, const struct fent *snap,
		      void *arg)
{
	const struct agile_info *i = arg;

	(void)t;
	(void)f;
	(void)snap;
	if (i->abi_version != AGILE_ABI_VERSION ||
	    i->doorbell_stride != AGILE_DOORBELL_STRIDE ||
	    i->task_reg_min_size != AGILE_TASK_REG_MIN_SIZE ||
	    i->task_reg_max_size != AGILE_TASK_REG_MAX_SIZE ||
	    i->wait_any_max != AGILE_WAIT_ANY_MAX ||
	    i->page_size != (uint32_t)opt.page ||
	    !mem_is_zero(i->reserved, sizeof(i->reserved)))
		violation(
			"INFO: abi %u stride %u task reg %u..%u wait_any_max %u page %u reserved %s",
			i->abi_version, i->doorbell_stride,
			i->task_reg_min_size, i->task_reg_max_size,
			i->wait_any_max, i->page_size,
			mem_is_zero(i->reserved, sizeof(i->reserved)) ?
				"zero" :
				"NOT ZERO");
}

/* -- CTX_INIT -- */

static const struct field ctx_init_fields[] = {
	FLD(struct agile_ctx_init, nr_slots, FLD_IN),
	FLD(struct agile_ctx_init, task_reg_size, FLD_IN),
	FLD(struct agile_ctx_init, flags, FLD_ZERO),
	FLD(struct agile_ctx_init, pad, FLD_ZERO),
	FLD(struct agile_ctx_init, doorbell_offset, FLD_OUT),
	FLD(struct agile_ctx_init, doorbell_bytes, FLD_OUT),
	FLD(struct agile_ctx_init, task_reg_offset, FLD_OUT),
	FLD(struct agile_ctx_init, task_reg_bytes, FLD_OUT),
	FLD_ARRAY(struct agile_ctx_init, reserved, FLD_ZERO),
};

static uint32_t pick_nr_slots(struct thread *t)
{
	return rnd_pct(&t->rng, 70) ? 1 + rnd_below(&t->rng, 8) :
				      1 + rnd_below(&t->rng, 256);
}

static uint32_t pick_task_reg_size(struct thread *t)
{
	return AGILE_TASK_REG_MIN_SIZE << rnd_below(&t->rng, 7);
}

static void build_ctx_init(struct thread *t, const struct fent *f, void *arg)
{
	struct agile_ctx_init *a = arg;

	(void)f;
	a->nr_slots = pick_nr_slots(t);
	a->task_reg_size = pick_task_reg_size(t);
}

/* The size checks CTX_INIT and GROUP_JOIN share. */
static int verdict_sizes(uint32_t nr_slots, uint32_t task_reg_size)
{
	if (!nr_slots || task_reg_size < AGILE_TASK_REG_MIN_SIZE ||
	    task_reg_size > AGILE_TASK_REG_MAX_SIZE ||
	    (task_reg_size & (task_reg_size - 1)))
		return EINVAL;
	/* The sizes are reported in 32 bits: an overflow is EINVAL. */
	if ((uint64_t)nr_slots * task_reg_size > UINT32_MAX ||
	    (uint64_t)nr_slots * AGILE_DOORBELL_STRIDE > UINT32_MAX)
		return EINVAL;
	return 0;
}

static int verdict_ctx_init(struct thread *t, const struct fent *f,
			    const void *arg)
{
	const struct agile_ctx_init *a = arg;
	int v;

	(void)t;
	(void)f;
	if (a->flags || a->pad ||
	    !mem_is_zero(a->reserved, sizeof(a->reserved)))
		return EINVAL;
	v = verdict_sizes(a->nr_slots, a->task_reg_size);
	if (v)
		return v;
	return a->nr_slots > opt.info.max_slots ? ENOSPC : 0;
}

static uint64_t page_round(uint64_t bytes)
{
	return (bytes + (uint64_t)opt.page - 1) & ~((uint64_t)opt.page - 1);
}

/* The model of a file that just got a context. */
static void model_set_ctx(struct worker *w, struct fent *f, uint32_t nr_slots,
			  uint32_t task_reg_size, bool group)
{
	lock(w);
	if (!f->closed && !f->has_ctx) {
		f->has_ctx = true;
		f->group = group;
		f->nr_slots = nr_slots;
		f->task_reg_size = task_reg_size;
		f->db_bytes =
			page_round((uint64_t)nr_slots * AGILE_DOORBELL_STRIDE);
		f->tr_bytes = page_round((uint64_t)nr_slots * task_reg_size);
	}
	unlock(w);
}

static void check_areas(const char *what, uint32_t nr_slots,
			uint32_t task_reg_size, uint64_t db_off,
			uint64_t db_bytes, uint64_t tr_off, uint64_t tr_bytes)
{
	if (db_off != AGILE_MMAP_DOORBELLS || tr_off != AGILE_MMAP_TASK_REGS ||
	    db_bytes !=
		    page_round((uint64_t)nr_slots * AGILE_DOORBELL_STRIDE) ||
	    tr_bytes != page_round((uint64_t)nr_slots * task_reg_size))
		violation("%s of %u slots of %u: areas at %#" PRIx64 "+%" PRIu64
			  " and %#" PRIx64 "+%" PRIu64,
			  what, nr_slots, task_reg_size, db_off, db_bytes,
			  tr_off, tr_bytes);
}

static void post_ctx_init(struct thread *t, struct fent *f,
			  const struct fent *snap, void *arg)
{
	const struct agile_ctx_init *a = arg;

	(void)snap;
	check_areas("CTX_INIT", a->nr_slots, a->task_reg_size,
		    a->doorbell_offset, a->doorbell_bytes, a->task_reg_offset,
		    a->task_reg_bytes);
	model_set_ctx(t->w, f, a->nr_slots, a->task_reg_size, false);
}

/* -- FENCE: SIGNAL, WAIT, BARRIER -- */

static const struct field fence_fields[] = {
	FLD(struct agile_fence, op, FLD_IN),
	FLD(struct agile_fence, slot, FLD_IN),
	FLD(struct agile_fence, value, FLD_IN),
	FLD(struct agile_fence, cmp, FLD_IN),
	FLD(struct agile_fence, flags, FLD_IN),
	FLD(struct agile_fence, observed, FLD_OUT),
	FLD(struct agile_fence, timeout_ns, FLD_IN),
	FLD_ARRAY(struct agile_fence, reserved, FLD_ZERO),
};

static void build_signal(struct thread *t, const struct fent *f, void *arg)
{
	struct agile_fence *a = arg;

	a->op = AGILE_FENCE_SIGNAL;
	a->slot = pick_slot(t, f);
	a->value = pick_value(t);
	a->flags = rnd_pct(&t->rng, 20) ? AGILE_SIGNAL_WAKE_ONLY : 0;
}

static void build_wait(struct thread *t, const struct fent *f, void *arg)
{
	struct agile_fence *a = arg;

	a->op = AGILE_FENCE_WAIT;
	a->slot = pick_slot(t, f);
	a->cmp = rnd_below(&t->rng, AGILE_CMP_LE + 1);
	a->value = pick_value(t);
	a->timeout_ns = pick_timeout(t, &a->flags);
}

static void build_barrier(struct thread *t, const struct fent *f, void *arg)
{
	struct agile_fence *a = arg;

	(void)t;
	(void)f;
	a->op = AGILE_FENCE_BARRIER;
}

/* A slot number the file's known context certainly lacks. */
static bool slot_bad(const struct fent *f, uint32_t slot)
{
	return f->has_ctx && slot >= f->nr_slots;
}

static int verdict_fence(struct thread *t, const struct fent *f,
			 const void *arg)
{
	const struct agile_fence *a = arg;

	(void)t;
	if (!mem_is_zero(a->reserved, sizeof(a->reserved)))
		return EINVAL;
	switch (a->op) {
	case AGILE_FENCE_SIGNAL:
		if (slot_bad(f, a->slot) || a->cmp || a->timeout_ns ||
		    a->flags & ~AGILE_SIGNAL_WAKE_ONLY)
			return EINVAL;
		return 0;
	case AGILE_FENCE_WAIT:
		if (slot_bad(f, a->slot) || a->cmp > AGILE_CMP_LE ||
		    a->flags & ~AGILE_WAIT_ABSTIME ||
		    timeout_too_big(a->timeout_ns, a->flags))
			return EINVAL;
		return 0;
	case AGILE_FENCE_BARRIER:
		if (a->slot || a->value || a->cmp || a->flags || a->timeout_ns)
			return EINVAL;
		return 0;
	}
	return EINVAL;
}

static void post_fence(struct thread *t, struct fent *f,
		       const struct fent *snap, void *arg)
{
	const struct agile_fence *a = arg;

	(void)t;
	(void)f;
	(void)snap;
	/* observed is "the doorbell value that satisfied the comparison". */
	if (a->op == AGILE_FENCE_WAIT &&
	    !agile_cmp_holds(a->cmp, a->observed, a->value))
		violation(
			"WAIT slot %u cmp %u value %u returned 0 with observed %u",
			a->slot, a->cmp, a->value, a->observed);
}

/* -- WAIT_ANY -- */

static const struct field wait_any_fields[] = {
	FLD(struct agile_wait_any, conds, FLD_IN),
	FLD(struct agile_wait_any, nr_conds, FLD_IN),
	FLD(struct agile_wait_any, flags, FLD_IN),
	FLD(struct agile_wait_any, timeout_ns, FLD_IN),
	FLD(struct agile_wait_any, index, FLD_OUT),
	FLD(struct agile_wait_any, observed, FLD_OUT),
	FLD_ARRAY(struct agile_wait_any, reserved, FLD_ZERO),
};

static void build_conds(struct thread *t, const struct fent *f,
			struct agile_wait_cond *conds, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		conds[i].slot = pick_slot(t, f);
		conds[i].cmp = rnd_below(&t->rng, AGILE_CMP_LE + 1);
		conds[i].value = pick_value(t);
		conds[i].pad = 0;
	}
}

static void build_wait_any(struct thread *t, const struct fent *f, void *arg)
{
	struct agile_wait_any *a = arg;
	struct agile_wait_cond *conds = (void *)arena_page(t, 3);

	build_conds(t, f, conds, AGILE_WAIT_ANY_MAX);
	a->conds = (uintptr_t)conds;
	a->nr_conds = rnd_pct(&t->rng, 80) ?
			      1 + rnd_below(&t->rng, 4) :
			      1 + rnd_below(&t->rng, AGILE_WAIT_ANY_MAX);
	a->timeout_ns = pick_timeout(t, &a->flags);
}

static int verdict_wait_any(struct thread *t, const struct fent *f,
			    const void *arg)
{
	const struct agile_wait_any *a = arg;
	const struct agile_wait_cond *conds;
	uint32_t i;
	int ok;

	if (!a->nr_conds || a->nr_conds > AGILE_WAIT_ANY_MAX ||
	    a->flags & ~AGILE_WAIT_ABSTIME ||
	    !mem_is_zero(a->reserved, sizeof(a->reserved)) ||
	    timeout_too_big(a->timeout_ns, a->flags))
		return EINVAL;
	ok = user_access_ok(t, a->conds, (uint64_t)a->nr_conds * sizeof(*conds),
			    false);
	if (ok == 0)
		return EFAULT;
	if (ok < 0)
		return 0;
	conds = (const void *)(uintptr_t)a->conds;
	for (i = 0; i < a->nr_conds; i++)
		if (conds[i].pad || conds[i].cmp > AGILE_CMP_LE ||
		    slot_bad(f, conds[i].slot))
			return EINVAL;
	return 0;
}

static void post_wait_any(struct thread *t, struct fent *f,
			  const struct fent *snap, void *arg)
{
	const struct agile_wait_any *a = arg;
	const struct agile_wait_cond *conds = (const void *)(uintptr_t)a->conds;

	(void)f;
	(void)snap;
	if (a->index >= a->nr_conds) {
		violation("WAIT_ANY of %u returned index %u", a->nr_conds,
			  a->index);
		return;
	}
	/*
	 * Only conditions in their own page: a mutated pointer may put them
	 * over the struct, which the kernel has written since it read them.
	 */
	if (a->conds >= (uintptr_t)arena_page(t, 3) &&
	    a->conds + (uint64_t)a->nr_conds * sizeof(*conds) <=
		    (uintptr_t)arena_page(t, 4) &&
	    !agile_cmp_holds(conds[a->index].cmp, a->observed,
			     conds[a->index].value))
		violation(
			"WAIT_ANY: condition %u (slot %u cmp %u value %u) does not hold for observed %u",
			a->index, conds[a->index].slot, conds[a->index].cmp,
			conds[a->index].value, a->observed);
}

/* -- STATS -- */

static const struct field stats_fields[] = {
	FLD(struct agile_stats, signals, FLD_OUT),
	FLD(struct agile_stats, waits, FLD_OUT),
	FLD_ARRAY(struct agile_stats, reserved, FLD_OUT),
};

static void post_stats(struct thread *t, struct fent *f,
		       const struct fent *snap, void *arg)
{
	const struct agile_stats *s = arg;

	(void)t;
	(void)f;
	(void)snap;
	if (!mem_is_zero(s->reserved, sizeof(s->reserved)))
		violation("STATS: reserved words not zero");
}

/* -- SEG_CREATE -- */

static const struct field seg_fields[] = {
	FLD(struct agile_seg_create, bytes, FLD_IN),
	FLD(struct agile_seg_create, flags, FLD_ZERO),
	FLD(struct agile_seg_create, pad, FLD_ZERO),
	FLD(struct agile_seg_create, id, FLD_OUT),
	FLD(struct agile_seg_create, pad2, FLD_OUT),
	FLD(struct agile_seg_create, mmap_offset, FLD_OUT),
	FLD(struct agile_seg_create, mmap_bytes, FLD_OUT),
	FLD_ARRAY(struct agile_seg_create, reserved, FLD_ZERO),
};

static void build_seg(struct thread *t, const struct fent *f, void *arg)
{
	struct agile_seg_create *a = arg;

	(void)f;
	a->bytes = rnd_pct(&t->rng, 50) ?
			   1 + rnd_below(&t->rng, 3 * (uint32_t)opt.page) :
			   1 + rnd_below(&t->rng, 65536);
}

static int verdict_seg(struct thread *t, const struct fent *f, const void *arg)
{
	const struct agile_seg_create *a = arg;

	(void)t;
	(void)f;
	if (a->flags || a->pad ||
	    !mem_is_zero(a->reserved, sizeof(a->reserved)) || !a->bytes)
		return EINVAL;
	return a->bytes > opt.info.max_segment_bytes ? ENOSPC : 0;
}

static uint64_t seg_offset(uint32_t id)
{
	return AGILE_MMAP_SEGMENTS + ((uint64_t)id << AGILE_MMAP_SEGMENT_SHIFT);
}

static void post_seg(struct thread *t, struct fent *f, const struct fent *snap,
		     void *arg)
{
	const struct agile_seg_create *a = arg;

	(void)snap;
	if (a->id >= AGILE_MAX_SEGMENTS || a->pad2 ||
	    a->mmap_offset != seg_offset(a->id) ||
	    a->mmap_bytes != page_round(a->bytes)) {
		violation("SEG_CREATE of %" PRIu64
			  " bytes: id %u pad2 %u at %#" PRIx64 "+%" PRIu64,
			  (uint64_t)a->bytes, a->id, a->pad2,
			  (uint64_t)a->mmap_offset, (uint64_t)a->mmap_bytes);
		return;
	}
	lock(t->w);
	if (!f->closed && !f->group) {
		f->seg_bytes[a->id] = a->mmap_bytes;
		if (a->id >= f->nr_segs)
			f->nr_segs = a->id + 1;
	}
	unlock(t->w);
}

/* -- GROUP_JOIN -- */

static const struct field group_fields[] = {
	FLD(struct agile_group_join, key, FLD_IN),
	FLD(struct agile_group_join, nr_slots, FLD_IN),
	FLD(struct agile_group_join, task_reg_size, FLD_IN),
	FLD(struct agile_group_join, max_members, FLD_IN),
	FLD(struct agile_group_join, mode, FLD_IN),
	FLD(struct agile_group_join, flags, FLD_IN),
	FLD(struct agile_group_join, member, FLD_OUT),
	FLD(struct agile_group_join, doorbell_offset, FLD_OUT),
	FLD(struct agile_group_join, doorbell_bytes, FLD_OUT),
	FLD(struct agile_group_join, task_reg_offset, FLD_OUT),
	FLD(struct agile_group_join, task_reg_bytes, FLD_OUT),
	FLD(struct agile_group_join, owner_uid, FLD_OUT),
	FLD(struct agile_group_join, owner_gid, FLD_OUT),
	FLD(struct agile_group_join, group_mode, FLD_OUT),
	FLD(struct agile_group_join, nr_members, FLD_OUT),
	FLD_ARRAY(struct agile_group_join, reserved, FLD_ZERO),
};

/*
 * A join that only asks about a group (owner, mode, sizes) where the ABI
 * has it: valid, and the file gets no context from it.
 */
#ifdef AGILE_GROUP_QUERY
#define GROUP_QUERY AGILE_GROUP_QUERY
#else
#define GROUP_QUERY 0U
#endif

/* Keys shared by every worker: they meet in the same groups. */
#define SHARED_KEYS 6
#define SHARED_KEY_BASE 0xa91e5000ULL

/* A shared key's group always has the same sizes, so joins succeed. */
static void build_group(struct thread *t, const struct fent *f, void *arg)
{
	struct agile_group_join *a = arg;
	uint32_t k = rnd_below(&t->rng, SHARED_KEYS), r;

	(void)f;
	a->key = SHARED_KEY_BASE + k;
	a->nr_slots = 1 + 3 * (k % 3);
	a->task_reg_size = AGILE_TASK_REG_MIN_SIZE << (k % 4);
	a->max_members = k == 0 ? 2 : AGILE_GROUP_MAX_MEMBERS;
	a->mode = rnd_pct(&t->rng, 50) ? 0600 : 0666;
	r = rnd_below(&t->rng, 10);
	a->flags = r < 6 ? AGILE_GROUP_CREATE :
		   r < 7 ? AGILE_GROUP_CREATE | AGILE_GROUP_EXCL :
		   r < 8 ? GROUP_QUERY :
			   0;
}

static int verdict_group(struct thread *t, const struct fent *f,
			 const void *arg)
{
	const struct agile_group_join *a = arg;
	(void)t;
	(void)f;
	if (a->flags & ~(AGILE_GROUP_CREATE | AGILE_GROUP_EXCL | GROUP_QUERY) ||
	    (a->flags & AGILE_GROUP_EXCL && !(a->flags & AGILE_GROUP_CREATE)) ||
	    a->mode & ~AGILE_GROUP_MODE_MASK || !a->max_members ||
	    a->max_members > AGILE_GROUP_MAX_MEMBERS ||
	    !mem_is_zero(a->reserved, sizeof(a->reserved)))
		return EINVAL;
	/* Over max_slots: ENOSPC to a creator, EINVAL to a joiner. */
	return verdict_sizes(a->nr_slots, a->task_reg_size);
}

static void post_group(struct thread *t, struct fent *f,
		       const struct fent *snap, void *arg)
{
	const struct agile_group_join *a = arg;

	(void)snap;
	/* A query joins nothing: its answer is not a member's. */
	if (a->flags & GROUP_QUERY)
		return;
	check_areas("GROUP_JOIN", a->nr_slots, a->task_reg_size,
		    a->doorbell_offset, a->doorbell_bytes, a->task_reg_offset,
		    a->task_reg_bytes);
	if (a->member >= a->max_members)
		violation("GROUP_JOIN: member %u of at most %u", a->member,
			  a->max_members);
	model_set_ctx(t->w, f, a->nr_slots, a->task_reg_size, true);
}

/* -- EXPORT_DMABUF -- */

static const struct field export_fields[] = {
	FLD(struct agile_export_dmabuf, what, FLD_IN),
	FLD(struct agile_export_dmabuf, id, FLD_IN),
	FLD(struct agile_export_dmabuf, flags, FLD_IN),
	FLD(struct agile_export_dmabuf, fd, FLD_OUT),
	FLD_ARRAY(struct agile_export_dmabuf, reserved, FLD_ZERO),
};

static void build_export(struct thread *t, const struct fent *f, void *arg)
{
	struct agile_export_dmabuf *a = arg;

	a->what = rnd_below(&t->rng, f->nr_segs ? 3 : 2);
	if (a->what == AGILE_DMABUF_SEGMENT)
		a->id = rnd_below(&t->rng, f->nr_segs);
	a->flags = O_CLOEXEC | (rnd_pct(&t->rng, 80) ? O_RDWR : 0);
}

static int verdict_export(struct thread *t, const struct fent *f,
			  const void *arg)
{
	const struct agile_export_dmabuf *a = arg;

	(void)t;
	(void)f;
	if (a->flags & ~(uint32_t)(O_CLOEXEC | O_RDWR) ||
	    !mem_is_zero(a->reserved, sizeof(a->reserved)))
		return EINVAL;
	switch (a->what) {
	case AGILE_DMABUF_DOORBELLS:
	case AGILE_DMABUF_TASK_REGS:
		return a->id ? EINVAL : 0;
	case AGILE_DMABUF_SEGMENT:
		/* Segments never go before their context does. */
		if (a->id >= AGILE_MAX_SEGMENTS)
			return EINVAL;
		return 0;
	}
	return EINVAL;
}

static void post_export(struct thread *t, struct fent *f,
			const struct fent *snap, void *arg)
{
	const struct agile_export_dmabuf *a = arg;
	struct fent *d;
	uint64_t bytes = 0;
	off_t size;

	(void)f;
	if (a->fd < 0 || fcntl(a->fd, F_GETFD) < 0) {
		violation("EXPORT_DMABUF returned fd %d", a->fd);
		return;
	}
	if (a->what == AGILE_DMABUF_DOORBELLS)
		bytes = snap->db_bytes;
	else if (a->what == AGILE_DMABUF_TASK_REGS)
		bytes = snap->tr_bytes;
	else if (a->id < snap->nr_segs)
		bytes = snap->seg_bytes[a->id];
	if (!snap->has_ctx || snap->group)
		bytes = 0; /* unknown */
	size = lseek(a->fd, 0, SEEK_END);
	if (size <= 0 || (bytes && (uint64_t)size != bytes))
		violation(
			"EXPORT_DMABUF what %u id %u: %jd bytes, not %" PRIu64,
			a->what, a->id, (intmax_t)size, bytes);
	d = file_add(t->w, a->fd, FK_DMABUF,
		     (a->flags & O_RDWR) ? O_RDWR : O_RDONLY);
	if (d) {
		lock(t->w);
		d->dmabuf_bytes = size > 0 ? (uint64_t)size : 0;
		unlock(t->w);
	}
}

#define DESC(_name, _cmd, _type, _fields)                                     \
	.name = _name, .cmd = _cmd, .size = sizeof(_type), .fields = _fields, \
	.nr_fields = sizeof(_fields) / sizeof(_fields[0])

/* The documented errnos of each ioctl (uapi/linux/agile.h). */
#define FENCE_ERRNOS ERRNOS(EINVAL, EBADFD, EFAULT, ETIMEDOUT, EINTR, EPIPE)

static const struct desc descs[NR_DESCS] = {
	{ DESC("INFO", AGILE_IOC_INFO, struct agile_info, info_fields),
	  .errnos = ERRNOS(EFAULT), .early = ERRNOS(EFAULT),
	  .writes_back = true, .weight = 5, .build = build_none,
	  .verdict = verdict_none, .post = post_info },
	{ DESC("CTX_INIT", AGILE_IOC_CTX_INIT, struct agile_ctx_init,
	       ctx_init_fields),
	  .errnos = ERRNOS(EINVAL, ENOSPC, EBUSY, ENOMEM, EFAULT),
	  .early = ERRNOS(EFAULT, EBUSY), .inits = true, .writes_back = true,
	  .state_changing = true, .weight = 15, .build = build_ctx_init,
	  .verdict = verdict_ctx_init, .post = post_ctx_init },
	{ DESC("FENCE_SIGNAL", AGILE_IOC_FENCE, struct agile_fence,
	       fence_fields),
	  .errnos = FENCE_ERRNOS, .early = ERRNOS(EFAULT, EBADFD),
	  .needs_ctx = true, .state_changing = true, .weight = 25,
	  .build = build_signal, .verdict = verdict_fence, .post = post_fence },
	{ DESC("FENCE_WAIT", AGILE_IOC_FENCE, struct agile_fence, fence_fields),
	  .errnos = FENCE_ERRNOS, .early = ERRNOS(EFAULT, EBADFD),
	  .needs_ctx = true, .writes_back = true, .weight = 25,
	  .build = build_wait, .verdict = verdict_fence, .post = post_fence },
	{ DESC("FENCE_BARRIER", AGILE_IOC_FENCE, struct agile_fence,
	       fence_fields),
	  .errnos = FENCE_ERRNOS, .early = ERRNOS(EFAULT, EBADFD),
	  .needs_ctx = true, .weight = 5, .build = build_barrier,
	  .verdict = verdict_fence, .post = post_fence },
	{ DESC("WAIT_ANY", AGILE_IOC_WAIT_ANY, struct agile_wait_any,
	       wait_any_fields),
	  .errnos = ERRNOS(EINVAL, EBADFD, EFAULT, ENOMEM, ETIMEDOUT, EINTR,
			   EPIPE),
	  .early = ERRNOS(EFAULT, EBADFD), .needs_ctx = true,
	  .writes_back = true, .weight = 20, .build = build_wait_any,
	  .verdict = verdict_wait_any, .post = post_wait_any },
	{ DESC("STATS", AGILE_IOC_STATS, struct agile_stats, stats_fields),
	  .errnos = ERRNOS(EFAULT), .early = ERRNOS(EFAULT),
	  .writes_back = true, .weight = 5, .build = build_none,
	  .verdict = verdict_none, .post = post_stats },
	{ DESC("SEG_CREATE", AGILE_IOC_SEG_CREATE, struct agile_seg_create,
	       seg_fields),
	  .errnos = ERRNOS(EINVAL, ENOSPC, ENOMEM, EFAULT, EBADFD),
	  .early = ERRNOS(EFAULT, EBADFD), .needs_ctx = true,
	  .writes_back = true, .state_changing = true, .weight = 8,
	  .build = build_seg, .verdict = verdict_seg, .post = post_seg },
	{ DESC("GROUP_JOIN", AGILE_IOC_GROUP_JOIN, struct agile_group_join,
	       group_fields),
	  /*
	   * EINTR: a signal cut the fault-in of the result page short;
	   * EPIPE: the key's group has ended, a member still holds it.
	   */
	  .errnos = ERRNOS(EBUSY, ENOENT, EEXIST, EACCES, EINVAL, ENOSPC,
			   ENOMEM, EFAULT, EINTR, EPIPE),
	  .early = ERRNOS(EFAULT, EBUSY), .inits = true, .writes_back = true,
	  .state_changing = true, .weight = 8, .build = build_group,
	  .verdict = verdict_group, .post = post_group },
	{ DESC("EXPORT_DMABUF", AGILE_IOC_EXPORT_DMABUF,
	       struct agile_export_dmabuf, export_fields),
	  .errnos = ERRNOS(EINVAL, EBADFD, EMFILE, ENOMEM, EFAULT),
	  .early = ERRNOS(EFAULT, EBADFD), .needs_ctx = true,
	  .writes_back = true, .state_changing = true, .weight = 6,
	  .build = build_export, .verdict = verdict_export,
	  .post = post_export },
};

/* What an O_RDONLY file may get from a state-changing ioctl. */
#define RDONLY_ERRNOS ERRNOS(EBADF, EPERM)

static const struct desc *pick_desc(struct thread *t)
{
	unsigned int i, total = 0, r;

	for (i = 0; i < NR_DESCS; i++)
		total += descs[i].weight;
	r = rnd_below(&t->rng, total);
	for (i = 0; i < NR_DESCS; i++) {
		if (r < descs[i].weight)
			break;
		r -= descs[i].weight;
	}
	return &descs[i];
}

static unsigned int desc_counter(const struct desc *d)
{
	return NR_OPS + (unsigned int)(d - descs);
}

/* ------------------------------------------------------------------ */
/* Mutation: boundary values, bit flips, random values. */

static uint64_t interesting(struct thread *t, unsigned int bits, uint64_t cur)
{
	static const uint64_t pages[] = {
		4095, 4096, 4097, 8192, 65536, 2 << 20, 1ULL << 30, 1ULL << 32
	};
	uint64_t *rng = &t->rng, v;
	unsigned int k;

	switch (rnd_below(rng, 16)) {
	case 0:
		v = 0;
		break;
	case 1:
		v = 1;
		break;
	case 2:
		v = ~0ULL;
		break;
	case 3:
		v = (1ULL << (bits - 1)) - 1; /* signed max */
		break;
	case 4:
		v = 1ULL << (bits - 1); /* signed min */
		break;
	case 5:
		k = rnd_below(rng, bits);
		v = (1ULL << k) + rnd_below(rng, 3) - 1;
		break;
	case 6:
		v = pages[rnd_below(rng, sizeof(pages) / sizeof(pages[0]))];
		break;
	case 7: {
		static const uint64_t times[] = {
			KTIME_MAX_NS,		KTIME_MAX_NS + 1,
			AGILE_TIMEOUT_INFINITE, AGILE_TIMEOUT_INFINITE - 1,
			NSEC_PER_SEC,
		};

		v = times[rnd_below(rng, sizeof(times) / sizeof(times[0]))];
		break;
	}
	case 8:
		v = cur ^ (1ULL << rnd_below(rng, bits));
		break;
	case 9:
		v = cur ^ (1ULL << rnd_below(rng, bits)) ^
		    (1ULL << rnd_below(rng, bits));
		break;
	case 10:
		v = cur + rnd_below(rng, 5) - 2;
		break;
	case 11: {
		uint64_t limits[] = {
			opt.info.max_slots,
			opt.info.max_slots + 1ULL,
			opt.info.max_segment_bytes,
			opt.info.max_segment_bytes + 1ULL,
			AGILE_TASK_REG_MIN_SIZE - 1,
			AGILE_TASK_REG_MAX_SIZE + 1,
			AGILE_WAIT_ANY_MAX,
			AGILE_WAIT_ANY_MAX + 1,
			AGILE_GROUP_MAX_MEMBERS,
			AGILE_GROUP_MAX_MEMBERS + 1,
			AGILE_MAX_SEGMENTS,
			AGILE_CMP_LE + 1,
			3,
			O_RDWR | O_CLOEXEC | O_WRONLY,
		};

		v = limits[rnd_below(rng, sizeof(limits) / sizeof(limits[0]))];
		break;
	}
	case 12:
		v = now_ns() + rnd_below(rng, 1000000);
		break;
	case 13:
		v = 2 + rnd_below(rng, 7);
		break;
	case 14:
		v = rnd64(rng);
		break;
	default:
		v = rnd_below(rng, 256);
		break;
	}
	return bits == 64 ? v : v & ((1ULL << bits) - 1);
}

static uint64_t field_get(const void *arg, unsigned int off, unsigned int size)
{
	const unsigned char *p = (const unsigned char *)arg + off;
	uint32_t v32;
	uint64_t v64;

	if (size == 4) {
		memcpy(&v32, p, 4);
		return v32;
	}
	memcpy(&v64, p, 8);
	return v64;
}

static void field_set(void *arg, unsigned int off, unsigned int size,
		      uint64_t v)
{
	unsigned char *p = (unsigned char *)arg + off;
	uint32_t v32 = (uint32_t)v;

	if (size == 4)
		memcpy(p, &v32, 4);
	else
		memcpy(p, &v, 8);
}

/* Mutate one to three fields; @what names them for messages. */
static void mutate(struct thread *t, const struct desc *d, void *arg,
		   char *what, size_t what_len)
{
	unsigned int n = rnd_pct(&t->rng, 70) ? 1 :
			 rnd_pct(&t->rng, 66) ? 2 :
						3;
	size_t used = 0;

	what[0] = 0;
	while (n--) {
		const struct field *fl =
			&d->fields[rnd_below(&t->rng, d->nr_fields)];
		unsigned int off, bits;
		uint64_t v;

		/* From-kernel fields are ignored on input: mutated less. */
		if (fl->kind == FLD_OUT && rnd_pct(&t->rng, 50))
			fl = &d->fields[rnd_below(&t->rng, d->nr_fields)];
		off = fl->off +
		      fl->elem * rnd_below(&t->rng, fl->size / fl->elem);
		bits = fl->elem * 8;
		v = interesting(t, bits, field_get(arg, off, fl->elem));
		field_set(arg, off, fl->elem, v);
		used += (size_t)snprintf(what + used, what_len - used,
					 "%s%s+%u=%#" PRIx64, used ? " " : "",
					 fl->name, off - fl->off, v);
		if (used >= what_len)
			break;
	}
	/* WAIT_ANY: mutate a condition instead, sometimes. */
	if (d->cmd == AGILE_IOC_WAIT_ANY && rnd_pct(&t->rng, 40)) {
		struct agile_wait_cond *c = (void *)arena_page(t, 3);
		unsigned int i = rnd_below(&t->rng, 4);
		uint32_t *w = (uint32_t *)&c[i] + rnd_below(&t->rng, 4);

		*w = (uint32_t)interesting(t, 32, *w);
		if (used < what_len)
			snprintf(what + used, what_len - used,
				 " conds[%u].word%u=%#x", i,
				 (unsigned int)(w - (uint32_t *)&c[i]), *w);
	}
}

/* ------------------------------------------------------------------ */
/* One ioctl call: build, maybe mutate, place, call, check. */

enum place {
	PL_NORMAL,
	PL_NULL,
	PL_KERNEL,
	PL_GUARD,
	PL_STRADDLE,
	PL_RDONLY,
	PL_SHORT_CONDS, /* WAIT_ANY: the array runs into the guard page */
	PL_BAD_CONDS, /* WAIT_ANY: NULL or kernel conds pointer */
	NR_PLACES
};

static void *place_struct(struct thread *t, int place, const void *src,
			  size_t size)
{
	size_t p = (size_t)opt.page, off;
	char *dst;

	switch (place) {
	case PL_NULL:
		return NULL;
	case PL_KERNEL:
		return rnd_pct(&t->rng, 50) ? (void *)0xffffffff81000000ULL :
					      (void *)0x8000000000000000ULL;
	case PL_GUARD:
		return arena_page(t, 1) +
		       rnd_below(&t->rng, (uint32_t)(p - size));
	case PL_STRADDLE:
		dst = arena_page(t, 1) - 1 -
		      rnd_below(&t->rng, (uint32_t)size - 1);
		memcpy(dst, src, (size_t)(arena_page(t, 1) - dst));
		return dst;
	case PL_RDONLY:
		off = 8 * rnd_below(&t->rng, (uint32_t)((p - size) / 8));
		return arena_rdonly_put(t, off, src, size);
	default:
		off = 8 * rnd_below(&t->rng, (uint32_t)((p - size) / 8));
		dst = arena_page(t, 0) + off;
		memcpy(dst, src, size);
		return dst;
	}
}

/* Tell the kicker how long this wait may take. */
static void wait_begin(struct thread *t, uint64_t timeout_ns, uint32_t flags,
		       uint64_t kick_after_ns)
{
	uint64_t now = now_ns(), rel;

	if (flags & AGILE_WAIT_ABSTIME)
		rel = timeout_ns > now ? timeout_ns - now : 0;
	else
		rel = timeout_ns;
	if (rel > NSEC_PER_SEC)
		rel = 0; /* "forever": kick it soon */
	__atomic_store_n(&t->wait_limit_ns, now + rel + kick_after_ns,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&t->in_wait, 1, __ATOMIC_RELEASE);
}

static void wait_end(struct thread *t)
{
	__atomic_store_n(&t->in_wait, 0, __ATOMIC_RELEASE);
}

/* The fence op a struct asks for, or ~0 outside FENCE. */
static uint32_t fence_op(const struct desc *d, const void *arg)
{
	return d->cmd == AGILE_IOC_FENCE ?
		       ((const struct agile_fence *)arg)->op :
		       ~0U;
}

static bool call_waits(const struct desc *d, const void *arg)
{
	return d->cmd == AGILE_IOC_WAIT_ANY ||
	       fence_op(d, arg) == AGILE_FENCE_WAIT;
}

static bool call_changes_state(const struct desc *d, const void *arg)
{
	if (d->cmd == AGILE_IOC_FENCE)
		return fence_op(d, arg) == AGILE_FENCE_SIGNAL;
	return d->state_changing;
}

/* A GROUP_JOIN that only asks (AGILE_GROUP_QUERY) works on any file. */
static bool call_inits(const struct desc *d, const void *arg)
{
	if (d->cmd == AGILE_IOC_GROUP_JOIN &&
	    ((const struct agile_group_join *)arg)->flags & GROUP_QUERY)
		return false;
	return d->inits;
}

/*
 * What a module that refuses state changes on O_RDONLY files must refuse:
 * a GROUP_JOIN may make a read-only member, and a read-only dma-buf
 * export changes nothing.
 */
static bool call_needs_writable(const struct desc *d, const void *arg)
{
	if (d->cmd == AGILE_IOC_GROUP_JOIN)
		return false;
	if (d->cmd == AGILE_IOC_EXPORT_DMABUF)
		return ((const struct agile_export_dmabuf *)arg)->flags &
		       O_RDWR;
	return call_changes_state(d, arg);
}

static void format_struct(char *buf, size_t len, const void *arg, size_t size)
{
	const uint32_t *w = arg;
	size_t i, used = 0;

	buf[0] = 0;
	for (i = 0; i < size / 4 && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%08x",
					 i ? " " : "", w[i]);
}

/*
 * Check one result against the ABI.  @ok_place: the struct is readable
 * and, for an ioctl that writes back, writable (1), certainly not (0) or
 * unknown (-1).
 */
static void check_result(const struct desc *d, const struct fent *snap,
			 const void *built, int ret, int err, int verdict,
			 int ok_place, const char *what)
{
	bool ro = !snap->writable && call_changes_state(d, built);
	bool must_fail = false, ok;
	char dump[200];

	if (ret >= 0)
		err = 0;
	if (err >= KERNEL_INTERNAL_ERRNO) {
		ok = false;
	} else if (snap->kind == FK_DMABUF) {
		/* A dma-buf knows nothing of agile's numbers. */
		ok = err == ENOTTY;
	} else if (verdict > 0 || !ok_place) {
		/* The ABI says it fails: with that errno or an earlier one. */
		int must = verdict > 0 ? verdict : EFAULT;

		must_fail = true;
		/*
		 * -H: bad arguments are refused before the mode is; a
		 * result that cannot be written back is found after it.
		 */
		ok = err == must || errno_in(d->early, err) ||
		     (ro && errno_in(RDONLY_ERRNOS, err) &&
		      !(opt.hardened && verdict > 0)) ||
		     (!ok_place && errno_in(d->errnos, err));
		if (d->needs_ctx && !snap->has_ctx && err == EBADFD)
			ok = true;
	} else {
		ok = !err || errno_in(d->errnos, err) ||
		     (ro && errno_in(RDONLY_ERRNOS, err));
		/* A known context never goes: no EBADFD, no second one. */
		if (snap->has_ctx && d->needs_ctx && err == EBADFD)
			ok = false;
		if (snap->has_ctx && call_inits(d, built) && err != EBUSY &&
		    !errno_in(d->early, err) && err != EINVAL &&
		    !(ro && errno_in(RDONLY_ERRNOS, err)))
			ok = false;
		/* Detected at start: O_RDONLY files cannot change state. */
		if (opt.ro_refused && ro && !err &&
		    call_needs_writable(d, built))
			ok = false;
	}
	if (ok)
		return;
	format_struct(dump, sizeof(dump), built, d->size);
	violation("%s on %s%s file%s: %s%s (expected %s%s) [%s] struct %s",
		  d->name, snap->kind == FK_DMABUF ? "dma-buf " : "",
		  snap->writable ? "rw" : "ro",
		  snap->has_ctx ? " with context" : "",
		  err ? "errno " : "success", err ? errname(err) : "",
		  must_fail ? "failure " : "a documented errno",
		  must_fail ? errname(verdict > 0 ? verdict : EFAULT) : "",
		  what, dump);
}

enum call_mode { CM_VALID, CM_MUTATE, CM_BADPTR };

static void op_ioctl(struct thread *t, int mode)
{
	const struct desc *d = pick_desc(t);
	unsigned char built[256] __attribute__((aligned(8)));
	int place = PL_NORMAL, verdict, ok_place, ret, err;
	char what[160] = "";
	struct fent snap, *f;
	bool waits;
	void *arg;

	/* Mostly agile files; a few dma-bufs, which must say ENOTTY. */
	f = file_get(t, rnd_pct(&t->rng, 95) ? FK_AGILE : FK_DMABUF, &snap);
	if (!f)
		return;
	memset(built, 0, sizeof(built));
	d->build(t, &snap, built);
	if (mode == CM_MUTATE)
		mutate(t, d, built, what, sizeof(what));
	if (mode == CM_BADPTR) {
		place = 1 + rnd_below(&t->rng, d->cmd == AGILE_IOC_WAIT_ANY ?
						       NR_PLACES - 1 :
						       PL_RDONLY);
		snprintf(what, sizeof(what), "place %d", place);
	}
	if (place == PL_SHORT_CONDS || place == PL_BAD_CONDS) {
		struct agile_wait_any *a = (void *)built;
		struct agile_wait_cond *conds = (void *)arena_page(t, 3);
		uint32_t fit = rnd_below(&t->rng, a->nr_conds);

		if (place == PL_SHORT_CONDS) {
			/* Only @fit conditions before the guard page. */
			char *end = arena_page(t, 4);

			memmove(end - fit * sizeof(*conds), conds,
				fit * sizeof(*conds));
			a->conds = (uintptr_t)(end - fit * sizeof(*conds));
		} else {
			a->conds = rnd_pct(&t->rng, 50) ? 0 :
							  0xffffffff81000000ULL;
		}
		place = PL_NORMAL;
	}
	arg = place_struct(t, place, built, d->size);
	ok_place = user_access_ok(t, (uintptr_t)arg, d->size, false);
	if (ok_place == 1 && d->writes_back)
		ok_place = user_access_ok(t, (uintptr_t)arg, d->size, true);
	verdict = user_access_ok(t, (uintptr_t)arg, d->size, false) == 1 ?
			  d->verdict(t, &snap, built) :
			  0;

	waits = call_waits(d, built);
	if (waits)
		wait_begin(
			t,
			field_get(built,
				  d->cmd == AGILE_IOC_FENCE ?
					  offsetof(struct agile_fence,
						   timeout_ns) :
					  offsetof(struct agile_wait_any,
						   timeout_ns),
				  8),
			(uint32_t)field_get(
				built,
				d->cmd == AGILE_IOC_FENCE ?
					offsetof(struct agile_fence, flags) :
					offsetof(struct agile_wait_any, flags),
				4),
			KICK_AFTER_NS);
	ret = ioctl(snap.fd, d->cmd, arg);
	err = ret < 0 ? errno : 0;
	if (waits)
		wait_end(t);

	count(mode == CM_VALID	? OP_IOCTL :
	      mode == CM_MUTATE ? OP_MUTATE :
				  OP_BADPTR,
	      err);
	count(desc_counter(d), err);
	if (file_stale(f)) {
		if (err >= KERNEL_INTERNAL_ERRNO)
			violation("%s: kernel-internal errno %d", d->name, err);
		/* The fd may name another file now: drop what it gave. */
		if (!ret && d->cmd == AGILE_IOC_EXPORT_DMABUF && ok_place == 1)
			close(((struct agile_export_dmabuf *)arg)->fd);
		file_put(t->w, f);
		return;
	}
	check_result(d, &snap, built, ret, err, verdict, ok_place, what);
	if (!ret && snap.kind == FK_AGILE && ok_place == 1 && verdict <= 0)
		d->post(t, f, &snap, arg);
	else if (!ret && d->cmd == AGILE_IOC_EXPORT_DMABUF && ok_place == 1)
		close(((struct agile_export_dmabuf *)arg)->fd);
	file_put(t->w, f);
}

/* Unknown numbers of agile's type: always ENOTTY. */
static bool cmd_known(unsigned long cmd)
{
	unsigned int i;

	for (i = 0; i < NR_DESCS; i++)
		if (descs[i].cmd == cmd)
			return true;
	return false;
}

static void op_badcmd(struct thread *t)
{
	unsigned long cmd;
	struct fent snap, *f;
	int ret, err;
	void *arg;

	f = file_get(t, -1, &snap);
	if (!f)
		return;
	do {
		uint32_t r = rnd_below(&t->rng, 4);

		if (r == 0) /* a known number with another size or direction */
			cmd = _IOC(rnd_below(&t->rng, 4), AGILE_IOC_MAGIC,
				   rnd_below(&t->rng, 8),
				   rnd_pct(&t->rng, 50) ?
					   rnd_below(&t->rng, 128) :
					   descs[rnd_below(&t->rng, NR_DESCS)]
						   .size);
		else if (r == 1) /* the next numbers */
			cmd = _IOWR(AGILE_IOC_MAGIC, 8 + rnd_below(&t->rng, 8),
				    struct agile_fence);
		else
			cmd = _IOC(rnd_below(&t->rng, 4), AGILE_IOC_MAGIC,
				   rnd_below(&t->rng, 256),
				   rnd_below(&t->rng, 1 << _IOC_SIZEBITS));
	} while (cmd_known(cmd));
	arg = rnd_pct(&t->rng, 50) ? (void *)arena_page(t, 0) :
				     (void *)(uintptr_t)rnd64(&t->rng);
	ret = ioctl(snap.fd, cmd, arg);
	err = ret < 0 ? errno : 0;
	count(OP_BADCMD, err);
	if (!file_stale(f) && err != ENOTTY)
		violation("unknown ioctl %#lx on %s file: %s, not ENOTTY", cmd,
			  snap.kind == FK_DMABUF ? "dma-buf" : "agile",
			  ret < 0 ? errname(err) : "success");
	file_put(t->w, f);
}

/* ------------------------------------------------------------------ */
/* open, mmap and friends, loads and stores. */

static void op_open(struct thread *t)
{
	uint32_t r = rnd_below(&t->rng, 100);
	int oflags = O_CLOEXEC, fd;

	oflags |= r < 75 ? O_RDWR : r < 95 ? O_RDONLY : O_WRONLY;
	if (rnd_pct(&t->rng, 20))
		oflags |= O_NONBLOCK;
	fd = open(DEV_PATH, oflags);
	count(OP_OPEN, fd < 0 ? errno : 0);
	if (fd < 0) {
		if (errno != EMFILE && errno != ENFILE && errno != ENOMEM)
			violation("open %s: %s", DEV_PATH, errname(errno));
		return;
	}
	file_add(t->w, fd, FK_AGILE, oflags);
}

struct area {
	uint64_t off, len;
	int kind;
};

/* A mappable area of the file as its model knows it. */
static bool pick_area(struct thread *t, const struct fent *s, struct area *a)
{
	uint32_t r;

	if (s->kind == FK_DMABUF) {
		a->off = 0;
		a->len = s->dmabuf_bytes;
		a->kind = MK_DMABUF;
		return a->len != 0;
	}
	if (!s->has_ctx)
		return false;
	r = rnd_below(&t->rng, s->nr_segs ? 3 : 2);
	if (r == 0) {
		a->off = AGILE_MMAP_DOORBELLS;
		a->len = s->db_bytes;
		a->kind = MK_DOORBELLS;
	} else if (r == 1) {
		a->off = AGILE_MMAP_TASK_REGS;
		a->len = s->tr_bytes;
		a->kind = MK_TASK_REGS;
	} else {
		uint32_t id = rnd_below(&t->rng, s->nr_segs), k;

		/*
		 * Ids are the lowest free: one below a known segment is a
		 * hole while its SEG_CREATE runs or after it failed, so take
		 * the next id known to hold a segment.
		 */
		for (k = 0; k < s->nr_segs && !s->seg_bytes[id]; k++)
			id = (id + 1) % s->nr_segs;
		if (!s->seg_bytes[id])
			return false;
		a->off = seg_offset(id);
		a->len = s->seg_bytes[id];
		a->kind = MK_SEGMENT;
	}
	return true;
}

/* What mmap of a file opened with @s's mode gives for @prot, MAP_SHARED. */
static int mmap_mode_errno(const struct fent *s, int prot)
{
	if (!s->readable)
		return EACCES;
	if ((prot & PROT_WRITE) && !s->writable)
		return EACCES;
	return 0;
}

static void op_mmap(struct thread *t)
{
	struct fent snap, *f;
	struct ment *old = NULL;
	int prot, flags, err, expect;
	struct area a;
	void *addr, *hint = NULL;

	f = file_get(t, rnd_pct(&t->rng, 80) ? FK_AGILE : FK_DMABUF, &snap);
	if (!f)
		return;
	if (!pick_area(t, &snap, &a)) {
		file_put(t->w, f);
		return;
	}
	prot = PROT_READ | (rnd_pct(&t->rng, 85) ? PROT_WRITE : 0);
	flags = MAP_SHARED;
	if (rnd_pct(&t->rng, 10))
		flags |= MAP_POPULATE;
	if (rnd_pct(&t->rng, 5))
		flags |= MAP_LOCKED;
	/* Sometimes over one of our old mappings, MAP_FIXED. */
	if (rnd_pct(&t->rng, 10)) {
		old = map_take(t);
		if (old && old->len >= a.len) {
			hint = old->addr;
			flags |= MAP_FIXED;
		} else if (old) {
			map_return(t->w, old);
			old = NULL;
		}
	}
	addr = mmap(hint, a.len, prot, flags, snap.fd, (off_t)a.off);
	err = addr == MAP_FAILED ? errno : 0;
	count(OP_MMAP, err);
	if (old) {
		/* Replaced, or (a failed MAP_FIXED) unmapped: drop the rest. */
		munmap(old->addr + a.len, old->len - a.len);
		if (err)
			munmap(old->addr, a.len);
		free(old);
	}
	if (file_stale(f)) {
		if (!err)
			map_add(t->w, addr, a.len, prot, a.kind, false);
		file_put(t->w, f);
		return;
	}
	expect = mmap_mode_errno(&snap, prot);
	if (expect && !err)
		violation("mmap %#" PRIx64 "+%" PRIu64
			  " prot %d of a file opened %#x: success, not %s",
			  a.off, a.len, prot, snap.oflags, errname(expect));
	else if (!expect && err && err != ENOMEM && err != EAGAIN)
		violation("mmap %#" PRIx64 "+%" PRIu64
			  " prot %d flags %#x of %s: %s",
			  a.off, a.len, prot, flags,
			  snap.kind == FK_DMABUF ? "a dma-buf" :
						   "an agile file",
			  errname(err));
	if (!err)
		map_add(t->w, addr, a.len, prot, a.kind, true);
	file_put(t->w, f);
}

/* Wrong offsets, lengths, flags: EINVAL, or EPERM for exec. */
static void op_mmap_bad(struct thread *t)
{
	uint64_t p = (uint64_t)opt.page;
	struct fent snap, *f;
	int prot = PROT_READ, flags = MAP_SHARED, err, expect;
	struct area a;
	uint32_t r;
	void *addr;

	f = file_get(t, rnd_pct(&t->rng, 80) ? FK_AGILE : FK_DMABUF, &snap);
	if (!f)
		return;
	if (!pick_area(t, &snap, &a)) {
		file_put(t->w, f);
		return;
	}
	expect = EINVAL;
	r = rnd_below(&t->rng, 9);
	switch (r) {
	case 0:
		a.off += p * (1 + rnd_below(&t->rng, 16));
		break;
	case 1:
		a.off = seg_offset(AGILE_MAX_SEGMENTS +
				   rnd_below(&t->rng, 1000));
		break;
	case 2:
		a.off = AGILE_MMAP_TASK_REGS - p * (1 + rnd_below(&t->rng, 4));
		break;
	case 3:
		a.len += p * (1 + rnd_below(&t->rng, 4));
		break;
	case 4:
		if (a.len <= p) {
			a.len += p;
			break;
		}
		a.len -= p;
		break;
	case 5:
		a.len = 0;
		break;
	case 6:
		flags = MAP_PRIVATE;
		prot |= rnd_pct(&t->rng, 50) ? PROT_WRITE : 0;
		break;
	case 7:
		prot |= PROT_EXEC;
		expect = EPERM;
		break;
	default:
		a.off += 1 + rnd_below(&t->rng, (uint32_t)p - 1);
		break;
	}
	addr = mmap(NULL, a.len, prot, flags, snap.fd, (off_t)a.off);
	err = addr == MAP_FAILED ? errno : 0;
	count(OP_MMAP_BAD, err);
	if (!err)
		munmap(addr, a.len);
	if (!file_stale(f) && err != expect &&
	    !(flags == MAP_SHARED && err == mmap_mode_errno(&snap, prot) &&
	      err) &&
	    !(!snap.readable && err == EACCES) && !(r == 3 && err == ENOMEM))
		violation("mmap %s off %#" PRIx64 " len %" PRIu64
			  " prot %d flags %#x (case %u): %s, not %s",
			  snap.kind == FK_DMABUF ? "dma-buf" : "agile", a.off,
			  a.len, prot, flags, r, err ? errname(err) : "success",
			  errname(expect));
	file_put(t->w, f);
}

static void op_munmap(struct thread *t)
{
	size_t p = (size_t)opt.page, pages, k;
	struct ment *m = map_take(t);
	int err;

	if (!m)
		return;
	pages = m->len / p;
	if (pages < 2 || rnd_pct(&t->rng, 60)) {
		count(OP_MUNMAP, munmap(m->addr, m->len) ? errno : 0);
		free(m);
		return;
	}
	k = 1 + rnd_below(&t->rng, (uint32_t)pages - 1);
	switch (rnd_below(&t->rng, 3)) {
	case 0: /* the head */
		err = munmap(m->addr, k * p) ? errno : 0;
		if (!err) {
			m->addr += k * p;
			m->len -= k * p;
		}
		break;
	case 1: /* the tail */
		err = munmap(m->addr + m->len - k * p, k * p) ? errno : 0;
		if (!err)
			m->len -= k * p;
		break;
	default: /* a page in the middle: two mappings now */
		if (pages < 3) {
			err = 0;
			break;
		}
		k = 1 + rnd_below(&t->rng, (uint32_t)pages - 2);
		err = munmap(m->addr + k * p, p) ? errno : 0;
		if (!err) {
			/*
			 * Not one record with a hole: the kernel may put a new
			 * mapping into the hole.
			 */
			struct ment *tail = malloc(sizeof(*tail));

			if (tail) {
				*tail = *m;
				tail->addr = m->addr + (k + 1) * p;
				tail->len = m->len - (k + 1) * p;
				map_return(t->w, tail);
			} else {
				munmap(m->addr + (k + 1) * p,
				       m->len - (k + 1) * p);
			}
			m->len = k * p;
		}
		break;
	}
	count(OP_MUNMAP, err);
	if (err)
		violation("munmap of part of a mapping: %s", errname(err));
	map_return(t->w, m);
}

/* The mappings never grow (VM_DONTEXPAND); they shrink and move. */
static void op_mremap(struct thread *t)
{
	size_t p = (size_t)opt.page;
	struct ment *m = map_take(t);
	void *to, *res;
	int err = 0;

	if (!m)
		return;
	switch (rnd_below(&t->rng, 5)) {
	case 0:
		if (m->len < 2 * p || m->holes)
			break;
		res = mremap(m->addr, m->len, m->len - p, 0);
		err = res == MAP_FAILED ? errno : 0;
		if (!err)
			m->len -= p;
		else if (m->trusted)
			violation("mremap shrinking %zu to %zu: %s", m->len,
				  m->len - p, errname(err));
		break;
	case 1:
	case 2:
		res = mremap(m->addr, m->len, m->len + p,
			     rnd_pct(&t->rng, 50) ? MREMAP_MAYMOVE : 0);
		err = res == MAP_FAILED ? errno : 0;
		if (!err) {
			if (m->trusted)
				violation(
					"mremap grew an agile mapping of %zu bytes",
					m->len);
			m->addr = res;
			m->len += p;
			m->holes = true;
		}
		break;
	case 3:
		if (m->holes)
			break;
		to = mmap(NULL, m->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
		if (to == MAP_FAILED)
			break;
		res = mremap(m->addr, m->len, m->len,
			     MREMAP_MAYMOVE | MREMAP_FIXED, to);
		err = res == MAP_FAILED ? errno : 0;
		if (err) {
			munmap(to, m->len);
			if (m->trusted)
				violation("mremap moving %zu bytes: %s", m->len,
					  errname(err));
		} else {
			m->addr = res;
		}
		break;
	default:
		/* Where it works, the pages move: the old range is empty. */
		res = mremap(m->addr, m->len, m->len,
			     MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
		err = res == MAP_FAILED ? errno : 0;
		if (!err) {
			munmap(res, m->len);
			m->zapped = true;
		}
		break;
	}
	count(OP_MREMAP, err);
	map_return(t->w, m);
}

static void op_mprotect(struct thread *t)
{
	static const int prots[] = { PROT_READ | PROT_EXEC, PROT_READ,
				     PROT_NONE, PROT_READ | PROT_WRITE,
				     PROT_READ | PROT_WRITE | PROT_EXEC };
	struct ment *m = map_take(t);
	int prot, err;

	if (!m)
		return;
	prot = prots[rnd_below(&t->rng, sizeof(prots) / sizeof(prots[0]))];
	err = mprotect(m->addr, m->len, prot) ? errno : 0;
	count(OP_MPROTECT, err);
	if (!err)
		m->prot = prot;
	if (!err && (prot & PROT_EXEC) && m->trusted)
		violation("mprotect PROT_EXEC of an agile mapping succeeded");
	map_return(t->w, m);
}

static void op_madvise(struct thread *t)
{
	static const int advice[] = {
		MADV_DONTNEED,
		MADV_DONTNEED,
		MADV_WILLNEED,
		MADV_NORMAL,
		MADV_RANDOM,
		MADV_SEQUENTIAL,
		MADV_DONTFORK,
		MADV_DOFORK,
		MADV_DONTDUMP,
		MADV_DODUMP,
		MADV_COLD,
		MADV_PAGEOUT,
		MADV_MERGEABLE,
		MADV_UNMERGEABLE,
		MADV_HUGEPAGE,
		MADV_NOHUGEPAGE,
		MADV_FREE,
		MADV_REMOVE,
		MADV_POPULATE_READ,
		MADV_POPULATE_WRITE,
		-1,
		-2,
		-3,
	};
	struct ment *m = map_take(t);
	int adv, err;

	if (!m)
		return;
	adv = advice[rnd_below(&t->rng, sizeof(advice) / sizeof(advice[0]))];
	if (adv == -1)
		err = mlock(m->addr, m->len) ? errno : 0;
	else if (adv == -2)
		err = munlock(m->addr, m->len) ? errno : 0;
	else if (adv == -3)
		err = msync(m->addr, m->len,
			    rnd_pct(&t->rng, 50) ? MS_SYNC : MS_ASYNC) ?
			      errno :
			      0;
	else
		err = madvise(m->addr, m->len, adv) ? errno : 0;
	count(OP_MADVISE, err);
	if (!err && adv == MADV_DOFORK)
		m->dofork = true;
	if (!err && adv == MADV_DONTFORK)
		m->dofork = false;
	if (adv == MADV_DONTNEED) {
		if (!err)
			m->zapped = true;
		else if (m->trusted && !m->holes)
			violation("MADV_DONTNEED: %s", errname(err));
	}
	map_return(t->w, m);
}

/* Loads and stores, mostly on doorbell words: the poller sees them. */
static void op_touch(struct thread *t)
{
	struct ment *m = map_take(t);
	unsigned int n, i;

	if (!m)
		return;
	n = 1 + rnd_below(&t->rng, 8);
	for (i = 0; i < n && !m->holes && (m->prot & PROT_READ); i++) {
		size_t off;
		bool write = (m->prot & PROT_WRITE) && rnd_pct(&t->rng, 60);
		uint32_t value = pick_value(t), seen;
		int sig, want;

		if (m->kind == MK_DOORBELLS) {
			uint32_t r = rnd_below(&t->rng, 10);

			off = AGILE_DOORBELL_STRIDE *
			      rnd_below(&t->rng,
					(uint32_t)(m->len /
						   AGILE_DOORBELL_STRIDE));
			if (rnd_pct(&t->rng, 60))
				off %= 4 * AGILE_DOORBELL_STRIDE;
			off += r < 7 ? 0 :
			       r < 8 ? 4 :
				       8 + 4 * rnd_below(&t->rng, 30);
		} else {
			off = 4 * rnd_below(&t->rng, (uint32_t)(m->len / 4));
		}
		sig = probe((volatile uint32_t *)(m->addr + off), write, value,
			    &seen);
		count(OP_TOUCH, sig);
		want = m->zapped ? SIGBUS : 0;
		if (sig != want && m->trusted)
			violation(
				"%s at +%zu of a %s%s mapping of %zu bytes: %s, not %s",
				write ? "store" : "load", off,
				m->zapped ? "zapped " : "",
				m->kind == MK_DMABUF ? "dma-buf" : "agile",
				m->len, sig ? strsignal(sig) : "no fault",
				want ? strsignal(want) : "no fault");
	}
	map_return(t->w, m);
}

/* dma-buf ioctls: SYNC with good and bad flags, SET_NAME. */
static void op_dmabuf(struct thread *t)
{
	struct dma_buf_sync sync;
	struct fent snap, *f;
	int ret, err, expect = 0;
	char name[32];

	f = file_get(t, FK_DMABUF, &snap);
	if (!f)
		return;
	if (rnd_pct(&t->rng, 75)) {
		static const uint64_t dirs[] = { DMA_BUF_SYNC_READ,
						 DMA_BUF_SYNC_WRITE,
						 DMA_BUF_SYNC_RW };

		sync.flags = (rnd_pct(&t->rng, 50) ? DMA_BUF_SYNC_START :
						     DMA_BUF_SYNC_END) |
			     dirs[rnd_below(&t->rng, 3)];
		if (rnd_pct(&t->rng, 25)) {
			sync.flags = interesting(t, 64, sync.flags);
			if (sync.flags & ~DMA_BUF_SYNC_VALID_FLAGS_MASK ||
			    !(sync.flags & DMA_BUF_SYNC_RW))
				expect = EINVAL;
			else
				expect = -1;
		}
		ret = ioctl(snap.fd, DMA_BUF_IOCTL_SYNC, &sync);
	} else {
		snprintf(name, sizeof(name), "fuzz-%u",
			 rnd_below(&t->rng, 1000));
		ret = ioctl(snap.fd, DMA_BUF_SET_NAME_B, name);
		expect = -1;
	}
	err = ret < 0 ? errno : 0;
	count(OP_DMABUF, err);
	if (!file_stale(f) && expect >= 0 && err != expect)
		violation("DMA_BUF_IOCTL_SYNC flags %#llx: %s, not %s",
			  (unsigned long long)sync.flags, errname(err),
			  errname(expect));
	file_put(t->w, f);
}

/* sysfs: every file reads; bad writes to the tunables are refused. */
struct tunable {
	const char *name;
	unsigned long long min, max;
};

static const struct tunable tunables[] = {
	{ "poll_interval_us", 10, 1000000 },
	{ "spin_ns", 0, 10000000 },
	{ "max_slots", 1, 65536 },
	{ "max_segment_bytes", 4096, 1ULL << 30 },
};

static int sysfs_read(const char *name, char *buf, size_t len)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", SYSFS_DIR, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

static int sysfs_write(const char *name, const char *value)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", SYSFS_DIR, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, value, strlen(value));
	n = n < 0 ? -errno : 0;
	close(fd);
	return (int)n;
}

static long long sysfs_number(const char *name)
{
	char buf[64], *end;
	long long v;

	if (sysfs_read(name, buf, sizeof(buf)))
		return -1;
	v = strtoll(buf, &end, 10);
	return end == buf ? -1 : v;
}

static void op_sysfs(struct thread *t)
{
	const struct tunable *tu = &tunables[rnd_below(&t->rng, 4)];
	char buf[64], bad[32];
	struct dirent *de;
	DIR *dir;
	int ret;

	dir = opendir(SYSFS_DIR);
	while (dir && (de = readdir(dir)))
		if (de->d_type == DT_REG)
			count(OP_SYSFS,
			      -sysfs_read(de->d_name, buf, sizeof(buf)));
	if (dir)
		closedir(dir);

	if (rnd_pct(&t->rng, 30)) {
		/* Its own value again: accepted. */
		if (sysfs_read(tu->name, buf, sizeof(buf)))
			return;
		ret = sysfs_write(tu->name, buf);
		count(OP_SYSFS, -ret);
		if (ret)
			violation("sysfs %s: writing its value %s back: %s",
				  tu->name, buf, errname(-ret));
		return;
	}
	switch (rnd_below(&t->rng, 5)) {
	case 0:
		if (!tu->min) {
			snprintf(bad, sizeof(bad), "-1");
			break;
		}
		snprintf(bad, sizeof(bad), "%llu", tu->min - 1);
		break;
	case 1:
		snprintf(bad, sizeof(bad), "%llu\n", tu->max + 1);
		break;
	case 2:
		snprintf(bad, sizeof(bad), "%llu", 1ULL << 32);
		break;
	case 3:
		snprintf(bad, sizeof(bad), "12abc");
		break;
	default:
		snprintf(bad, sizeof(bad), "%" PRIx64, rnd64(&t->rng) | 0xa);
		break;
	}
	ret = sysfs_write(tu->name, bad);
	count(OP_SYSFS, -ret);
	if (ret != -EINVAL)
		violation("sysfs %s: writing '%s': %s, not EINVAL", tu->name,
			  bad, ret ? errname(-ret) : "accepted");
}

/*
 * Most bytes of an agile file's fdinfo: procfs's own lines, the
 * context's, a group's and at most 32 slot lines (agile(4), FDINFO).
 */
#define FDINFO_BOUND 16384

/*
 * Read an agile file's /proc/self/fdinfo while the others use it: it
 * names its context ("none" only before one exists; a context never
 * goes), gives its slot count, and stays bounded.
 */
static void op_fdinfo(struct thread *t)
{
	char path[64], want[32], *buf, *line;
	struct fent snap, *f;
	ssize_t len, total = 0;
	unsigned int nr_lines = 0;
	int fd;

	f = file_get(t, FK_AGILE, &snap);
	if (!f)
		return;
	buf = malloc(4 * FDINFO_BOUND);
	if (!buf)
		goto out;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", snap.fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	count(OP_FDINFO, fd < 0 ? errno : 0);
	if (fd < 0) {
		if (!file_stale(f))
			violation("fdinfo of an open agile file: %s",
				  errname(errno));
		goto out;
	}
	while ((len = read(fd, buf + total, 4 * FDINFO_BOUND - 1 - total)) > 0)
		total += len;
	close(fd);
	buf[total] = '\0';
	if (file_stale(f))
		goto out;
	if (total > FDINFO_BOUND)
		violation("fdinfo of an agile file: %zd bytes, above %d", total,
			  FDINFO_BOUND);
	for (line = buf; (line = strstr(line, "\nslot:\t")); line++)
		nr_lines++;
	if (nr_lines > 32)
		violation("fdinfo of an agile file: %u slot lines, above 32",
			  nr_lines);
	if (!strstr(buf, "\nctx:\t"))
		violation("fdinfo of an agile file: no ctx line");
	else if (snap.has_ctx && strstr(buf, "\nctx:\tnone\n"))
		violation("fdinfo of an agile file with a context: ctx none");
	snprintf(want, sizeof(want), "\nnr_slots:\t%u\n", snap.nr_slots);
	if (snap.has_ctx && !strstr(buf, want))
		violation("fdinfo of an agile file: no '%s'", want + 1);
out:
	free(buf);
	file_put(t->w, f);
}

/* ------------------------------------------------------------------ */
/* Scenarios: private files, exact expectations. */

#define EXPECT(cond, ...)                       \
	do {                                    \
		if (!(cond))                    \
			violation(__VA_ARGS__); \
	} while (0)

/* A limit of the module or the machine: the scenario just stops. */
static bool limit_errno(int err)
{
	return err == ENOMEM || err == ENOSPC || err == EMFILE || err == ENFILE;
}

/* 0 or the errno of an ioctl. */
static int xioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? errno : 0;
}

static int fence(int fd, uint32_t op, uint32_t slot, uint32_t cmp,
		 uint32_t value, uint64_t timeout_ns, uint32_t *observed)
{
	struct agile_fence f = {
		.op = op,
		.slot = slot,
		.cmp = cmp,
		.value = value,
		.timeout_ns = timeout_ns,
		.observed = 0xdeadbeef,
	};
	int err = xioctl(fd, AGILE_IOC_FENCE, &f);

	if (observed)
		*observed = f.observed;
	return err;
}

static int group_join(int fd, uint64_t key, uint32_t nr_slots,
		      uint32_t max_members, uint32_t flags,
		      struct agile_group_join *out)
{
	struct agile_group_join j = {
		.key = key,
		.nr_slots = nr_slots,
		.task_reg_size = AGILE_TASK_REG_MIN_SIZE,
		.max_members = max_members,
		.mode = 0600,
		.flags = flags,
	};
	int err, tries = 0;

	/*
	 * A join that must make the group or fault its page in gives up
	 * when a signal is pending (EINTR here, with no SA_RESTART): a
	 * pool thread's kick can land there.  Try again as a restarting
	 * handler would, a bounded number of times.
	 */
	do
		err = xioctl(fd, AGILE_IOC_GROUP_JOIN, &j);
	while (err == EINTR && ++tries < 100);
	if (out)
		*out = j;
	return err;
}

/*
 * The fd numbers of the scenarios' private files, away from the pool's:
 * a thread of the pool that still holds the number of a file closed
 * under it must not reach a private file that reused the number.
 */
#define PRIVATE_FD_MIN 256

static int private_fd(int fd)
{
	int high;

	if (fd < 0)
		return fd;
	high = fcntl(fd, F_DUPFD_CLOEXEC, PRIVATE_FD_MIN);
	close(fd);
	return high;
}

static int open_private(void)
{
	return private_fd(open(DEV_PATH, O_RDWR | O_CLOEXEC));
}

/* A key no other scenario uses: worker, thread and a counter. */
static uint64_t private_key(struct thread *t)
{
	return 0xa91ec0de00000000ULL | ((uint64_t)t->w->idx << 24) |
	       ((uint64_t)t->idx << 20) |
	       (__atomic_fetch_add(&t->w->key_counter, 1, __ATOMIC_RELAXED) &
		0xfffff);
}

static void *map_area(int fd, uint64_t off, uint64_t len)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    (off_t)off);
}

/* Print a task's kernel stack as TAP diagnostics. */
static void dump_stack(pid_t pid, pid_t tid)
{
	char path[64], buf[4096], line[4200];
	ssize_t n;
	int fd, len;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stack", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	len = snprintf(line, sizeof(line), "# kernel stack of %d/%d:\n# %s",
		       pid, tid, buf);
	for (n = 0; n < len - 1; n++)
		if (line[n] == '\n' && n > 0 && line[n + 1] != '#') {
			memmove(line + n + 3, line + n + 1, (size_t)(len - n));
			line[n + 1] = '#';
			line[n + 2] = ' ';
			len += 2;
			if ((size_t)len >= sizeof(line) - 3)
				break;
		}
	if (write(STDOUT_FILENO, line, (size_t)strnlen(line, sizeof(line))) < 0)
		return;
}

/* Reap @pid; a child that will not go in REAP_NS is stuck in the kernel. */
static int reap(pid_t pid, const char *what)
{
	uint64_t end = now_ns() + REAP_NS;
	int status;
	pid_t r;

	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		if (now_ns() > end) {
			dump_stack(pid, pid);
			violation(
				"%s %d not reaped %llu s after it was killed or should have exited",
				what, pid, REAP_NS / NSEC_PER_SEC);
			return -1;
		}
		sleep_ns(NSEC_PER_MSEC);
	}
}

/* In a child: close every fd from 3 up except the @n in @keep. */
static void close_all_but(const int *keep, unsigned int n)
{
	unsigned int lo = 3, i, next;

	for (;;) {
		next = ~0U;
		for (i = 0; i < n; i++)
			if ((unsigned int)keep[i] >= lo &&
			    (unsigned int)keep[i] < next)
				next = (unsigned int)keep[i];
		if (next > lo)
			close_range(lo, next - 1, 0);
		if (next == ~0U)
			break;
		lo = next + 1;
	}
}

/* A context's whole life, every step exactly as the ABI says. */
static void scn_ctx(struct thread *t)
{
	unsigned long long restarts;
	size_t p = (size_t)opt.page;
	struct agile_ctx_init init = { 0 }, *ro_init;
	struct agile_seg_create seg, *ro_seg;
	struct agile_export_dmabuf exp;
	struct agile_wait_cond conds[2];
	struct agile_doorbell *db = MAP_FAILED;
	char *tr = MAP_FAILED, *sm = MAP_FAILED, *dm = MAP_FAILED;
	uint32_t nr, k, v, obs = 0, idx = 0, i, nr_segs;
	struct agile_stats st;
	struct agile_wait_any any;
	int fd, err, dfd;
	void *addr;

	fd = open_private();
	count(OP_SCN_CTX, fd < 0 ? errno : 0);
	if (fd < 0)
		return;

	memset(&st, 0xa5, sizeof(st));
	err = xioctl(fd, AGILE_IOC_STATS, &st);
	EXPECT(!err && mem_is_zero(&st, sizeof(st)),
	       "STATS before CTX_INIT: %s, %s", errname(err),
	       mem_is_zero(&st, sizeof(st)) ? "zero" : "NOT zero");
	err = fence(fd, AGILE_FENCE_BARRIER, 0, 0, 0, 0, NULL);
	EXPECT(err == EBADFD, "BARRIER before CTX_INIT: %s, not EBADFD",
	       errname(err));
	addr = mmap(NULL, p, PROT_READ, MAP_SHARED, fd, 0);
	err = addr == MAP_FAILED ? errno : 0;
	EXPECT(err == EBADFD, "mmap before CTX_INIT: %s, not EBADFD",
	       errname(err));
	if (!err)
		munmap(addr, p);

	nr = 1 + rnd_below(&t->rng, 16);
	init.nr_slots = nr;
	init.task_reg_size = pick_task_reg_size(t);
	/* A failed CTX_INIT leaves no trace: the next one succeeds. */
	ro_init = arena_rdonly_put(t, 0, &init, sizeof(init));
	err = xioctl(fd, AGILE_IOC_CTX_INIT, ro_init);
	EXPECT(err == EFAULT, "CTX_INIT into a read-only page: %s, not EFAULT",
	       errname(err));
	err = xioctl(fd, AGILE_IOC_CTX_INIT, &init);
	if (err) {
		EXPECT(limit_errno(err),
		       "CTX_INIT %u x %u after a failed one: %s", nr,
		       init.task_reg_size, errname(err));
		goto out;
	}
	check_areas("CTX_INIT", nr, init.task_reg_size, init.doorbell_offset,
		    init.doorbell_bytes, init.task_reg_offset,
		    init.task_reg_bytes);
	err = xioctl(fd, AGILE_IOC_CTX_INIT, &init);
	EXPECT(err == EBUSY, "second CTX_INIT: %s, not EBUSY", errname(err));
	err = group_join(fd, private_key(t), 1, 2, AGILE_GROUP_CREATE, NULL);
	EXPECT(err == EBUSY, "GROUP_JOIN after CTX_INIT: %s, not EBUSY",
	       errname(err));

	db = map_area(fd, init.doorbell_offset, init.doorbell_bytes);
	tr = map_area(fd, init.task_reg_offset, init.task_reg_bytes);
	if (db == MAP_FAILED || tr == MAP_FAILED) {
		violation("mmap of the areas: %s", errname(errno));
		goto out;
	}
	addr = mmap(NULL, init.doorbell_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
	EXPECT(addr == MAP_FAILED && errno == EINVAL,
	       "mmap MAP_PRIVATE: %s, not EINVAL",
	       addr == MAP_FAILED ? errname(errno) : "success");
	addr = mmap(NULL, init.doorbell_bytes, PROT_READ | PROT_EXEC,
		    MAP_SHARED, fd, 0);
	EXPECT(addr == MAP_FAILED && errno == EPERM,
	       "mmap PROT_EXEC: %s, not EPERM",
	       addr == MAP_FAILED ? errname(errno) : "success");
	for (i = 0; i < nr; i++)
		EXPECT(!db[i].value && !db[i].sleepers,
		       "new context: doorbell %u is %u, sleepers %u", i,
		       db[i].value, db[i].sleepers);

	k = rnd_below(&t->rng, nr);
	v = 0x100 + rnd_below(&t->rng, 1000);
	err = fence(fd, AGILE_FENCE_SIGNAL, k, 0, v, 0, NULL);
	EXPECT(!err && __atomic_load_n(&db[k].value, __ATOMIC_ACQUIRE) == v,
	       "SIGNAL %u to slot %u: %s, doorbell %u", v, k, errname(err),
	       db[k].value);
	err = fence(fd, AGILE_FENCE_WAIT, k, AGILE_CMP_EQ, v, 0, &obs);
	EXPECT(!err && obs == v, "WAIT EQ %u: %s observed %u", v, errname(err),
	       obs);
	err = fence(fd, AGILE_FENCE_WAIT, k, AGILE_CMP_NE, v, 0, &obs);
	EXPECT(err == ETIMEDOUT && obs == v,
	       "WAIT NE %u, timeout 0: %s observed %u", v, errname(err), obs);
	err = fence(fd, AGILE_FENCE_WAIT, k, AGILE_CMP_GT, v, 1000, &obs);
	EXPECT(err == ETIMEDOUT || err == EINTR, "WAIT GT %u for 1 us: %s", v,
	       errname(err));
	/* A plain store, no SIGNAL: the kernel reads the page. */
	__atomic_store_n(&db[k].value, v + 1, __ATOMIC_RELEASE);
	err = fence(fd, AGILE_FENCE_WAIT, k, AGILE_CMP_EQ, v + 1, 0, &obs);
	EXPECT(!err && obs == v + 1,
	       "WAIT EQ %u after a plain store: %s observed %u", v + 1,
	       errname(err), obs);
	conds[0] = (struct agile_wait_cond){ .slot = k,
					     .cmp = AGILE_CMP_NE,
					     .value = v + 1 };
	conds[1] = (struct agile_wait_cond){ .slot = k,
					     .cmp = AGILE_CMP_EQ,
					     .value = v + 1 };
	any = (struct agile_wait_any){ .conds = (uintptr_t)conds,
				       .nr_conds = 2,
				       .index = 99,
				       .observed = 0 };
	err = xioctl(fd, AGILE_IOC_WAIT_ANY, &any);
	idx = any.index;
	EXPECT(!err && idx == 1 && any.observed == v + 1,
	       "WAIT_ANY {NE %u, EQ %u}: %s index %u observed %u", v + 1, v + 1,
	       errname(err), idx, any.observed);
	err = xioctl(fd, AGILE_IOC_STATS, &st);
	/*
	 * A kick (another thread's signal) during WAIT GT interrupts it; if
	 * the handler restarts it, the restart counts as one more wait, which
	 * times out: waits 5 + r, timeouts + interrupted 2 + r, r restarts.
	 */
	restarts = st.waits - 5;
	EXPECT(!err && st.signals == 1 && st.waits >= 5 &&
		       restarts <= st.interrupted &&
		       st.timeouts + st.interrupted == 2 + restarts &&
		       st.spin_hits == 3 &&
		       mem_is_zero(st.reserved, sizeof(st.reserved)),
	       "STATS after 1 signal, 5 waits (2 timed out, 3 held): %s signals %llu waits %llu timeouts %llu interrupted %llu spin_hits %llu",
	       errname(err), (unsigned long long)st.signals,
	       (unsigned long long)st.waits, (unsigned long long)st.timeouts,
	       (unsigned long long)st.interrupted,
	       (unsigned long long)st.spin_hits);

	/* Segments: ids in order; a failed SEG_CREATE uses no id. */
	nr_segs = 1 + rnd_below(&t->rng, 3);
	for (i = 0; i < nr_segs; i++) {
		memset(&seg, 0, sizeof(seg));
		seg.bytes = 1 + rnd_below(&t->rng, 3 * (uint32_t)p);
		err = xioctl(fd, AGILE_IOC_SEG_CREATE, &seg);
		if (limit_errno(err))
			goto out;
		EXPECT(!err && seg.id == i &&
			       seg.mmap_offset == seg_offset(i) &&
			       seg.mmap_bytes == page_round(seg.bytes),
		       "SEG_CREATE %u: %s id %u", i, errname(err), seg.id);
	}
	memset(&seg, 0, sizeof(seg));
	seg.bytes = p;
	ro_seg = arena_rdonly_put(t, 512, &seg, sizeof(seg));
	err = xioctl(fd, AGILE_IOC_SEG_CREATE, ro_seg);
	EXPECT(err == EFAULT, "SEG_CREATE into a read-only page: %s",
	       errname(err));
	err = xioctl(fd, AGILE_IOC_SEG_CREATE, &seg);
	EXPECT(!err && seg.id == nr_segs,
	       "SEG_CREATE after a failed one: %s id %u, not %u", errname(err),
	       seg.id, nr_segs);
	if (!err)
		nr_segs++;
	sm = map_area(fd, seg.mmap_offset, seg.mmap_bytes);
	if (sm == MAP_FAILED) {
		violation("mmap of segment %u: %s", seg.id, errname(errno));
	} else {
		EXPECT(mem_is_zero(sm, p), "a new segment is not zeroed");
		memset(sm, 0x5a, p);
	}
	if (rnd_pct(&t->rng, 20)) {
		/* AGILE_MAX_SEGMENTS, then ENOSPC. */
		do {
			memset(&seg, 0, sizeof(seg));
			seg.bytes = 1;
			err = xioctl(fd, AGILE_IOC_SEG_CREATE, &seg);
			if (!err)
				nr_segs++;
		} while (!err);
		EXPECT(err == ENOSPC && nr_segs == AGILE_MAX_SEGMENTS,
		       "SEG_CREATE past %u segments: %s after %u",
		       AGILE_MAX_SEGMENTS, errname(err), nr_segs);
	}

	/* A dma-buf shares the very pages, and outlives both fds. */
	exp = (struct agile_export_dmabuf){ .what = AGILE_DMABUF_DOORBELLS,
					    .flags = O_RDWR | O_CLOEXEC };
	err = xioctl(fd, AGILE_IOC_EXPORT_DMABUF, &exp);
	if (err) {
		EXPECT(limit_errno(err), "EXPORT_DMABUF: %s", errname(err));
		goto out;
	}
	dfd = private_fd(exp.fd);
	dm = map_area(dfd, 0, init.doorbell_bytes);
	if (dm == MAP_FAILED) {
		violation("mmap of the doorbells' dma-buf: %s", errname(errno));
		close(dfd);
		goto out;
	}
	__atomic_store_n(&((struct agile_doorbell *)dm)[k].value, v + 2,
			 __ATOMIC_RELEASE);
	EXPECT(__atomic_load_n(&db[k].value, __ATOMIC_ACQUIRE) == v + 2,
	       "a store through the dma-buf is not in the doorbell");
	err = fence(fd, AGILE_FENCE_WAIT, k, AGILE_CMP_EQ, v + 2, 0, &obs);
	EXPECT(!err, "WAIT EQ a value stored through the dma-buf: %s",
	       errname(err));
	close(dfd);
	close(fd);
	fd = -1;
	/* Both files closed: the mappings still share the pages. */
	EXPECT(!probe(&((struct agile_doorbell *)dm)[k].value, true, v + 3,
		      NULL) &&
		       !probe(&db[k].value, false, 0, &obs) && obs == v + 3,
	       "after close: a store through the dma-buf mapping reads back %u, not %u",
	       obs, v + 3);
	if (!madvise(db, init.doorbell_bytes, MADV_DONTNEED))
		EXPECT(probe(&db[0].value, false, 0, &obs) == SIGBUS,
		       "a load after MADV_DONTNEED does not fault SIGBUS");
out:
	if (dm != MAP_FAILED)
		munmap(dm, init.doorbell_bytes);
	if (sm != MAP_FAILED)
		munmap(sm, seg.mmap_bytes);
	if (db != MAP_FAILED)
		munmap(db, init.doorbell_bytes);
	if (tr != MAP_FAILED)
		munmap(tr, init.task_reg_bytes);
	if (fd >= 0)
		close(fd);
}

struct waiter {
	pthread_t pt;
	int fd;
	uint32_t slot;
	uint64_t timeout_ns;
	int err;
};

static void *waiter_fn(void *arg)
{
	struct waiter *wt = arg;

	wt->err = fence(wt->fd, AGILE_FENCE_WAIT, wt->slot, AGILE_CMP_EQ,
			0xfeedf00d, wt->timeout_ns, NULL);
	return NULL;
}

/* Wait until a sleeper shows on @db's @slot; false after 5 s. */
static bool sleeper_seen(struct agile_doorbell *db, uint32_t slot)
{
	uint64_t end = now_ns() + 5 * NSEC_PER_SEC;

	while (!__atomic_load_n(&db[slot].sleepers, __ATOMIC_ACQUIRE)) {
		if (now_ns() > end)
			return false;
		sleep_ns(100 * NSEC_PER_USEC);
	}
	return true;
}

/*
 * CREATE|EXCL of @key once every member of its group has closed: 0 or a
 * limit's errno.  A child that another thread forks in the meantime holds
 * the members' files until its close_all_but(): while EPIPE, look again
 * for up to a second.
 */
static int join_freed_key(uint64_t key, uint32_t nr_slots, uint32_t max_members)
{
	int c, err = EPIPE;

	for (int i = 0; err == EPIPE && i < 100; i++) {
		if (i)
			usleep(10000);
		c = open_private();
		if (c < 0)
			return 0;
		err = group_join(c, key, nr_slots, max_members,
				 AGILE_GROUP_CREATE | AGILE_GROUP_EXCL, NULL);
		close(c);
	}
	return err;
}

/*
 * Close while another thread waits: the wait ends its own way
 * (ETIMEDOUT) on a plain context; in a group, closing another member
 * ends it with EPIPE at once, a join of the key fails with EPIPE while
 * the other member holds the group, and the key is free once it is gone.
 */
static void scn_close_wait(struct thread *t)
{
	struct agile_ctx_init init = { .nr_slots = 2, .task_reg_size = 64 };
	struct waiter wt = { .slot = 1 };
	bool group = rnd_pct(&t->rng, 50), closed = false, made = false;
	struct agile_doorbell *db = MAP_FAILED;
	uint64_t key = private_key(t);
	int a, b = -1, c, err;

	a = open_private();
	count(OP_SCN_CLOSE_WAIT, a < 0 ? errno : 0);
	if (a < 0)
		return;
	if (group) {
		err = group_join(a, key, 2, 4,
				 AGILE_GROUP_CREATE | AGILE_GROUP_EXCL, NULL);
		b = open_private();
		if (!err && b >= 0)
			err = group_join(b, key, 2, 4, 0, NULL);
		wt.timeout_ns = 10 * NSEC_PER_SEC;
	} else {
		err = xioctl(a, AGILE_IOC_CTX_INIT, &init);
		wt.timeout_ns = 200 * NSEC_PER_MSEC;
	}
	if (err) {
		EXPECT(limit_errno(err), "%s: %s",
		       group ? "GROUP_JOIN" : "CTX_INIT", errname(err));
		goto out;
	}
	made = true;
	db = map_area(a, AGILE_MMAP_DOORBELLS, (uint64_t)opt.page);
	if (db == MAP_FAILED) {
		violation("mmap doorbells: %s", errname(errno));
		goto out;
	}
	wt.fd = a;
	if (pthread_create(&wt.pt, NULL, waiter_fn, &wt))
		goto out;
	if (sleeper_seen(db, wt.slot)) {
		if (group) {
			close(b); /* a member leaves: the group ends */
			b = -1;
		} else {
			close(a); /* the wait holds the file */
			closed = true;
		}
	}
	pthread_join(wt.pt, NULL);
	if (group) {
		EXPECT(wt.err == EPIPE || (b >= 0 && wt.err == ETIMEDOUT),
		       "a wait in a group whose member left: %s, not EPIPE",
		       errname(wt.err));
		if (b >= 0)
			goto out;
		err = fence(a, AGILE_FENCE_WAIT, 0, AGILE_CMP_EQ, 0, 0, NULL);
		EXPECT(err == EPIPE, "WAIT in an ended group: %s, not EPIPE",
		       errname(err));
		err = fence(a, AGILE_FENCE_SIGNAL, 0, 0, 1, 0, NULL);
		EXPECT(!err, "SIGNAL in an ended group: %s", errname(err));
		c = open_private();
		if (c >= 0) {
			err = group_join(c, key, 2, 4,
					 AGILE_GROUP_CREATE | AGILE_GROUP_EXCL,
					 NULL);
			EXPECT(err == EPIPE,
			       "CREATE|EXCL of an ended group's key while a member holds it: %s, not EPIPE",
			       errname(err));
			close(c);
		}
	} else {
		EXPECT(wt.err == ETIMEDOUT,
		       "a wait whose fd was closed under it: %s, not ETIMEDOUT",
		       errname(wt.err));
	}
out:
	if (db != MAP_FAILED)
		munmap(db, (size_t)opt.page);
	if (!closed)
		close(a);
	if (b >= 0)
		close(b);
	/* Every member gone (the waiter joined): the key is free. */
	if (group && made) {
		err = join_freed_key(key, 2, 4);
		EXPECT(!err || limit_errno(err),
		       "the key of a group whose members are all gone is not free: CREATE|EXCL gives %s",
		       errname(err));
	}
}

/* A forked member of a group: join, then signal, wait and store. */
static void group_child(uint64_t key, uint32_t nr_slots, uint32_t max_members,
			int pipe_wr, uint64_t seed)
{
	struct agile_group_join j;
	struct agile_doorbell *db;
	uint64_t rng = seed;
	int fd, err, i, msg;

	child_name = "group member";
	close_all_but(&pipe_wr, 1);
	fd = open(DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		_exit(0);
	/* No CREATE: after the group ends the key stays free (ENOENT). */
	err = group_join(fd, key, nr_slots, max_members, 0, &j);
	msg = err ? -err : (int)j.member;
	if (write(pipe_wr, &msg, sizeof(msg)) != sizeof(msg) || err)
		_exit(0);
	db = map_area(fd, j.doorbell_offset, j.doorbell_bytes);
	for (i = 0; i < 40; i++) {
		uint32_t slot = rnd_below(&rng, nr_slots);

		switch (rnd_below(&rng, 4)) {
		case 0:
			err = fence(fd, AGILE_FENCE_SIGNAL, slot, 0,
				    rnd_below(&rng, 4), 0, NULL);
			EXPECT(!err, "SIGNAL in a group: %s", errname(err));
			break;
		case 1:
			err = fence(fd, AGILE_FENCE_WAIT, slot,
				    rnd_below(&rng, AGILE_CMP_LE + 1),
				    rnd_below(&rng, 4),
				    rnd_below(&rng, 1000000), NULL);
			/* The parent's SIGSTOP and SIGCONT: restarted or EINTR. */
			EXPECT(!err || err == ETIMEDOUT || err == EPIPE ||
				       (err == EINTR && !opt.wait_restarts),
			       "WAIT in a group: %s", errname(err));
			break;
		case 2:
			if (db != MAP_FAILED)
				__atomic_store_n(&db[slot].value,
						 rnd_below(&rng, 4),
						 __ATOMIC_RELEASE);
			break;
		default:
			sleep_ns(rnd_below(&rng, 500000));
			break;
		}
	}
	_exit(0);
}

/*
 * A group with forked members that are killed (SIGKILL, sometimes after
 * SIGSTOP and SIGCONT) at random points, or exit: every join gets its own
 * member index (or EPIPE, after another has gone); once a member is gone
 * the creator's waits fail with EPIPE, a join of the key fails with EPIPE
 * while the creator holds the group, and the key is free once it closes.
 */
static void scn_group(struct thread *t)
{
	uint32_t nr_slots = 1 + rnd_below(&t->rng, 4);
	uint32_t max_members = 2 + rnd_below(&t->rng, 4);
	unsigned int n = 1 + rnd_below(&t->rng, 3), i, joined = 0;
	uint64_t key = private_key(t);
	int a, b, err, pipes[3][2], members[3];
	struct agile_group_join j;
	bool seen[8] = { false };
	pid_t pids[3];
	/* It ends when the group does, or by the SIGNAL if no one joined. */
	struct waiter wt = { .slot = 0, .timeout_ns = 30 * NSEC_PER_SEC };

	a = open_private();
	count(OP_SCN_GROUP, a < 0 ? errno : 0);
	if (a < 0)
		return;
	err = group_join(a, key, nr_slots, max_members,
			 AGILE_GROUP_CREATE | AGILE_GROUP_EXCL, &j);
	if (err) {
		EXPECT(limit_errno(err),
		       "GROUP_JOIN CREATE|EXCL of a new key: %s", errname(err));
		close(a);
		return;
	}
	EXPECT(j.member == 0, "the creator is member %u", j.member);
	/* The refusals, on a file that stays without a context. */
	b = open_private();
	if (b >= 0) {
		err = group_join(b, key, nr_slots + 1, max_members, 0, NULL);
		EXPECT(err == EINVAL, "join with other sizes: %s, not EINVAL",
		       errname(err));
		err = group_join(b, key, nr_slots, max_members,
				 AGILE_GROUP_CREATE | AGILE_GROUP_EXCL, NULL);
		EXPECT(err == EEXIST,
		       "CREATE|EXCL of a live key: %s, not EEXIST",
		       errname(err));
		err = group_join(b, key, nr_slots, max_members,
				 AGILE_GROUP_EXCL, NULL);
		EXPECT(err == EINVAL, "EXCL without CREATE: %s, not EINVAL",
		       errname(err));
		err = group_join(b, key ^ 0x80000, nr_slots, max_members, 0,
				 NULL);
		EXPECT(err == ENOENT, "join of an unknown key: %s, not ENOENT",
		       errname(err));
		close(b);
	}

	for (i = 0; i < n; i++) {
		pids[i] = -1;
		members[i] = -1;
		if (pipe2(pipes[i], O_CLOEXEC)) {
			n = i;
			break;
		}
		pids[i] = fork();
		if (!pids[i])
			group_child(key, nr_slots, max_members, pipes[i][1],
				    rnd64(&t->rng));
		close(pipes[i][1]);
		if (pids[i] < 0) {
			close(pipes[i][0]);
			n = i;
			break;
		}
	}
	wt.fd = a;
	if (pthread_create(&wt.pt, NULL, waiter_fn, &wt))
		wt.fd = -1;
	for (i = 0; i < n; i++) {
		uint32_t action = rnd_below(&t->rng, 4);
		struct pollfd pfd = { .fd = pipes[i][0], .events = POLLIN };
		int msg;

		if (action == 0) {
			/* Killed at once: anywhere, joined or not. */
			sleep_ns(rnd_below(&t->rng, 3000000));
			kill(pids[i], SIGKILL);
		}
		if (poll(&pfd, 1, 10000) == 1 &&
		    read(pipes[i][0], &msg, sizeof(msg)) == sizeof(msg)) {
			members[i] = msg;
			if (msg >= 0)
				joined++;
		}
		close(pipes[i][0]);
		if (action == 1) {
			sleep_ns(rnd_below(&t->rng, 2000000));
			kill(pids[i], SIGKILL);
		} else if (action == 2) {
			kill(pids[i], SIGSTOP);
			sleep_ns(rnd_below(&t->rng, 2000000));
			kill(pids[i], SIGCONT);
			sleep_ns(rnd_below(&t->rng, 2000000));
			kill(pids[i], SIGKILL);
		}
		/* action 3: it finishes and exits. */
	}
	for (i = 0; i < n; i++) {
		int status = reap(pids[i], "group member");

		EXPECT(status < 0 ||
			       (WIFSIGNALED(status) &&
				WTERMSIG(status) == SIGKILL) ||
			       (WIFEXITED(status) && !WEXITSTATUS(status)),
		       "group member exited with status %#x", status);
		if (members[i] >= 0) {
			EXPECT(members[i] > 0 &&
				       (uint32_t)members[i] < max_members &&
				       !seen[members[i]],
			       "member index %d (max %u, %s)", members[i],
			       max_members,
			       seen[members[i] & 7] ? "twice" : "once");
			seen[members[i] & 7] = true;
		} else if (members[i] != -1) {
			EXPECT(limit_errno(-members[i]) ||
				       -members[i] == ENOENT ||
				       -members[i] == EPIPE,
			       "a child's GROUP_JOIN: %s",
			       errname(-members[i]));
		}
	}
	if (!joined)
		fence(a, AGILE_FENCE_SIGNAL, 0, 0, 0xfeedf00d, 0, NULL);
	if (wt.fd >= 0) {
		pthread_join(wt.pt, NULL);
		EXPECT(!joined || wt.err == EPIPE,
		       "creator's wait after %u members died: %s, not EPIPE",
		       joined, errname(wt.err));
	}
	if (joined) {
		err = fence(a, AGILE_FENCE_WAIT, 0, AGILE_CMP_NE, 0xfeedf00d, 0,
			    NULL);
		EXPECT(err == EPIPE, "WAIT after a member died: %s, not EPIPE",
		       errname(err));
		b = open_private();
		if (b >= 0) {
			err = group_join(b, key, nr_slots, max_members,
					 AGILE_GROUP_CREATE | AGILE_GROUP_EXCL,
					 NULL);
			EXPECT(err == EPIPE,
			       "CREATE|EXCL of an ended group's key while its creator holds it: %s, not EPIPE",
			       errname(err));
			close(b);
		}
	}
	close(a);
	/* The creator was the last member: the key is free. */
	if (joined) {
		err = join_freed_key(key, nr_slots, max_members);
		EXPECT(!err || limit_errno(err),
		       "CREATE|EXCL of the key once every member is gone: %s",
		       errname(err));
	}
}

/*
 * Fork while mapped: the child has no agile mapping (VM_DONTCOPY) unless
 * MADV_DOFORK asked for it, and uses the inherited files.
 */
static void scn_fork(struct thread *t)
{
	struct fent snaps[3], *fs[3];
	unsigned int n = 0, i;
	struct ment *m;
	pid_t pid;
	int status;

	for (i = 0; i < 3; i++) {
		fs[n] = file_get(t, FK_AGILE, &snaps[n]);
		if (fs[n])
			n++;
	}
	m = map_take(t);
	pid = fork();
	count(OP_SCN_FORK, pid < 0 ? errno : 0);
	if (!pid) {
		int keep[3];
		uint32_t obs;
		int sig, err;

		child_name = "fork child";
		for (i = 0; i < n; i++)
			keep[i] = snaps[i].fd;
		close_all_but(keep, n);
		if (m && (m->prot & PROT_READ) && !m->holes && m->trusted) {
			sig = probe((volatile uint32_t *)m->addr, false, 0,
				    &obs);
			if (m->dofork)
				EXPECT(sig == 0 || sig == SIGBUS,
				       "a MADV_DOFORK mapping in the child: %s",
				       strsignal(sig));
			else
				EXPECT(sig == SIGSEGV,
				       "an agile mapping was inherited by fork: %s",
				       sig ? strsignal(sig) : "readable");
		}
		for (i = 0; i < n; i++) {
			struct agile_stats st;
			struct stat sb;
			void *db;

			/* Closed and reused under us: not ours to check. */
			if (!snaps[i].has_ctx || fstat(snaps[i].fd, &sb) ||
			    !S_ISCHR(sb.st_mode) || sb.st_rdev != opt.rdev)
				continue;
			err = fence(snaps[i].fd, AGILE_FENCE_WAIT, 0,
				    AGILE_CMP_EQ, 0, 0, NULL);
			EXPECT(!err || err == ETIMEDOUT || err == EPIPE ||
				       err == EBADFD,
			       "WAIT on an inherited file: %s", errname(err));
			err = xioctl(snaps[i].fd, AGILE_IOC_STATS, &st);
			EXPECT(!err, "STATS on an inherited file: %s",
			       errname(err));
			if (!snaps[i].writable || !snaps[i].readable)
				continue;
			db = map_area(snaps[i].fd, AGILE_MMAP_DOORBELLS,
				      snaps[i].db_bytes);
			if (db != MAP_FAILED) {
				__atomic_store_n(
					&((struct agile_doorbell *)db)[0].value,
					1, __ATOMIC_RELEASE);
				munmap(db, snaps[i].db_bytes);
			}
		}
		_exit(0);
	}
	if (m)
		map_return(t->w, m);
	for (i = 0; i < n; i++)
		file_put(t->w, fs[i]);
	if (pid > 0) {
		status = reap(pid, "fork child");
		EXPECT(status < 0 ||
			       (WIFEXITED(status) && !WEXITSTATUS(status)),
		       "fork child: status %#x", status);
	}
}

/* ------------------------------------------------------------------ */
/* Threads, the kicker, workers. */

static int pick_op(struct thread *t)
{
	unsigned int i, total = 0, r;

	if (t->w->nr_files < 2 && rnd_pct(&t->rng, 50))
		return OP_OPEN;
	for (i = 0; i < NR_OPS; i++)
		total += op_weights[i];
	r = rnd_below(&t->rng, total);
	for (i = 0; i < NR_OPS; i++) {
		if (r < op_weights[i])
			break;
		r -= op_weights[i];
	}
	return (int)i;
}

static void run_op(struct thread *t, int op)
{
	switch (op) {
	case OP_OPEN:
		op_open(t);
		break;
	case OP_CLOSE:
		file_close_random(t);
		break;
	case OP_IOCTL:
		op_ioctl(t, CM_VALID);
		break;
	case OP_MUTATE:
		op_ioctl(t, CM_MUTATE);
		break;
	case OP_BADPTR:
		op_ioctl(t, CM_BADPTR);
		break;
	case OP_BADCMD:
		op_badcmd(t);
		break;
	case OP_MMAP:
		op_mmap(t);
		break;
	case OP_MMAP_BAD:
		op_mmap_bad(t);
		break;
	case OP_MUNMAP:
		op_munmap(t);
		break;
	case OP_MREMAP:
		op_mremap(t);
		break;
	case OP_MPROTECT:
		op_mprotect(t);
		break;
	case OP_MADVISE:
		op_madvise(t);
		break;
	case OP_TOUCH:
		op_touch(t);
		break;
	case OP_DMABUF:
		op_dmabuf(t);
		break;
	case OP_FDINFO:
		op_fdinfo(t);
		break;
	case OP_SYSFS:
		op_sysfs(t);
		break;
	case OP_SCN_CTX:
		scn_ctx(t);
		break;
	case OP_SCN_GROUP:
		scn_group(t);
		break;
	case OP_SCN_CLOSE_WAIT:
		scn_close_wait(t);
		break;
	case OP_SCN_FORK:
		scn_fork(t);
		break;
	}
}

/*
 * -D: after every operation, check that each mapping of the pool is
 * mapped whole, to debug the fuzzer's own bookkeeping.
 */
static void maps_check(struct thread *t)
{
	struct {
		uint64_t lo, hi;
	} vm[2048];
	unsigned int nr = 0, i, j;
	char line[512];
	FILE *f;

	f = fopen("/proc/self/maps", "re");
	if (!f)
		return;
	while (nr < 2048 && fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &vm[nr].lo,
			   &vm[nr].hi) == 2)
			nr++;
	fclose(f);
	lock(t->w);
	for (i = 0; i < t->w->nr_maps; i++) {
		struct ment *m = t->w->maps[i];
		uint64_t at = (uintptr_t)m->addr, end = at + m->len;

		if (m->holes)
			continue;
		for (j = 0; j < nr && at < end; j++)
			if (vm[j].lo <= at && at < vm[j].hi)
				at = vm[j].hi;
		if (at < end)
			violation(
				"-D: mapping %p+%zu (kind %d) not mapped from %#" PRIx64,
				m->addr, m->len, m->kind, at);
	}
	unlock(t->w);
}

static void *thread_main(void *arg)
{
	struct thread *t = arg;
	uint64_t limit = UINT64_MAX;
	unsigned int all = opt.workers * opt.threads;

	self = t;
	__atomic_store_n(&t->slot->tid, (uint32_t)gettid(), __ATOMIC_RELAXED);
	if (opt.iterations)
		limit = (opt.iterations + all - 1) / all;
	while (t->iter < limit &&
	       (opt.iterations || now_ns() < opt.deadline_ns)) {
		int op = pick_op(t);

		t->slot->iter = t->iter;
		__atomic_store_n(&t->slot->op_start_ns, now_ns(),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&t->slot->op, (uint32_t)op, __ATOMIC_RELEASE);
		run_op(t, op);
		if (opt.check_maps)
			maps_check(t);
		__atomic_store_n(&t->slot->op, OP_IDLE, __ATOMIC_RELEASE);
		t->iter++;
		__atomic_fetch_add(&report->iterations, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Ends the waits that run too long, and interrupts a few others. */
static void *kicker_main(void *arg)
{
	struct worker *w = arg;
	unsigned int i;

	while (!__atomic_load_n(&w->stop_kicker, __ATOMIC_ACQUIRE)) {
		uint64_t now;

		sleep_ns(2 * NSEC_PER_MSEC);
		now = now_ns();
		for (i = 0; i < w->nr_threads; i++) {
			struct thread *t = &w->th[i];

			if (!__atomic_load_n(&t->in_wait, __ATOMIC_ACQUIRE))
				continue;
			if (now > __atomic_load_n(&t->wait_limit_ns,
						  __ATOMIC_RELAXED) ||
			    rnd_pct(&w->kicker_rng, 1)) {
				pthread_kill(t->pt, SIGUSR1);
				count(OP_KICK, 0);
			}
		}
	}
	return NULL;
}

static char *arena_create(void)
{
	size_t p = (size_t)opt.page;
	char *a = mmap(NULL, ARENA_PAGES * p, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (a == MAP_FAILED)
		return NULL;
	mprotect(a + p, p, PROT_NONE);
	mprotect(a + 2 * p, p, PROT_READ);
	mprotect(a + 4 * p, p, PROT_NONE);
	return a;
}

static void __attribute__((noreturn)) worker_main(unsigned int idx)
{
	struct worker *w = calloc(1, sizeof(*w));
	pthread_t kicker;
	unsigned int i;

	if (!w)
		_exit(2);
	w->idx = idx;
	w->nr_threads = opt.threads;
	w->kicker_rng = rng_seed(opt.seed, idx + 1, 0x6b69636b);
	pthread_mutex_init(&w->lock, NULL);
	install_handlers();
	for (i = 0; i < w->nr_threads; i++) {
		struct thread *t = &w->th[i];

		t->w = w;
		t->idx = i;
		t->rng = rng_seed(opt.seed, idx + 1, i + 1);
		t->slot = &report->ts[idx][i];
		t->arena = arena_create();
		if (!t->arena)
			_exit(2);
	}
	for (i = 0; i < w->nr_threads; i++)
		if (pthread_create(&w->th[i].pt, NULL, thread_main, &w->th[i]))
			_exit(2);
	pthread_create(&kicker, NULL, kicker_main, w);
	for (i = 0; i < w->nr_threads; i++)
		pthread_join(w->th[i].pt, NULL);
	__atomic_store_n(&w->stop_kicker, 1, __ATOMIC_RELEASE);
	pthread_join(kicker, NULL);

	for (i = 0; i < w->nr_maps; i++)
		munmap(w->maps[i]->addr, w->maps[i]->len);
	for (i = 0; i < w->nr_files; i++)
		close(w->files[i]->fd);
	_exit(0);
}

/* ------------------------------------------------------------------ */
/* The supervisor: setup, watchdog, leak check, the report. */

static void diag_hist(unsigned int counter, const char *name)
{
	char line[1024];
	uint64_t total = 0;
	int len, e;

	for (e = 0; e < NR_ERR; e++)
		total += report->hist[counter][e];
	if (!total)
		return;
	len = snprintf(line, sizeof(line), "# %-28s %8" PRIu64 ":", name,
		       total);
	for (e = 0; e < NR_ERR && len < (int)sizeof(line) - 40; e++) {
		uint64_t c = report->hist[counter][e];

		if (!c)
			continue;
		if (counter == OP_TOUCH && e)
			len += snprintf(line + len, sizeof(line) - (size_t)len,
					" %s %" PRIu64,
					e == SIGBUS  ? "SIGBUS" :
					e == SIGSEGV ? "SIGSEGV" :
						       "signal",
					c);
		else
			len += snprintf(line + len, sizeof(line) - (size_t)len,
					" %s %" PRIu64,
					!e		? "ok" :
					e == NR_ERR - 1 ? "other" :
							  errname(e),
					c);
	}
	printf("%s\n", line);
}

/* When the watchdog killed a worker. */
static uint64_t killed_at[MAX_WORKERS];

/* The watchdog: an operation running for over STUCK_NS is a hang. */
static bool check_stuck(pid_t *pids)
{
	uint64_t now = now_ns();
	unsigned int wi, ti;
	bool stuck = false;

	for (wi = 0; wi < opt.workers; wi++) {
		if (pids[wi] <= 0)
			continue;
		for (ti = 0; ti < opt.threads; ti++) {
			struct tslot *s = &report->ts[wi][ti];
			uint32_t op = __atomic_load_n(&s->op, __ATOMIC_ACQUIRE);
			uint64_t start = __atomic_load_n(&s->op_start_ns,
							 __ATOMIC_RELAXED);
			char path[64], wchan[64] = "?";
			int fd;

			/* A new operation may have begun since @now. */
			if (op == OP_IDLE || op >= NR_OPS || start > now ||
			    now - start < STUCK_NS)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%u/wchan",
				 pids[wi], s->tid);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				ssize_t n = read(fd, wchan, sizeof(wchan) - 1);

				wchan[n > 0 ? n : 0] = 0;
				close(fd);
			}
			printf("# watchdog: worker %u thread %u (tid %u) stuck in %s for %" PRIu64
			       " s at iteration %" PRIu64 ", wchan %s\n",
			       wi, ti, s->tid, op_names[op],
			       (uint64_t)((now - start) / NSEC_PER_SEC),
			       s->iter, wchan);
			fflush(stdout);
			dump_stack(pids[wi], (pid_t)s->tid);
			__atomic_fetch_add(&report->violations, 1,
					   __ATOMIC_RELAXED);
			stuck = true;
		}
		if (stuck) {
			kill(pids[wi], SIGKILL);
			stuck = false;
			pids[wi] = -pids[wi];
			killed_at[wi] = now;
		}
	}
	return stuck;
}

static int tunable_set(const char *name, unsigned long long value,
		       long long *saved)
{
	char buf[32];

	*saved = sysfs_number(name);
	if (*saved < 0 || (unsigned long long)*saved <= value)
		return 0;
	snprintf(buf, sizeof(buf), "%llu", value);
	return sysfs_write(name, buf);
}

static void tunable_restore(const char *name, long long saved)
{
	char buf[32];

	if (saved < 0)
		return;
	snprintf(buf, sizeof(buf), "%lld", saved);
	sysfs_write(name, buf);
}

/*
 * Does a WAIT go on after SIGSTOP and SIGCONT (true), or end with EINTR?
 * A child waits; we stop and continue it, then make its condition hold.
 */
static bool detect_restart(int fd)
{
	struct agile_doorbell *db;
	int pipefd[2], err = -1;
	struct pollfd pfd;
	pid_t pid;

	db = map_area(fd, AGILE_MMAP_DOORBELLS, (uint64_t)opt.page);
	if (db == MAP_FAILED || pipe2(pipefd, O_CLOEXEC))
		return false;
	pid = fork();
	if (!pid) {
		err = fence(fd, AGILE_FENCE_WAIT, 0, AGILE_CMP_EQ, 1,
			    10 * NSEC_PER_SEC, NULL);
		_exit(write(pipefd[1], &err, sizeof(err)) == sizeof(err) ? 0 :
									   1);
	}
	close(pipefd[1]);
	if (pid > 0 && sleeper_seen(db, 0)) {
		kill(pid, SIGSTOP);
		sleep_ns(20 * NSEC_PER_MSEC);
		kill(pid, SIGCONT);
		sleep_ns(20 * NSEC_PER_MSEC);
		fence(fd, AGILE_FENCE_SIGNAL, 0, 0, 1, 0, NULL);
		pfd = (struct pollfd){ .fd = pipefd[0], .events = POLLIN };
		if (poll(&pfd, 1, 10000) != 1 ||
		    read(pipefd[0], &err, sizeof(err)) != sizeof(err))
			err = -1;
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	close(pipefd[0]);
	munmap(db, (size_t)opt.page);
	return err == 0;
}

/* What this module does with O_RDONLY files, huge timeouts, SIGSTOP. */
static void detect_module(void)
{
	struct agile_ctx_init init = { .nr_slots = 1, .task_reg_size = 64 };
	int fd;

	fd = open(DEV_PATH, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		int err = xioctl(fd, AGILE_IOC_CTX_INIT, &init);

		opt.ro_refused = err == EBADF || err == EPERM;
		close(fd);
	}
	fd = open(DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		/* The condition holds: a module that accepts it returns 0. */
		if (!xioctl(fd, AGILE_IOC_CTX_INIT, &init)) {
			opt.timeout_strict =
				fence(fd, AGILE_FENCE_WAIT, 0, AGILE_CMP_EQ, 0,
				      KTIME_MAX_NS + 1, NULL) == EINVAL;
			opt.wait_restarts = detect_restart(fd);
		}
		close(fd);
	}
}

/* SIGKILL our children: leftovers of killed workers (maybe stopped). */
static void kill_children(void)
{
	struct dirent *de;
	DIR *dir = opendir("/proc");
	char path[300], buf[512], *p;
	int fd, ppid;
	ssize_t n;

	while (dir && (de = readdir(dir))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		p = strrchr(buf, ')');
		if (p && sscanf(p + 1, " %*c %d", &ppid) == 1 &&
		    ppid == getpid())
			kill(atoi(de->d_name), SIGKILL);
	}
	if (dir)
		closedir(dir);
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-s SEED] [-t SECONDS | -n ITERATIONS] [-w WORKERS] [-T THREADS]\n"
		"  -s SEED        the seed (default $AGILE_FUZZ_SEED or random; printed)\n"
		"  -t SECONDS     run that long (default $AGILE_FUZZ_SECONDS or 10)\n"
		"  -n ITERATIONS  run that many operations in all instead\n"
		"  -w WORKERS     processes (default 3, at most %d)\n"
		"  -T THREADS     threads per process (default 3, at most %d)\n"
		"  -D             check the fuzzer's mappings after every operation\n"
		"  -H             require the hardened ABI (see the top of fuzz.c)\n",
		prog, MAX_WORKERS, MAX_THREADS);
	exit(2);
}

int main(int argc, char **argv)
{
	long long saved_slots = -1, saved_seg = -1, contexts0, groups0;
	pid_t pids[MAX_WORKERS];
	unsigned int i, alive;
	uint64_t start, leak_end;
	struct stat sb;
	int c, fd;

	opt.seconds = 10;
	opt.workers = 3;
	opt.threads = 3;
	opt.seed = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^ now_ns();
	if (getenv("AGILE_FUZZ_SECONDS"))
		opt.seconds = (unsigned int)strtoul(
			getenv("AGILE_FUZZ_SECONDS"), NULL, 0);
	if (getenv("AGILE_FUZZ_SEED"))
		opt.seed = strtoull(getenv("AGILE_FUZZ_SEED"), NULL, 0);
	opt.hardened = getenv("AGILE_FUZZ_HARDENED") &&
		       !strcmp(getenv("AGILE_FUZZ_HARDENED"), "1");
	while ((c = getopt(argc, argv, "s:t:n:w:T:DHh")) != -1) {
		switch (c) {
		case 'H':
			opt.hardened = true;
			break;
		case 'D':
			opt.check_maps = true;
			break;
		case 's':
			opt.seed = strtoull(optarg, NULL, 0);
			break;
		case 't':
			opt.seconds = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			opt.iterations = strtoull(optarg, NULL, 0);
			break;
		case 'w':
			opt.workers = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'T':
			opt.threads = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (!opt.workers || opt.workers > MAX_WORKERS || !opt.threads ||
	    opt.threads > MAX_THREADS)
		usage(argv[0]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n1..1\n");
	if (stat(DEV_PATH, &sb) || !S_ISCHR(sb.st_mode)) {
		printf("ok 1 # SKIP %s missing\n", DEV_PATH);
		return 0;
	}
	opt.rdev = sb.st_rdev;
	opt.page = sysconf(_SC_PAGESIZE);

	/* Small limits for the run: a small guest must hold every context. */
	if (tunable_set("max_slots", FUZZ_MAX_SLOTS, &saved_slots) ||
	    tunable_set("max_segment_bytes", FUZZ_MAX_SEGMENT_BYTES,
			&saved_seg))
		printf("# fuzz: could not lower max_slots and max_segment_bytes (not root?)\n");
	fd = open(DEV_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || xioctl(fd, AGILE_IOC_INFO, &opt.info)) {
		printf("not ok 1 fuzz: INFO on %s: %s\n", DEV_PATH,
		       errname(errno));
		return 1;
	}
	close(fd);
	detect_module();
	contexts0 = sysfs_number("contexts");
	groups0 = sysfs_number("groups");

	report = mmap(NULL, sizeof(*report), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (report == MAP_FAILED) {
		printf("not ok 1 fuzz: no memory for the report\n");
		return 1;
	}
	/* Orphans of a killed worker come back to us to be reaped. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	printf("# fuzz: seed %#" PRIx64 ", %s %" PRIu64
	       ", %u workers x %u threads; reproduce: fuzz -s %#" PRIx64
	       " %s %" PRIu64 " -w %u -T %u\n",
	       opt.seed, opt.iterations ? "iterations" : "seconds",
	       opt.iterations ? opt.iterations : opt.seconds, opt.workers,
	       opt.threads, opt.seed, opt.iterations ? "-n" : "-t",
	       opt.iterations ? opt.iterations : opt.seconds, opt.workers,
	       opt.threads);
	printf("# fuzz: max_slots %u, max_segment_bytes %llu; O_RDONLY state changes %s; timeouts over KTIME_MAX %s; WAIT %s after SIGSTOP; contexts %lld, groups %lld before\n",
	       opt.info.max_slots,
	       (unsigned long long)opt.info.max_segment_bytes,
	       opt.ro_refused ? "refused" : "allowed",
	       opt.timeout_strict ? "EINVAL" : "accepted",
	       opt.wait_restarts ? "restarts" : "fails with EINTR", contexts0,
	       groups0);

	if (opt.hardened &&
	    (!opt.ro_refused || !opt.timeout_strict || !opt.wait_restarts))
		violation(
			"-H: the module is not hardened: O_RDONLY state changes %s, timeouts over KTIME_MAX %s, WAIT %s after SIGSTOP",
			opt.ro_refused ? "refused" : "ALLOWED",
			opt.timeout_strict ? "EINVAL" : "ACCEPTED",
			opt.wait_restarts ? "restarts" : "FAILS WITH EINTR");

	start = now_ns();
	opt.deadline_ns = start + opt.seconds * NSEC_PER_SEC;
	for (i = 0; i < opt.workers; i++) {
		pids[i] = fork();
		if (!pids[i])
			worker_main(i);
		report->worker_pid[i] = (uint32_t)pids[i];
	}

	for (alive = opt.workers; alive;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid <= 0) {
			check_stuck(pids);
			/* Killed and still there: stuck in the kernel. */
			for (i = 0; i < opt.workers; i++) {
				if (pids[i] >= 0 || !killed_at[i] ||
				    now_ns() - killed_at[i] < REAP_NS)
					continue;
				printf("# watchdog: worker %u not reaped %llu s after SIGKILL\n",
				       i, REAP_NS / NSEC_PER_SEC);
				dump_stack(-pids[i], -pids[i]);
				pids[i] = 0;
				alive--;
			}
			sleep_ns(100 * NSEC_PER_MSEC);
			continue;
		}
		for (i = 0; i < opt.workers; i++) {
			if (pids[i] != pid && pids[i] != -pid)
				continue;
			if (pids[i] > 0 &&
			    !(WIFEXITED(status) && !WEXITSTATUS(status))) {
				printf("# fuzz: worker %u died: %s %d\n", i,
				       WIFSIGNALED(status) ? "signal" : "exit",
				       WIFSIGNALED(status) ?
					       WTERMSIG(status) :
					       WEXITSTATUS(status));
				__atomic_fetch_add(&report->violations, 1,
						   __ATOMIC_RELAXED);
			}
			pids[i] = 0;
			alive--;
		}
	}
	/* Orphans of killed workers, perhaps stopped: they go now. */
	kill_children();
	leak_end = now_ns() + REAP_NS;
	while (waitpid(-1, NULL, WNOHANG) >= 0 && now_ns() < leak_end)
		sleep_ns(10 * NSEC_PER_MSEC);
	if (waitpid(-1, NULL, WNOHANG) >= 0)
		violation(
			"a child killed with SIGKILL is still there after %llu s",
			REAP_NS / NSEC_PER_SEC);

	/* Everything is closed: the module holds nothing of ours. */
	leak_end = now_ns() + 10 * NSEC_PER_SEC;
	while ((sysfs_number("contexts") != contexts0 ||
		sysfs_number("groups") != groups0) &&
	       now_ns() < leak_end)
		sleep_ns(50 * NSEC_PER_MSEC);
	if (sysfs_number("contexts") != contexts0 ||
	    sysfs_number("groups") != groups0)
		violation(
			"leak: sysfs contexts %lld (%lld before), groups %lld (%lld before)",
			sysfs_number("contexts"), contexts0,
			sysfs_number("groups"), groups0);
	tunable_restore("max_slots", saved_slots);
	tunable_restore("max_segment_bytes", saved_seg);

	printf("# fuzz: %" PRIu64
	       " iterations in %.1f s; per operation (result: count):\n",
	       report->iterations, (double)(now_ns() - start) / NSEC_PER_SEC);
	for (i = 1; i < NR_OPS; i++)
		diag_hist(i, op_names[i]);
	printf("# fuzz: per ioctl:\n");
	for (i = 0; i < NR_DESCS; i++)
		diag_hist(NR_OPS + i, descs[i].name);
	for (i = 0; i < report->nr_msgs && i < MAX_MSGS; i++)
		printf("# VIOLATION: %s\n", report->msgs[i]);
	for (i = 0; i < MAX_KINDS && report->kinds[i]; i++)
		if (report->kind_count[i] > MSGS_PER_KIND)
			printf("# ... %" PRIu64
			       " violations of the kind \"%.60s\" in all\n",
			       report->kind_count[i], report->kinds[i]);
	if (report->violations) {
		printf("not ok 1 %" PRIu64 " iterations, %" PRIu64
		       " violations (seed %#" PRIx64 ")\n",
		       report->iterations, report->violations, opt.seed);
		return 1;
	}
	printf("ok 1 %" PRIu64
	       " iterations in %u workers x %u threads, no violation, no leak (seed %#" PRIx64
	       ")\n",
	       report->iterations, opt.workers, opt.threads, opt.seed);
	return 0;
}
