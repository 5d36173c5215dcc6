// SPDX-License-Identifier: MIT
/*
 * runtime-compile-gpu - the user kernels of runtime-compile-cc's source
 * compiled into the persistent GPU kernel for real by the runtime
 * compilers installed here: NVRTC to PTX for sm_90 (and a cubin), hiprtc
 * to a code object for gfx90a; what each product holds; the cache hit;
 * a failed build's step and log.  Each compiler's part is skipped only
 * when its library is absent.
 *
 * Then GPU EUs load each image (agile__eu_pool_create_code) on the
 * stand-in runtime (gpu-mock.c), which checks the image it is given but
 * cannot execute it: for the user kernels it runs the CPU build of the
 * same source.  That proves the loading, the opcode table and the EU
 * plumbing, not the GPU build of the kernels.  On a machine with an NVIDIA
 * GPU (make check-gpu) the same pools run on it, with PTX built for its
 * architecture: there the persistent kernel runs the user kernels.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/gpu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "gpumock.h"
#include "compiletest.h"
#include "eu/eu_impl.h"
#include "runtime/compile_impl.h"

#ifdef __SANITIZE_ADDRESS__
/*
 * ROCm 5.2's hiprtc lives in libamdhip64, which keeps per-thread state in
 * dynamic TLS; since the persistent kernel grew dialect 2's parts,
 * LeakSanitizer's tracer crashes at exit on one of its DTLS blocks
 * ("Tracer caught signal 11", DTLS at 0x10dc), before any report.  So
 * this test's leak check does not scan TLS, and the allocations that are
 * then reachable only from TLS are suppressed: libamdhip64's thread state
 * and glibc's second-level array of thread-specific keys (allocated by
 * pthread_setspecific for keys past the first 32, held by the thread's
 * descriptor); every other leak still fails the test.
 */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
	return "use_tls=0";
}

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libamdhip64.so\nleak:pthread_setspecific\n";
}
#endif

#define EM_CUDA 190
#define EM_AMDGPU 224
#define MIN_CHILD_PASSED 12

static bool has(const void *hay, size_t len, const char *needle)
{
	return memmem(hay, len, needle, strlen(needle)) != NULL;
}

static bool elf_for(const struct agile__rt_image *img, uint16_t machine)
{
	uint16_t m;

	if (img->size < 64 || memcmp(img->data, "\177ELF", 4))
		return false;
	memcpy(&m, (const char *)img->data + 18, sizeof(m));
	return m == machine;
}

/* The source with a line the GPU compilers refuse. */
static const char broken_source[] =
	"AGILE_PHASE(p)\n{\n\treturn no_such_name;\n}\n"
	"#define AGILE_USER_KERNELS(K) K(broken, struct agile_no_state, 0, "
	"p)\n";

/*
 * One runtime compiler: build for @arch, check the product with
 * @check, build again (a hit), build a broken source.  The image's key,
 * for the stand-in's child, in @key ("" when not built).
 */
static void test_rtc(enum agile__rt_target t, const char *arch,
		     const char *step,
		     bool (*check)(const struct agile__rt_image *),
		     char key[33])
{
	const char *name = t == AGILE_RT_CUDA ? "NVRTC" : "hiprtc";
	struct agile__rt_build b = { .target = t, .arch = arch };
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *img = NULL, *again = NULL;
	uint64_t n0 = agile__rt_compiler_count(t);
	char id[256];
	int err;

	key[0] = '\0';
	err = agile__rt_compiler_id(t, id, sizeof(id), &diag);
	if (err == -ENOENT || err == -ENOTSUP) {
		/* Not installed, or a static build (no dlopen). */
		tap_skip(name, "%s", diag.message);
		agile__rt_diag_clear(&diag);
		return;
	}
	tap_ok(!err, "%s found: %s", name, err ? diag.message : id);
	err = agile__rt_compile(user_source, &b, &img, &diag);
	if (!tap_ok(!err && img && !img->from_cache &&
			    agile__rt_compiler_count(t) == n0 + 1,
		    "%s: the persistent kernel with the user kernels, for %s: "
		    "%s%s%s",
		    name, arch, agile_strerror(err), err ? ": " : "",
		    diag.message)) {
		tap_diag("log: %s", diag.log ? diag.log : "(none)");
		agile__rt_diag_clear(&diag);
		return;
	}
	agile__rt_diag_clear(&diag);
	tap_ok(check(img),
	       "%s: the product is what the runtime loads (%zu "
	       "bytes)",
	       name, img->size);
	snprintf(key, 33, "%s", img->key);

	err = agile__rt_compile(user_source, &b, &again, &diag);
	tap_ok(!err && again->from_cache && again->size == img->size &&
		       !memcmp(again->data, img->data, img->size) &&
		       agile__rt_compiler_count(t) == n0 + 1,
	       "%s: the second build is a cache hit", name);
	agile__rt_image_free(again);
	agile__rt_image_free(img);
	agile__rt_diag_clear(&diag);

	img = NULL;
	err = agile__rt_compile(broken_source, &b, &img, &diag);
	tap_ok(err == -EIO && !img && !strcmp(diag.step, step) && diag.log &&
		       strstr(diag.log, "no_such_name") &&
		       strstr(diag.log, "user-kernels"),
	       "%s: a source it refuses: %s, step %s, the log names the line",
	       name, agile_strerror(err), diag.step);
	tap_diag("message: %s", diag.message);
	agile__rt_diag_clear(&diag);
}

static bool ptx_ok(const struct agile__rt_image *img)
{
	const char *ptx = img->data;

	return img->size == strlen(ptx) + 1 && strstr(ptx, ".target sm_90") &&
	       strstr(ptx, ".visible .entry agile_gpu_persistent(") &&
	       strstr(ptx, ".visible .entry agile_gpu_run_once(") &&
	       /* The doorbell poll and fences, as nvcc's (docs/gpu.md). */
	       strstr(ptx, "ld.relaxed.sys.b32") &&
	       strstr(ptx, "fence.acq_rel.sys");
}

static bool cubin_ok(const struct agile__rt_image *img)
{
	return elf_for(img, EM_CUDA) &&
	       has(img->data, img->size, "agile_gpu_persistent");
}

static bool code_object_ok(const struct agile__rt_image *img)
{
	return elf_for(img, EM_AMDGPU) &&
	       has(img->data, img->size, "amdgcn-amd-amdhsa--gfx90a") &&
	       has(img->data, img->size, "agile_gpu_persistent.kd") &&
	       has(img->data, img->size, "agile_gpu_run_once.kd");
}

/* A cubin (SASS for sm_90) as well, where NVRTC has nvrtcGetCUBIN. */
static void test_cubin(void)
{
	struct agile__rt_build b = { .target = AGILE_RT_CUDA,
				     .arch = "sm_90",
				     .flags = AGILE_RT_CUBIN };
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *img = NULL;
	int err = agile__rt_compile(user_source, &b, &img, &diag);

	tap_ok(!err && cubin_ok(img),
	       "NVRTC: a cubin for sm_90 (an ELF for the CUDA machine): %s%s%s",
	       agile_strerror(err), err ? ": " : "", diag.message);
	agile__rt_image_free(img);
	agile__rt_diag_clear(&diag);

	b.arch = "gfx90a";
	err = agile__rt_compile(user_source, &b, &img, &diag);
	tap_ok(err == -EINVAL, "NVRTC for gfx90a: %s", agile_strerror(err));
	agile__rt_diag_clear(&diag);
}

/* ---- in the stand-in's child ---- */

/* The image the parent built, from the cache: its bytes. */
static void *image_get(const char *api, size_t *size)
{
	char var[64], dir[512], path[1024];
	const char *key;
	void *data = NULL;

	snprintf(var, sizeof(var), "AGILE_TEST_KEY_%s", api);
	key = getenv(var);
	if (!key || agile__rt_cache_dir(dir, sizeof(dir), NULL) ||
	    agile__rt_cache_get(dir, key, strcmp(api, "cuda") ? "co" : "ptx",
				&data, size, path, sizeof(path)))
		return NULL;
	return data;
}

/* A GPU-only pool on @code; its create's result. */
static int pool_on(struct agile_dev *dev, struct agile_kernels *reg,
		   const struct agile__eu_gpu_code *code,
		   struct agile_eu_pool **pool)
{
	struct agile_eu_pool_opts po;

	agile_eu_pool_opts_init(&po);
	po.nr_eus = 2;
	po.flags = AGILE_EU_POOL_GPU_ONLY;
	return agile__eu_pool_create_code(dev, reg, &po, code, pool);
}

static void child_tasks(struct agile_eu_pool *pool, struct agile_kernels *reg,
			const struct agile__rt_module *mod)
{
	const struct agile_kernel *axpy;
	double *x, *y, want[ROTATE_LANES];
	uint64_t xa, ya;
	uint32_t lane = 0;
	int err;

	if (!tap_ok(!agile_eu_pool_alloc(pool, ROTATE_LANES * sizeof(double),
					 (void **)&x, &xa) &&
			    !agile_eu_pool_alloc(pool,
						 ROTATE_LANES * sizeof(double),
						 (void **)&y, &ya),
		    "memory from the pool's arena"))
		return;
	for (int i = 0; i < ROTATE_LANES; i++)
		x[i] = 2 * i + 1;
	rotate_expect(x, want);
	err = eu_task(pool, 1, agile__rt_module_opcode(mod, 0), ROTATE_LANES,
		      (__u64[]){ xa, ROTATE_FACTOR }, 2, &lane);
	tap_ok(!err && !memcmp(x, want, sizeof(want)),
	       "user_rotate on a GPU EU, 64 lanes, two phases: %s",
	       agile_strerror(err));
	err = eu_task(pool, 0, agile__rt_module_opcode(mod, 1), FAIL_ODD_LANES,
		      NULL, 0, &lane);
	tap_ok(err == -ERANGE && lane == 1, "user_fail_odd: lane %u, %s", lane,
	       agile_strerror(err));
	err = eu_task(pool, 0, agile__rt_module_opcode(mod, 1),
		      FAIL_ODD_LANES + 1, NULL, 0, &lane);
	tap_ok(err == -EINVAL && lane == AGILE_EU_NO_LANE,
	       "over its max_lanes: refused by the GPU's decision (%s)",
	       agile_strerror(err));

	/* The built-ins still run from the same image. */
	for (int i = 0; i < ROTATE_LANES; i++)
		y[i] = 1;
	agile_kernels_find(reg, AGILE_KERNEL_AXPY, &axpy);
	err = eu_task(pool, 0, axpy->opcode, 4,
		      (__u64[]){ 0x4000000000000000ULL /* 2.0 */, xa, ya,
				 ROTATE_LANES },
		      4, &lane);
	tap_ok(!err && y[5] == 2 * want[5] + 1,
	       "the built-in axpy beside them: %s", agile_strerror(err));
}

/*
 * GPU-only pools on the @api ("hip", "cuda") image the parent built, its
 * user kernels registered from the CPU build at @cpu_so: in a stand-in's
 * child, or in the test itself on a real GPU.
 */
static void eus_on_image(const char *api, const char *cpu_so)
{
	uint32_t eu_api = strcmp(api, "cuda") ? AGILE__EU_GPU_HIP :
						AGILE__EU_GPU_CUDA;
	struct agile__rt_image cpu = { .target = AGILE_RT_CPU };
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_module *mod = NULL;
	struct agile__eu_gpu_code code;
	struct agile_eu_pool_info info;
	struct agile_kernels *reg;
	struct agile_eu_pool *pool;
	struct agile_dev_opts o;
	struct agile_dev *dev;
	static const char *const nope[] = { "no_such_kernel" };
	size_t size = 0;
	void *image = image_get(api, &size);
	int err;

	if (!tap_ok(image != NULL, "the %s image from the cache", api))
		return;
	snprintf(cpu.path, sizeof(cpu.path), "%s", cpu_so);
	agile_kernels_create(&reg);
	agile_kernels_register_builtins(reg);
	err = agile__rt_cpu_load(&cpu, reg, &mod, &diag);
	tap_ok(!err, "the CPU build registered: %s", diag.message);
	agile_dev_opts_init(&o);
	o.nr_slots = 2;
	err = err ? err : agile_dev_open(&o, &dev);
	if (!tap_ok_call(err, "open a context"))
		goto out;

	code = (struct agile__eu_gpu_code){
		.api = eu_api,
		.image = image,
		.size = size,
		.nr_kernels = agile__rt_module_nr_kernels(mod),
		.names = agile__rt_module_names(mod),
	};
	err = pool_on(dev, reg, &code, &pool);
	if (tap_ok(!err && !agile_eu_pool_info(pool, &info) &&
			   info.kind == AGILE_EU_KIND_GPU,
		   "GPU EUs on the runtime-built image: %s",
		   agile_strerror(err))) {
		child_tasks(pool, reg, mod);
		tap_ok_call(agile_eu_pool_destroy(pool), "destroy");
	}

	code.api = eu_api == AGILE__EU_GPU_HIP ? AGILE__EU_GPU_CUDA :
						 AGILE__EU_GPU_HIP;
	/*
	 * Refused: -ENODEV where the other runtime is absent (the stand-in
	 * is the only one), -ENOENT where it is there and refuses to load
	 * this image (a machine with a real GPU of the other vendor: seen on
	 * an H200, where the HIP child's CUDA image went to the real libcuda).
	 */
	err = pool_on(dev, reg, &code, &pool);
	tap_ok(err == -ENODEV || err == -ENOENT,
	       "the image for the other runtime: refused, %s",
	       agile_strerror(err));
	code.api = eu_api;
	code.image = "not a code image, nothing to load";
	code.size = 34;
	err = pool_on(dev, reg, &code, &pool);
	tap_ok(err == -ENOENT,
	       "a buffer that is no code image: the stand-in refuses it, %s",
	       agile_strerror(err));
	code.image = image;
	code.size = size;
	code.nr_kernels = 1;
	code.names = nope;
	err = pool_on(dev, reg, &code, &pool);
	tap_ok(err == -ENOENT, "a user kernel not in the registry: %s",
	       agile_strerror(err));
	tap_ok_call(agile_dev_close(dev), "close");
out:
	agile_kernels_destroy(reg);
	agile__rt_module_unload(mod);
	agile__rt_diag_clear(&diag);
	free(image);
}

static int child(const char *lib)
{
	eus_on_image(strcmp(lib, "libcuda.so.1") ? "hip" : "cuda",
		     getenv("MOCK_GPU_USER_SO"));
	return tap_done();
}

/* ---- on a real GPU (make check-gpu) ---- */

/*
 * Device 0's sm_XY through the CUDA driver itself, into @arch; 0, or -1
 * where there is no NVIDIA GPU.  (An AMD GPU is not tried here yet.)
 */
static int cuda_arch(char *arch, size_t len)
{
	void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int (*init)(unsigned int), (*get)(int *, int);
	int (*attr)(int *, int, int);
	int dev, major = 0, minor = 0;

	if (!cu)
		return -1;
	*(void **)&init = dlsym(cu, "cuInit");
	*(void **)&get = dlsym(cu, "cuDeviceGet");
	*(void **)&attr = dlsym(cu, "cuDeviceGetAttribute");
	if (!init || !get || !attr || init(0) || get(&dev, 0) ||
	    attr(&major, 75, dev) || attr(&minor, 76, dev))
		return -1;
	snprintf(arch, len, "sm_%d%d", major, minor);
	return 0;
}

/*
 * The same pools on the GPU here, when there is one: PTX for its
 * architecture from NVRTC, the user kernels run by the persistent kernel
 * itself.
 */
static void test_real_gpu(const char *cpu_so)
{
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *img = NULL;
	char arch[16];
	int err;

	if (!agile_gpu_available() || cuda_arch(arch, sizeof(arch))) {
		tap_skip("user kernels on a real GPU",
			 "no usable NVIDIA GPU here");
		return;
	}
	err = agile__rt_compile(user_source,
				&(struct agile__rt_build){
					.target = AGILE_RT_CUDA, .arch = arch },
				&img, &diag);
	if (!tap_ok(!err, "NVRTC for this GPU's %s: %s%s%s", arch,
		    agile_strerror(err), err ? ": " : "", diag.message)) {
		agile__rt_diag_clear(&diag);
		return;
	}
	setenv("AGILE_TEST_KEY_cuda", img->key, 1);
	eus_on_image("cuda", cpu_so);
	agile__rt_image_free(img);
	agile__rt_diag_clear(&diag);
}

int main(int argc, char **argv)
{
	struct agile__rt_build b = { .target = AGILE_RT_CPU };
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *cpu = NULL;
	char key_cuda[33], key_hip[33];

	if (argc > 2 && !strcmp(argv[1], "--mock"))
		return child(argv[2]);
	unsetenv("AGILE_CC");
	if (!tap_ok_call(cache_fresh(), "a fresh cache folder"))
		return tap_done();
	test_rtc(AGILE_RT_CUDA, "sm_90", "nvrtcCompileProgram", ptx_ok,
		 key_cuda);
	if (key_cuda[0])
		test_cubin();
	test_rtc(AGILE_RT_HIP, "gfx90a", "hiprtcCompileProgram", code_object_ok,
		 key_hip);

	/* The stand-in runs the user kernels from their CPU build. */
	if (agile__rt_compile(user_source, &b, &cpu, &diag)) {
		tap_skip("GPU EUs on the images", "no CPU build: %s",
			 diag.message);
		goto out;
	}
	setenv("MOCK_GPU_USER_SO", cpu->path, 1);
	setenv("AGILE_TEST_KEY_cuda", key_cuda, 1);
	setenv("AGILE_TEST_KEY_hip", key_hip, 1);
	for (int m = 0; m < (int)(sizeof(mocks) / sizeof(mocks[0])); m++) {
		if ((!strcmp(mocks[m].api, "cuda") ? key_cuda : key_hip)[0])
			mock_run_one(m, MIN_CHILD_PASSED);
		else
			tap_skip("GPU EUs on the image", "no %s image",
				 mocks[m].api);
	}
	test_real_gpu(cpu->path);
out:
	agile__rt_image_free(cpu);
	agile__rt_diag_clear(&diag);
	cache_remove();
	return tap_done();
}
