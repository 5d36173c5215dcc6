// SPDX-License-Identifier: MIT
/*
 * gpu-mock - a stand-in GPU runtime for machines without a GPU: the HIP
 * calls (installed as libamdhip64.so.5) and the CUDA driver API calls (as
 * libcuda.so.1, and as libcudart.so.13 for gpu.c's probe) that libagile's
 * GPU EUs make (libagile/src/eu/gpu_launch.c), with a "device" of CPU threads, one per
 * work-group, running the persistent loop of libagile/gpu/persistent.cu
 * over the same phase functions (libagile/src/kernels/kernels_body.h) through seed-004 lane
 * loops.  The HIP device cannot launch cooperatively (as ROCm 5), the CUDA
 * one can (cuLaunchCooperativeKernel).
 *
 * It checks what a real runtime would refuse or a real GPU would suffer
 * from: registration without hipHostRegisterMapped or with
 * hipExtHostRegisterCoarseGrained, device pointers of unregistered
 * memory, unregistering what is not registered, a code object that is not
 * an offload bundle, kernels looked up by mangled names, launching more
 * work-groups than are co-resident.
 *
 * The tests' hooks (selftests/libagile/gpumock.h's mock_call), each
 * int (int): mock_registered says how many registrations are left (0
 * after a pool's destroy), mock_hangs how many unregisters would have
 * hung, mock_running how many work-groups run.
 *
 * Where a real runtime blocks, so does this one: hipHostUnregister (and
 * cuMemHostUnregister) waits for every kernel of the device to end, as
 * ROCm 6 does, so unregistering while the persistent kernel runs would
 * hang.  Here the wait is bounded (MOCK_HANG_MS): past it the call fails
 * and mock_hangs() counts it, so a test reports the hang instead of
 * hanging.  Launches are asynchronous, the one-shot kernel's included (a
 * thread on its stream, joined by the stream's synchronise).
 *
 * Its device can die as a GPU does: a task whose pointer arguments are
 * not registered memory faults (error 700, hipErrorIllegalAddress /
 * CUDA_ERROR_ILLEGAL_ADDRESS), and mock_kill(err) kills it from the test.
 * Either way the error is sticky, as a CUDA context's is: every
 * work-group returns without answering its doorbell, and stream queries,
 * synchronises and launches return it (mock_revive clears it, which no
 * real device does, so that one test process can go on).  mock_stall(1)
 * makes the work-groups stop looking at their doorbells (a stuck kernel)
 * until mock_stall(0); mock_reap joins what an abandoned kernel leaves.
 * MOCK_GPU_WATCHDOG=1 in the environment gives the
 * device a kernel run-time limit (KERNEL_EXEC_TIMEOUT: a display GPU).
 *
 * Code images built at run time (src/runtime/compile_rtc.c) load with
 * hipModuleLoadData / cuModuleLoadData, which check what they are given:
 * an AMDGPU ELF code object (or an offload bundle) for HIP, PTX text or a
 * CUDA ELF cubin (or a fatbin) for CUDA, naming both kernels.  The
 * stand-in cannot run the image's GPU code: for the user kernels in it
 * (opcodes after the common ones in agile_gpu_params) it runs the CPU
 * build of the same source, the shared object $MOCK_GPU_USER_SO, loaded
 * with the image, through the same lane loops.  That tests the host side
 * and the opcode table, not the GPU build of the user's kernels.
 *
 * It tests libagile's host side, not the GPU code: persistent.cu itself
 * is compile-checked only where there is no GPU.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dlfcn.h>

#include "../../libagile/gpu/agile_gpu.h"
#include "../../libagile/src/runtime/compile.h"

/*
 * The user kernels of a loaded code image: the CPU build's table
 * ($MOCK_GPU_USER_SO), set by the image's load, before any launch.
 */
static const struct agile__rt_user_kernel *user_kernels;
static uint32_t nr_user_kernels;

static uint32_t user_max_lanes(uint32_t i)
{
	if (i >= nr_user_kernels)
		return 0;
	return user_kernels[i].max_lanes ? user_kernels[i].max_lanes :
					   AGILE_MAX_LANES;
}
#define AGILE_USER_MAX_LANES(i) user_max_lanes(i)
#include "../../libagile/src/kernels/kernels_body.h"

#include <agile/error.h>

#define HIP_OK 0
#define HIP_ERR_INVALID 1
#define HIP_ERR_NOT_FOUND 500
#define MOCK_CUS 4
#define MOCK_PER_CU 2
#define MAX_REGS 64
#define MAX_BLOCKS (MOCK_CUS * MOCK_PER_CU)
/* How long an unregister waits for the kernels before calling it a hang. */
#define MOCK_HANG_MS 1000

/* The probe's failures, asked for by $GPU_MOCK_PROBE: the block at the end. */
static bool probe_fails(const char *what);
static int probe_cc(int attr);

/*
 * lock guards regs, nr_regs, running and hangs; kernels_ended is
 * broadcast when running drops to 0.
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t kernels_ended = PTHREAD_COND_INITIALIZER;
/* Work-groups (threads) of launched kernels that have not returned. */
static int running;
static int hangs;
/* Read by the work-groups without the lock: __atomic loads and stores. */
static int sticky; /* the device's error, 0 while it is healthy */
static int stalled;
static struct {
	char *host;
	size_t bytes;
} regs[MAX_REGS];
static int nr_regs;

struct stream {
	pthread_t threads[MAX_BLOCKS + 1];
	int nr_threads;
	int persistent; /* the persistent kernel was launched on it */
	int live; /* its work-groups that have not returned (__atomic) */
};

struct block {
	struct stream *stream;
	struct agile_gpu_params p;
	uint32_t index;
	bool once; /* the one-shot kernel: run slot @index's task, return */
};

static int function_persistent, function_run_once, module_token, ctx_token;
static _Thread_local void *current_ctx;

int mock_registered(int unused)
{
	int n;

	(void)unused;
	pthread_mutex_lock(&lock);
	n = nr_regs;
	pthread_mutex_unlock(&lock);
	return n;
}

int mock_hangs(int unused)
{
	int n;

	(void)unused;
	pthread_mutex_lock(&lock);
	n = hangs;
	pthread_mutex_unlock(&lock);
	return n;
}

/* Work-groups still running, of every kernel launched. */
int mock_running(int unused)
{
	int n;

	(void)unused;
	pthread_mutex_lock(&lock);
	n = running;
	pthread_mutex_unlock(&lock);
	return n;
}

int mock_kill(int err)
{
	__atomic_store_n(&sticky, err ? err : 700, __ATOMIC_RELEASE);
	return 0;
}

int mock_revive(int unused)
{
	(void)unused;
	__atomic_store_n(&sticky, 0, __ATOMIC_RELEASE);
	return 0;
}

int mock_stall(int on)
{
	__atomic_store_n(&stalled, on, __ATOMIC_RELEASE);
	return 0;
}

static int dead(void)
{
	return __atomic_load_n(&sticky, __ATOMIC_ACQUIRE);
}

static int watchdog(void)
{
	const char *w = getenv("MOCK_GPU_WATCHDOG");

	return w && !strcmp(w, "1");
}

static void block_ended(void)
{
	pthread_mutex_lock(&lock);
	if (!--running)
		pthread_cond_broadcast(&kernels_ended);
	pthread_mutex_unlock(&lock);
}

int hipGetDeviceCount(int *count)
{
	if (probe_fails("no-device")) {
		*count = 0;
		return HIP_OK;
	}
	*count = 1;
	return HIP_OK;
}

int hipSetDevice(int device)
{
	return device == 0 ? HIP_OK : HIP_ERR_INVALID;
}

int hipDeviceGetAttribute(int *value, int attr, int device)
{
	if (device != 0)
		return HIP_ERR_INVALID;
	/* No cooperative launch (10). */
	*value = attr == 63 ? MOCK_CUS : attr == 18 ? watchdog() : 0;
	return HIP_OK;
}

static int find_reg(const void *p)
{
	for (int i = 0; i < nr_regs; i++)
		if ((const char *)p >= regs[i].host &&
		    (const char *)p < regs[i].host + regs[i].bytes)
			return i;
	return -1;
}

int hipHostRegister(void *host, size_t bytes, unsigned int flags)
{
	int rc = HIP_OK;

	/* Mapped wanted; coarse-grained (0x8) would break the polling. */
	if (!(flags & 0x2) || (flags & 0x8) || !bytes)
		return HIP_ERR_INVALID;
	pthread_mutex_lock(&lock);
	if (find_reg(host) >= 0 || find_reg((char *)host + bytes - 1) >= 0 ||
	    nr_regs == MAX_REGS)
		rc = HIP_ERR_INVALID;
	else
		regs[nr_regs].host = host, regs[nr_regs++].bytes = bytes;
	pthread_mutex_unlock(&lock);
	return rc;
}

int hipHostUnregister(void *host)
{
	struct timespec until;
	int i, rc = HIP_ERR_INVALID;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += MOCK_HANG_MS / 1000;
	until.tv_nsec += (MOCK_HANG_MS % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&lock);
	/* ROCm 6: waits for every stream of the device, the persistent one too. */
	while (running)
		if (pthread_cond_timedwait(&kernels_ended, &lock, &until) ==
		    ETIMEDOUT)
			break;
	if (running) {
		hangs++;
		pthread_mutex_unlock(&lock);
		fprintf(stderr,
			"gpu-mock: unregister of %p while a kernel runs: a "
			"real runtime would hang here\n",
			host);
		return HIP_ERR_INVALID;
	}
	i = find_reg(host);
	if (i >= 0 && regs[i].host == host) {
		regs[i] = regs[--nr_regs];
		rc = HIP_OK;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

int hipHostGetDevicePointer(void **device, void *host, unsigned int flags)
{
	int i;

	pthread_mutex_lock(&lock);
	i = find_reg(host);
	pthread_mutex_unlock(&lock);
	if (i < 0 || flags)
		return HIP_ERR_INVALID;
	*device = host; /* one address space, as with HMM */
	return HIP_OK;
}

/* A code object of the right kind: the file starts with @magic. */
static int module_load(void **module, const char *path, const void *magic,
		       size_t len)
{
	char head[32];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return HIP_ERR_NOT_FOUND;
	n = fread(head, 1, len, f);
	fclose(f);
	if (n != len || memcmp(head, magic, len))
		return HIP_ERR_INVALID;
	*module = &module_token;
	return HIP_OK;
}

/* Whether @hay[0 .. @len) holds the string @needle. */
static bool has(const void *hay, size_t len, const char *needle)
{
	return memmem(hay, len, needle, strlen(needle)) != NULL;
}

/* An ELF image for @machine: its size (to its section headers), or 0. */
static size_t elf_size(const unsigned char *img, uint16_t machine)
{
	uint64_t shoff;
	uint16_t mach, shentsize, shnum;

	if (memcmp(img, "\177ELF", 4) || img[4] != 2 /* 64-bit */)
		return 0;
	memcpy(&mach, img + 18, sizeof(mach));
	memcpy(&shoff, img + 0x28, sizeof(shoff));
	memcpy(&shentsize, img + 0x3a, sizeof(shentsize));
	memcpy(&shnum, img + 0x3c, sizeof(shnum));
	if (mach != machine || !shoff || !shnum)
		return 0;
	return (size_t)shoff + (size_t)shentsize * shnum;
}

/*
 * The user kernels' CPU build, when the test names one: what the
 * stand-in runs for the image's user opcodes.  0, or HIP_ERR_INVALID.
 */
static int user_kernels_load(void)
{
	const char *so = getenv("MOCK_GPU_USER_SO");
	void *h;

	user_kernels = NULL;
	nr_user_kernels = 0;
	if (!so || !*so)
		return HIP_OK;
	h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return HIP_ERR_INVALID;
	user_kernels = dlsym(h, AGILE_RT_TABLE_SYMBOL);
	if (!user_kernels)
		return HIP_ERR_INVALID;
	while (user_kernels[nr_user_kernels].name)
		nr_user_kernels++;
	return HIP_OK;
}

/*
 * A code image in memory: @ok says whether it is of the right kind and
 * names both kernels (extern "C", unmangled).
 */
static int module_load_data(void **module, bool ok)
{
	if (!ok)
		return HIP_ERR_INVALID;
	if (user_kernels_load())
		return HIP_ERR_INVALID;
	*module = &module_token;
	return HIP_OK;
}

#define EM_AMDGPU 224
#define EM_CUDA 190

int hipModuleLoadData(void **module, const void *image)
{
	static const char bundle[] = "__CLANG_OFFLOAD_BUNDLE__";
	size_t size;

	if (!image)
		return HIP_ERR_INVALID;
	if (!memcmp(image, bundle, sizeof(bundle) - 1))
		return module_load_data(module, true);
	size = elf_size(image, EM_AMDGPU);
	return module_load_data(
		module, size && has(image, size, "agile_gpu_persistent") &&
				has(image, size, "agile_gpu_run_once"));
}

int hipModuleLoad(void **module, const char *path)
{
	static const char bundle[] = "__CLANG_OFFLOAD_BUNDLE__";

	return module_load(module, path, bundle, sizeof(bundle) - 1);
}

int hipModuleUnload(void *module)
{
	return module == &module_token ? HIP_OK : HIP_ERR_INVALID;
}

int hipModuleGetFunction(void **function, void *module, const char *name)
{
	if (module != &module_token)
		return HIP_ERR_INVALID;
	if (!strcmp(name, "agile_gpu_persistent"))
		*function = &function_persistent;
	else if (!strcmp(name, "agile_gpu_run_once"))
		*function = &function_run_once;
	else
		return HIP_ERR_NOT_FOUND;
	return HIP_OK;
}

int hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks,
						       void *function,
						       int block_size,
						       size_t dyn_shared)
{
	if (function != &function_persistent || block_size != AGILE_MAX_LANES ||
	    dyn_shared)
		return HIP_ERR_INVALID;
	*blocks = MOCK_PER_CU;
	return HIP_OK;
}

/* Every stream not destroyed, for mock_reap; under lock. */
static struct stream *streams[MAX_REGS];

int hipStreamCreateWithFlags(void **stream, unsigned int flags)
{
	struct stream *s;
	int i;

	if (flags != 1) /* hipStreamNonBlocking: nothing may wait on us */
		return HIP_ERR_INVALID;
	s = calloc(1, sizeof(*s));
	if (!s)
		return 2;
	pthread_mutex_lock(&lock);
	for (i = 0; i < MAX_REGS && streams[i]; i++)
		;
	if (i < MAX_REGS)
		streams[i] = s;
	pthread_mutex_unlock(&lock);
	if (i == MAX_REGS) {
		free(s);
		return 2;
	}
	*stream = s;
	return HIP_OK;
}

/*
 * Joins the threads of every stream whose kernels have all returned,
 * those of streams libagile abandoned included (a stuck kernel's, once
 * unstuck), so that a test process leaves no thread behind.  Call it
 * only while no other thread uses the streams.
 */
int mock_reap(int unused)
{
	struct stream *done[MAX_REGS];
	int nr = 0;

	(void)unused;
	/* Joined without the lock: a returning work-group takes it. */
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_REGS; i++)
		if (streams[i] &&
		    !__atomic_load_n(&streams[i]->live, __ATOMIC_ACQUIRE))
			done[nr++] = streams[i];
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < nr; i++) {
		for (int t = 0; t < done[i]->nr_threads; t++)
			pthread_join(done[i]->threads[t], NULL);
		done[i]->nr_threads = 0;
	}
	return 0;
}

int hipStreamSynchronize(void *stream)
{
	struct stream *s = stream;

	for (int i = 0; i < s->nr_threads; i++)
		pthread_join(s->threads[i], NULL);
	s->nr_threads = 0;
	s->persistent = 0;
	return dead();
}

int hipStreamQuery(void *stream)
{
	struct stream *s = stream;

	if (dead())
		return dead();
	return __atomic_load_n(&s->live, __ATOMIC_ACQUIRE) ? 600 : HIP_OK;
}

const char *hipGetErrorString(int err)
{
	switch (err) {
	case 0:
		return "hipSuccess";
	case 600:
		return "hipErrorNotReady";
	case 700:
		return "hipErrorIllegalAddress";
	default:
		return "hipErrorUnknown";
	}
}

int hipStreamDestroy(void *stream)
{
	struct stream *s = stream;

	if (s->nr_threads)
		return HIP_ERR_INVALID; /* a kernel still runs on it */
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_REGS; i++)
		if (streams[i] == s)
			streams[i] = NULL;
	pthread_mutex_unlock(&lock);
	free(s);
	return HIP_OK;
}

/* ---- the device: persistent.cu's task_decide and task_run, on a CPU ---- */

struct task_shared {
	uint32_t quit, kernel, parts, error_lane;
	int error;
	uint64_t status;
};

static void task_decide(const struct agile_gpu_params *p,
			const struct agile_task_reg *reg, struct task_shared *s)
{
	struct agile_task_decision d;

	agile_task_decide(p->opcodes, AGILE_MAX_LANES, reg, &d);
	memset(s, 0, sizeof(*s));
	s->quit = d.quit;
	s->kernel = d.kernel;
	s->parts = d.parts;
	s->error = d.error;
	s->error_lane = d.error_lane;
}

/* Whether @addr is device-visible: in memory registered with us. */
static bool mapped(uint64_t addr)
{
	int i;

	pthread_mutex_lock(&lock);
	i = find_reg((const void *)(uintptr_t)addr);
	pthread_mutex_unlock(&lock);
	return i >= 0;
}

/*
 * A GPU's page fault: a pointer argument of a built-in kernel outside
 * registered memory kills the device (sticky error 700).  Returns true
 * when the task faulted.
 */
static bool task_faults(const struct agile_task_reg *reg,
			const struct task_shared *s)
{
	bool ok = true;

	if (s->kernel == AGILE_COMMON_AXPY)
		ok = mapped(reg->args[1]) && mapped(reg->args[2]);
	else if (s->kernel == AGILE_COMMON_MATLIST_MUL)
		ok = mapped(reg->args[0]) && mapped(reg->args[1]);
	if (ok)
		return false;
	mock_kill(700);
	return true;
}

/* One phase of kernel @k on @lane: a common one, or a user kernel's. */
static int phase_run(uint32_t k, uint32_t phase, uint32_t lane, uint32_t parts,
		     const __u64 *args, void *state, void *shared)
{
	if (k < AGILE_COMMON_NR)
		return agile_common_phase(k, phase, lane, parts, args, state,
					  NULL);
	return user_kernels[k - AGILE_COMMON_NR].phases[phase](
		lane, parts, args, state, shared);
}

/* A user kernel's block-shared memory and control function (dialect 2). */
static const struct agile__rt_user_extra *user_extra(uint32_t k)
{
	if (k < AGILE_COMMON_NR || k == AGILE_TASK_NO_KERNEL)
		return NULL;
	return user_kernels[k - AGILE_COMMON_NR].extra;
}

static uint32_t kernel_nr_phases(uint32_t k)
{
	if (k == AGILE_TASK_NO_KERNEL)
		return 0;
	if (k < AGILE_COMMON_NR)
		return agile_common_nr_phases(k);
	/* agile_task_decide chose it: user_max_lanes said it exists. */
	return user_kernels[k - AGILE_COMMON_NR].nr_phases;
}

/* Bytes of one lane's state for kernel @k, 16-aligned. */
static size_t state_stride(uint32_t k)
{
	size_t size = k < AGILE_COMMON_NR || k == AGILE_TASK_NO_KERNEL ?
			      sizeof(union agile_common_state) :
			      user_kernels[k - AGILE_COMMON_NR].state_size;

	return (size + 15) / 16 * 16;
}

static void task_run(struct agile_task_reg *reg, struct task_shared *s)
{
	size_t stride = state_stride(s->kernel);
	const struct agile__rt_user_extra *extra = user_extra(s->kernel);
	unsigned char *state = aligned_alloc(16, stride * AGILE_MAX_LANES + 16);
	/* As on a GPU: not initialised (ASan and valgrind see reads of it). */
	void *shared =
		extra && extra->shared_size ?
			aligned_alloc(64, (extra->shared_size + 63) / 64 * 64) :
			NULL;
	uint64_t live = s->parts == 64 ? ~0ULL : (1ULL << s->parts) - 1;
	uint32_t nr_phases = state ? kernel_nr_phases(s->kernel) : 0;

	if (extra && extra->shared_size && !shared)
		nr_phases = 0;
	if (!nr_phases && s->kernel != AGILE_TASK_NO_KERNEL) {
		live = 0; /* no memory: the lanes fail, as a fault would */
		s->error = -ENOMEM;
		s->error_lane = 0;
	}

	for (uint32_t phase = 0; phase < nr_phases && live;) {
		for (uint32_t lane = 0; lane < s->parts; lane++) {
			int err;

			if (!(live & (1ULL << lane)))
				continue;
			err = phase_run(s->kernel, phase, lane, s->parts,
					reg->args, state + lane * stride,
					shared);
			if (err) {
				live &= ~(1ULL << lane);
				if (!s->error) {
					s->error = err < 0 ? err : -EPROTO;
					s->error_lane = lane;
				}
			}
		}
		if (!live)
			break;
		phase = extra && extra->next  ? extra->next(phase, s->parts,
							    reg->args, shared) :
			phase + 1 < nr_phases ? phase + 1 :
						AGILE_KERNEL_DONE;
		if (phase != AGILE_KERNEL_DONE && phase >= nr_phases) {
			live = 0; /* a bad jump: persistent.cu's -EINVAL */
			if (!s->error)
				s->error = -EINVAL;
		}
	}
	free(shared);
	free(state);
	s->status = s->kernel == AGILE_TASK_NO_KERNEL ? 0 : live;
	reg->status = s->status;
	reg->error = s->error;
	reg->error_lane = s->error ? s->error_lane : 0;
}

static struct agile_task_reg *reg_of(const struct agile_gpu_params *p,
				     uint32_t slot)
{
	return (struct agile_task_reg *)(p->task_regs +
					 (size_t)slot * p->task_reg_size);
}

static void *persistent_block(void *arg)
{
	struct block *b = arg;
	struct agile_doorbell *db = &b->p.doorbells[b->index];
	struct agile_task_reg *reg = reg_of(&b->p, b->index);
	struct task_shared s;

	if (b->once) {
		task_decide(&b->p, reg, &s);
		if (!s.quit && !task_faults(reg, &s))
			task_run(reg, &s);
		goto out;
	}
	for (;;) {
		unsigned int round = 0;

		while (dead() || __atomic_load_n(&stalled, __ATOMIC_ACQUIRE) ||
		       __atomic_load_n(&db->value, __ATOMIC_ACQUIRE) !=
			       AGILE_DOORBELL_POSTED) {
			/* A dead device's work-groups are gone. */
			if (dead())
				goto out;
			if (++round > 64)
				usleep(20);
		}
		task_decide(&b->p, reg, &s);
		if (task_faults(reg, &s))
			goto out;
		if (s.quit) {
			reg->status = 0;
			reg->error = 0;
			reg->error_lane = 0;
			__atomic_store_n(&db->value, AGILE_DOORBELL_IDLE,
					 __ATOMIC_RELEASE);
			break;
		}
		task_run(reg, &s);
		__atomic_store_n(&db->value, AGILE_DOORBELL_IDLE,
				 __ATOMIC_RELEASE);
	}
out:
	__atomic_fetch_sub(&b->stream->live, 1, __ATOMIC_RELEASE);
	free(b);
	block_ended();
	return NULL;
}

/* One work-group of @p on a thread of stream @s; 0 or 2 (no memory). */
static int block_start(struct stream *s, const struct agile_gpu_params *p,
		       uint32_t index, bool once)
{
	struct block *b = malloc(sizeof(*b));

	if (!b)
		return 2;
	b->stream = s;
	b->p = *p;
	b->index = index;
	b->once = once;
	pthread_mutex_lock(&lock);
	running++;
	pthread_mutex_unlock(&lock);
	__atomic_fetch_add(&s->live, 1, __ATOMIC_RELAXED);
	if (pthread_create(&s->threads[s->nr_threads], NULL, persistent_block,
			   b)) {
		__atomic_fetch_sub(&s->live, 1, __ATOMIC_RELAXED);
		free(b);
		block_ended();
		return 2;
	}
	s->nr_threads++;
	return HIP_OK;
}

static int launch(void *function, unsigned int gx, unsigned int gy,
		  unsigned int gz, unsigned int bx, unsigned int by,
		  unsigned int bz, unsigned int shared, void *stream,
		  void **params, void **extra)
{
	struct stream *s = stream;
	const struct agile_gpu_params *p = params[0];

	if (!s || extra || gy != 1 || gz != 1 || bx != AGILE_MAX_LANES ||
	    by != 1 || bz != 1 || shared)
		return HIP_ERR_INVALID;
	if (dead())
		return dead();
	/* What the host hands the GPU must be device-visible. */
	pthread_mutex_lock(&lock);
	if (find_reg(p->doorbells) < 0 || find_reg(p->task_regs) < 0) {
		pthread_mutex_unlock(&lock);
		return HIP_ERR_INVALID;
	}
	pthread_mutex_unlock(&lock);
	if (function == &function_run_once) {
		uint32_t slot = *(uint32_t *)params[1];

		/* Asynchronous, as a real launch: the synchronise waits. */
		if (gx != 1 || slot >= p->nr_eus || s->persistent ||
		    s->nr_threads == MAX_BLOCKS + 1)
			return HIP_ERR_INVALID;
		return block_start(s, p, slot, true);
	}
	if (function != &function_persistent || gx != p->nr_eus ||
	    gx > MAX_BLOCKS || s->nr_threads)
		return HIP_ERR_INVALID;
	s->persistent = 1;
	for (unsigned int i = 0; i < gx; i++) {
		int rc = block_start(s, p, i, false);

		if (rc)
			return rc;
	}
	return HIP_OK;
}

int hipModuleLaunchKernel(void *function, unsigned int gx, unsigned int gy,
			  unsigned int gz, unsigned int bx, unsigned int by,
			  unsigned int bz, unsigned int shared, void *stream,
			  void **params, void **extra)
{
	return launch(function, gx, gy, gz, bx, by, bz, shared, stream, params,
		      extra);
}

/* ---- the CUDA driver API over the same device ---- */

#define CU_OK 0
#define CU_ERR_INVALID_VALUE 1
#define CU_ERR_INVALID_CONTEXT 201

/* gpu.c's probe asks the runtime API first (libcudart.so.13). */
int cudaGetDeviceCount(int *count)
{
	if (probe_fails("cudart-35"))
		return 35; /* cudaErrorInsufficientDriver */
	*count = 1;
	return 0;
}

/*
 * NVRTC 13 asks the driver it finds (this stand-in, in a process that
 * builds a program on it) for an export table; it copes with none.
 */
int cuGetExportTable(const void **table, const void *id)
{
	(void)id;
	if (table)
		*table = NULL;
	return 801; /* CUDA_ERROR_NOT_SUPPORTED */
}

int cuInit(unsigned int flags)
{
	if (probe_fails("init-fails"))
		return 100; /* CUDA_ERROR_NO_DEVICE */
	return flags ? CU_ERR_INVALID_VALUE : CU_OK;
}

int cuDeviceGetCount(int *count)
{
	if (probe_fails("no-device")) {
		*count = 0;
		return CU_OK;
	}
	*count = 1;
	return CU_OK;
}

int cuDeviceGet(int *device, int ordinal)
{
	if (ordinal != 0)
		return CU_ERR_INVALID_VALUE;
	*device = 0;
	return CU_OK;
}

int cuDeviceGetAttribute(int *value, int attr, int device)
{
	if (device != 0)
		return CU_ERR_INVALID_VALUE;
	*value = attr == 16 ? MOCK_CUS :
		 attr == 95 ? 1 :
		 attr == 17 ? watchdog() :
			      probe_cc(attr);
	return CU_OK;
}

int cuDevicePrimaryCtxRetain(void **ctx, int device)
{
	if (device != 0)
		return CU_ERR_INVALID_VALUE;
	*ctx = &ctx_token;
	return CU_OK;
}

int cuDevicePrimaryCtxRelease_v2(int device)
{
	return device == 0 ? CU_OK : CU_ERR_INVALID_VALUE;
}

int cuCtxSetCurrent(void *ctx)
{
	current_ctx = ctx;
	return CU_OK;
}

/* Every call below needs the context current on the calling thread. */
#define NEED_CTX()                                     \
	do {                                           \
		if (current_ctx != &ctx_token)         \
			return CU_ERR_INVALID_CONTEXT; \
	} while (0)

int cuMemHostRegister_v2(void *host, size_t bytes, unsigned int flags)
{
	NEED_CTX();
	/* DEVICEMAP wanted: without it there is no device pointer. */
	if (!(flags & 0x02))
		return CU_ERR_INVALID_VALUE;
	return hipHostRegister(host, bytes, 0x2);
}

int cuMemHostUnregister(void *host)
{
	NEED_CTX();
	return hipHostUnregister(host);
}

int cuMemHostGetDevicePointer_v2(uint64_t *device, void *host,
				 unsigned int flags)
{
	void *d;
	int rc;

	NEED_CTX();
	rc = hipHostGetDevicePointer(&d, host, flags);
	if (!rc)
		*device = (uint64_t)(uintptr_t)d;
	return rc;
}

int cuModuleLoad(void **module, const char *path)
{
	static const unsigned char fatbin[] = { 0x50, 0xed, 0x55, 0xba };

	NEED_CTX();
	return module_load(module, path, fatbin, sizeof(fatbin));
}

int cuModuleLoadData(void **module, const void *image)
{
	static const unsigned char fatbin[] = { 0x50, 0xed, 0x55, 0xba };
	const char *text = image;
	size_t size;

	NEED_CTX();
	if (!image)
		return CU_ERR_INVALID_VALUE;
	if (!memcmp(image, fatbin, sizeof(fatbin)))
		return module_load_data(module, true);
	size = elf_size(image, EM_CUDA);
	if (!size) {
		/* PTX: text, NUL-terminated. */
		size = strlen(text);
		if (!strstr(text, ".version ") || !strstr(text, ".target sm_"))
			return CU_ERR_INVALID_VALUE;
	}
	return module_load_data(
		module, has(image, size, ".entry agile_gpu_persistent(") ||
				(elf_size(image, EM_CUDA) &&
				 has(image, size, "agile_gpu_persistent")));
}

int cuModuleUnload(void *module)
{
	NEED_CTX();
	return hipModuleUnload(module);
}

int cuModuleGetFunction(void **function, void *module, const char *name)
{
	NEED_CTX();
	return hipModuleGetFunction(function, module, name);
}

int cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, void *function,
						int block_size,
						size_t dyn_shared)
{
	NEED_CTX();
	return hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(
		blocks, function, block_size, dyn_shared);
}

int cuStreamCreate(void **stream, unsigned int flags)
{
	NEED_CTX();
	return hipStreamCreateWithFlags(stream, flags);
}

int cuStreamSynchronize(void *stream)
{
	NEED_CTX();
	return hipStreamSynchronize(stream);
}

int cuStreamQuery(void *stream)
{
	NEED_CTX();
	return hipStreamQuery(stream);
}

int cuGetErrorString(int err, const char **str)
{
	switch (err) {
	case 0:
		*str = "no error";
		return CU_OK;
	case 600:
		*str = "device not ready";
		return CU_OK;
	case 700:
		*str = "an illegal memory access was encountered";
		return CU_OK;
	default:
		*str = NULL;
		return CU_ERR_INVALID_VALUE;
	}
}

int cuStreamDestroy_v2(void *stream)
{
	NEED_CTX();
	return hipStreamDestroy(stream);
}

int cuLaunchKernel(void *function, unsigned int gx, unsigned int gy,
		   unsigned int gz, unsigned int bx, unsigned int by,
		   unsigned int bz, unsigned int shared, void *stream,
		   void **params, void **extra)
{
	NEED_CTX();
	/* The persistent kernel goes through the cooperative launch here. */
	if (function == &function_persistent)
		return CU_ERR_INVALID_VALUE;
	return launch(function, gx, gy, gz, bx, by, bz, shared, stream, params,
		      extra);
}

int cuLaunchCooperativeKernel(void *function, unsigned int gx, unsigned int gy,
			      unsigned int gz, unsigned int bx, unsigned int by,
			      unsigned int bz, unsigned int shared,
			      void *stream, void **params)
{
	NEED_CTX();
	if (gx > MAX_BLOCKS)
		return 720; /* CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE */
	return launch(function, gx, gy, gz, bx, by, bz, shared, stream, params,
		      NULL);
}

/* ---- the probe's steps (libagile/src/eu/gpu.c; eu-gpu-probe-steps) ---- */

/*
 * $GPU_MOCK_PROBE makes one step of the probe fail or answer otherwise:
 * "init-fails" (cuInit, hipInit: error 100), "no-device" (the device
 * counts are 0), "cudart-35" (libcudart's cudaGetDeviceCount says 35, as
 * a CUDA 13 runtime does on a CUDA 12 driver), "sm_XY" (the compute
 * capability; sm_80 otherwise).  The driver is CUDA 12.8 / HIP 60342000.
 */
static bool probe_fails(const char *what)
{
	const char *knob = getenv("GPU_MOCK_PROBE");

	return knob && !strcmp(knob, what);
}

static int probe_cc(int attr)
{
	const char *knob = getenv("GPU_MOCK_PROBE");
	int cc = 80;

	if (knob && !strncmp(knob, "sm_", 3))
		cc = atoi(knob + 3);
	return attr == 75 ? cc / 10 : attr == 76 ? cc % 10 : 0;
}

int cuDriverGetVersion(int *version)
{
	*version = 12080;
	return CU_OK;
}

int hipInit(unsigned int flags)
{
	if (probe_fails("init-fails"))
		return 100; /* hipErrorNoDevice */
	return flags ? HIP_ERR_INVALID : HIP_OK;
}

int hipDriverGetVersion(int *version)
{
	*version = 60342000;
	return HIP_OK;
}
