// SPDX-License-Identifier: MIT
/*
 * emit_runtime.c - --emit=runtime: the kernels of a file as a source in
 * the runtime's dialect (docs/runtime.md, dialect 2), which the runtime
 * compiles on demand for CPU EUs (cc) and GPU EUs (NVRTC, hiprtc) alike:
 * one EU task runs one thread block.
 *
 *	block               one task; the entry's groups are the blocks
 *	blockIdx            from argument word 0 (AGILE_RT_ARG_GROUP), with
 *	gridDim, blockDim   words 1 and 2 (AGILE_RT_DIM3_WORD)
 *	kernel parameters   words 3 .. (at most 9)
 *	region              one phase: lane l runs threads l, l + nr_lanes,
 *	                    ... of the block, at most AGILE_RT_LANE_THREADS
 *	phase 0             the entry: checks the block fits the lanes
 *	control code        the kernel's AGILE_NEXT function: once per
 *	                    task, between phases, it resumes after the
 *	                    region that ended and returns the next one
 *	promoted local v    _st->v[_i], the lane's state: one per thread
 *	                    the lane runs (_i: the thread's slot)
 *	control locals      _sh->_c_v, block-shared (a barrier loop's
 *	                    counter; a promoted local's value as thread 0
 *	                    left it, for the control code)
 *	__shared__          members of the kernel's block-shared struct
 *	extern __shared__   the entry's local memory (local_bytes, sized at
 *	                    launch), a hidden AGILE_RT_ARG_LOCAL word after
 *	                    the parameters; with --dynamic-shared a member
 *	threadIdx, ...      _tidx, _bidx, _bdim, _gdim: struct agile_rt_dim3
 *	                    locals (no clash with the GPU's built-ins)
 *	warp exchange       operand in _sh->_warp_N[thread], block-shared
 *	                    (warp.c); warpSize is AGILE_WARP_SIZE (32)
 *
 * Everything is C that is also CUDA/HIP C++: explicit casts, no
 * designated initialisers, no VLAs; the control function jumps back into
 * its loops with goto, and holds no declaration a jump could skip.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "retarget.h"

/* The runtime's limits (docs/runtime.md; agile/kernels.h, compile.h). */
#define RT_MAX_ARGS 12 /* AGILE_RT_MAX_ARGS */
#define RT_FIXED_ARGS 3 /* block, gridDim, blockDim */
#define RT_MAX_PHASES 16 /* of one kernel in the dialect */
#define RT_MAX_KERNELS 16 /* AGILE_USER_NR_MAX */
#define RT_MAX_STATE 4096 /* AGILE_KERNEL_MAX_STATE */
#define RT_MAX_SHARED (47 * 1024) /* AGILE_RT_GPU_SHARED_MAX */
#define RT_NAME_MAX 31 /* AGILE_KERNEL_NAME_MAX - 1 */
#define RT_MAX_LANES 64 /* AGILE_MAX_LANES: a task's lanes */

const char *rt_builtin(const char *name)
{
	static const struct {
		const char *cuda, *rt;
	} names[] = {
		{ "threadIdx", "_tidx" },
		{ "blockIdx", "_bidx" },
		{ "blockDim", "_bdim" },
		{ "gridDim", "_gdim" },
	};

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i].cuda))
			return names[i].rt;
	return NULL;
}

bool var_control(const struct var *v)
{
	return !v->param && !v->shared &&
	       (v->control_assigned || v->control_decl);
}

static bool var_extern_shared(const struct var *v)
{
	return v->shared &&
	       clang_Cursor_getStorageClass(v->decl) == CX_SC_Extern;
}

/* A promoted local the control code reads: thread 0's copy is shared. */
static bool var_mirrored(const struct var *v)
{
	return v->promoted && (v->regions & (1ULL << REGION_CONTROL));
}

/*
 * A block-shared copy's member: _c_<name>, or _c_<name>_<n> for the n-th
 * later local of that name (two loops' "for (int offset = ...)" are two
 * locals, each its own member).
 */
static void fput_control(FILE *out, const struct kernel *k, int var)
{
	unsigned dup = 0;

	for (int j = 0; j < var; j++)
		dup += (var_control(&k->vars[j]) ||
			var_mirrored(&k->vars[j])) &&
		       !strcmp(k->vars[j].name, k->vars[var].name);
	fprintf(out, dup ? "_c_%s_%u" : "_c_%s", k->vars[var].name, dup);
}

bool rt_var(struct emitter *e, int var)
{
	const struct var *v = &e->k->vars[var];

	if (var_extern_shared(v)) {
		CXString s = clang_getTypeSpelling(clang_getArrayElementType(
			clang_getCursorType(v->decl)));

		/* sized at launch: the entry's local memory; else built in */
		if (e->k->rt_dyn_word)
			fprintf(e->out, "((%s *)(uintptr_t)args[%u])",
				clang_getCString(s), e->k->rt_dyn_word);
		else
			fprintf(e->out, "((%s *)_sh->_dyn)",
				clang_getCString(s));
		clang_disposeString(s);
		return true;
	}
	if (v->shared) {
		fprintf(e->out, "_sh->%s", v->name);
		return true;
	}
	if (var_control(v) || (v->promoted && e->mode == MODE_CONTROL)) {
		fputs("_sh->", e->out);
		fput_control(e->out, e->k, var);
		return true;
	}
	if (v->promoted) {
		fprintf(e->out, "_st->%s[_i]", v->name);
		return true;
	}
	return false;
}

struct rt_kernel {
	bool state; /* struct NAME_state: promoted locals */
	bool shared; /* struct NAME_shared */
};

/* ---- checks: what the runtime cannot hold is refused here ---- */

static long long type_size(CXCursor c)
{
	return clang_Type_getSizeOf(clang_getCursorType(c));
}

static int check_kernel(struct source *src, struct kernel *k,
			const struct runtime_opts *o, bool globals,
			struct rt_kernel *rk)
{
	const char *name = k->fn->name;
	long long state = 0, shared = 0;
	int errors = src->errors;
	unsigned word = RT_FIXED_ARGS + k->nr_params, dyn = 0;

	if (strlen(name) > RT_NAME_MAX)
		diag(src, k->fn->name_tok,
		     "%s: a kernel name of more than %d characters does not fit the runtime's registry",
		     name, RT_NAME_MAX);
	/* at the first parameter, and the first region, that do not fit */
	if (k->nr_params > RT_MAX_ARGS - RT_FIXED_ARGS)
		diag(src,
		     tok_at(src, k->vars[k->params[RT_MAX_ARGS - RT_FIXED_ARGS]]
					 .decl_offset),
		     "%s: %u parameters; the runtime passes at most %d (%d argument words, %d of them the block's)",
		     name, k->nr_params, RT_MAX_ARGS - RT_FIXED_ARGS,
		     RT_MAX_ARGS, RT_FIXED_ARGS);
	if (k->nr_regions + 1 > RT_MAX_PHASES)
		diag(src, k->regions[RT_MAX_PHASES]->first,
		     "%s: %d regions; a kernel of the runtime has at most %d phases (the entry and %d regions)",
		     name, k->nr_regions, RT_MAX_PHASES, RT_MAX_PHASES - 1);
	for (unsigned p = 0; p < k->nr_params; p++) {
		const struct var *v = &k->vars[k->params[p]];
		CXType t = clang_getCanonicalType(clang_getCursorType(v->decl));

		switch (t.kind) {
		case CXType_Pointer:
		case CXType_Bool:
		case CXType_Char_S:
		case CXType_Char_U:
		case CXType_SChar:
		case CXType_UChar:
		case CXType_Short:
		case CXType_UShort:
		case CXType_Int:
		case CXType_UInt:
		case CXType_Long:
		case CXType_ULong:
		case CXType_LongLong:
		case CXType_ULongLong:
		case CXType_Float:
		case CXType_Double:
			break;
		default:
			diag(src, tok_at(src, v->decl_offset),
			     "%s: parameter %s is neither a pointer, an integer nor a float: it does not fit an argument word",
			     name, v->name);
		}
	}
	for (unsigned i = 0; i < k->nr_vars; i++) {
		struct var *v = &k->vars[i];

		if (v->promoted) {
			state +=
				type_size(v->decl) * (long long)o->lane_threads;
			rk->state = true;
		}
		if (var_mirrored(v) || var_control(v)) {
			shared += type_size(v->decl);
			rk->shared = true;
		}
		if (var_extern_shared(v) && !o->dynamic_shared) {
			/* sized at launch: an AGILE_RT_ARG_LOCAL word */
			if (!dyn)
				dyn = tok_at(src, v->decl_offset);
		} else if (var_extern_shared(v)) {
			shared += o->dynamic_shared;
			rk->shared = true;
		} else if (v->shared) {
			shared += type_size(v->decl);
			rk->shared = true;
		}
	}
	/* the hidden words: the globals, then the dynamic shared memory */
	k->rt_glob_word = globals ? word++ : 0;
	k->rt_dyn_word = dyn ? word++ : 0;
	if (word > RT_MAX_ARGS && k->nr_params <= RT_MAX_ARGS - RT_FIXED_ARGS)
		diag(src, dyn ? dyn : k->fn->name_tok,
		     "%s: %u parameters and %u hidden argument word%s (%s%s%s): the runtime passes at most %d words, %d of them the block's",
		     name, k->nr_params, word - RT_FIXED_ARGS - k->nr_params,
		     word - RT_FIXED_ARGS - k->nr_params > 1 ? "s" : "",
		     globals ? "the globals" : "", globals && dyn ? ", " : "",
		     dyn ? "extern __shared__ sized at launch" : "",
		     RT_MAX_ARGS, RT_FIXED_ARGS);
	if (k->has_return) {
		shared += 4;
		rk->shared = true;
	}
	if (k->nr_warps) {
		shared += warp_shared_bytes(k, RT_MAX_LANES * o->lane_threads);
		rk->shared = true;
	}
	if (state > RT_MAX_STATE)
		diag(src, k->fn->name_tok,
		     "%s: its promoted locals need %lld bytes of lane state for %u threads a lane; the runtime gives a lane %d (--lane-threads=N: fewer threads a lane)",
		     name, state, o->lane_threads, RT_MAX_STATE);
	if (shared > RT_MAX_SHARED)
		diag(src, k->fn->name_tok,
		     "%s: %lld bytes of block-shared memory; the runtime gives a kernel at most %d on GPU EUs",
		     name, shared, RT_MAX_SHARED);
	return src->errors > errors ? -1 : 0;
}

/* ---- the pieces of one kernel ---- */

static void emit_structs(struct emitter *e, struct kernel *k,
			 const struct rt_kernel *rk,
			 const struct runtime_opts *o)
{
	struct source *src = e->src;
	const char *name = k->fn->name;
	unsigned done_stmt = 0;

	if (rk->state) {
		fprintf(e->out,
			"\n/* A lane's state: the promoted locals of its threads (slot _i). */\nstruct %s_state {\n",
			name);
		for (unsigned i = 0; i < k->nr_vars; i++)
			if (k->vars[i].promoted) {
				fputc('\t', e->out);
				decl_text(e->out,
					  clang_getCursorType(k->vars[i].decl),
					  k->vars[i].name,
					  "[AGILE_RT_LANE_THREADS]");
				fputs(";\n", e->out);
			}
		fprintf(e->out,
			"};\ntypedef char %s_state_fits[sizeof(struct %s_state) <= %d ? 1 : -1];\n",
			name, name, RT_MAX_STATE);
	}
	if (!rk->shared)
		return;
	fprintf(e->out,
		"\n/* The block-shared memory. */\nstruct %s_shared {\n", name);
	for (unsigned i = 0; i < k->nr_vars; i++) {
		struct var *v = &k->vars[i];
		unsigned vf, vl, sf = 0, sl = 0;

		if (var_control(v) || var_mirrored(v)) {
			fputc('\t', e->out);
			decl_text(e->out, clang_getCursorType(v->decl), "", "");
			fput_control(e->out, k, (int)i);
			fprintf(e->out, "; /* %s */\n",
				var_control(v) ?
					"a local of the control code" :
					"promoted: thread 0's, for the control code");
			continue;
		}
		if (!v->shared)
			continue;
		if (var_extern_shared(v) && k->rt_dyn_word)
			continue;
		if (var_extern_shared(v)) {
			fprintf(e->out,
				"\tdouble _dyn[(%u + 7) / 8]; /* extern __shared__ %s[] */\n",
				o->dynamic_shared, v->name);
			continue;
		}
		/* the whole declaration statement, once */
		cursor_tokens(src, v->decl, &vf, &vl);
		for (unsigned t = vf; t > k->fn->first; t--)
			if (tok_is(src, t - 1, ";") ||
			    tok_is(src, t - 1, "{") ||
			    tok_is(src, t - 1, "}")) {
				sf = t;
				break;
			}
		for (sl = vl; sl < k->fn->last && !tok_is(src, sl, ";"); sl++)
			;
		while (tok_is(src, sf, "__shared__"))
			sf++;
		if (sf == done_stmt)
			continue;
		done_stmt = sf;
		fputc('\t', e->out);
		e->mode = MODE_PLAIN;
		emit_range(e, sf, sl + 1, 1);
		fputc('\n', e->out);
	}
	warp_emit_shared(e, k);
	if (k->has_return)
		fputs("\tunsigned int _nr_done; /* threads that returned */\n",
		      e->out);
	fprintf(e->out,
		"};\ntypedef char %s_shared_fits[sizeof(struct %s_shared) <= %d ? 1 : -1];\n",
		name, name, RT_MAX_SHARED);
}

/* The top of a phase or control function: the block, the parameters. */
static void emit_prologue(struct emitter *e, struct kernel *k,
			  const struct rt_kernel *rk, bool phase, bool entry)
{
	const char *name = k->fn->name;

	if (phase && rk->state)
		fprintf(e->out,
			"\tstruct %s_state *_st __attribute__((unused)) = (struct %s_state *)state;\n",
			name, name);
	if (rk->shared)
		fprintf(e->out,
			"\tstruct %s_shared *_sh __attribute__((unused)) = (struct %s_shared *)shared;\n",
			name, name);
	if (k->rt_glob_word)
		fprintf(e->out,
			"\tstruct %s *_g __attribute__((unused)) = (struct %s *)(uintptr_t)args[%u];\n",
			e->globals, e->globals, k->rt_glob_word);
	fputs("\tconst struct agile_rt_dim3 _gdim __attribute__((unused)) = agile_rt_dim3_of(args[1]);\n"
	      "\tconst struct agile_rt_dim3 _bdim __attribute__((unused)) = agile_rt_dim3_of(args[2]);\n"
	      "\tconst uint32_t _nt __attribute__((unused)) = _bdim.x * _bdim.y * _bdim.z;\n",
	      e->out);
	if (!entry)
		fputs("\tstruct agile_rt_dim3 _bidx __attribute__((unused));\n",
		      e->out);
	if (phase)
		fputs("\tstruct agile_rt_dim3 _tidx __attribute__((unused));\n",
		      e->out);
	for (unsigned p = 0; p < k->nr_params; p++) {
		const struct var *v = &k->vars[k->params[p]];
		CXType type = clang_getCursorType(v->decl);
		CXType canon = clang_getCanonicalType(type);
		unsigned w = RT_FIXED_ARGS + p;

		fputc('\t', e->out);
		if (canon.kind == CXType_Pointer) {
			/* "const float *": the pointee's const stays */
			CXString s = clang_getTypeSpelling(type);
			const char *t = clang_getCString(s);
			size_t len = strlen(t);

			fprintf(e->out,
				"%s%s%s __attribute__((unused)) = (%s)(uintptr_t)args[%u];\n",
				t, len && t[len - 1] == '*' ? "" : " ", v->name,
				t, w);
			clang_disposeString(s);
			continue;
		}
		decl_text(e->out, type, v->name, " __attribute__((unused))");
		if (0) {
		} else if (canon.kind == CXType_Float) {
			fprintf(e->out, " = agile_arg_float(args[%u]);\n", w);
		} else if (canon.kind == CXType_Double) {
			fprintf(e->out, " = agile_arg_double(args[%u]);\n", w);
		} else if (canon.kind == CXType_Bool) {
			fprintf(e->out, " = args[%u] != 0;\n", w);
		} else {
			CXString s = clang_getTypeSpelling(canon);
			const char *t = clang_getCString(s);

			if (!strncmp(t, "const ", 6))
				t += 6;
			fprintf(e->out, " = (%s)args[%u];\n", t, w);
			clang_disposeString(s);
		}
	}
	/* the entry checks gridDim first: it has no blockIdx */
	if (!entry)
		fputs("\n\t_bidx.x = (uint32_t)(args[0] % _gdim.x);\n"
		      "\t_bidx.y = (uint32_t)(args[0] / _gdim.x % _gdim.y);\n"
		      "\t_bidx.z = (uint32_t)(args[0] / _gdim.x / _gdim.y);\n",
		      e->out);
}

static void emit_entry(struct emitter *e, struct kernel *k,
		       const struct rt_kernel *rk)
{
	const char *name = k->fn->name;

	fprintf(e->out,
		"\n/* Phase 0, the entry: the block must fit the task's lanes. */\nAGILE_PHASE(%s_p0)\n{\n",
		name);
	emit_prologue(e, k, rk, false, true);
	fputs("\n\tif (!_gdim.x || !_gdim.y || !_gdim.z || !_nt ||\n"
	      "\t    args[0] >= (agile_u64)_gdim.x * _gdim.y * _gdim.z)\n"
	      "\t\treturn -EINVAL;\n"
	      "\t/* thread t runs on lane t % nr_lanes, in slot t / nr_lanes */\n"
	      "\tif (_nt > nr_lanes * AGILE_RT_LANE_THREADS)\n"
	      "\t\treturn -ENOSPC;\n",
	      e->out);
	if (k->has_return)
		fputs("\tif (lane == 0)\n\t\t_sh->_nr_done = 0;\n", e->out);
	fputs("\treturn 0;\n}\n", e->out);
}

static void emit_phase(struct emitter *e, struct kernel *k,
		       const struct rt_kernel *rk, struct node *n)
{
	const char *name = k->fn->name;
	char where[512];

	source_where(e->src, n->first, where, sizeof(where));
	fprintf(e->out,
		"\n/* Phase %d: region %d (%s), every thread of this lane. */\nAGILE_PHASE(%s_p%d)\n{\n",
		n->region, n->region, where, name, n->region);
	emit_prologue(e, k, rk, true, false);
	for (unsigned i = 0, nr = 0; i < k->nr_vars; i++)
		if (k->vars[i].hoisted && !var_control(&k->vars[i])) {
			if (!nr++)
				fputs("\t/* used in several regions, never across a barrier */\n",
				      e->out);
			fputc('\t', e->out);
			decl_text(e->out, clang_getCursorType(k->vars[i].decl),
				  k->vars[i].name, " __attribute__((unused))");
			fputs(";\n", e->out);
		}
	fprintf(e->out,
		"\n\tfor (uint32_t _i = 0, _t = lane; _t < _nt; _i++, _t += nr_lanes) {\n"
		"\t\t(void)_i;\n"
		"\t\t_tidx.x = _t %% _bdim.x;\n"
		"\t\t_tidx.y = _t / _bdim.x %% _bdim.y;\n"
		"\t\t_tidx.z = _t / _bdim.x / _bdim.y;\n"
		"\t\t{\n");
	e->mode = MODE_REGION;
	e->region = n->region;
	for (unsigned i = 0; i < n->nr_kids; i++)
		emit_stmt(e, n->kids[i], 3);
	fputs("\t\t}\n", e->out);
	if (n->has_return)
		fprintf(e->out, "\tnext_thread_%d:;\n", n->region);
	for (unsigned i = 0; i < k->nr_vars; i++) {
		const struct var *v = &k->vars[i];

		if (var_mirrored(v) && (v->regions & (1ULL << n->region))) {
			fputs("\t\tif (_t == 0)\n\t\t\t_sh->", e->out);
			fput_control(e->out, k, (int)i);
			fprintf(e->out, " = _st->%s[0];\n", v->name);
		}
	}
	fputs("\t}\n\treturn 0;\n}\n", e->out);
}

static void emit_phases(struct emitter *e, struct kernel *k,
			const struct rt_kernel *rk, struct node *n)
{
	if (!n)
		return;
	if (n->kind == NODE_REGION) {
		emit_phase(e, k, rk, n);
		return;
	}
	for (unsigned i = 0; i < n->nr_kids; i++)
		emit_phases(e, k, rk, n->kids[i]);
}

/*
 * A control head: "for (int s = ...; ...)" declares its counter, which
 * lives in the block-shared memory: "for (_sh->_c_s = ...; ...)".
 */
static void emit_control_head(struct emitter *e, struct node *n)
{
	struct source *src = e->src;
	unsigned semi = n->last, open = n->first + 1;
	struct decls d = { .n = 0 };
	bool decl = false;

	e->mode = MODE_CONTROL;
	for (unsigned i = n->first; i < n->last; i++)
		decl |= src->tok[i].var_decl;
	if (!decl) {
		emit_range(e, n->first, n->last, 0);
		return;
	}
	if (n->kind == NODE_LOOP && tok_is(src, n->first, "for") &&
	    tok_is(src, open, "(")) {
		for (unsigned i = open + 1, depth = 0; i < n->last; i++) {
			if (tok_is(src, i, "("))
				depth++;
			else if (tok_is(src, i, ")"))
				depth--;
			else if (!depth && tok_is(src, i, ";")) {
				semi = i;
				break;
			}
		}
	}
	if (semi < n->last) {
		CXCursor init = clang_getNullCursor();

		for (unsigned i = open + 1; i < semi; i++)
			if (clang_getCursorKind(src->tok[i].cursor) ==
				    CXCursor_DeclStmt ||
			    clang_getCursorKind(src->tok[i].cursor) ==
				    CXCursor_VarDecl) {
				init = src->tok[i].cursor;
				break;
			}
		if (clang_getCursorKind(init) == CXCursor_VarDecl)
			d.c[d.n++] = init;
		else if (!clang_Cursor_isNull(init))
			clang_visitChildren(init, collect_decls, &d);
	}
	if (!d.n) {
		diag(src, n->first,
		     "a declaration in the head of a loop or branch that holds a barrier is not handled by --emit=runtime (only a for loop's counter)");
		e->failed = 1;
		return;
	}
	fputs("for (", e->out);
	for (unsigned i = 0; i < d.n; i++) {
		unsigned vf, vl, name = name_token(src, open, semi, d.c[i]);

		cursor_tokens(src, d.c[i], &vf, &vl);
		if (name >= semi)
			continue;
		fprintf(e->out, "%s_sh->", i ? ", " : "");
		fput_control(e->out, e->k, src->tok[name].var);
		if (tok_is(src, name + 1, "=")) {
			fputs(" = ", e->out);
			emit_range(e, name + 2, vl < semi ? vl : semi, 0);
		}
	}
	emit_range(e, semi, n->last, 0);
}

/* The control code around the regions, inside the AGILE_NEXT function. */
static void emit_skeleton(struct emitter *e, struct node *n, int level)
{
	char where[512];

	if (!n)
		return;
	switch (n->kind) {
	case NODE_SEQ:
		for (unsigned i = 0; i < n->nr_kids; i++)
			emit_skeleton(e, n->kids[i], level);
		break;
	case NODE_REGION:
		indent(e->out, level);
		fprintf(e->out, "return %d; /* region %d */\n", n->region,
			n->region);
		indent(e->out, level - 1);
		fprintf(e->out, "after_%d:;\n", n->region);
		if (n->has_return) {
			indent(e->out, level);
			fputs("if (_sh->_nr_done == _nt) /* every thread returned */\n",
			      e->out);
			indent(e->out, level + 1);
			fputs("return AGILE_NEXT_DONE;\n", e->out);
		}
		break;
	case NODE_STMT:
		diag(e->src, n->first,
		     "a statement outside every region (not handled)");
		e->failed = 1;
		break;
	case NODE_BARRIER:
		source_where(e->src, n->first, where, sizeof(where));
		indent(e->out, level);
		fprintf(e->out, "/* %s() (%s) */\n", e->src->tok[n->first].text,
			where);
		break;
	case NODE_IF:
		indent(e->out, level);
		emit_control_head(e, n);
		fputs(" {\n", e->out);
		emit_skeleton(e, n->kids[0], level + 1);
		indent(e->out, level);
		fputc('}', e->out);
		if (n->nr_kids > 1 && n->kids[1]) {
			fputs(" else {\n", e->out);
			emit_skeleton(e, n->kids[1], level + 1);
			indent(e->out, level);
			fputc('}', e->out);
		}
		fputc('\n', e->out);
		break;
	case NODE_LOOP:
		indent(e->out, level);
		emit_control_head(e, n);
		fputs(" {\n", e->out);
		emit_skeleton(e, n->kids[0], level + 1);
		indent(e->out, level);
		fputs("}\n", e->out);
		break;
	case NODE_DO:
		indent(e->out, level);
		fputs("do {\n", e->out);
		emit_skeleton(e, n->kids[0], level + 1);
		indent(e->out, level);
		fputs("} ", e->out);
		emit_control_head(e, n);
		fputs(";\n", e->out);
		break;
	}
}

static void emit_next(struct emitter *e, struct kernel *k,
		      const struct rt_kernel *rk)
{
	const char *name = k->fn->name;

	fprintf(e->out,
		"\n/*\n * The control code, once per block between phases: resumes after\n"
		" * phase @done and returns the next one.\n */\nAGILE_NEXT(%s_next)\n{\n",
		name);
	emit_prologue(e, k, rk, false, false);
	fputs("\n\tswitch (done) {\n\tcase 0:\n\t\tgoto entry;\n", e->out);
	for (int r = 1; r <= k->nr_regions; r++)
		fprintf(e->out, "\tcase %d:\n\t\tgoto after_%d;\n", r, r);
	fputs("\tdefault:\n\t\treturn AGILE_NEXT_DONE;\n\t}\nentry:\n", e->out);
	emit_skeleton(e, k->body, 1);
	fputs("\treturn AGILE_NEXT_DONE;\n}\n", e->out);
}

static void emit_rt_kernel(struct emitter *e, struct kernel *k,
			   const struct rt_kernel *rk,
			   const struct runtime_opts *o)
{
	const char *name = k->fn->name;
	char where[512];
	unsigned n = 0;

	e->k = k;
	source_where(e->src, k->fn->first, where, sizeof(where));
	fprintf(e->out,
		"\n/*\n * __global__ %s (%s): one block a task, %d phase%s.\n"
		" * Argument words: 0 the block (AGILE_RT_ARG_GROUP), 1 gridDim,\n"
		" * 2 blockDim (AGILE_RT_DIM3_WORD)",
		name, where, k->nr_regions + 1, k->nr_regions ? "s" : "");
	for (unsigned p = 0; p < k->nr_params; p++)
		fprintf(e->out, ", %u %s", RT_FIXED_ARGS + p,
			k->vars[k->params[p]].name);
	if (k->rt_glob_word)
		fprintf(e->out, ", %u the globals", k->rt_glob_word);
	if (k->rt_dyn_word)
		fprintf(e->out, ", %u extern __shared__ (AGILE_RT_ARG_LOCAL)",
			k->rt_dyn_word);
	fputs(".\n * Promoted (one per thread, in the lane's state):", e->out);
	for (unsigned i = 0; i < k->nr_vars; i++)
		if (k->vars[i].promoted)
			fprintf(e->out, "%s %s", n++ ? "," : "",
				k->vars[i].name);
	fputs(n ? ".\n */\n" : " none.\n */\n", e->out);
	emit_structs(e, k, rk, o);
	emit_entry(e, k, rk);
	emit_phases(e, k, rk, k->body);
	emit_next(e, k, rk);
}

static void emit_header(struct emitter *e, struct kernel *kernels, unsigned nr,
			const char *in, const char *h_name,
			const struct runtime_opts *o,
			const struct decls *globals)
{
	char guard[256];
	size_t n = 0;

	for (const char *p = base_name(h_name); *p && n < 250; p++)
		guard[n++] = (char)((*p >= 'a' && *p <= 'z') ? *p - 'a' + 'A' :
				    (*p >= 'A' && *p <= 'Z') ||
						    (*p >= '0' && *p <= '9') ?
							       *p :
							       '_');
	guard[n] = '\0';
	fprintf(e->out,
		"/* SPDX-License-Identifier: MIT */\n"
		"/*\n * Generated by agile-retarget --emit=runtime from %s: do not edit.\n"
		" * The argument words of its kernels, for agile_rt_enqueue.\n */\n"
		"#ifndef AGILE_RT_%s\n#define AGILE_RT_%s\n\n#include <stdint.h>\n\n"
		"#ifndef AGILE_RT_DIM3_WORD\n"
		"/* gridDim or blockDim as one word: x 32 bits, y and z 16 each. */\n"
		"#define AGILE_RT_DIM3_WORD(x, y, z) \\\n"
		"\t((uint64_t)(x) | (uint64_t)(y) << 32 | (uint64_t)(z) << 48)\n"
		"/* A float parameter's word: its bits. */\n"
		"static inline uint64_t agile_rt_float_word(float f)\n"
		"{\n\tunion {\n\t\tfloat f;\n\t\tuint32_t u;\n\t} c;\n\n"
		"\tc.f = f;\n\treturn c.u;\n}\n#endif\n\n"
		"/* The most threads a block may have: lanes x this. */\n"
		"#define AGILE_RT_LANE_THREADS_%s %u\n",
		in, guard, guard, guard, o->lane_threads);
	if (globals->n) {
		fprintf(e->out,
			"\n#include <string.h>\n\n"
			"/*\n * The source's __constant__ and __device__ variables, in its order\n"
			" * (C's layout, as the kernels see it): a buffer of sizeof(struct\n"
			" * %s), filled by %s_init and then\n"
			" * as cudaMemcpyToSymbol would, passed to every kernel as its\n"
			" * NAME_ARG_GLOBALS word (AGILE_RT_READ, | AGILE_RT_WRITE where a\n"
			" * kernel writes one); read it back after the entry, as\n"
			" * cudaMemcpyFromSymbol.\n */\n",
			e->globals, e->globals);
		rt_globals_struct(e->out, globals, e->globals);
		rt_globals_init(e->src, e->out, globals, e->globals);
	}
	for (unsigned i = 0; i < nr; i++) {
		struct kernel *k = &kernels[i];
		const char *name = k->fn->name;

		fprintf(e->out,
			"\nenum {\n\t%s_ARG_BLOCK, /* AGILE_RT_ARG_GROUP */\n"
			"\t%s_ARG_GRID_DIM,\n\t%s_ARG_BLOCK_DIM,\n",
			name, name, name);
		for (unsigned p = 0; p < k->nr_params; p++)
			fprintf(e->out, "\t%s_ARG_%s,\n", name,
				k->vars[k->params[p]].name);
		if (k->rt_glob_word)
			fprintf(e->out,
				"\t%s_ARG_GLOBALS, /* AGILE_RT_ARG_BUFFER: struct %s */\n",
				name, e->globals);
		if (k->rt_dyn_word)
			fprintf(e->out,
				"\t/* AGILE_RT_ARG_LOCAL: extern __shared__ memory, the entry's\n"
				"\t * local_bytes (<<<grid, block, BYTES>>>'s third), at most\n"
				"\t * AGILE_RT_MAX_LOCAL; such an entry runs on CPU EUs */\n"
				"\t%s_ARG_DYNAMIC_SHARED,\n",
				name);
		fprintf(e->out, "\t%s_NR_ARGS\n};\n", name);
	}
	fputs("\n#endif\n", e->out);
}

int emit_runtime_file(struct source *src, struct kernel *kernels, unsigned nr,
		      const struct runtime_opts *opts, FILE *c_out, FILE *h_out,
		      const char *h_name)
{
	struct emitter e = { .out = c_out, .src = src, .runtime = true };
	const char *in = base_name(src->path);
	struct rt_kernel *rk = calloc(nr ? nr : 1, sizeof(*rk));
	struct decls globals = { .n = 0 };
	char tag[128];
	size_t n = 0;
	int failed = 0;

	if (!rk)
		return -1;
	/* struct <file>_globals: the file's __constant__, __device__ */
	for (const char *p = in; *p && *p != '.' && n < 100; p++, n++)
		tag[n] = (char)((*p >= 'a' && *p <= 'z') ||
						(*p >= 'A' && *p <= 'Z') ||
						(*p >= '0' && *p <= '9' && n) ?
					*p :
					'_');
	strcpy(tag + n, "_globals");
	if (rt_globals_collect(&e, &globals) < 0)
		failed = 1;
	if (globals.n)
		e.globals = tag;
	if (nr > RT_MAX_KERNELS) {
		fprintf(source_err(src),
			"%s: error: %u kernels; a source of the runtime holds at most %d\n",
			src->path, nr, RT_MAX_KERNELS);
		failed = 1;
	}
	for (unsigned i = 0; i < nr; i++)
		if (check_kernel(src, &kernels[i], opts, globals.n > 0, &rk[i]))
			failed = 1;
	if (failed) {
		free(rk);
		return -1;
	}

	fprintf(c_out,
		"// SPDX-License-Identifier: MIT\n"
		"/*\n * Generated by agile-retarget --emit=runtime from %s: do not edit.\n"
		" * The runtime's dialect (docs/runtime.md): C for CPU EUs, CUDA/HIP C++\n"
		" * for GPU EUs.  One EU task runs one thread block: each region between\n"
		" * barriers is a phase, each lane runs its share of the block's threads\n"
		" * (docs/retarget.md).\n */\n"
		"#ifndef AGILE_RT_LANE_THREADS\n"
		"/* The most threads one lane runs: a block holds lanes x this. */\n"
		"#define AGILE_RT_LANE_THREADS %u\n#endif\n",
		in, opts->lane_threads);
	cxx_emit_types(src, c_out);
	emit_defines(&e);
	if (globals.n) {
		fputs("\n/*\n * The file's __constant__ and __device__ variables, in source order:\n"
		      " * a buffer the host fills (the -H header's _init) and passes as a\n"
		      " * hidden argument word of every kernel, after its parameters.\n */\n",
		      c_out);
		rt_globals_struct(c_out, &globals, tag);
	}
	for (unsigned f = 0; f < src->nr_funcs; f++)
		if (!src->funcs[f].kernel)
			emit_helper(&e, &src->funcs[f]);
	for (unsigned i = 0; i < nr; i++)
		emit_rt_kernel(&e, &kernels[i], &rk[i], opts);

	fputs("\n#define AGILE_USER_KERNELS(K)", c_out);
	for (unsigned i = 0; i < nr; i++) {
		const struct kernel *k = &kernels[i];
		const char *name = k->fn->name;

		fprintf(c_out, " \\\n\tK(%s, ", name);
		if (rk[i].state)
			fprintf(c_out, "struct %s_state", name);
		else
			fputs("struct agile_no_state", c_out);
		fputs(", 0", c_out);
		for (int r = 0; r <= k->nr_regions; r++)
			fprintf(c_out, ", %s_p%d", name, r);
		fputc(')', c_out);
	}
	fputs("\n\n#define AGILE_USER_EXTRAS(X)", c_out);
	for (unsigned i = 0; i < nr; i++) {
		const char *name = kernels[i].fn->name;

		fprintf(c_out, " \\\n\tX(%s, ", name);
		if (rk[i].shared)
			fprintf(c_out, "struct %s_shared", name);
		else
			fputs("struct agile_no_state", c_out);
		fprintf(c_out, ", %s_next)", name);
	}
	fputc('\n', c_out);
	if (h_out) {
		e.out = h_out;
		emit_header(&e, kernels, nr, in, h_name, opts, &globals);
	}
	free(rk);
	return e.failed ? -1 : 0;
}
