// SPDX-License-Identifier: MIT
/*
 * warp.c - CUDA's warp-level primitives for 32-lane warps, lowered to an
 * exchange between the threads of a block (docs/retarget.md, "Warps"):
 *
 *	__shfl_sync, __shfl_up_sync, __shfl_down_sync, __shfl_xor_sync,
 *	__ballot_sync, __any_sync, __all_sync: exchanges
 *	__syncwarp: a barrier (regions.c)
 *	__activemask: agile_warp_activemask(_t, _nt), no exchange
 *	warpSize: 32 (<agile/retarget.h>)
 *
 * An exchange is a barrier inside a statement: each thread stores its
 * operand (the shuffled value, or the predicate) in a per-thread staging
 * array _warp_N at the end of the region before the statement; then,
 * after the barrier, the statement runs with the call replaced by a read
 * of its source lane's element.  The barrier is the block's: a subset of
 * it would do, but every thread of the block reaches it anyway, since
 * the statement must be where __syncthreads() could be (uniform control
 * flow, variance.c), which is what CUDA's full mask asks of convergent
 * code.  So only the full mask 0xffffffff is handled.
 *
 * The operand is evaluated once, before the rest of its statement: an
 * exchange is refused where that would differ (under ?:, &&, ||, inside
 * another exchange's arguments, an operand reading a local its own
 * statement declares or assigns before the call).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "retarget.h"

static const struct {
	const char *name;
	enum warp_op op;
} exchanges[] = {
	{ "__shfl_sync", WARP_SHFL },
	{ "__shfl_up_sync", WARP_SHFL_UP },
	{ "__shfl_down_sync", WARP_SHFL_DOWN },
	{ "__shfl_xor_sync", WARP_SHFL_XOR },
	{ "__ballot_sync", WARP_BALLOT },
	{ "__any_sync", WARP_ANY },
	{ "__all_sync", WARP_ALL },
};

#define NR_EXCHANGES (sizeof(exchanges) / sizeof(exchanges[0]))

static int exchange_of(const char *name)
{
	for (unsigned i = 0; i < NR_EXCHANGES; i++)
		if (!strcmp(name, exchanges[i].name))
			return (int)i;
	return -1;
}

static bool call_named(CXCursor c, bool (*match)(const char *))
{
	CXString s;
	bool yes;

	if (clang_getCursorKind(c) != CXCursor_CallExpr)
		return false;
	s = clang_getCursorSpelling(c);
	yes = match(clang_getCString(s));
	clang_disposeString(s);
	return yes;
}

static bool exchange_name(const char *name)
{
	return exchange_of(name) >= 0;
}

bool warp_name(const char *name)
{
	return exchange_name(name) || !strcmp(name, "__syncwarp") ||
	       !strcmp(name, "__activemask");
}

bool is_warp_exchange(CXCursor c)
{
	return call_named(c, exchange_name);
}

static bool predicate_op(enum warp_op op)
{
	return op == WARP_BALLOT || op == WARP_ANY || op == WARP_ALL;
}

/* The call's arguments, by tokens: CXXDefaultArgExpr has none. */
static void split_args(const struct source *src, struct warp_call *w)
{
	unsigned open = w->first + 1, close = w->last - 1, start = open + 1;
	int depth = 0;

	w->nr_args = 0;
	for (unsigned i = open + 1; i <= close; i++) {
		if (tok_is(src, i, "(") || tok_is(src, i, "[") ||
		    tok_is(src, i, "{"))
			depth++;
		else if (i < close &&
			 (tok_is(src, i, ")") || tok_is(src, i, "]") ||
			  tok_is(src, i, "}")))
			depth--;
		if (i == close || (!depth && tok_is(src, i, ","))) {
			if (w->nr_args < 4 && i > start) {
				w->arg[w->nr_args][0] = start;
				w->arg[w->nr_args][1] = i;
				w->nr_args++;
			}
			start = i + 1;
		}
	}
}

/* Whether an argument is an integer constant; its value in *value. */
static bool constant_arg(CXCursor call, unsigned arg, long long *value)
{
	CXEvalResult r;
	bool yes = false;

	if ((int)arg >= clang_Cursor_getNumArguments(call))
		return false;
	r = clang_Cursor_Evaluate(clang_Cursor_getArgument(call, arg));
	if (!r)
		return false;
	if (clang_EvalResult_getKind(r) == CXEval_Int) {
		*value = clang_EvalResult_getAsLongLong(r);
		yes = true;
	}
	clang_EvalResult_dispose(r);
	return yes;
}

struct collect {
	struct kernel *k;
	unsigned stmt_first;
	bool conditional; /* under ?: or the right of && || */
	bool in_exchange; /* inside another exchange's arguments */
	int found, refused;
};

static void refuse(struct collect *c, unsigned tok, const char *why)
{
	diag(c->k->src, tok, "%s(): %s", c->k->src->tok[tok].text, why);
	c->refused++;
}

static void check_exchange(struct collect *c, struct warp_call *w)
{
	struct source *src = c->k->src;
	long long v;

	if (!constant_arg(w->call, 0, &v) || (uint32_t)v != 0xffffffffu ||
	    (v >> 32 && v >> 32 != -1))
		refuse(c, w->first,
		       "only the full mask 0xffffffff, a constant, is handled (every thread of the warp takes part)");
	if (w->nr_args == 4 && constant_arg(w->call, 3, &v) &&
	    (v < 1 || v > 32 || (v & (v - 1))))
		refuse(c, w->first,
		       "the width must be a power of two from 1 to 32");
	if (c->conditional)
		refuse(c, w->first,
		       "under ?:, && or ||, only some threads would take part: not handled");
	if (c->in_exchange)
		refuse(c, w->first,
		       "inside another warp primitive's arguments is not handled: assign it to a local first");
	/*
	 * The operand runs before the statement: it must not see the
	 * statement.  Its first token is an assignment's target, written after.
	 */
	for (unsigned i = w->arg[1][0]; w->nr_args > 1 && i < w->arg[1][1];
	     i++) {
		int var = src->tok[i].var;
		struct var *vp;

		if (var < 0)
			continue;
		vp = &c->k->vars[var];
		if (vp->decl_offset >= src->tok[c->stmt_first].offset &&
		    vp->decl_offset < src->tok[w->first].offset) {
			refuse(c, i,
			       "its operand reads a local its own statement declares: declare it before");
			break;
		}
		if (range_assigns(src, c->stmt_first + 1, w->first, var) ||
		    range_assigns(src, w->arg[1][0], w->arg[1][1], var)) {
			refuse(c, i,
			       "its operand reads a local its own statement assigns: assign it before");
			break;
		}
	}
}

/* A cursor's children, and which of them are evaluated only sometimes. */
struct collect_walk {
	struct collect *parent_state;
	enum CXCursorKind kind;
	unsigned index;
	bool rhs_conditional; /* a BinaryOperator's: && or || */
};

static void collect_cursor(struct collect *c, CXCursor cur);

static enum CXChildVisitResult collect_visit(CXCursor cur, CXCursor parent,
					     CXClientData data)
{
	struct collect_walk *walk = data;
	struct collect *up = walk->parent_state;
	struct collect child = *up;
	unsigned index = walk->index++;

	(void)parent;
	child.found = child.refused = 0;
	if (walk->kind == CXCursor_ConditionalOperator && index > 0)
		child.conditional = true;
	if (walk->kind == CXCursor_BinaryOperator && index == 0) {
		unsigned first, last;

		/* the operator follows the left-hand side */
		cursor_tokens(up->k->src, cur, &first, &last);
		walk->rhs_conditional = tok_is(up->k->src, last, "&&") ||
					tok_is(up->k->src, last, "||");
	}
	if (walk->kind == CXCursor_BinaryOperator && index == 1 &&
	    walk->rhs_conditional)
		child.conditional = true;
	collect_cursor(&child, cur);
	up->found += child.found;
	up->refused += child.refused;
	return CXChildVisit_Continue;
}

static void collect_cursor(struct collect *c, CXCursor cur)
{
	struct kernel *k = c->k;
	struct source *src = k->src;
	enum CXCursorKind kind = clang_getCursorKind(cur);
	struct collect inner = *c;
	struct collect_walk walk = { &inner, kind, 0, false };
	CXString s;
	int ex;

	if (kind == CXCursor_CallExpr) {
		s = clang_getCursorSpelling(cur);
		ex = exchange_of(clang_getCString(s));
		clang_disposeString(s);
		if (ex >= 0) {
			struct warp_call *w;

			k->warps = realloc(k->warps, (k->nr_warps + 1) *
							     sizeof(*k->warps));
			if (!k->warps)
				abort();
			w = &k->warps[k->nr_warps];
			memset(w, 0, sizeof(*w));
			w->call = cur;
			w->op = exchanges[ex].op;
			w->id = (int)k->nr_warps++;
			cursor_tokens(src, cur, &w->first, &w->last);
			split_args(src, w);
			if (w->nr_args < (predicate_op(w->op) ? 2u : 3u))
				refuse(c, w->first, "too few arguments");
			else
				check_exchange(c, w);
			c->found++;
			inner.in_exchange = true;
		}
	}
	inner.found = inner.refused = 0;
	clang_visitChildren(cur, collect_visit, &walk);
	c->found += inner.found;
	c->refused += inner.refused;
}

int warp_collect(struct kernel *k, CXCursor stmt, unsigned first,
		 unsigned *from)
{
	struct collect c = { .k = k, .stmt_first = first };

	*from = k->nr_warps;
	collect_cursor(&c, stmt);
	if (c.refused)
		return -1;
	return c.found;
}

/* ---- the C ---- */

/* The C type of an exchange's operand, staged. */
static CXType stage_type(const struct warp_call *w)
{
	return clang_getCursorType(w->call);
}

static const char *const helper_of[] = {
	[WARP_SHFL] = "agile_warp_shfl",
	[WARP_SHFL_UP] = "agile_warp_shfl_up",
	[WARP_SHFL_DOWN] = "agile_warp_shfl_down",
	[WARP_SHFL_XOR] = "agile_warp_shfl_xor",
	[WARP_BALLOT] = "agile_warp_ballot",
	[WARP_ANY] = "agile_warp_any",
	[WARP_ALL] = "agile_warp_all",
};

/* The staging arrays: per thread (--emit=launch) or block-shared. */
static const char *stage_prefix(const struct emitter *e)
{
	return e->runtime ? "_sh->" : "";
}

bool warp_emit_call(struct emitter *e, unsigned *i)
{
	struct source *src = e->src;
	const struct kernel *k = e->k;

	/* a GPU's own warpSize is 64 on AMD: the dialect's is CUDA's */
	if (e->runtime && src->tok[*i].kind == CXToken_Identifier &&
	    tok_is(src, *i, "warpSize")) {
		fputs("AGILE_WARP_SIZE", e->out);
		return true;
	}
	if (!k || e->mode == MODE_PLAIN)
		return false;
	if (tok_is(src, *i, "__activemask") && tok_is(src, *i + 1, "(") &&
	    tok_is(src, *i + 2, ")")) {
		fputs("agile_warp_activemask(_t, _nt)", e->out);
		*i += 2;
		return true;
	}
	for (unsigned n = 0; n < k->nr_warps; n++) {
		const struct warp_call *w = &k->warps[n];

		if (w->first != *i)
			continue;
		fprintf(e->out, "%s(%s_warp_%d, _t, _nt", helper_of[w->op],
			stage_prefix(e), w->id);
		if (!predicate_op(w->op)) {
			fputs(", ", e->out);
			emit_range(e, w->arg[2][0], w->arg[2][1], 0);
			fputs(", ", e->out);
			if (w->nr_args == 4)
				emit_range(e, w->arg[3][0], w->arg[3][1], 0);
			else
				fputs(e->runtime ? "AGILE_WARP_SIZE" :
						   "warpSize",
				      e->out);
		}
		fputc(')', e->out);
		*i = w->last - 1;
		return true;
	}
	return false;
}

void warp_emit_stage(struct emitter *e, const struct node *s, int level)
{
	const struct warp_call *w = &e->k->warps[s->warp_stage - 1];

	indent(e->out, level);
	fprintf(e->out, "%s_warp_%d[_t] = %s", stage_prefix(e), w->id,
		predicate_op(w->op) ? "!!(" : "");
	emit_range(e, s->first, s->last, level);
	fprintf(e->out, "%s; /* %s's operand */\n",
		predicate_op(w->op) ? ")" : "", e->src->tok[w->first].text);
}

void warp_emit_decls(struct emitter *e, const struct kernel *k)
{
	if (k->nr_warps)
		fputs("\t/* warp exchanges: each thread's operand, read by its warp's lanes */\n",
		      e->out);
	for (unsigned n = 0; n < k->nr_warps; n++) {
		const struct warp_call *w = &k->warps[n];
		char name[32];

		snprintf(name, sizeof(name), "_warp_%d", w->id);
		fputc('\t', e->out);
		if (predicate_op(w->op))
			fprintf(e->out, "int %s[_nt]", name);
		else
			decl_text(e->out, stage_type(w), name, "[_nt]");
		fputs(";\n", e->out);
	}
}

long long warp_shared_bytes(const struct kernel *k, unsigned max_threads)
{
	long long bytes = 0;

	for (unsigned n = 0; n < k->nr_warps; n++) {
		const struct warp_call *w = &k->warps[n];

		bytes += (long long)max_threads *
			 (predicate_op(w->op) ?
				  (long long)sizeof(int) :
				  clang_Type_getSizeOf(stage_type(w)));
	}
	return bytes;
}

void warp_emit_shared(struct emitter *e, const struct kernel *k)
{
	for (unsigned n = 0; n < k->nr_warps; n++) {
		const struct warp_call *w = &k->warps[n];
		char name[32], where[512];

		snprintf(name, sizeof(name), "_warp_%d", w->id);
		source_where(e->src, w->first, where, sizeof(where));
		fputc('\t', e->out);
		if (predicate_op(w->op))
			fprintf(e->out,
				"int %s[AGILE_MAX_LANES * AGILE_RT_LANE_THREADS]",
				name);
		else
			decl_text(e->out, stage_type(w), name,
				  "[AGILE_MAX_LANES * AGILE_RT_LANE_THREADS]");
		fprintf(e->out, "; /* %s (%s): each thread's operand */\n",
			e->src->tok[w->first].text, where);
	}
}

/* The first warp primitive in [first, last), or @last. */
unsigned warp_find(const struct source *src, unsigned first, unsigned last)
{
	for (unsigned i = first; i < last; i++)
		if (src->tok[i].kind == CXToken_Identifier &&
		    warp_name(src->tok[i].text) && tok_is(src, i + 1, "("))
			return i;
	return last;
}
