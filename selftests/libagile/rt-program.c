// SPDX-License-Identifier: MIT
/*
 * rt-program - executables with description data and seed 003's load
 * rule on the CPU device, with the system C compiler (agile_rt_program_*):
 *
 *	compiled   no binary, the source: cc runs once, the product is a new
 *	           binary with the CPU's description data; its kernels run
 *	           through the queue (user_rotate across its barrier;
 *	           user_fail_odd's lane error in the event)
 *	cache hit  the same source on another context: no compiler run
 *	exact      the binary saved from the first build, given back with the
 *	           source: used as it is, no compiler run; without the source
 *	           too
 *	fallback   a build that fails (a broken source; options cc refuses)
 *	           with a compatible binary: that binary, step and log kept
 *	error      a failing build and no compatible binary (another version,
 *	           another vendor): -ENOEXEC, the log names the line
 *
 * Also: a second program with the same kernel names on one context
 * (-EEXIST), a second build (-EALREADY), the kernel of an unbuilt program
 * (-ENOEXEC).  Skipped without cc or in the static build.
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <agile/runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "rttest.h"
#include "compiletest.h"

/* A source cc refuses at user-kernels:3. */
static const char broken_source[] =
	"AGILE_PHASE(p)\n{\n\treturn no_such_name;\n}\n"
	"#define AGILE_USER_KERNELS(K) K(user_rotate, struct agile_no_state, "
	"0, p)\n";

static char cpu_version[32];
static void *saved; /* the first build's binary, its bytes */
static size_t saved_size;

static uint64_t cc_runs(void)
{
	return agile__rt_compiler_count(AGILE_RT_CPU);
}

static struct agile_rt_binary
cpu_binary(const char *version, const char *vendor, const char *options)
{
	struct agile_rt_binary b = { .type = AGILE_RT_DEVICE_CPU,
				     .image = saved,
				     .size = saved_size };

	snprintf(b.vendor, sizeof(b.vendor), "%s", vendor);
	snprintf(b.version, sizeof(b.version), "%s", version);
	snprintf(b.options, sizeof(b.options), "%s", options);
	return b;
}

/*
 * user_rotate then user_fail_odd from @prog through @ctx's queue: 0 when
 * both did what they should.
 */
static int run_kernels(agile_rt_ctx ctx, struct agile_rt_program *prog)
{
	struct agile_rt_kernel *rot, *odd;
	struct agile_rt_buffer *xb;
	struct agile_rt_queue *q;
	struct agile_rt_event *ev;
	double *x, want[ROTATE_LANES];
	int err, st;

	err = agile_rt_program_kernel(prog, "user_rotate", &rot);
	if (!err)
		err = agile_rt_program_kernel(prog, "user_fail_odd", &odd);
	if (!err)
		err = agile_rt_queue_create(ctx, NULL, &q);
	if (err)
		return err;
	err = agile_rt_buffer_create(ctx, sizeof(want), &xb);
	if (err)
		goto out_q;
	agile_rt_buffer_host(xb, (void **)&x, NULL);
	for (int i = 0; i < ROTATE_LANES; i++)
		x[i] = 3 * i + 1;
	rotate_expect(x, want);
	err = rt_run(q, rot, ROTATE_LANES, 0,
		     (struct agile_rt_arg[]){
			     rt_buf(xb, AGILE_RT_READ | AGILE_RT_WRITE),
			     rt_val(ROTATE_FACTOR) },
		     2, &ev);
	if (!err) {
		err = agile_rt_event_wait(ev, RT_WAIT_NS);
		agile_rt_event_release(ev);
	}
	if (!err && memcmp(x, want, sizeof(want)))
		err = -EDOM;
	if (!err)
		err = rt_run(q, odd, FAIL_ODD_LANES, 0, NULL, 0, &ev);
	if (!err) {
		st = agile_rt_event_wait(ev, RT_WAIT_NS);
		agile_rt_event_release(ev);
		err = st == -ERANGE ? 0 : -EPROTO;
	}
	agile_rt_buffer_release(xb);
out_q:
	agile_rt_queue_destroy(q);
	return err;
}

/* A program of @source and @bins on a fresh CPU context, built. */
static int build_on_new(const char *source, const struct agile_rt_binary *bins,
			uint32_t nr, const char *options, agile_rt_ctx *ctx,
			struct agile_rt_program **prog,
			struct agile_rt_build_info *info)
{
	int err;

	*ctx = 0;
	*prog = NULL;
	memset(info, 0, sizeof(*info));
	err = rt_cpu_ctx(2, ctx);
	if (err)
		return err;
	err = agile_rt_program_create(*ctx, source, bins, nr, prog);
	if (err)
		return err;
	err = agile_rt_program_build(*prog, options);
	agile_rt_program_build_info(*prog, 0, info);
	return err;
}

/* Either may be 0 / NULL (not made). */
static void done(agile_rt_ctx ctx, struct agile_rt_program *prog)
{
	if (prog)
		agile_rt_program_release(prog);
	if (ctx)
		agile_rt_ctx_release(ctx);
}

static void test_compiled(void)
{
	struct agile_rt_build_info info;
	struct agile_rt_program *prog, *other;
	struct agile_rt_binary b = { 0 };
	struct agile_rt_kernel *k;
	uint64_t n0 = cc_runs();
	uint32_t nr = 0;
	agile_rt_ctx ctx;
	int err;

	err = build_on_new(user_source, NULL, 0, NULL, &ctx, &prog, &info);
	if (!tap_ok(!err && info.branch == AGILE_RT_BUILD_COMPILED &&
			    !info.status && cc_runs() == n0 + 1,
		    "no binary: compiled from the source, cc ran once (branch "
		    "%u): %s",
		    info.branch, agile_strerror(err))) {
		done(ctx, prog);
		return;
	}
	agile_rt_program_binary_count(prog, &nr);
	err = agile_rt_program_binary(prog, 0, &b);
	tap_ok(!err && nr == 1 && info.binary == 0 &&
		       b.origin == AGILE_RT_BINARY_COMPILED &&
		       b.type == AGILE_RT_DEVICE_CPU &&
		       !strcmp(b.vendor, "cpu") &&
		       !strcmp(b.version, cpu_version) && !b.options[0] &&
		       b.size > 4 && !memcmp(b.image, "\177ELF", 4),
	       "recorded as a new binary: cpu/%s, options \"%s\", %zu bytes",
	       b.version, b.options, b.size);
	saved = malloc(b.size);
	if (saved) {
		memcpy(saved, b.image, b.size);
		saved_size = b.size;
	}
	tap_ok(agile_rt_program_binary(prog, 1, &b) == -ENOENT,
	       "no second binary");
	err = run_kernels(ctx, prog);
	tap_ok(!err,
	       "its kernels through the queue: user_rotate across the "
	       "barrier, user_fail_odd fails with -ERANGE: %s",
	       agile_strerror(err));
	tap_ok(agile_rt_kernel_get(ctx, "user_rotate", &k) == 0,
	       "the context knows the kernel by name too");
	tap_ok(agile_rt_program_build(prog, NULL) == -EALREADY,
	       "a second build: -EALREADY");

	/* The same kernel names again on this context. */
	err = agile_rt_program_create(ctx, user_source, NULL, 0, &other);
	tap_ok(!err && agile_rt_program_kernel(other, "user_rotate", &k) ==
			       -ENOEXEC,
	       "a program not built has no kernel: -ENOEXEC");
	err = err ? err : agile_rt_program_build(other, NULL);
	tap_ok(err == -EEXIST,
	       "a second program with the same kernel names on one "
	       "context: %s",
	       agile_strerror(err));
	agile_rt_program_release(other);
	done(ctx, prog);
}

static void test_cache_hit(void)
{
	struct agile_rt_build_info info;
	struct agile_rt_program *prog;
	uint64_t n0 = cc_runs();
	agile_rt_ctx ctx;
	int err;

	err = build_on_new(user_source, NULL, 0, NULL, &ctx, &prog, &info);
	tap_ok(!err && info.branch == AGILE_RT_BUILD_CACHE_HIT &&
		       cc_runs() == n0,
	       "the same source again: a cache hit, no compiler run (branch "
	       "%u): %s",
	       info.branch, agile_strerror(err));
	err = err ? err : run_kernels(ctx, prog);
	tap_ok(!err, "its kernels run: %s", agile_strerror(err));
	done(ctx, prog);
}

static void test_exact(void)
{
	struct agile_rt_binary b = cpu_binary(cpu_version, "cpu", "");
	struct agile_rt_build_info info;
	struct agile_rt_program *prog;
	uint64_t n0 = cc_runs();
	agile_rt_ctx ctx;
	uint32_t nr = 0;
	int err;

	/* A decoy first: compatible, but built with other options. */
	struct agile_rt_binary bins[] = {
		cpu_binary(cpu_version, "cpu", "-DOTHER=1"), b
	};

	err = build_on_new(user_source, bins, 2, NULL, &ctx, &prog, &info);
	agile_rt_program_binary_count(prog, &nr);
	tap_ok(!err && info.branch == AGILE_RT_BUILD_EXACT &&
		       info.binary == 1 && cc_runs() == n0 && nr == 2,
	       "the saved binary for %s given back with the source: used "
	       "exactly (binary %u, branch %u), no compiler run: %s",
	       cpu_version, info.binary, info.branch, agile_strerror(err));
	err = err ? err : run_kernels(ctx, prog);
	tap_ok(!err, "its kernels run: %s", agile_strerror(err));
	done(ctx, prog);

	err = build_on_new(NULL, &b, 1, NULL, &ctx, &prog, &info);
	err = err ? err : run_kernels(ctx, prog);
	tap_ok(!err && info.branch == AGILE_RT_BUILD_EXACT && cc_runs() == n0,
	       "the binary alone, no source: exact, runs: %s",
	       agile_strerror(err));
	done(ctx, prog);
}

static void test_fallback(void)
{
	struct agile_rt_binary b = cpu_binary(cpu_version, "cpu", "");
	struct agile_rt_build_info info;
	struct agile_rt_program *prog;
	const char *log = NULL;
	agile_rt_ctx ctx;
	int err;

	/* Options of its own: the binary is compatible, not exact. */
	err = build_on_new(broken_source, &b, 1, "-DMINE=1", &ctx, &prog,
			   &info);
	agile_rt_program_build_log(prog, 0, &log);
	tap_ok(!err && info.branch == AGILE_RT_BUILD_FALLBACK &&
		       info.binary == 0 && !strcmp(info.step, "cc") && log &&
		       strstr(log, "no_such_name"),
	       "a broken source: the compatible binary instead (branch %u, "
	       "step %s): %s",
	       info.branch, info.step, agile_strerror(err));
	err = err ? err : run_kernels(ctx, prog);
	tap_ok(!err, "the fallback's kernels run: %s", agile_strerror(err));
	done(ctx, prog);

	err = build_on_new(user_source, &b, 1, "-fno-such-option-for-agile",
			   &ctx, &prog, &info);
	agile_rt_program_build_log(prog, 0, &log);
	tap_ok(!err && info.branch == AGILE_RT_BUILD_FALLBACK &&
		       !strcmp(info.step, "cc") && log &&
		       strstr(log, "no-such-option-for-agile"),
	       "options cc refuses: the compatible binary instead (branch "
	       "%u): %s",
	       info.branch, agile_strerror(err));
	err = err ? err : run_kernels(ctx, prog);
	tap_ok(!err, "its kernels run: %s", agile_strerror(err));
	done(ctx, prog);
}

static void test_error(void)
{
	struct agile_rt_binary other[] = {
		cpu_binary("not-this-machine", "cpu", ""),
		cpu_binary(cpu_version, "nvidia", ""),
	};
	struct agile_rt_build_info info;
	struct agile_rt_program *prog;
	struct agile_rt_kernel *k;
	const char *log = NULL;
	agile_rt_ctx ctx;
	int err;

	err = build_on_new(broken_source, other, 2, NULL, &ctx, &prog, &info);
	agile_rt_program_build_log(prog, 0, &log);
	tap_ok(err == -ENOEXEC && info.branch == AGILE_RT_BUILD_FAILED &&
		       info.status == -ENOEXEC && !strcmp(info.step, "cc") &&
		       log && strstr(log, "no_such_name") &&
		       strstr(log, "user-kernels:3"),
	       "a broken source, binaries for another machine and vendor "
	       "only: %s, step %s, the log names the line",
	       agile_strerror(err), info.step);
	tap_diag("message: %s", info.message);
	tap_ok(agile_rt_program_kernel(prog, "user_rotate", &k) == -ENOEXEC,
	       "no kernel from a failed build");
	done(ctx, prog);

	err = build_on_new(NULL, other, 2, NULL, &ctx, &prog, &info);
	tap_ok(err == -ENOEXEC && info.branch == AGILE_RT_BUILD_FAILED &&
		       !strcmp(info.step, "match"),
	       "no source and no compatible binary: %s, step %s",
	       agile_strerror(err), info.step);
	done(ctx, prog);

	tap_ok(agile_rt_program_create(1, user_source, NULL, 0, &prog) ==
		       -AGILE_E_INVALID_CONTEXT,
	       "a context handle that is not one");
	tap_ok(agile_rt_program_create(0, NULL, NULL, 0, &prog) == -EINVAL,
	       "neither source nor binary: -EINVAL");
}

int main(void)
{
	struct agile__rt_diag diag = { 0 };
	struct agile_rt_device_info info;
	char id[256];

#ifdef AGILE_NO_DLOPEN
	tap_skip("executables", "a static build loads no compiled code");
	return tap_done();
#endif
	unsetenv("AGILE_CC");
	if (agile__rt_compiler_id(AGILE_RT_CPU, id, sizeof(id), &diag)) {
		tap_skip("executables compiled for the CPU", "%s",
			 diag.message);
		agile__rt_diag_clear(&diag);
		return tap_done();
	}
	if (!tap_ok_call(cache_fresh(), "a fresh cache folder"))
		return tap_done();
	agile_rt_device_info(0, &info);
	snprintf(cpu_version, sizeof(cpu_version), "%s", info.version);
	tap_diag("compiler: %s; the CPU's version: %s", id, cpu_version);
	test_compiled();
	if (saved) {
		test_cache_hit();
		test_exact();
		test_fallback();
	}
	test_error();
	free(saved);
	cache_remove();
	return tap_done();
}
