// SPDX-License-Identifier: MIT
/*
 * gpu-eu - GPU execution units.  Everywhere: the built-in kernels (the
 * ones GPU EUs have) registered and run through CPU EUs; finding the code
 * object ($AGILE_GPU_CODE_DIR at nothing: the documented reason; at the
 * built objects: found); AGILE_EU_POOL and AGILE_EU_POOL_GPU_ONLY (GPU EUs
 * or an error, never a silent fallback); agile_eu_run_launch refused on
 * CPU EUs.  Where a GPU pool starts: axpy and matrix-list tasks through the
 * doorbells to the persistent kernel, the same through a plain launch, an
 * opcode the GPU lacks (-AGILE_E_OPCODE), DISCONNECT; skipped elsewhere,
 * with the reason.
 *
 * Without a GPU the GPU part still runs, twice, in child processes whose
 * runtime is the stand-in of gpu-mock.c (CPU threads for work-groups): as
 * libamdhip64.so.5, then as libcuda.so.1.  That checks libagile's host
 * side - registration flags, device addresses, the code object and kernel
 * names, co-residency, the launch, DISCONNECT, unregistering everything -
 * but not the GPU code.
 *
 * gpu-eu --gpu-status (for make check-gpu) prints one line and exits 0
 * when GPU EUs start, 77 when there is no usable GPU, 1 when there is one
 * and GPU EUs do not start.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/gpu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifndef AGILE_NO_DLOPEN
#include <dlfcn.h>
#endif

#include "eu/gpu_impl.h"
#include "tap.h"

#define NR_EUS 2
#define N 4096
#define DIM 4
#define NR_MATS 3
#define WAIT_NS (10ULL * 1000 * 1000 * 1000)

static int phase_nop(uint32_t lane, uint32_t nr_lanes, const __u64 *args,
		     void *state, void *shared)
{
	(void)lane;
	(void)nr_lanes;
	(void)args;
	(void)state;
	(void)shared;
	return 0;
}

static uint64_t double_bits(double d)
{
	uint64_t bits;

	memcpy(&bits, &d, sizeof(bits));
	return bits;
}

static int open_dev(struct agile_dev **dev)
{
	struct agile_dev_opts o;

	agile_dev_opts_init(&o);
	o.nr_slots = NR_EUS;
	o.task_reg_size = 128;
	return agile_dev_open(&o, dev);
}

static int make_pool(struct agile_dev *dev, struct agile_kernels *reg,
		     uint32_t flags, struct agile_eu_pool **pool)
{
	struct agile_eu_pool_opts o;

	agile_eu_pool_opts_init(&o);
	o.nr_eus = NR_EUS;
	o.flags = flags;
	return agile_eu_pool_create(dev, reg, &o, pool);
}

/* ---- the built-in kernels, on whatever EUs @pool has ---- */

static void run_builtins(struct agile_eu_pool *pool, struct agile_kernels *reg,
			 bool gpu)
{
	const char *on = gpu ? "GPU EUs" : "CPU EUs";
	const struct agile_kernel *axpy, *mat;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t vec_bytes = (N * sizeof(double) + page - 1) / page * page;
	size_t mat_bytes = ((NR_MATS + 1) * DIM * DIM * sizeof(double) + page -
			    1) / page * page;
	double *x = aligned_alloc(page, vec_bytes);
	double *y = aligned_alloc(page, vec_bytes);
	double *a = aligned_alloc(page, mat_bytes), *b, ref[DIM * DIM];
	uint64_t dx = 0, dy = 0, da = 0, db;
	struct agile_task_reg *tr;
	uint32_t lane = 0;
	int err, bad = 0;

	if (!x || !y || !a) {
		tap_ok(0, "%s: buffers", on);
		goto out;
	}
	b = a + NR_MATS * DIM * DIM;
	for (int i = 0; i < N; i++) {
		x[i] = i;
		y[i] = 1;
	}
	for (int i = 0; i < NR_MATS * DIM * DIM; i++)
		a[i] = i % 7;
	for (int i = 0; i < DIM * DIM; i++)
		b[i] = (i % DIM == i / DIM) ? 2 : (i % 3 == 0);
	/* What matrix 1 becomes. */
	for (int r = 0; r < DIM; r++)
		for (int c = 0; c < DIM; c++) {
			double acc = 0;

			for (int k = 0; k < DIM; k++)
				acc += a[DIM * DIM + r * DIM + k] *
				       b[k * DIM + c];
			ref[r * DIM + c] = acc;
		}

	err = agile_eu_pool_map(pool, x, vec_bytes, &dx);
	if (!err)
		err = agile_eu_pool_map(pool, y, vec_bytes, &dy);
	if (!err)
		err = agile_eu_pool_map(pool, a, mat_bytes, &da);
	if (!tap_ok_call(err, "map the buffers"))
		goto out;
	/* CPU EUs keep no mappings: the address is the one to use. */
	tap_ok(agile_eu_pool_map(pool, x, vec_bytes, &db) ==
			       (gpu ? -EEXIST : 0) &&
		       (gpu || dx == (uintptr_t)x),
	       "%s: mapping a buffer twice: %s", on,
	       gpu ? "-EEXIST" : "the same address");
	db = da + NR_MATS * DIM * DIM * sizeof(double);
	agile_kernels_find(reg, AGILE_KERNEL_AXPY, &axpy);
	agile_kernels_find(reg, AGILE_KERNEL_MATLIST_MUL, &mat);

	/* axpy, 3 y + ... twice on EU 0, 64 lanes and 7 lanes. */
	agile_eu_task_reg(pool, 0, &tr, NULL);
	for (int round = 0; round < 2; round++) {
		tr->opcode = axpy->opcode;
		tr->nr_parts = round ? 7 : AGILE_MAX_LANES;
		tr->flags = 0;
		tr->args[0] = double_bits(3.0);
		tr->args[1] = dx;
		tr->args[2] = dy;
		tr->args[3] = N;
		err = agile_eu_call(pool, 0, WAIT_NS, &lane);
		if (err)
			break;
	}
	for (int i = 0; i < N && !err; i++)
		bad += y[i] != 1 + 6.0 * i;
	tap_ok(!err && !bad, "%s: axpy on 4096 doubles, twice: %s, %d wrong",
	       on, agile_strerror(err), bad);

	/* matrix 1 of the list times B, one lane per element, on EU 1. */
	agile_eu_task_reg(pool, 1, &tr, NULL);
	tr->opcode = mat->opcode;
	tr->nr_parts = DIM * DIM;
	tr->flags = 0;
	tr->args[0] = da;
	tr->args[1] = db;
	tr->args[2] = 1;
	tr->args[3] = DIM;
	err = agile_eu_call(pool, 1, WAIT_NS, &lane);
	bad = 0;
	for (int i = 0; i < DIM * DIM && !err; i++)
		bad += a[DIM * DIM + i] != ref[i];
	tap_ok(!err && !bad && a[0] == 0 && a[1] == 1,
	       "%s: matrix-list multiply, A[1] = A[1] B only: %s, %d wrong", on,
	       agile_strerror(err), bad);

	/* The wrong lane count for the matrix: refused, no lane to blame. */
	tr->nr_parts = DIM * DIM - 1;
	lane = 0;
	err = agile_eu_call(pool, 1, WAIT_NS, &lane);
	tap_ok(err == -EINVAL && lane < DIM * DIM - 1,
	       "%s: matrix with dim * dim - 1 lanes: its lanes fail: %s", on,
	       agile_strerror(err));

	/* An opcode nobody has. */
	tr->opcode = AGILE_OP_USER_BASE + AGILE_KERNELS_MAX - 1;
	tr->nr_parts = 1;
	lane = 0;
	err = agile_eu_call(pool, 1, WAIT_NS, &lane);
	tap_ok(err == -AGILE_E_OPCODE && lane == AGILE_EU_NO_LANE,
	       "%s: an unregistered opcode: %s, no lane", on,
	       agile_strerror(err));

	tap_ok(agile_eu_pool_unmap(pool, x) == 0 &&
		       agile_eu_pool_unmap(pool, y) == 0 &&
		       agile_eu_pool_unmap(pool, a) == 0 &&
		       agile_eu_pool_unmap(pool, a) == (gpu ? -ENOENT : 0),
	       "%s: unmap", on);
out:
	free(x);
	free(y);
	free(a);
}

/* ---- host-side pieces, no GPU needed ---- */

static void test_builtins_register(void)
{
	struct agile_kernels *reg, *other;
	const struct agile_kernel *k;
	const agile_phase_fn nop[] = { phase_nop };
	struct agile_kernel fake = { .name = AGILE_KERNEL_AXPY,
				     .nr_phases = 1,
				     .phases = nop };

	agile_kernels_create(&reg);
	tap_ok(agile_kernels_register_builtins(NULL) == -EINVAL,
	       "register_builtins(NULL): -EINVAL");
	tap_ok(agile_kernels_register_builtins(reg) == 0 &&
		       agile_kernels_register_builtins(reg) == 0,
	       "register the built-in kernels, twice");
	tap_ok(!agile_kernels_find(reg, AGILE_KERNEL_AXPY, &k) &&
		       k->opcode >= AGILE_OP_USER_BASE &&
		       !agile_kernels_find(reg, AGILE_KERNEL_MATLIST_MUL, &k) &&
		       k->nr_phases == 2,
	       "both found by name");
	agile_kernels_create(&other);
	agile_kernels_register(other, &fake, NULL);
	tap_ok(agile_kernels_register_builtins(other) == -EEXIST,
	       "a user kernel named %s: -EEXIST", AGILE_KERNEL_AXPY);
	agile_kernels_destroy(other);
	agile_kernels_destroy(reg);
}

static void test_code_lookup(void)
{
	char path[4096], why[512], built[4096];
	int err;

	setenv("AGILE_GPU_CODE_DIR", "/nonexistent/agile-gpu", 1);
	err = agile__gpu_code_find(AGILE_GPU_CODE_HIP, path, sizeof(path), why,
				   sizeof(why));
	tap_ok(err == -ENOENT && !path[0] &&
		       strstr(why, "AGILE_GPU_CODE_DIR=/nonexistent/agile-gpu") &&
		       strstr(why, AGILE_GPU_CODE_HIP),
	       "AGILE_GPU_CODE_DIR at nothing: -ENOENT, and the reason says "
	       "where");
	tap_diag("reason: %s", why);

	for (int v = 0; v < 2; v++) {
		const char *file = v ? AGILE_GPU_CODE_CUDA : AGILE_GPU_CODE_HIP;

		snprintf(built, sizeof(built), "%s/%s", AGILE_GPU_BUILD_DIR,
			 file);
		if (access(built, R_OK)) {
			tap_skip("code object found", "%s not built here "
				 "(make -C libagile gpu; no compiler?)",
				 file);
			continue;
		}
		setenv("AGILE_GPU_CODE_DIR", AGILE_GPU_BUILD_DIR, 1);
		err = agile__gpu_code_find(file, path, sizeof(path), why,
					   sizeof(why));
		tap_ok(!err && !strcmp(path, built),
		       "AGILE_GPU_CODE_DIR at the build: %s found", file);
		unsetenv("AGILE_GPU_CODE_DIR");
		err = agile__gpu_code_find(file, path, sizeof(path), why,
					   sizeof(why));
		tap_ok(!err && !strcmp(path, built),
		       "AGILE_GPU_CODE_DIR unset: %s found in the build "
		       "directory compiled in", file);
	}
	unsetenv("AGILE_GPU_CODE_DIR");
	err = agile__gpu_code_find("no-such-code-object", path, sizeof(path),
				   why, sizeof(why));
	tap_ok(err == -ENOENT && strstr(why, "AGILE_GPU_CODE_DIR unset") &&
		       strstr(why, AGILE_GPU_BUILD_DIR),
	       "not anywhere: -ENOENT naming the places looked in");
	tap_diag("reason: %s", why);
}

static void test_modes(struct agile_dev *dev, struct agile_kernels *reg,
		       int usable)
{
	struct agile_eu_pool_info info;
	struct agile_eu_pool *pool;
	int err;

	setenv("AGILE_QUIET", "1", 1);
	err = make_pool(dev, reg, AGILE_EU_POOL_GPU | AGILE_EU_POOL_GPU_ONLY,
			&pool);
	tap_ok(err == -EINVAL, "GPU and GPU_ONLY together: -EINVAL");
	setenv("AGILE_EU_POOL", "bogus", 1);
	err = make_pool(dev, reg, 0, &pool);
	tap_ok(err == -EINVAL, "AGILE_EU_POOL=bogus: -EINVAL");

	setenv("AGILE_EU_POOL", "cpu", 1);
	err = make_pool(dev, reg, AGILE_EU_POOL_AUTO, &pool);
	tap_ok(!err && !agile_eu_pool_info(pool, &info) &&
		       info.kind == AGILE_EU_KIND_CPU && info.fallback &&
		       !strcmp(info.reason, "AGILE_EU_POOL=cpu"),
	       "AGILE_EU_POOL=cpu, AUTO: CPU EUs, the reason says why");
	if (!err) {
		tap_ok(agile_eu_run_launch(pool, 0, NULL) == -EOPNOTSUPP,
		       "a plain launch on CPU EUs: -EOPNOTSUPP");
		agile_eu_pool_destroy(pool);
	}

	setenv("AGILE_EU_POOL", "gpu", 1);
	err = make_pool(dev, reg, 0, &pool);
	tap_ok(!err && !agile_eu_pool_info(pool, &info) &&
		       info.kind == AGILE_EU_KIND_CPU && !info.fallback,
	       "AGILE_EU_POOL=gpu leaves a CPU pool (flags 0) alone");
	if (!err)
		agile_eu_pool_destroy(pool);
	if (usable) {
		tap_skip("required GPU EUs without a GPU fail",
			 "a usable GPU is here");
		unsetenv("AGILE_EU_POOL");
	} else {
		err = make_pool(dev, reg, AGILE_EU_POOL_AUTO, &pool);
		tap_ok(err == -ENODEV,
		       "AGILE_EU_POOL=gpu, AUTO, no usable GPU: -ENODEV, no "
		       "fallback: %s", agile_strerror(err));
		unsetenv("AGILE_EU_POOL");
		err = make_pool(dev, reg, AGILE_EU_POOL_GPU_ONLY, &pool);
		tap_ok(err == -ENODEV,
		       "AGILE_EU_POOL_GPU_ONLY, no usable GPU: -ENODEV: %s",
		       agile_strerror(err));
	}
	/* A slot left IDLE by the failures: a plain pool still starts. */
	err = make_pool(dev, reg, AGILE_EU_POOL_GPU, &pool);
	if (!err)
		err = agile_eu_pool_info(pool, &info);
	tap_ok(!err && (usable || info.kind == AGILE_EU_KIND_CPU),
	       "GPU asked for: a pool starts (%s EUs)",
	       !err && info.kind == AGILE_EU_KIND_GPU ? "GPU" : "CPU");
	if (!err)
		agile_eu_pool_destroy(pool);

	if (usable) {
		/* The code object missing: the fallback names it. */
		setenv("AGILE_GPU_CODE_DIR", "/nonexistent/agile-gpu", 1);
		err = make_pool(dev, reg, AGILE_EU_POOL_AUTO, &pool);
		tap_ok(!err && !agile_eu_pool_info(pool, &info) &&
			       info.fallback &&
			       strstr(info.reason, "AGILE_GPU_CODE_DIR"),
		       "a GPU, no code object: CPU EUs, the reason names "
		       "AGILE_GPU_CODE_DIR");
		tap_diag("reason: %s", info.reason);
		if (!err)
			agile_eu_pool_destroy(pool);
		unsetenv("AGILE_GPU_CODE_DIR");
	} else {
		tap_skip("a GPU, no code object: CPU EUs naming it",
			 "no usable GPU");
	}
	unsetenv("AGILE_QUIET");
}

static void test_gpu(struct agile_dev *dev, struct agile_kernels *reg,
		     int required)
{
	struct agile_eu_pool_info info;
	struct agile_eu_pool *pool;
	struct agile_eu_stats st;
	struct agile_task_reg *tr;
	const struct agile_kernel *axpy;
	uint32_t lane = 0;
	int err;

	setenv("AGILE_QUIET", "1", 1);
	err = make_pool(dev, reg,
			required ? AGILE_EU_POOL_GPU_ONLY : AGILE_EU_POOL_AUTO,
			&pool);
	unsetenv("AGILE_QUIET");
	if (!tap_ok(!err, "a GPU-asking pool: %s", agile_strerror(err)))
		return;
	agile_eu_pool_info(pool, &info);
	if (info.kind != AGILE_EU_KIND_GPU) {
		tap_skip("GPU EUs run tasks", "no GPU EUs here: %s",
			 info.reason);
		agile_eu_pool_destroy(pool);
		return;
	}
	tap_ok(!info.fallback && !info.reason[0],
	       "GPU EUs started; pool info says so");
	run_builtins(pool, reg, true);

	/* The same axpy by a plain launch, then through the doorbell again. */
	agile_kernels_find(reg, AGILE_KERNEL_AXPY, &axpy);
	agile_eu_task_reg(pool, 0, &tr, NULL);
	tr->opcode = AGILE_OP_USER_BASE + AGILE_KERNELS_MAX - 1;
	tr->nr_parts = 1;
	err = agile_eu_run_launch(pool, 0, &lane);
	tap_ok(err == -AGILE_E_OPCODE,
	       "a plain launch of an opcode the GPU lacks: %s",
	       agile_strerror(err));
	err = agile_eu_stats(pool, 1, &st);
	tap_ok(!err && st.tasks == 3 && st.failed == 2 && st.connected,
	       "EU 1's counters: %llu tasks, %llu failed",
	       (unsigned long long)st.tasks, (unsigned long long)st.failed);
	err = agile_eu_disconnect(pool, 1, WAIT_NS);
	tap_ok(!err && !agile_eu_stats(pool, 1, &st) && !st.connected &&
		       agile_eu_submit(pool, 1) == -ENOTCONN,
	       "DISCONNECT EU 1: its work-group leaves: %s",
	       agile_strerror(err));
	tap_ok_call(agile_eu_pool_destroy(pool),
		    "destroy: the kernel ends, pages unregistered");
}

#ifndef AGILE_NO_DLOPEN
#define MOCK_DIR AGILE_GPU_BUILD_DIR "/mock"

static const struct {
	const char *api, *lib, *code;
} mocks[] = {
	{ "hip", "libamdhip64.so.5", AGILE_GPU_CODE_HIP },
	{ "cuda", "libcuda.so.1", AGILE_GPU_CODE_CUDA },
};

/* The stand-in runtime's count of registrations still in place. */
static int mock_registered(const char *name)
{
	void *lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
	int (*fn)(void) = lib ? (int (*)(void))dlsym(lib, "mock_registered") :
				NULL;

	return fn ? fn() : -1;
}

/* gpu-eu --mock LIB: the GPU part against gpu-mock.c, TAP on stdout. */
static int mock_child(const char *lib)
{
	struct agile_kernels *reg;
	struct agile_dev *dev;
	int err;

	agile_kernels_create(&reg);
	agile_kernels_register_builtins(reg);
	err = open_dev(&dev);
	if (!tap_ok(!err, "open a context: %s", agile_strerror(err)))
		return tap_done();
	tap_ok(agile_gpu_available() == 1, "the stand-in %s counts a device",
	       lib);
	test_modes(dev, reg, 1);
	test_gpu(dev, reg, 1);
	tap_ok(mock_registered(lib) == 0,
	       "nothing left registered with the runtime");
	agile_dev_close(dev);
	agile_kernels_destroy(reg);
	return tap_done();
}

/* Runs gpu-eu --mock with stand-in @m first on the library path. */
static void test_mock_one(int m)
{
	char dir[1024], lib[2048], code[2048], line[1024];
	int fds[2], status, bad = 0, n = 0;
	FILE *out;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/%s", MOCK_DIR, mocks[m].api);
	snprintf(lib, sizeof(lib), "%s/%s", dir, mocks[m].lib);
	snprintf(code, sizeof(code), "%s/%s", AGILE_GPU_BUILD_DIR,
		 mocks[m].code);
	if (access(lib, R_OK) || access(code, R_OK)) {
		tap_skip("GPU EUs on a stand-in runtime",
			 "%s or %s not built (make -C libagile gpu; no "
			 "compiler?)", lib, code);
		return;
	}
	if (pipe(fds)) {
		tap_ok(0, "pipe");
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		setenv("LD_LIBRARY_PATH", dir, 1);
		unsetenv("AGILE_GPU_CODE_DIR");
		execl("/proc/self/exe", "gpu-eu", "--mock", mocks[m].lib,
		      (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	out = fdopen(fds[0], "r");
	while (out && fgets(line, sizeof(line), out)) {
		line[strcspn(line, "\n")] = '\0';
		tap_diag("%s mock: %s", mocks[m].api, line);
		bad += !strncmp(line, "not ok", 6);
		n += !strncmp(line, "ok", 2);
	}
	if (out)
		fclose(out);
	waitpid(pid, &status, 0);
	tap_ok(pid > 0 && WIFEXITED(status) && !WEXITSTATUS(status) && !bad &&
		       n > 10,
	       "GPU EUs on the stand-in %s runtime: %d passed, %d failed",
	       mocks[m].lib, n, bad);
}

static void test_mock(void)
{
	for (int m = 0; m < (int)(sizeof(mocks) / sizeof(mocks[0])); m++)
		test_mock_one(m);
}
#else
static void test_mock(void)
{
	tap_skip("GPU EUs on a stand-in runtime",
		 "a static build loads no runtime");
}
#endif

/* --gpu-status: what make check-gpu needs to know. */
static int gpu_status(void)
{
	struct agile_eu_pool_info info;
	struct agile_kernels *reg;
	struct agile_eu_pool *pool;
	struct agile_dev *dev;
	char why[512];
	int err;

	if (!agile__gpu_status(why, sizeof(why))) {
		printf("%s\n", why);
		return 77;
	}
	agile_kernels_create(&reg);
	agile_kernels_register_builtins(reg);
	err = open_dev(&dev);
	if (err) {
		printf("open a context: %s\n", agile_strerror(err));
		return 1;
	}
	setenv("AGILE_QUIET", "1", 1);
	unsetenv("AGILE_EU_POOL");
	err = make_pool(dev, reg, AGILE_EU_POOL_AUTO, &pool);
	if (err) {
		printf("pool: %s\n", agile_strerror(err));
		return 1;
	}
	agile_eu_pool_info(pool, &info);
	if (info.kind == AGILE_EU_KIND_GPU)
		printf("GPU EUs start\n");
	else
		printf("%s\n", info.reason);
	agile_eu_pool_destroy(pool);
	agile_dev_close(dev);
	agile_kernels_destroy(reg);
	return info.kind == AGILE_EU_KIND_GPU ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *mode = getenv("AGILE_EU_POOL");
	int required = mode && !strcmp(mode, "gpu");
	struct agile_kernels *reg;
	struct agile_eu_pool *pool;
	struct agile_dev *dev;
	char why[512];
	int usable, err;

	if (argc > 1 && !strcmp(argv[1], "--gpu-status"))
		return gpu_status();
#ifndef AGILE_NO_DLOPEN
	if (argc > 2 && !strcmp(argv[1], "--mock"))
		return mock_child(argv[2]);
#endif
	/* The tests below set AGILE_EU_POOL themselves. */
	unsetenv("AGILE_EU_POOL");
	usable = agile__gpu_status(why, sizeof(why));
	tap_diag("GPU: %s%s", usable ? "" : "none usable: ", why);

	test_builtins_register();
	test_code_lookup();

	agile_kernels_create(&reg);
	agile_kernels_register_builtins(reg);
	err = open_dev(&dev);
	if (!tap_ok(!err, "open a context: %s", agile_strerror(err)))
		return tap_done();

	err = make_pool(dev, reg, 0, &pool);
	if (tap_ok_call(err, "a CPU pool")) {
		run_builtins(pool, reg, false);
		agile_eu_pool_destroy(pool);
	}
	test_modes(dev, reg, usable);
	if (usable) {
		test_gpu(dev, reg, required);
	} else {
		tap_skip("GPU EUs run tasks", "no usable GPU: %s", why);
		test_mock();
	}

	tap_ok(agile_dev_close(dev) == 0 && agile_kernels_destroy(reg) == 0,
	       "close the context, free the registry");
	return tap_done();
}
