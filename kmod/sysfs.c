// SPDX-License-Identifier: GPL-2.0-only
/*
 * agile sysfs attributes, on the misc device (/sys/class/misc/agile/):
 * the tunables, read-write by CAP_SYS_ADMIN and range-checked, and the
 * module-wide counters, read-only.  The tunables' defaults are the module
 * parameters of the same names.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/device.h>
#include <linux/kernel.h>
#include <linux/printk.h>
#include <linux/sysfs.h>

#include "agile.h"

struct agile_tunable {
	struct device_attribute attr;
	unsigned int *value;
	unsigned int min;
	unsigned int max;
};

struct agile_counter_attr {
	struct device_attribute attr;
	enum agile_counter counter;
};

static ssize_t agile_tunable_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	const struct agile_tunable *t =
		container_of(attr, struct agile_tunable, attr);

	return sysfs_emit(buf, "%u\n", READ_ONCE(*t->value));
}

static ssize_t agile_tunable_store(struct device *dev,
				   struct device_attribute *attr,
				   const char *buf, size_t count)
{
	const struct agile_tunable *t =
		container_of(attr, struct agile_tunable, attr);
	unsigned int value;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (kstrtouint(buf, 10, &value) || value < t->min || value > t->max)
		return -EINVAL;
	/* Readers take the new value at their next READ_ONCE(). */
	WRITE_ONCE(*t->value, value);
	return count;
}

#define AGILE_TUNABLE(_name, _min, _max)                        \
	static struct agile_tunable agile_tunable_##_name = {   \
		.attr = __ATTR(_name, 0644, agile_tunable_show, \
			       agile_tunable_store),            \
		.value = &agile_##_name,                        \
		.min = _min,                                    \
		.max = _max,                                    \
	}

AGILE_TUNABLE(poll_interval_us, 10, 1000000);
/* Never below one WAIT_ANY's conditions: every tick makes progress. */
AGILE_TUNABLE(poll_max_checks, AGILE_WAIT_ANY_MAX, 65536);
/* Thousandths of one CPU; 1000 lifts the cap (poll.c). */
AGILE_TUNABLE(poll_cpu_permille, 1, 1000);
AGILE_TUNABLE(spin_ns, 0, 10000000);
AGILE_TUNABLE(max_slots, 1, 65536);
/* Whole pages up to 1 GiB: SEG_CREATE rounds up without overflow. */
AGILE_TUNABLE(max_segment_bytes, PAGE_SIZE, 1U << 30);
AGILE_TUNABLE(max_contexts_per_user, 1, 1U << 20);

static struct agile_tunable *const agile_tunables[] = {
	&agile_tunable_poll_interval_us,
	&agile_tunable_poll_max_checks,
	&agile_tunable_poll_cpu_permille,
	&agile_tunable_spin_ns,
	&agile_tunable_max_slots,
	&agile_tunable_max_segment_bytes,
	&agile_tunable_max_contexts_per_user,
};

/* The module parameters obey the same ranges as the sysfs files. */
int agile_sysfs_check_params(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(agile_tunables); i++) {
		const struct agile_tunable *t = agile_tunables[i];

		if (*t->value < t->min || *t->value > t->max) {
			pr_err("%s=%u out of range [%u, %u]\n",
			       t->attr.attr.name, *t->value, t->min, t->max);
			return -EINVAL;
		}
	}
	return 0;
}

static ssize_t agile_counter_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	const struct agile_counter_attr *c =
		container_of(attr, struct agile_counter_attr, attr);

	return sysfs_emit(buf, "%llu\n",
			  agile_counter_sum(&agile_totals, c->counter));
}

#define AGILE_COUNTER(_name, _counter)                                 \
	static struct agile_counter_attr agile_counter_##_name = {     \
		.attr = __ATTR(_name, 0444, agile_counter_show, NULL), \
		.counter = _counter,                                   \
	}

AGILE_COUNTER(signals, AGILE_CNT_SIGNALS);
AGILE_COUNTER(waits, AGILE_CNT_WAITS);
AGILE_COUNTER(wakeups_signal, AGILE_CNT_WAKEUPS_SIGNAL);
AGILE_COUNTER(wakeups_poll, AGILE_CNT_WAKEUPS_POLL);
AGILE_COUNTER(timeouts, AGILE_CNT_TIMEOUTS);

static ssize_t contexts_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&agile_nr_contexts));
}
static DEVICE_ATTR_RO(contexts);

static ssize_t groups_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&agile_nr_groups));
}
static DEVICE_ATTR_RO(groups);

/* Pages held by every context and segment, module-wide. */
static ssize_t pages_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%ld\n", atomic_long_read(&agile_nr_pages));
}
static DEVICE_ATTR_RO(pages);

/* A fixed cap, shown beside the tunable ones. */
static ssize_t max_segments_per_context_show(struct device *dev,
					     struct device_attribute *attr,
					     char *buf)
{
	return sysfs_emit(buf, "%d\n", AGILE_MAX_SEGMENTS);
}
static DEVICE_ATTR_RO(max_segments_per_context);

/*
 * The poller's cost (poll.c): ticks, conditions checked, time in ticks,
 * ticks the CPU cap put off, contexts and users on its list, the last
 * tick's budget; poll_<field> shows agile_poll_stats.<field>.
 * Not clang-formatted: it would fill the blank line after the declaration
 * with spaces, which checkpatch refuses (CODE_INDENT).
 */
/* clang-format off */
#define AGILE_POLL_STAT_ATTR(field, fmt)				\
static ssize_t poll_##field##_show(struct device *dev,			\
				   struct device_attribute *attr,	\
				   char *buf)				\
{									\
	struct agile_poll_stats stats;					\
									\
	agile_poll_read_stats(&stats);					\
	return sysfs_emit(buf, fmt "\n", stats.field);			\
}									\
static DEVICE_ATTR_RO(poll_##field)
/* clang-format on */

AGILE_POLL_STAT_ATTR(ticks, "%llu");
AGILE_POLL_STAT_ATTR(checks, "%llu");
AGILE_POLL_STAT_ATTR(ns, "%llu");
AGILE_POLL_STAT_ATTR(stretched, "%llu");
AGILE_POLL_STAT_ATTR(contexts, "%u");
AGILE_POLL_STAT_ATTR(users, "%u");
AGILE_POLL_STAT_ATTR(budget, "%u");

static struct attribute *agile_attrs[] = {
	&agile_tunable_poll_interval_us.attr.attr,
	&agile_tunable_poll_max_checks.attr.attr,
	&agile_tunable_poll_cpu_permille.attr.attr,
	&agile_tunable_spin_ns.attr.attr,
	&agile_tunable_max_slots.attr.attr,
	&agile_tunable_max_segment_bytes.attr.attr,
	&agile_tunable_max_contexts_per_user.attr.attr,
	&dev_attr_max_segments_per_context.attr,
	&dev_attr_contexts.attr,
	&dev_attr_groups.attr,
	&dev_attr_pages.attr,
	&agile_counter_signals.attr.attr,
	&agile_counter_waits.attr.attr,
	&agile_counter_wakeups_signal.attr.attr,
	&agile_counter_wakeups_poll.attr.attr,
	&agile_counter_timeouts.attr.attr,
	&dev_attr_poll_ticks.attr,
	&dev_attr_poll_checks.attr,
	&dev_attr_poll_ns.attr,
	&dev_attr_poll_stretched.attr,
	&dev_attr_poll_contexts.attr,
	&dev_attr_poll_users.attr,
	&dev_attr_poll_budget.attr,
	NULL
};

static const struct attribute_group agile_group = {
	.attrs = agile_attrs,
};

const struct attribute_group *agile_groups[] = { &agile_group, NULL };
