/* SPDX-License-Identifier: MIT */
/*
 * compile_impl.h - what the files of the runtime compiler share among
 * themselves (compile.c, compile_cc.c, compile_rtc.c, compile_dialect.c,
 * compile_load.c, cache.c); compile.h is the layer's interface.
 */
#ifndef AGILE_RUNTIME_COMPILE_IMPL_H
#define AGILE_RUNTIME_COMPILE_IMPL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/compile.h"

/* ---- the diagnostics ---- */

/* Sets @diag's step and message (when @diag is not NULL); returns @err. */
int agile__rt_fail(struct agile__rt_diag *diag, int err, const char *step,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Replaces @diag's log with a copy of @len bytes of @log. */
void agile__rt_set_log(struct agile__rt_diag *diag, const char *log,
		       size_t len);

/* Counts one run of a compiler of @target (agile__rt_compiler_count). */
void agile__rt_count_compile(enum agile__rt_target target);

/* ---- the hash (cache.c): FNV-1a, 128 bits ---- */

struct agile__rt_hash {
	unsigned __int128 h;
};

void agile__rt_hash_init(struct agile__rt_hash *hash);
void agile__rt_hash_bytes(struct agile__rt_hash *hash, const void *data,
			  size_t len);
/* A field: its length first, so that "ab"+"c" and "a"+"bc" differ. */
void agile__rt_hash_field(struct agile__rt_hash *hash, const void *data,
			  size_t len);
void agile__rt_hash_string(struct agile__rt_hash *hash, const char *s);
/* 32 lowercase hex digits and a NUL into @hex. */
void agile__rt_hash_hex(const struct agile__rt_hash *hash, char hex[33]);

/* ---- the disk cache (cache.c) ---- */

/*
 * agile__rt_cache_dir - the cache folder, created (0700) if missing:
 * $AGILE_CACHE_DIR, else $XDG_CACHE_HOME/agile/kernels, else
 * $HOME/.cache/agile/kernels.  0, or a negative errno (@diag says which
 * folder could not be made).
 */
int agile__rt_cache_dir(char *dir, size_t len, struct agile__rt_diag *diag);

/*
 * agile__rt_cache_get - entry @key (hex) with extension @ext from @dir:
 * 0 with its bytes (malloc'd) in @data/@size and its file in @path;
 * -ENOENT (none), -EBADMSG (present but corrupt: a bad trailer, size, key
 * or checksum; the caller rebuilds it), or another read error.
 */
int agile__rt_cache_get(const char *dir, const char *key, const char *ext,
			void **data, size_t *size, char *path, size_t len);

/*
 * agile__rt_cache_put - store @size bytes as entry @key: a temporary file
 * in @dir, the bytes and the trailer, fsync, rename over the entry's
 * name, fsync of @dir.  A reader sees the old entry or the new one, never
 * a part.  0 with the entry's file in @path, or a negative errno (the
 * temporary file removed).
 */
int agile__rt_cache_put(const char *dir, const char *key, const char *ext,
			const void *data, size_t size, char *path, size_t len);

/*
 * agile__rt_cache_lock - an exclusive flock on @key's lock file in @dir,
 * so that processes building the same entry at once build it once (the
 * others find it when they get the lock).  Returns the descriptor to give
 * agile__rt_cache_unlock, or -1 when no lock could be had (the build goes
 * on without one: the renames keep it safe, only slower).
 */
int agile__rt_cache_lock(const char *dir, const char *key);
void agile__rt_cache_unlock(int fd);

/* ---- the dialect (compile_dialect.c) ---- */

/* The CPU build's whole translation unit: prelude, @source, epilogue. */
char *agile__rt_dialect_cpu(const char *source);
/* The GPU build's in-memory "agile_user.h": prelude, @source, epilogue. */
char *agile__rt_dialect_gpu(const char *source);

/*
 * The headers NVRTC and hiprtc get in memory (they see no file system
 * header but these): persistent.cu's own, embedded in the library when
 * it was built (compile_sources.c), and small stand-ins for the C headers
 * they include (stdint.h, errno.h with this system's values, ...).
 */
struct agile__rt_header {
	const char *name; /* as #included */
	const char *text;
};
/* The persistent kernel's source (libagile/gpu/persistent.cu). */
extern const char agile__rt_persistent_cu[];
/* <agile/retarget.h>: CUDA's built-ins in C, in the CPU prelude. */
extern const char agile__rt_src_retarget_h[];
/* <agile/retarget_types.h>: CUDA's vector types in C, before it. */
extern const char agile__rt_src_retarget_types_h[];
/* <agile/retarget_warp.h>: the warp helpers, in both preludes. */
extern const char agile__rt_src_retarget_warp_h[];
/*
 * The headers for @target, NULL-terminated; the texts stay valid for the
 * process's life.  NULL when they cannot be made (no memory, or the
 * embedded linux/agile.h no longer has the line NVRTC's copy changes).
 */
const struct agile__rt_header *agile__rt_gpu_headers(enum agile__rt_target t);
/* What the embedded sources hash to: part of every GPU cache key. */
void agile__rt_gpu_sources_hash(struct agile__rt_hash *hash,
				enum agile__rt_target t);

/* ---- the compilers ---- */

/*
 * Each takes the whole translation unit (or, for the GPU, the user
 * header) and gives the built bytes (malloc'd) in @data/@size, or fails
 * with @diag set: -ENOENT (no compiler), -EIO (it refused: the log is in
 * @diag), -ENOMEM, -ENOTSUP (a static build).
 */
int agile__rt_cc_build(const char *unit, const char *flags, const char *options,
		       void **data, size_t *size, struct agile__rt_diag *diag);
int agile__rt_cc_id(char *id, size_t len, struct agile__rt_diag *diag);

/*
 * The CPU build's flags, before the user's options (which therefore win):
 * $AGILE_RT_CPU_FLAGS when set and not empty, else these.  Part of the
 * cache key, with the host's instruction set (agile__rt_cc_isa).
 */
/*
 * -Warray-bounds is off with -O3: gcc 12's unrolling and jump threading
 * make it warn about paths the code never takes (the shared tile of
 * rt-retarget's transpose, whose thread index it cannot bound).
 * -fno-tree-loop-if-convert: a phase's bounds check (if (i < n) y[i] =
 * ...) if-converted into AVX-512 masked loads and stores ran 2.4x slower
 * than the plain loop on this AMD EPYC (7.2 ms against 3.0 ms for 2^22
 * elements in 64-lane groups), while straight-line phases still
 * vectorise (1.15 ms); docs/runtime.md, "The targets".
 */
#define AGILE_RT_CPU_FLAGS_DEFAULT \
	"-O3 -march=native -fno-tree-loop-if-convert -Wno-array-bounds"
void agile__rt_cc_flags(char *flags, size_t len);

/*
 * One source, one result: no target contracts a * b + c into a fused
 * multiply-add unless the build's options say -ffp-contract=fast (or
 * =on), so an entry gives the same bits on CPU and GPU EUs.  What each
 * compiler gets before the user's options: cc and hiprtc this, NVRTC
 * --fmad=false (and the user's -ffp-contract=fast|on|off as --fmad=).
 * Part of the cache key (agile__rt_fp_contract).
 */
#define AGILE_RT_FP_CONTRACT_OFF "-ffp-contract=off"
#define AGILE_RT_FMAD_OFF "--fmad=false"
const char *agile__rt_fp_contract(enum agile__rt_target target);

/*
 * agile__rt_cc_isa - this machine's instruction set, as a short text for
 * the cache key: a hash of /proc/cpuinfo's first "flags" (x86),
 * "Features" (Arm) or "isa" (RISC-V) line, else of what the C compiler
 * says -march=native means (-Q --help=target).  0, or -ENOENT when
 * neither could be had (the build is then not cached: an object of
 * another machine's instruction set must never be found).
 */
int agile__rt_cc_isa(char *isa, size_t len);

int agile__rt_rtc_build(enum agile__rt_target target, const char *arch,
			const char *user_header, const char *options,
			uint32_t flags, void **data, size_t *size,
			struct agile__rt_diag *diag);
int agile__rt_rtc_id(enum agile__rt_target target, char *id, size_t len,
		     struct agile__rt_diag *diag);

#endif /* AGILE_RUNTIME_COMPILE_IMPL_H */
