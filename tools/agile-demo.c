// SPDX-License-Identifier: MIT
/*
 * agile-demo: one thread posts tasks to another through a doorbell and a
 * task register in /dev/agile's pages, the seed-002 offload protocol with
 * the raw ABI.  The "EU" thread sleeps in the kernel between tasks; the
 * worker rings it with a plain store and enters the kernel only when the
 * doorbell line says someone sleeps.  A second pass never enters the
 * kernel on the signalling side, so the module's poller must do the waking.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/agile.h>

#define OP_ADD (AGILE_OP_USER_BASE + 0)

struct demo {
	int fd;
	struct agile_doorbell *doorbell;
	struct agile_task_reg *task;
	int use_signal; /* 0: plain stores only, the poller wakes */
	long gap_us; /* idle time between tasks: the EU goes to sleep */
	long failures;
};

static _Atomic uint32_t *doorbell_word(struct agile_doorbell *db)
{
	return (_Atomic uint32_t *)&db->value;
}

static int wait_for(struct demo *d, uint32_t cmp, uint32_t value)
{
	struct agile_fence f = {
		.op = AGILE_FENCE_WAIT,
		.slot = 0,
		.cmp = cmp,
		.value = value,
		.timeout_ns = 10ULL * 1000 * 1000 * 1000,
	};

	while (ioctl(d->fd, AGILE_IOC_FENCE, &f) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/*
 * Store the doorbell with release ordering (the task register or the
 * results are visible first), then a full fence pairs with the waiter's
 * fence between raising agile_doorbell.sleepers and re-reading the value:
 * either we see the sleeper, or it sees our store.
 */
static int ring(struct demo *d, uint32_t value)
{
	struct agile_fence f = {
		.op = AGILE_FENCE_SIGNAL,
		.slot = 0,
		.flags = AGILE_SIGNAL_WAKE_ONLY,
	};

	atomic_store_explicit(doorbell_word(d->doorbell), value,
			      memory_order_release);
	if (!d->use_signal)
		return 0;
	atomic_thread_fence(memory_order_seq_cst);
	if (!__atomic_load_n(&d->doorbell->sleepers, __ATOMIC_RELAXED))
		return 0;
	return ioctl(d->fd, AGILE_IOC_FENCE, &f) < 0 ? -errno : 0;
}

/* The EU: processes 600b/600c of seed 002 with a single lane. */
static void *eu_main(void *arg)
{
	struct demo *d = arg;

	for (;;) {
		if (wait_for(d, AGILE_CMP_EQ, AGILE_DOORBELL_POSTED))
			break;
		/* Acquire pairs with the worker's release store in ring(). */
		atomic_thread_fence(memory_order_acquire);
		if (d->task->opcode == AGILE_OP_DISCONNECT) {
			ring(d, AGILE_DOORBELL_IDLE);
			break;
		}
		if (d->task->opcode == OP_ADD) {
			d->task->args[2] = d->task->args[0] + d->task->args[1];
			d->task->status = 1;
			d->task->error = 0;
		} else {
			d->task->status = 0;
			d->task->error = -ENOSYS;
		}
		ring(d, AGILE_DOORBELL_IDLE);
	}
	return NULL;
}

static int post(struct demo *d, uint32_t opcode, uint64_t a, uint64_t b)
{
	int ret;

	d->task->opcode = opcode;
	d->task->nr_parts = 1;
	d->task->status = 0;
	d->task->args[0] = a;
	d->task->args[1] = b;
	ret = ring(d, AGILE_DOORBELL_POSTED);
	if (!ret)
		ret = wait_for(d, AGILE_CMP_EQ, AGILE_DOORBELL_IDLE);
	if (ret)
		return ret;
	atomic_thread_fence(memory_order_acquire);
	if (opcode != AGILE_OP_DISCONNECT &&
	    (d->task->status != 1 || d->task->args[2] != a + b))
		d->failures++;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int run_pass(struct demo *d, const char *name, long rounds)
{
	struct timespec gap = { .tv_nsec = d->gap_us * 1000 };
	double t0, busy = 0;
	pthread_t eu;
	long i;
	int ret = 0;

	if (pthread_create(&eu, NULL, eu_main, d))
		return -EAGAIN;
	for (i = 0; i < rounds && !ret; i++) {
		if (d->gap_us)
			nanosleep(&gap, NULL);
		t0 = now_s();
		ret = post(d, OP_ADD, (uint64_t)i, 2 * (uint64_t)i);
		busy += now_s() - t0;
	}
	if (!ret)
		ret = post(d, AGILE_OP_DISCONNECT, 0, 0);
	pthread_join(eu, NULL);
	if (ret) {
		fprintf(stderr, "agile-demo: %s: %s\n", name, strerror(-ret));
		return ret;
	}
	printf("%-36s %6ld round trips, %8.1f us each, %ld wrong results\n",
	       name, i, busy * 1e6 / (double)i, d->failures);
	return d->failures ? -EIO : 0;
}

static void print_sysfs(void)
{
	static const char *const names[] = {
		"poll_interval_us", "spin_ns",	    "max_slots",
		"contexts",	    "signals",	    "waits",
		"wakeups_signal",   "wakeups_poll", "timeouts",
	};
	char path[128], buf[64];
	size_t i;

	printf("sysfs /sys/class/misc/agile:\n");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		FILE *f;

		snprintf(path, sizeof(path), "/sys/class/misc/agile/%s",
			 names[i]);
		f = fopen(path, "r");
		if (!f || !fgets(buf, sizeof(buf), f))
			snprintf(buf, sizeof(buf), "? (%s)\n", strerror(errno));
		if (f)
			fclose(f);
		printf("  %-18s %s", names[i], buf);
	}
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 2000;
	struct agile_ctx_init init = { .nr_slots = 1, .task_reg_size = 64 };
	struct agile_stats stats;
	struct demo d = { 0 };
	int ret;

	d.fd = open("/dev/agile", O_RDWR | O_CLOEXEC);
	if (d.fd < 0) {
		perror("agile-demo: /dev/agile");
		return 1;
	}
	if (ioctl(d.fd, AGILE_IOC_CTX_INIT, &init) < 0) {
		perror("agile-demo: CTX_INIT");
		return 1;
	}
	d.doorbell = mmap(NULL, init.doorbell_bytes, PROT_READ | PROT_WRITE,
			  MAP_SHARED, d.fd, init.doorbell_offset);
	d.task = mmap(NULL, init.task_reg_bytes, PROT_READ | PROT_WRITE,
		      MAP_SHARED, d.fd, init.task_reg_offset);
	if (d.doorbell == MAP_FAILED || d.task == MAP_FAILED) {
		perror("agile-demo: mmap");
		return 1;
	}

	d.use_signal = 1;
	ret = run_pass(&d, "EU busy: caught while spinning", rounds);
	d.gap_us = 500;
	if (!ret)
		ret = run_pass(&d, "EU asleep: woken by SIGNAL", rounds / 4);
	d.use_signal = 0;
	if (!ret)
		ret = run_pass(&d, "EU asleep: plain store, poller wakes",
			       rounds / 4);
	if (ioctl(d.fd, AGILE_IOC_STATS, &stats) == 0)
		printf("context: %llu signals, %llu waits: %llu woken by signal, %llu by poll, %llu without sleeping\n",
		       (unsigned long long)stats.signals,
		       (unsigned long long)stats.waits,
		       (unsigned long long)stats.wakeups_signal,
		       (unsigned long long)stats.wakeups_poll,
		       (unsigned long long)stats.spin_hits);
	print_sysfs();
	close(d.fd);
	return ret ? 1 : 0;
}
