// SPDX-License-Identifier: MIT
/*
 * runtime-program - a user kernel compiled on demand (seed 003's
 * executables): its source, in the runtime's dialect (phases separated
 * by barriers), becomes a program on a context of the CPU (and the best
 * GPU, if one is usable); the build applies the load rule on each device
 * (here: compiled, or found in the disk cache on a second run) and says
 * which; the kernel then runs through the queue like a built-in one.  The
 * compiled binary, with its description data, is what an application
 * would save and hand back to a later program (then used as it is).
 *
 *	runtime-program [N]
 *
 * Needs a C compiler at run time ($AGILE_CC, else cc), and NVRTC or
 * hiprtc for a GPU; the cache is $AGILE_CACHE_DIR, else
 * ~/.cache/agile/kernels.
 */
#include <agile/error.h>
#include <agile/runtime.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * rev_scale: x[n - 1 - i] = a x[i] over one group's lanes (a: an integer
 * argument word, n <= 16 per lane).  Every lane
 * loads its elements (phase 0) before any lane stores (phase 1): the
 * barrier between the phases makes the in-place reversal right; the
 * loaded values live across it in the lane's state.
 */
static const char source[] =
	"#define PER_LANE 16\n"
	"struct rev_state { double v[PER_LANE]; };\n"
	"\n"
	"AGILE_PHASE(rev_load)\n"
	"{\n"
	"	const double *x = (const double *)(uintptr_t)args[0];\n"
	"	struct rev_state *st = (struct rev_state *)state;\n"
	"	uint64_t n = args[2];\n"
	"\n"
	"	for (uint64_t i = lane, k = 0; i < n; i += nr_lanes, k++) {\n"
	"		if (k == PER_LANE)\n"
	"			return -ERANGE;\n"
	"		st->v[k] = x[i];\n"
	"	}\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"AGILE_PHASE(rev_store)\n"
	"{\n"
	"	double *x = (double *)(uintptr_t)args[0];\n"
	"	const struct rev_state *st = (const struct rev_state *)state;\n"
	"	double a = (double)args[1];\n"
	"	uint64_t n = args[2];\n"
	"\n"
	"	for (uint64_t i = lane, k = 0; i < n; i += nr_lanes, k++)\n"
	"		x[n - 1 - i] = a * st->v[k];\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"#define AGILE_USER_KERNELS(K) \\\n"
	"	K(rev_scale, struct rev_state, 0, rev_load, rev_store)\n";

static const char *const branches[] = {
	[AGILE_RT_BUILD_NONE] = "not built",
	[AGILE_RT_BUILD_EXACT] = "exact binary",
	[AGILE_RT_BUILD_COMPILED] = "compiled now",
	[AGILE_RT_BUILD_CACHE_HIT] = "from the cache",
	[AGILE_RT_BUILD_FALLBACK] = "fallback binary",
	[AGILE_RT_BUILD_FAILED] = "failed",
};

int main(int argc, char **argv)
{
	struct agile_rt_req want[] = {
		{ .key = AGILE_RT_KEY_TYPE,
		  .cmp = AGILE_RT_CMP_EQ,
		  .value = AGILE_RT_DEVICE_GPU,
		  .flags = AGILE_RT_REQ_MUST },
		{ .key = AGILE_RT_KEY_USABLE,
		  .cmp = AGILE_RT_CMP_EQ,
		  .value = 1,
		  .flags = AGILE_RT_REQ_MUST },
	};
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000;
	uint32_t devs[2] = { 0, 0 }, nr = 0, nr_bins = 0;
	struct agile_rt_program *prog;
	struct agile_rt_kernel *k;
	struct agile_rt_buffer *xb;
	struct agile_rt_queue *q;
	struct agile_rt_event *ev;
	struct agile_rt_ctx_opts o;
	double a = 2, *x;
	uint64_t bad = 0;
	agile_rt_ctx ctx;
	int err;

	if (n == 0 || n > 64 * 16) {
		fprintf(stderr, "N: 1 .. %d\n", 64 * 16);
		return 2;
	}
	/* The CPU, and a usable GPU if there is one. */
	agile_rt_device_match(want, 2, AGILE_RT_MATCH_ALL, &devs[1], 1, &nr);
	agile_rt_ctx_opts_init(&o);
	o.devices = devs;
	o.nr_devices = nr ? 2 : 1;
	err = agile_rt_ctx_create(&o, &ctx);
	if (err) {
		fprintf(stderr, "context: %s\n", agile_strerror(err));
		return 1;
	}

	/* Source only: the load rule compiles it for each device. */
	err = agile_rt_program_create(ctx, source, NULL, 0, &prog);
	if (!err)
		err = agile_rt_program_build(prog, NULL);
	for (uint32_t i = 0; i < o.nr_devices; i++) {
		struct agile_rt_build_info info;
		const char *log = "";

		agile_rt_program_build_info(prog, devs[i], &info);
		agile_rt_program_build_log(prog, devs[i], &log);
		printf("device %u (%s %s): %s%s%s\n", devs[i],
		       info.type == AGILE_RT_DEVICE_GPU ? "GPU" : "CPU",
		       info.version, branches[info.branch],
		       info.status ? ": " : "", info.message);
		if (info.branch == AGILE_RT_BUILD_FAILED && *log)
			fprintf(stderr, "%s\n", log);
	}
	if (err) {
		fprintf(stderr, "build: %s\n", agile_strerror(err));
		agile_rt_program_release(prog);
		agile_rt_ctx_release(ctx);
		return 1;
	}
	/* What an application would save: binaries with description data. */
	agile_rt_program_binary_count(prog, &nr_bins);
	for (uint32_t i = 0; i < nr_bins; i++) {
		struct agile_rt_binary b;

		agile_rt_program_binary(prog, i, &b);
		printf("binary %u: %s %s %s, options \"%s\", %zu bytes\n", i,
		       b.type == AGILE_RT_DEVICE_GPU ? "GPU" : "CPU", b.vendor,
		       b.version, b.options, b.size);
	}

	/* Then the kernel runs through the queue like any other. */
	err = agile_rt_program_kernel(prog, "rev_scale", &k);
	if (!err)
		err = agile_rt_queue_create(ctx, NULL, &q);
	if (!err)
		err = agile_rt_buffer_create(ctx, n * sizeof(double), &xb);
	if (err) {
		fprintf(stderr, "setup: %s\n", agile_strerror(err));
		return 1;
	}
	agile_rt_buffer_host(xb, (void **)&x, NULL);
	for (uint64_t i = 0; i < n; i++)
		x[i] = (double)i;
	{
		struct agile_rt_arg args[] = {
			{ .kind = AGILE_RT_ARG_BUFFER,
			  .access = AGILE_RT_READ | AGILE_RT_WRITE,
			  .buf = xb },
			{ .kind = AGILE_RT_ARG_VALUE, .value = 2 },
			{ .kind = AGILE_RT_ARG_VALUE, .value = n },
		};
		struct agile_rt_entry e = { .kernel = k,
					    .threads = 64,
					    .groups = 1,
					    .place = AGILE_RT_PLACE_ANY,
					    .nr_args = 3,
					    .args = args };

		err = agile_rt_enqueue(q, &e, &ev);
	}
	if (!err) {
		err = agile_rt_event_wait(ev, AGILE_TIMEOUT_INFINITE);
		agile_rt_event_release(ev);
	}
	for (uint64_t i = 0; !err && i < n; i++)
		bad += x[n - 1 - i] != a * (double)i;
	printf("rev_scale on %llu doubles: %s, x[0] = %g, x[%llu] = %g, %llu "
	       "wrong\n",
	       (unsigned long long)n, agile_strerror(err), x[0],
	       (unsigned long long)(n - 1), x[n - 1], (unsigned long long)bad);
	agile_rt_buffer_release(xb);
	agile_rt_queue_destroy(q);
	agile_rt_program_release(prog);
	agile_rt_ctx_release(ctx);
	return err || bad ? 1 : 0;
}
