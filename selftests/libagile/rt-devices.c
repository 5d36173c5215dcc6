// SPDX-License-Identifier: MIT
/*
 * rt-devices - the runtime's capability table and requirement matching:
 * the CPU's row from the machine; then a table of made-up devices
 * (agile__rt_devices_set) matched all-must-match and by score, with the
 * exact ids and order each requirement list gives, and bad requirements
 * refused; a context on two GPUs refused.
 */
#include <agile/error.h>
#include <agile/runtime.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime/runtime_impl.h"
#include "tap.h"

#define GIB (1ULL << 30)

static struct agile_rt_device_info row(uint32_t type, const char *vendor,
				       const char *version, uint32_t units,
				       uint64_t memory, uint32_t fp64,
				       const char *ext)
{
	struct agile_rt_device_info d;

	memset(&d, 0, sizeof(d));
	d.type = type;
	snprintf(d.vendor, sizeof(d.vendor), "%s", vendor);
	snprintf(d.name, sizeof(d.name), "%s %s", vendor, version);
	snprintf(d.version, sizeof(d.version), "%s", version);
	d.units = units;
	d.lanes = type == AGILE_RT_DEVICE_GPU ? units * 64 : units;
	d.memory = memory;
	d.fp64 = fp64;
	d.atomic_scope = AGILE_RT_ATOMIC_SYSTEM;
	d.coherent_host = 1;
	d.usable = 1;
	snprintf(d.extensions, sizeof(d.extensions), "%s", ext);
	return d;
}

/* Matches @reqs in @mode; 1 when the ids are exactly @want (@nr_want). */
static int match_is(const struct agile_rt_req *reqs, uint32_t nr_reqs,
		    uint32_t mode, const uint32_t *want, uint32_t nr_want,
		    const char *what)
{
	uint32_t ids[AGILE_RT_MAX_DEVICES], nr = 99;
	char got[128] = "";
	int err = agile_rt_device_match(reqs, nr_reqs, mode, ids,
					AGILE_RT_MAX_DEVICES, &nr);
	int same = !err && nr == nr_want;

	for (uint32_t i = 0; i < nr && i < AGILE_RT_MAX_DEVICES && !err; i++) {
		snprintf(got + strlen(got), sizeof(got) - strlen(got), " %u",
			 ids[i]);
		same &= i < nr_want && ids[i] == want[i];
	}
	return tap_ok(same, "%s: %s:%s", what, agile_strerror(err), got);
}

int main(void)
{
	struct agile_rt_device_info table[4], info;
	uint32_t nr = 0, ids[4];
	int err;

	/* The machine's table: the CPU is device 0. */
	err = agile_rt_device_count(&nr);
	tap_ok(!err && nr >= 1, "the table has %u rows", nr);
	err = agile_rt_device_info(0, &info);
	tap_ok(!err && info.id == 0 && info.type == AGILE_RT_DEVICE_CPU &&
		       info.lanes == (uint32_t)sysconf(_SC_NPROCESSORS_ONLN) &&
		       info.memory > 0 && info.fp64 &&
		       info.atomic_scope == AGILE_RT_ATOMIC_SYSTEM &&
		       info.coherent_host && info.usable && info.version[0],
	       "the CPU: %u lanes, %llu MiB, version %s, %s", info.lanes,
	       (unsigned long long)(info.memory >> 20), info.version,
	       info.name);
	for (uint32_t i = 1; i < nr; i++) {
		agile_rt_device_info(i, &info);
		tap_diag("device %u: %s %s %s, %u units", i, info.vendor,
			 info.name, info.version, info.units);
	}
	tap_ok(agile_rt_device_info(nr, &info) == -ENODEV,
	       "a device past the table: -ENODEV");

	/* Made-up devices: 0 CPU, 1 a small AMD, 2 a big NVIDIA, 3 no fp64. */
	table[0] = row(AGILE_RT_DEVICE_CPU, "GenuineIntel", "x86_64", 8,
		       64 * GIB, 1, "agile.doorbell agile.user-kernels");
	table[1] = row(AGILE_RT_DEVICE_GPU, "amd", "gfx90a", 104, 64 * GIB, 1,
		       "agile.doorbell agile.builtins");
	table[2] = row(AGILE_RT_DEVICE_GPU, "nvidia", "sm_90", 132, 80 * GIB, 1,
		       "agile.doorbell agile.builtins agile.tensor");
	table[3] = row(AGILE_RT_DEVICE_GPU, "nvidia", "sm_89", 76, 24 * GIB, 0,
		       "agile.doorbell");
	tap_ok_call(agile__rt_devices_set(table, 4), "made-up table");

	{
		struct agile_rt_req gpu_fp64[] = {
			{ .key = AGILE_RT_KEY_TYPE,
			  .cmp = AGILE_RT_CMP_EQ,
			  .value = AGILE_RT_DEVICE_GPU },
			{ .key = AGILE_RT_KEY_FP64,
			  .cmp = AGILE_RT_CMP_EQ,
			  .value = 1 },
		};
		uint32_t want[] = { 1, 2 };

		match_is(gpu_fp64, 2, AGILE_RT_MATCH_ALL, want, 2,
			 "ALL: type == GPU, fp64");
	}
	{
		struct agile_rt_req big[] = {
			{ .key = AGILE_RT_KEY_MEMORY,
			  .cmp = AGILE_RT_CMP_GE,
			  .value = 64 * GIB },
			{ .key = AGILE_RT_KEY_LANES,
			  .cmp = AGILE_RT_CMP_GE,
			  .value = 1000 },
		};
		uint32_t want[] = { 1, 2 };

		match_is(big, 2, AGILE_RT_MATCH_ALL, want, 2,
			 "ALL: memory >= 64 GiB, lanes >= 1000");
	}
	{
		struct agile_rt_req nv[] = {
			{ .key = AGILE_RT_KEY_VENDOR,
			  .cmp = AGILE_RT_CMP_EQ,
			  .str = "nvidia" },
			{ .key = AGILE_RT_KEY_EXTENSION,
			  .cmp = AGILE_RT_CMP_CONTAINS,
			  .str = "agile.tensor" },
			{ .key = AGILE_RT_KEY_VERSION,
			  .cmp = AGILE_RT_CMP_CONTAINS,
			  .str = "sm_" },
		};
		uint32_t want[] = { 2 };

		match_is(nv, 3, AGILE_RT_MATCH_ALL, want, 1,
			 "ALL: vendor nvidia, extension agile.tensor, sm_*");
		/* A word, not a substring: "agile.tens" is no extension. */
		nv[1].str = "agile.tens";
		match_is(nv, 3, AGILE_RT_MATCH_ALL, NULL, 0,
			 "ALL: extension words match whole");
	}
	match_is(NULL, 0, AGILE_RT_MATCH_ALL, (uint32_t[]){ 0, 1, 2, 3 }, 4,
		 "ALL, no requirements: every device");
	{
		/*
		 * Scores: GPU 4, fp64 2, memory >= 32 GiB 1:
		 * 0 CPU: 2 + 1 = 3; 1 AMD: 7; 2 NVIDIA: 7; 3: 4.
		 * Ties: GPUs before the CPU, then by id.
		 */
		struct agile_rt_req score[] = {
			{ .key = AGILE_RT_KEY_TYPE,
			  .cmp = AGILE_RT_CMP_EQ,
			  .value = AGILE_RT_DEVICE_GPU,
			  .weight = 4 },
			{ .key = AGILE_RT_KEY_FP64,
			  .cmp = AGILE_RT_CMP_EQ,
			  .value = 1,
			  .weight = 2 },
			{ .key = AGILE_RT_KEY_MEMORY,
			  .cmp = AGILE_RT_CMP_GE,
			  .value = 32 * GIB },
		};
		uint32_t want[] = { 1, 2, 3, 0 };
		uint32_t want_must[] = { 1, 2, 0 };

		match_is(score, 3, AGILE_RT_MATCH_SCORE, want, 4,
			 "SCORE: 7 7 4 3");
		score[1].flags = AGILE_RT_REQ_MUST;
		match_is(score, 3, AGILE_RT_MATCH_SCORE, want_must, 3,
			 "SCORE, fp64 a must: device 3 out");
		score[0].weight = 1;
		score[1].flags = 0;
		score[2].weight = 5;
		/* 0: 2 + 5 = 7, 1: 1 + 2 + 5 = 8, 2: 8, 3: 1. */
		match_is(score, 3, AGILE_RT_MATCH_SCORE,
			 (uint32_t[]){ 1, 2, 0, 3 }, 4,
			 "SCORE, memory weighs 5: the CPU third");
	}
	{
		struct agile_rt_req none = { .key = AGILE_RT_KEY_UNITS,
					     .cmp = AGILE_RT_CMP_GT,
					     .value = 1000 };

		match_is(&none, 1, AGILE_RT_MATCH_SCORE, NULL, 0,
			 "SCORE: a device meeting nothing is left out");
	}
	{
		struct agile_rt_req bad = { .key = AGILE_RT_KEY_VENDOR,
					    .cmp = AGILE_RT_CMP_GE,
					    .str = "amd" };

		nr = 0;
		tap_ok(agile_rt_device_match(&bad, 1, AGILE_RT_MATCH_ALL, ids,
					     4, &nr) == -EINVAL,
		       "a string compared with GE: -EINVAL");
		bad.cmp = AGILE_RT_CMP_EQ;
		bad.str = NULL;
		tap_ok(agile_rt_device_match(&bad, 1, AGILE_RT_MATCH_ALL, ids,
					     4, &nr) == -EINVAL,
		       "a string key without a string: -EINVAL");
		bad.key = 99;
		tap_ok(agile_rt_device_match(&bad, 1, AGILE_RT_MATCH_ALL, ids,
					     4, &nr) == -EINVAL,
		       "an unknown key: -EINVAL");
		tap_ok(agile_rt_device_match(NULL, 0, 7, ids, 4, &nr) ==
			       -EINVAL,
		       "an unknown mode: -EINVAL");
	}
	{
		/* Room for one: the count says how many matched. */
		err = agile_rt_device_match(NULL, 0, AGILE_RT_MATCH_ALL, ids, 1,
					    &nr);
		tap_ok(!err && nr == 4 && ids[0] == 0,
		       "room for 1 of 4: nr says 4");
	}
	{
		struct agile_rt_ctx_opts o;
		agile_rt_ctx ctx;

		agile_rt_ctx_opts_init(&o);
		o.devices = (uint32_t[]){ 0, 1, 2 };
		o.nr_devices = 3;
		tap_ok(agile_rt_ctx_create(&o, &ctx) == -EINVAL,
		       "a context on two GPUs: -EINVAL");
	}
	agile__rt_devices_set(NULL, 0);
	err = agile_rt_device_info(0, &info);
	tap_ok(!err && info.type == AGILE_RT_DEVICE_CPU &&
		       info.units == (uint32_t)sysconf(_SC_NPROCESSORS_ONLN),
	       "the table re-probed after the made-up one");
	return tap_done();
}
