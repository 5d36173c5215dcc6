// SPDX-License-Identifier: MIT
/*
 * dev-group-args - agile_dev_group_opts_init's defaults and the argument
 * checks of agile_dev_group_join (-EINVAL), on the user backend.
 */
#define _GNU_SOURCE

#include "tap.h"
#include "testutil.h"
#include "grouptest.h"

static void test_args(void)
{
	struct agile_dev_group_opts o;
	struct agile_dev *dev;

	agile_dev_group_opts_init(&o);
	tap_ok(o.max_members == 1 && o.mode == 0600 &&
		       o.flags == AGILE_DEV_GROUP_CREATE && o.key == 0 &&
		       o.dev.nr_slots == 1,
	       "group defaults: 1 member, 0600, CREATE");
	o.dev.backend = (uint32_t)backend;
	o.max_members = 0;
	tap_ok(agile_dev_group_join(&o, &dev) == -EINVAL, "0 members: -EINVAL");
	o.max_members = AGILE_GROUP_MAX_MEMBERS + 1;
	tap_ok(agile_dev_group_join(&o, &dev) == -EINVAL,
	       "too many members: -EINVAL");
	o.max_members = 2;
	o.mode = 01600;
	tap_ok(agile_dev_group_join(&o, &dev) == -EINVAL,
	       "mode outside 0666: -EINVAL");
	o.mode = 0600;
	o.flags = 1U << 7;
	tap_ok(agile_dev_group_join(&o, &dev) == -EINVAL,
	       "unknown flag: -EINVAL");
	o.flags = AGILE_DEV_GROUP_EXCL;
	tap_ok(agile_dev_group_join(&o, &dev) == -EINVAL,
	       "EXCL without CREATE: -EINVAL");
	o.flags = AGILE_DEV_GROUP_CREATE;
	o.reserved[2] = 1;
	tap_ok(agile_dev_group_join(&o, &dev) == -EINVAL,
	       "reserved field: -EINVAL");
	tap_ok(agile_dev_group_join(NULL, &dev) == -EINVAL &&
		       agile_dev_group_join(&o, NULL) == -EINVAL &&
		       agile_dev_group_opts_init(NULL) == -EINVAL &&
		       agile_dev_member(NULL) == -EINVAL &&
		       agile_dev_max_members(NULL) == -EINVAL,
	       "NULL arguments: -EINVAL");
}

int main(void)
{
	backend = AGILE_BACKEND_USER;
	test_args();
	return tap_done();
}
