/* SPDX-License-Identifier: MIT */
/*
 * retarget.h - agile-retarget's pieces (docs/retarget.md):
 *
 *	parse.c     libclang: the file's tokens, its kernels and helpers
 *	regions.c   a kernel's body as regions between barriers, deep
 *	            fission of uniform loops and branches; the checks
 *	variance.c  which thread dimensions each local depends on; which
 *	            locals are promoted to per-thread arrays
 *	emit.c      the C: helpers, one block function per kernel, the
 *	            launch descriptor and wrapper
 *	emit_runtime.c  --emit=runtime: the kernels in the runtime's dialect
 *	            (docs/runtime.md), phases of EU tasks for CPU and GPU EUs
 *	warp.c      warp-level primitives: shuffles and votes as exchanges
 *	            between a block's threads at a barrier
 *	builtins.c  CUDA's vector constructors and intrinsics the tool knows
 *	globals.c   __constant__ and __device__ variables at file scope
 *	cxx.c       C++ (templates, namespaces, ...) lowered to C first, in
 *	            every parse (parse.c)
 *	inline.c    __device__ functions holding barriers inlined at their
 *	            calls: the lowered source rewritten and parsed again,
 *	            before all of the above but cxx.c
 *	coop.c      cooperative groups, rewritten by inline.c onto barriers,
 *	            thread ids and warp primitives
 */
#ifndef AGILE_RETARGET_TOOL_H
#define AGILE_RETARGET_TOOL_H

#include <clang-c/Index.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Variance: a bit per thread dimension. */
#define VAR_X 1u
#define VAR_Y 2u
#define VAR_Z 4u
#define VAR_XYZ 7u

/* Region 0 is the control code between regions (uniform headers). */
#define REGION_CONTROL 0
#define MAX_REGIONS 64

struct token {
	const char *text;
	CXTokenKind kind;
	unsigned offset, end; /* bytes in the file */
	unsigned line, col;
	CXCursor cursor; /* clang_annotateTokens' */
	int var; /* index in the kernel's vars, or -1 */
	int func; /* index of a __device__ function called here, or -1 */
	bool var_decl; /* the name in the variable's own declaration */
	bool written; /* writes the variable itself or takes its address */
	unsigned inlined_at; /* inline.c: 1 + the source's offset of the call */
};

struct func {
	CXCursor cursor;
	char *name;
	bool kernel; /* __global__; else __device__ */
	unsigned first, last; /* its tokens: [first, last) */
	unsigned name_tok; /* its name in its definition */
	unsigned variance; /* threadIdx dimensions its body reads */
};

struct source {
	const char *path;
	CXIndex index;
	CXTranslationUnit tu;
	CXFile file;
	const char *text; /* the file's bytes */
	size_t size;
	CXToken *cx_tokens;
	struct token *tok;
	unsigned nr_tok;
	struct func *funcs;
	unsigned nr_funcs;
	int errors;
	FILE *err; /* diagnostics (NULL: stderr) */
	/* inline.c: text is the rewrite of orig_text, segs map it back */
	char *orig_text;
	size_t orig_size;
	struct inline_seg *segs;
	unsigned nr_segs;
};

/* inline.c: bytes of the rewritten text from @start on come from @orig */
struct inline_seg {
	unsigned start, orig;
	unsigned at; /* 1 + the offset of the kernel's call it is in, or 0 */
	bool synthetic; /* all of it stands at @orig */
};

struct var {
	CXCursor decl;
	char *name;
	unsigned decl_offset;
	bool param, shared;
	bool control_decl; /* declared in a uniform loop's header */
	bool control_assigned; /* assigned in control code */
	bool region_assigned; /* assigned in some region */
	unsigned control_write, region_write; /* the first such token */
	int decl_region; /* region of its declaration (-1: a parameter) */
	uint64_t regions; /* bit r: referenced in region r */
	uint64_t exposed; /* bit r: region r reads it before writing it */
	unsigned variance;
	bool promoted; /* one copy per thread, [_t] */
	bool hoisted; /* declared at the top of the block function */
};

enum node_kind {
	NODE_SEQ, /* children in order */
	NODE_STMT, /* one barrier-free statement (a region's kid) */
	NODE_REGION, /* barrier-free statements: one set of thread loops */
	NODE_BARRIER,
	NODE_IF, /* head: "if (cond)"; kids[0] then, kids[1] else or NULL */
	NODE_LOOP, /* head: "for (...)", "while (...)"; kids[0] body */
	NODE_DO, /* head: "while (...)" after the body; kids[0] body */
};

struct node {
	enum node_kind kind;
	CXCursor cursor;
	unsigned first, last; /* tokens [first, last): statement or head */
	struct node **kids;
	unsigned nr_kids;
	int region; /* NODE_REGION: its number, 1 .. */
	unsigned dims; /* NODE_REGION: the thread loops it gets */
	bool needs_all; /* NODE_REGION: every thread must run it */
	bool has_return; /* NODE_REGION: a return inside */
	unsigned barrier; /* IF, LOOP, DO: token of the first barrier inside */
	unsigned warp_stage; /* STMT: stages kernel's warps[warp_stage - 1] */
};

enum warp_op {
	WARP_SHFL,
	WARP_SHFL_UP,
	WARP_SHFL_DOWN,
	WARP_SHFL_XOR,
	WARP_BALLOT,
	WARP_ANY,
	WARP_ALL,
};

/* A warp exchange (__shfl*_sync, __ballot_sync, ...): warp.c. */
struct warp_call {
	CXCursor call;
	enum warp_op op;
	int id; /* its staging array: _warp_<id> */
	unsigned first, last; /* the call's tokens, name to ')' */
	unsigned arg[4][2]; /* each argument's tokens [first, last) */
	unsigned nr_args; /* as written: a default width is not */
};

struct kernel {
	struct source *src;
	struct func *fn;
	struct node *body;
	struct var *vars;
	unsigned nr_vars;
	unsigned *params; /* var index of each parameter, in order */
	unsigned nr_params;
	struct node **regions; /* [1 .. nr_regions] */
	int nr_regions;
	bool has_return; /* a return anywhere: counted in _nr_done */
	struct warp_call *warps;
	unsigned nr_warps;
	/* --emit=runtime: the hidden argument words after the parameters (0:
	 * none): the file's globals, the launch's extern __shared__ memory */
	unsigned rt_glob_word, rt_dyn_word;
};

/* parse.c */
/* 0, -1 (unreadable, clang's errors) or -2 (C++ refused: cxx.c) */
int source_open(struct source *src, const char *path, int nr_args,
		const char *const *args);
/*
 * The same for @size bytes of @text (copied), named @path in the
 * diagnostics, which go to @err (NULL: stderr); no file is read.
 */
int source_open_text(struct source *src, const char *path, const char *text,
		     size_t size, int nr_args, const char *const *args,
		     FILE *err);
/* Where @src's diagnostics go. */
FILE *source_err(const struct source *src);
void source_close(struct source *src);
void source_where(const struct source *src, unsigned tok, char *buf,
		  size_t len);
void diag(struct source *src, unsigned tok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool tok_is(const struct source *src, unsigned i, const char *text);
/* Token index of the first token at or after @offset. */
unsigned tok_at(const struct source *src, unsigned offset);
void cursor_tokens(const struct source *src, CXCursor c, unsigned *first,
		   unsigned *last);
bool cursor_annotated(CXCursor c, const char *what);
/* The matching ')' of the '(' at @open, or @limit. */
unsigned tok_close(const struct source *src, unsigned open, unsigned limit);
bool is_barrier_call(CXCursor c);

/* inline.c */
/*
 * __device__ functions that hold barriers, inlined where they are called:
 * 0 none, 1 @text is the new source (@segs its map), -1 refused (the
 * diagnostics written), -2 out of memory.
 */
int inline_rewrite(struct source *src, char **text, size_t *size,
		   struct inline_seg **segs, unsigned *nr_segs);
/* @t's line and column in the source before the rewrite. */
void inline_map(const struct source *src, struct token *t);
/* "FILE:LINE:COL" of inlined_at @at. */
void inline_where(const struct source *src, unsigned at, char *buf, size_t len);

/* coop.c: a use of a cooperative group, rewritten by inline.c */
struct coop_repl {
	unsigned first, last; /* the tokens it replaces */
	char pre[160], post[16]; /* the new text: pre, the arguments, post */
	unsigned arg_first, arg_last; /* the arguments' tokens, or none */
	bool drop; /* a group's declaration: nothing */
	bool check_only; /* this_thread_block(): inside another, or refused */
};

/*
 * Every use of a cooperative group in @src's functions, @forced[f] where
 * function f uses one (then inlined): 0, -1 refused, -2 out of memory.
 */
int coop_collect(struct source *src, bool *forced, struct coop_repl **repl,
		 unsigned *nr);
/* 1 a thread_block, 2 a thread_block_tile<*w>, -1 another group, 0 none. */
int coop_type(CXType t, unsigned *w);
/*
 * cxx.c: the C++ subset (templates, namespaces, constexpr, static_assert,
 * references) lowered to C in @src->text, reparsed with @argv: 0, -1
 * (clang's errors, said) or -2 (refused, said).
 */
int cxx_lower(struct source *src, const char *const *argv, int argc);
/* The file's struct, union, enum definitions and typedefs, into @out. */
void cxx_emit_types(struct source *src, FILE *out);

/* regions.c */
int kernel_build(struct kernel *k, struct source *src, struct func *fn);
void kernel_free(struct kernel *k);

/* builtins.c: a call of it cannot be told apart from fewer of them. */
bool builtin_pure(const char *name);

/* variance.c */
unsigned thread_dim_at(const struct source *src, unsigned i);
unsigned range_variance(const struct kernel *k, unsigned first, unsigned last);
bool range_assigns(const struct source *src, unsigned first, unsigned last,
		   int var);
int kernel_analyse(struct kernel *k);
void func_variance(struct source *src);

/* warp.c */
bool warp_name(const char *name);
bool is_warp_exchange(CXCursor c);
/*
 * Appends @stmt's warp exchanges to @k->warps (the first at *@from) and
 * checks them: their number, or -1 when one is refused.
 */
int warp_collect(struct kernel *k, CXCursor stmt, unsigned first,
		 unsigned *from);
unsigned warp_find(const struct source *src, unsigned first, unsigned last);

/* emit.c */
enum mode {
	MODE_PLAIN, /* no rewriting of locals (parameters, helpers) */
	MODE_REGION, /* inside a region's thread loops */
	MODE_CONTROL, /* control code, once per block */
};

struct emitter {
	FILE *out;
	struct source *src;
	struct kernel *k; /* NULL in a helper */
	enum mode mode;
	int region;
	int failed;
	bool runtime; /* --emit=runtime: emit_runtime.c's rewrites */
	/* --emit=runtime: the tag of the file's struct of globals, or NULL */
	const char *globals;
};

struct runtime_opts {
	unsigned lane_threads; /* most threads one lane runs */
	unsigned dynamic_shared; /* bytes of extern __shared__ */
};

int emit_file(struct source *src, struct kernel *kernels, unsigned nr,
	      FILE *c_out, FILE *h_out, const char *h_name);
/* Shared with emit_runtime.c. */
void indent(FILE *out, int level);
void emit_range(struct emitter *e, unsigned first, unsigned last, int level);
void emit_stmt(struct emitter *e, struct node *s, int level);
void decl_text(FILE *out, CXType type, const char *name, const char *suffix);
enum CXChildVisitResult collect_decls(CXCursor c, CXCursor parent,
				      CXClientData data);
unsigned name_token(const struct source *src, unsigned first, unsigned last,
		    CXCursor decl);
void emit_defines(struct emitter *e);
void emit_helper(struct emitter *e, struct func *fn);
const char *base_name(const char *path);

struct decls {
	CXCursor c[64];
	unsigned n;
};

/* warp.c: the C of warp primitives */
bool warp_emit_call(struct emitter *e, unsigned *i);
void warp_emit_stage(struct emitter *e, const struct node *s, int level);
void warp_emit_decls(struct emitter *e, const struct kernel *k);
/*
 * --emit=runtime: the block-shared staging arrays, for blocks of up to
 * @max_threads threads (their bytes), and their members.
 */
long long warp_shared_bytes(const struct kernel *k, unsigned max_threads);
void warp_emit_shared(struct emitter *e, const struct kernel *k);

/* translate.c: the kernels of an opened source, analysed and emitted */
struct translation {
	struct source *src;
	struct kernel *kernels;
	unsigned nr;
};

/* 0, 1 refused (the diagnostics written), 2 out of memory. */
int translate_analyse(struct source *src, struct translation *t);
/* 0 or 1 (refused); --emit=runtime with @runtime. */
int translate_emit(struct translation *t, bool runtime,
		   const struct runtime_opts *rt, FILE *c_out, FILE *h_out,
		   const char *h_name);
void translate_free(struct translation *t);
/* --lane-threads (@opt 'l') or --dynamic-shared ('s') = @value: 0 or -1. */
int runtime_opt(char opt, const char *value, struct runtime_opts *rt,
		FILE *err);

/* emit_runtime.c */
int emit_runtime_file(struct source *src, struct kernel *kernels, unsigned nr,
		      const struct runtime_opts *opts, FILE *c_out, FILE *h_out,
		      const char *h_name);
/* threadIdx, blockIdx, blockDim, gridDim: the phase's local; else NULL. */
const char *rt_builtin(const char *name);
/* A local that lives in the block-shared memory: assigned in control code. */
bool var_control(const struct var *v);
/* Writes @var's runtime spelling and returns true, or false: as it is. */
bool rt_var(struct emitter *e, int var);

/*
 * globals.c: with @h_out, their extern declarations into it; else their
 * definitions into @e's C (--emit=launch), or refusals (--emit=runtime).
 */
int emit_globals(struct emitter *e, FILE *h_out);
/*
 * --emit=runtime: the file's __constant__ and __device__ variables into
 * @d, in source order, checked: their number, or -1 (refused).
 */
int rt_globals_collect(struct emitter *e, struct decls *d);
/* struct @tag of them, into @out (the dialect's and the header's). */
void rt_globals_struct(FILE *out, const struct decls *d, const char *tag);
/* The header's @tag_init: the source's initialisers. */
void rt_globals_init(struct source *src, FILE *out, const struct decls *d,
		     const char *tag);
/* Whether the token cursor @c names one of them. */
bool rt_global_ref(CXCursor c);

#endif /* AGILE_RETARGET_TOOL_H */
