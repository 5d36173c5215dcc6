// SPDX-License-Identifier: MIT
/*
 * doorbell, sleep - the round trip of seed 002's offload protocol, worker
 * <-> execution unit, on two threads pinned to two CPUs, beside raw
 * baselines between the same two CPUs:
 *
 *  doorbell (both sides spin):
 *    one-line    a C11 ping-pong on a single cache line: the floor
 *    same-lines  a C11 ping-pong that moves what the protocol moves: a
 *                64-byte payload line (the task register) and a flag line
 *                (the doorbell) each way
 *    dev-user, dev-kmod
 *                the dev layer: agile_dev_post / agile_dev_wait_spin on a
 *                64-byte task register; the EU side waits, reads the
 *                register, writes status and error, agile_dev_signal(IDLE)
 *    eu-user, eu-kmod
 *                the same through agile_eu_call and a CPU EU running a
 *                one-lane kernel (lookup, lane loop, status bits)
 *    SPEC §5: dev / same-lines <= 1.3.
 *
 *  sleep (both sides sleep between messages):
 *    futex       a futex ping-pong: store, FUTEX_WAKE, FUTEX_WAIT
 *    dev-user    dev layer, no spin: FUTEX_WAKE only if the line counts a
 *                sleeper
 *    dev-kmod    dev layer, no spin: AGILE_FENCE_WAIT, woken by SIGNAL
 *    dev-kmod-poll
 *                the worker waits until the EU sleeps in the module, then
 *                rings with a plain store, never entering the kernel: the
 *                module's poller wakes the EU
 *    SPEC §5: dev / futex <= 1.2; poll wake <= poll_interval_us + 20 us.
 *
 * The kmod rows need /dev/agile: elsewhere they print "n/a".
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define SPIN_FOREVER (3600ULL * 1000000000ULL)
#define EU_IDLE_SPIN_NS 5000000ULL /* 5 ms: less than bench_run's pause */
#define REG_SIZE 64
#define OP_NOP (AGILE_OP_USER_BASE + 0)

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* The two CPUs the pair runs on: this thread on cpu[0], the partner on cpu[1]. */
struct placement {
	int cpu[2];
	bool pinned;
	cpu_set_t saved;
};

static int pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void placement_init(struct placement *p)
{
	cpu_set_t set;
	int k = 0;

	memset(p, 0, sizeof(*p));
	pthread_getaffinity_np(pthread_self(), sizeof(p->saved), &p->saved);
	set = p->saved;
	for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &set))
			p->cpu[k++] = c;
	p->pinned = k == 2 && !pin_self(p->cpu[0]);
	if (!p->pinned)
		bench_note(
			"doorbell/sleep: fewer than 2 CPUs to pin to: threads unpinned");
}

static void placement_restore(struct placement *p)
{
	pthread_setaffinity_np(pthread_self(), sizeof(p->saved), &p->saved);
}

/* ---- the pair: the timed thread here, a partner thread for one call ---- */

struct pair;
typedef void (*side_fn)(struct pair *p);

struct pair {
	const struct placement *place;
	int64_t trips;
	side_fn worker, partner;
	/* raw ping-pongs */
	_Alignas(128) uint64_t payload[8];
	_Alignas(128) _Atomic uint32_t flag;
	_Alignas(128) _Atomic uint64_t line;
	/* dev rows */
	struct agile_dev *dev;
	struct agile_eu_pool *pool;
	uint64_t spin_ns;
	bool plain_ring; /* dev-kmod-poll: the worker never enters the kernel */
	/* the partner thread: a batch of trips per increment of @go */
	pthread_t thread;
	bool started;
	_Atomic uint32_t go, stop;
	uint64_t sink;
	int err;
};

static long futex(_Atomic uint32_t *word, int op, uint32_t val)
{
	return syscall(SYS_futex, (uint32_t *)word, op | FUTEX_PRIVATE_FLAG,
		       val, NULL, NULL, 0);
}

/*
 * The partner thread lives as long as its row: started by the row's first
 * call (bench_run's untimed warm-up), it sleeps on @go between calls, so
 * that a timed call includes a futex wake-up, not a thread start.
 */
static void *partner_main(void *arg)
{
	struct pair *p = arg;
	uint32_t seen = 0;

	if (p->place->pinned)
		pin_self(p->place->cpu[1]);
	for (;;) {
		uint32_t go;

		while ((go = atomic_load_explicit(
				&p->go, memory_order_acquire)) == seen)
			futex(&p->go, FUTEX_WAIT, seen);
		seen = go;
		if (atomic_load_explicit(&p->stop, memory_order_relaxed))
			return NULL;
		p->partner(p);
	}
}

/* Wake the partner for another batch (or to leave). */
static void partner_go(struct pair *p)
{
	atomic_fetch_add_explicit(&p->go, 1, memory_order_release);
	futex(&p->go, FUTEX_WAKE, 1);
}

/* One contender call: @trips round trips with the partner. */
static void run_pair(void *arg)
{
	struct pair *p = arg;

	if (p->partner && !p->started) {
		if (pthread_create(&p->thread, NULL, partner_main, p)) {
			p->err = -EAGAIN;
			return;
		}
		p->started = true;
	}
	if (p->partner)
		partner_go(p);
	p->worker(p);
}

static void stop_pairs(struct pair *pairs, int nr)
{
	for (int i = 0; i < nr; i++) {
		if (!pairs[i].started)
			continue;
		atomic_store_explicit(&pairs[i].stop, 1, memory_order_relaxed);
		partner_go(&pairs[i]);
		pthread_join(pairs[i].thread, NULL);
		pairs[i].started = false;
	}
}

/* ---- one line: a counter bounced between the two CPUs ---- */

static void oneline_worker(struct pair *p)
{
	for (uint64_t k = 0; k < (uint64_t)p->trips; k++) {
		atomic_store_explicit(&p->line, 2 * k + 1,
				      memory_order_release);
		while (atomic_load_explicit(&p->line, memory_order_acquire) !=
		       2 * k + 2)
			cpu_relax();
	}
	atomic_store_explicit(&p->line, 0, memory_order_relaxed);
}

static void oneline_partner(struct pair *p)
{
	for (uint64_t k = 0; k < (uint64_t)p->trips; k++) {
		while (atomic_load_explicit(&p->line, memory_order_acquire) !=
		       2 * k + 1)
			cpu_relax();
		atomic_store_explicit(&p->line, 2 * k + 2,
				      memory_order_release);
	}
}

/* ---- same lines: a 64-byte payload and a flag, each way ---- */

static void lines_worker(struct pair *p)
{
	uint64_t sink = 0;

	for (int64_t k = 0; k < p->trips; k++) {
		for (int i = 0; i < 8; i++)
			p->payload[i] = (uint64_t)k + (uint64_t)i;
		/* Release: the payload before the flag. */
		atomic_store_explicit(&p->flag, 1, memory_order_release);
		while (atomic_load_explicit(&p->flag, memory_order_acquire))
			cpu_relax();
		sink += p->payload[6];
	}
	p->sink = sink;
}

static void lines_partner(struct pair *p)
{
	for (int64_t k = 0; k < p->trips; k++) {
		uint64_t x = 0;

		while (atomic_load_explicit(&p->flag, memory_order_acquire) !=
		       1)
			cpu_relax();
		for (int i = 0; i < 8; i++)
			x += p->payload[i];
		p->payload[6] = x; /* the status word and error come back */
		p->payload[7] = 0;
		atomic_store_explicit(&p->flag, 0, memory_order_release);
	}
}

/* ---- the dev layer: task register + doorbell ---- */

static void dev_worker(struct pair *p)
{
	struct agile_doorbell *db;
	struct agile_task_reg *reg;
	uint64_t sink = 0;
	int err = 0;

	agile_dev_slot(p->dev, 0, &db, &reg);
	for (int64_t k = 0; k < p->trips && !err; k++) {
		reg->opcode = OP_NOP;
		reg->nr_parts = 1;
		reg->flags = 0;
		reg->error = 0;
		reg->status = 0;
		for (int i = 0; i < 4; i++)
			reg->args[i] = (uint64_t)k + (uint64_t)i;
		if (p->plain_ring) {
			/*
			 * Ring only an EU asleep in the module (its line
			 * counts it), with a release store and no system
			 * call: the poller's wake-up is what is measured.
			 */
			while (!__atomic_load_n(&db->sleepers,
						__ATOMIC_RELAXED))
				cpu_relax();
			__atomic_store_n(&db->value, AGILE_DOORBELL_POSTED,
					 __ATOMIC_RELEASE);
		} else
			err = agile_dev_post(p->dev, 0);
		if (!err)
			err = agile_dev_wait_spin(
				p->dev, 0, AGILE_CMP_EQ, AGILE_DOORBELL_IDLE,
				p->plain_ring ? SPIN_FOREVER : p->spin_ns,
				AGILE_TIMEOUT_INFINITE, NULL);
		sink += reg->status;
	}
	p->sink = sink;
	if (err && !p->err)
		p->err = err;
}

static void dev_partner(struct pair *p)
{
	struct agile_task_reg *reg;
	int err = 0;

	agile_dev_slot(p->dev, 0, NULL, &reg);
	for (int64_t k = 0; k < p->trips && !err; k++) {
		uint64_t x = 0;

		err = agile_dev_wait_spin(p->dev, 0, AGILE_CMP_EQ,
					  AGILE_DOORBELL_POSTED, p->spin_ns,
					  AGILE_TIMEOUT_INFINITE, NULL);
		for (int i = 0; i < 4; i++)
			x += reg->args[i];
		reg->status = x | 1;
		reg->error = 0;
		if (!err)
			err = agile_dev_signal(p->dev, 0, AGILE_DOORBELL_IDLE);
	}
	if (err && !p->err)
		p->err = err;
}

/* ---- the EU layer: agile_eu_call to a CPU EU ---- */

static int nop_phase(uint32_t lane, uint32_t nr_lanes, const __u64 *args,
		     void *state, void *shared)
{
	(void)lane;
	(void)nr_lanes;
	(void)state;
	(void)shared;
	return args[0] == ~0ULL ? -EINVAL : 0;
}

static const agile_phase_fn nop_phases[] = { nop_phase };

static void eu_worker(struct pair *p)
{
	struct agile_task_reg *reg;
	int err = 0;

	agile_eu_task_reg(p->pool, 0, &reg, NULL);
	for (int64_t k = 0; k < p->trips && !err; k++) {
		reg->opcode = OP_NOP;
		reg->nr_parts = 1;
		reg->flags = 0;
		for (int i = 0; i < 4; i++)
			reg->args[i] = (uint64_t)k + (uint64_t)i;
		err = agile_eu_call(p->pool, 0, AGILE_TIMEOUT_INFINITE, NULL);
	}
	if (err && !p->err)
		p->err = err;
}

/* ---- a futex ping-pong: both sides sleep ---- */

static void futex_worker(struct pair *p)
{
	for (int64_t k = 0; k < p->trips; k++) {
		atomic_store_explicit(&p->flag, 1, memory_order_release);
		futex(&p->flag, FUTEX_WAKE, 1);
		while (atomic_load_explicit(&p->flag, memory_order_acquire) ==
		       1)
			futex(&p->flag, FUTEX_WAIT, 1);
	}
}

static void futex_partner(struct pair *p)
{
	for (int64_t k = 0; k < p->trips; k++) {
		while (atomic_load_explicit(&p->flag, memory_order_acquire) ==
		       0)
			futex(&p->flag, FUTEX_WAIT, 0);
		atomic_store_explicit(&p->flag, 0, memory_order_release);
		futex(&p->flag, FUTEX_WAKE, 1);
	}
}

/* ---- setup ---- */

static int open_dev(int backend, struct agile_dev **dev)
{
	struct agile_dev_opts o;

	agile_dev_opts_init(&o);
	o.nr_slots = 1;
	o.task_reg_size = REG_SIZE;
	o.backend = (uint32_t)backend;
	return agile_dev_open(&o, dev);
}

static bool have_kmod(void)
{
	return !access("/dev/agile", F_OK);
}

/*
 * A pool of one EU, pinned to the partner's CPU: threads inherit the
 * creator's affinity, so create it from there.  The EU spins while tasks
 * come back to back, and falls asleep (in bench_run's pause between
 * contenders) before it would steal the CPU from the other rows' partners.
 */
static int open_pool(struct agile_dev *dev, struct agile_kernels *kernels,
		     const struct placement *place, struct agile_eu_pool **pool)
{
	struct agile_eu_pool_opts o;
	int err;

	agile_eu_pool_opts_init(&o);
	o.idle_spin_ns = EU_IDLE_SPIN_NS;
	o.wait_spin_ns = SPIN_FOREVER;
	if (place->pinned)
		pin_self(place->cpu[1]);
	err = agile_eu_pool_create(dev, kernels, &o, pool);
	if (place->pinned)
		pin_self(place->cpu[0]);
	return err;
}

/* Each row's time per round trip, from its best repetition. */
static void per_trip_note(const char *bench, struct contender *c, int nr,
			  int64_t trips)
{
	char buf[200];
	int len;

	len = snprintf(buf, sizeof(buf),
		       "%s: per round trip (best of %lld):", bench,
		       (long long)trips);
	for (int i = 0; i < nr && len < (int)sizeof(buf); i++) {
		struct timing t;

		if (bench_find_timing(bench, c[i].variant, &t))
			continue;
		len += snprintf(buf + len, sizeof(buf) - (size_t)len,
				" %s %.0f ns", c[i].variant,
				t.median_ms * 1e6 / (double)trips);
	}
	bench_note("%s", buf);
}

/* Add contender @name: @worker here, @partner on the other CPU. */
static struct pair *add(struct pair *pairs, struct contender *c, int *nr,
			const char *name, side_fn worker, side_fn partner,
			int reps)
{
	struct pair *p = &pairs[*nr];

	p->worker = worker;
	p->partner = partner;
	c[*nr] = (struct contender){ name, 2, run_pair, p, reps };
	(*nr)++;
	return p;
}

static int collect(struct pair *pairs, int nr)
{
	for (int i = 0; i < nr; i++)
		if (pairs[i].err)
			return pairs[i].err;
	return 0;
}

int bench_doorbell(const struct bench_opts *o)
{
	struct agile_kernels *kernels = NULL;
	const struct agile_kernel nop = { .name = "nop",
					  .opcode = OP_NOP,
					  .nr_phases = 1,
					  .phases = nop_phases,
					  .max_lanes = 1 };
	/* The EU rows have contexts of their own: an EU serves every post. */
	struct agile_dev *dev_user = NULL, *dev_kmod = NULL;
	struct agile_dev *eu_dev_user = NULL, *eu_dev_kmod = NULL;
	struct agile_eu_pool *pool_user = NULL, *pool_kmod = NULL;
	struct placement place;
	struct pair pairs[6];
	struct contender c[6];
	/* Short rows on a noisy machine: more samples for the minimum. */
	int nr = 0, err, reps = 3 * o->reps;
	bool kmod = have_kmod();

	placement_init(&place);
	err = agile_kernels_create(&kernels);
	if (!err)
		err = agile_kernels_register(kernels, &nop, NULL);
	if (!err)
		err = open_dev(AGILE_BACKEND_USER, &dev_user);
	if (!err)
		err = open_dev(AGILE_BACKEND_USER, &eu_dev_user);
	if (!err)
		err = open_pool(eu_dev_user, kernels, &place, &pool_user);
	if (!err && kmod) {
		err = open_dev(AGILE_BACKEND_KMOD, &dev_kmod);
		if (!err)
			err = open_dev(AGILE_BACKEND_KMOD, &eu_dev_kmod);
		if (!err)
			err = open_pool(eu_dev_kmod, kernels, &place,
					&pool_kmod);
	}
	if (err)
		goto out;
	memset(pairs, 0, sizeof(pairs));
	for (int i = 0; i < 6; i++) {
		pairs[i].place = &place;
		pairs[i].trips = o->trips;
		pairs[i].spin_ns = SPIN_FOREVER;
	}
	add(pairs, c, &nr, "one-line", oneline_worker, oneline_partner, reps);
	add(pairs, c, &nr, "same-lines", lines_worker, lines_partner, reps);
	add(pairs, c, &nr, "dev-user", dev_worker, dev_partner, reps)->dev =
		dev_user;
	if (kmod)
		add(pairs, c, &nr, "dev-kmod", dev_worker, dev_partner, reps)
			->dev = dev_kmod;
	add(pairs, c, &nr, "eu-user", eu_worker, NULL, reps)->pool = pool_user;
	if (kmod)
		add(pairs, c, &nr, "eu-kmod", eu_worker, NULL, reps)->pool =
			pool_kmod;
	bench_run("doorbell", c, nr);
	stop_pairs(pairs, nr);
	err = collect(pairs, nr);
	if (err)
		goto out;
	if (!kmod) {
		bench_row_na("doorbell", "dev-kmod", 2, "no /dev/agile");
		bench_row_na("doorbell", "eu-kmod", 2, "no /dev/agile");
	}
	bench_compare("doorbell", "dev-user", "same-lines", false, "<= 1.3");
	bench_compare("doorbell", "dev-kmod", "same-lines", false, "<= 1.3");
	bench_compare("doorbell", "dev-user", "one-line", false, NULL);
	bench_compare("doorbell", "dev-kmod", "one-line", false, NULL);
	bench_compare("doorbell", "same-lines", "one-line", false, NULL);
	bench_compare("doorbell", "eu-user", "same-lines", false, NULL);
	bench_compare("doorbell", "eu-kmod", "same-lines", false, NULL);
	per_trip_note("doorbell", c, nr, o->trips);
out:
	placement_restore(&place);
	if (pool_kmod)
		agile_eu_pool_destroy(pool_kmod);
	if (pool_user)
		agile_eu_pool_destroy(pool_user);
	if (eu_dev_kmod)
		agile_dev_close(eu_dev_kmod);
	if (eu_dev_user)
		agile_dev_close(eu_dev_user);
	if (dev_kmod)
		agile_dev_close(dev_kmod);
	if (dev_user)
		agile_dev_close(dev_user);
	if (kernels)
		agile_kernels_destroy(kernels);
	return err;
}

static long read_sysfs(const char *name)
{
	char path[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/misc/agile/%s", name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

int bench_sleep(const struct bench_opts *o)
{
	struct agile_dev *dev_user = NULL, *dev_kmod = NULL;
	struct placement place;
	struct pair pairs[4];
	struct contender c[4];
	int64_t trips = o->trips / 10 > 0 ? o->trips / 10 : 1;
	int nr = 0, err, reps = 3 * o->reps;
	bool kmod = have_kmod();

	placement_init(&place);
	err = open_dev(AGILE_BACKEND_USER, &dev_user);
	if (!err && kmod)
		err = open_dev(AGILE_BACKEND_KMOD, &dev_kmod);
	if (err)
		goto out;
	memset(pairs, 0, sizeof(pairs));
	for (int i = 0; i < 4; i++) {
		pairs[i].place = &place;
		pairs[i].trips = trips;
		pairs[i].spin_ns = 0; /* sleep at once, both sides */
	}
	add(pairs, c, &nr, "futex", futex_worker, futex_partner, reps);
	add(pairs, c, &nr, "dev-user", dev_worker, dev_partner, reps)->dev =
		dev_user;
	if (kmod) {
		struct pair *p;

		add(pairs, c, &nr, "dev-kmod", dev_worker, dev_partner, reps)
			->dev = dev_kmod;
		p = add(pairs, c, &nr, "dev-kmod-poll", dev_worker, dev_partner,
			reps);
		p->dev = dev_kmod;
		p->plain_ring = true;
	}
	bench_run("sleep", c, nr);
	stop_pairs(pairs, nr);
	err = collect(pairs, nr);
	if (err)
		goto out;
	if (!kmod) {
		bench_row_na("sleep", "dev-kmod", 2, "no /dev/agile");
		bench_row_na("sleep", "dev-kmod-poll", 2, "no /dev/agile");
	}
	bench_compare("sleep", "dev-user", "futex", false, "<= 1.2");
	bench_compare("sleep", "dev-kmod", "futex", false, "<= 1.2");
	if (kmod) {
		struct timing t;
		long interval = read_sysfs("poll_interval_us");
		long spin = read_sysfs("spin_ns");

		if (spin > 0)
			bench_note(
				"sleep: the module spins %ld ns before it sleeps: dev-kmod round trips shorter than that never sleep (spin_ns 0 measures the SIGNAL wake)",
				spin);

		if (!bench_find_timing("sleep", "dev-kmod-poll", &t) &&
		    interval > 0) {
			double us = t.median_ms * 1000.0 / (double)trips;

			bench_note(
				"sleep: poll wake round trip %.1f us, target <= poll_interval_us %ld + 20 us: %s",
				us, interval,
				us <= (double)interval + 20 ? "met" :
							      "NOT met");
		}
	}
	per_trip_note("sleep", c, nr, trips);
out:
	placement_restore(&place);
	if (dev_kmod)
		agile_dev_close(dev_kmod);
	if (dev_user)
		agile_dev_close(dev_user);
	return err;
}
