// SPDX-License-Identifier: MIT
/*
 * variance.c - seed 004 steps 310-320 for one kernel: which thread
 * dimensions each local depends on (its variance vector), the checks that
 * make the region schedule valid, which locals become per-thread arrays
 * (promotion), and which thread loops each region gets.
 *
 * Variance is a fixpoint over assignments: a local assigned in a
 * statement gets the variance of everything that statement reads
 * (threadIdx.d directly, other locals' variance, atomics' results as
 * varying in x, y and z, __device__ helpers' own threadIdx reads) and of
 * the control code around it.  Coarse - a statement is one unit - but
 * never too small.
 *
 * The rules (docs/retarget.md has them with examples):
 *  - every condition of control code (the head of an if/for/while/do that
 *    holds a barrier) must be uniform: variance 0;
 *  - a local is PROMOTED (one copy per thread, name[_t]) when it is used
 *    in two or more regions (control code counts as one) and some region
 *    reads it before writing it: a value flows across a barrier.  Locals
 *    assigned in control code stay scalars (they are uniform);
 *  - a local used outside the region that declares it, not promoted, is
 *    HOISTED: declared once at the top of the block function;
 *  - a region loops over the dimensions it depends on only, or runs once
 *    per block when it depends on none, if running it fewer times cannot
 *    be told apart: no promoted local, no return, no call other than
 *    pure math, no atomic, no read-modify-write of memory.  Otherwise it
 *    gets the full z/y/x nest.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "retarget.h"

static const char *const pure_calls[] = {
	"sqrtf",  "sqrt",  "expf",   "exp",	   "logf",  "log",   "fabsf",
	"fabs",	  "sinf",  "cosf",   "sin",	   "cos",   "powf",  "pow",
	"floorf", "floor", "ceilf",  "ceil",	   "fminf", "fmaxf", "fmin",
	"fmax",	  "min",   "max",    "rsqrtf",	   "tanhf", "tanh",  "erff",
	"fmaf",	  "fma",   "__expf", "__fdividef", "abs",   NULL,
};

static const char *const assign_ops[] = {
	"=",  "+=", "-=",  "*=",  "/=", "%=", "&=",
	"|=", "^=", "<<=", ">>=", "++", "--", NULL,
};

static bool one_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

unsigned thread_dim_at(const struct source *src, unsigned i)
{
	const char *t = src->tok[i].text;

	if (!strncmp(t, "hipThreadIdx_", 13) && t[13] && !t[14])
		return t[13] == 'x' ? VAR_X : t[13] == 'y' ? VAR_Y : VAR_Z;
	if (strcmp(t, "threadIdx") || !tok_is(src, i + 1, "."))
		return 0;
	if (tok_is(src, i + 2, "x"))
		return VAR_X;
	if (tok_is(src, i + 2, "y"))
		return VAR_Y;
	if (tok_is(src, i + 2, "z"))
		return VAR_Z;
	return VAR_XYZ;
}

static bool is_call(const struct source *src, unsigned i)
{
	return src->tok[i].kind == CXToken_Identifier &&
	       tok_is(src, i + 1, "(");
}

static bool is_atomic(const struct source *src, unsigned i)
{
	return is_call(src, i) && !strncmp(src->tok[i].text, "atomic", 6);
}

unsigned range_variance(const struct kernel *k, unsigned first, unsigned last)
{
	const struct source *src = k->src;
	unsigned v = 0;

	for (unsigned i = first; i < last; i++) {
		const struct token *t = &src->tok[i];

		v |= thread_dim_at(src, i);
		if (t->var >= 0 && !k->vars[t->var].shared)
			v |= k->vars[t->var].variance;
		if (t->func >= 0)
			v |= src->funcs[t->func].variance;
		if (is_atomic(src, i))
			v |= VAR_XYZ;
	}
	return v;
}

/* Whether the variable token @i is written there (or its address taken). */
static bool assigned_at(const struct source *src, unsigned i, unsigned last)
{
	unsigned j = i + 1;

	if (src->tok[i].var_decl)
		return tok_is(src, j, "=") || tok_is(src, j, "(") ||
		       tok_is(src, j, "{");
	if (i > 0 && (tok_is(src, i - 1, ".") || tok_is(src, i - 1, "->")))
		return false;
	if (i > 0 && (tok_is(src, i - 1, "++") || tok_is(src, i - 1, "--")))
		return true;
	if (i > 0 && tok_is(src, i - 1, "&") &&
	    (i < 2 || (src->tok[i - 2].kind != CXToken_Identifier &&
		       src->tok[i - 2].kind != CXToken_Literal &&
		       !tok_is(src, i - 2, ")") && !tok_is(src, i - 2, "]")))) {
		/* &p[i], &p->m: the address of what p points to, not of p */
		CXType t = clang_getCanonicalType(
			clang_getCursorType(src->tok[i].cursor));

		if (t.kind != CXType_Pointer ||
		    !(tok_is(src, j, "[") || tok_is(src, j, "->")))
			return true;
	}
	/*
	 * A member or an element of the local itself: v.a[i].b = ... (not
	 * through a pointer: p[i] = ... and p->a = ... write memory).
	 */
	for (bool member = false;;) {
		int depth = 0;

		if (tok_is(src, j, ".") && j + 1 < last) {
			j += 2;
			member = true;
			continue;
		}
		if (!tok_is(src, j, "[") ||
		    (!member && clang_getCursorType(src->tok[i].cursor).kind !=
					CXType_ConstantArray))
			break;
		for (; j < last; j++) {
			if (tok_is(src, j, "["))
				depth++;
			else if (tok_is(src, j, "]") && --depth == 0)
				break;
		}
		j++;
	}
	return j < last && one_of(src->tok[j].text, assign_ops);
}

bool range_assigns(const struct source *src, unsigned first, unsigned last,
		   int var)
{
	for (unsigned i = first; i < last; i++)
		if (src->tok[i].var == var && assigned_at(src, i, last))
			return true;
	return false;
}

void func_variance(struct source *src)
{
	/* Three rounds carry it through helpers calling helpers. */
	for (int round = 0; round < 3; round++)
		for (unsigned f = 0; f < src->nr_funcs; f++) {
			struct func *fn = &src->funcs[f];

			for (unsigned i = fn->first; i < fn->last; i++) {
				fn->variance |= thread_dim_at(src, i);
				if (src->tok[i].func >= 0)
					fn->variance |=
						src->funcs[src->tok[i].func]
							.variance;
			}
		}
}

/* ---- uses: which regions reference each local, and how ---- */

/*
 * Whether the statement @leaf starts by overwriting variable token @i
 * without reading it: "v = e;" or "for (v = e; ...)", v not in e.
 */
static bool kills(const struct source *src, const struct node *leaf, unsigned i)
{
	int depth = 0;

	if (src->tok[i].var_decl)
		return true;
	if (!tok_is(src, i + 1, "="))
		return false;
	if (i != leaf->first &&
	    !(tok_is(src, leaf->first, "for") && i == leaf->first + 2))
		return false;
	for (unsigned j = i + 2; j < leaf->last; j++) {
		if (tok_is(src, j, "(") || tok_is(src, j, "["))
			depth++;
		else if (tok_is(src, j, ")") || tok_is(src, j, "]"))
			depth--;
		else if (depth <= 0 && tok_is(src, j, ";"))
			break;
		if (src->tok[j].var == src->tok[i].var)
			return false;
	}
	return true;
}

static void note_uses(struct kernel *k, unsigned first, unsigned last,
		      int region, const struct node *leaf)
{
	struct source *src = k->src;
	uint64_t bit = 1ULL << region;

	for (unsigned i = first; i < last; i++) {
		struct var *v;

		if (src->tok[i].var < 0)
			continue;
		v = &k->vars[src->tok[i].var];
		if (src->tok[i].var_decl)
			v->decl_region = region;
		if (src->tok[i].var_decl && region == REGION_CONTROL)
			v->control_decl = true;
		if (assigned_at(src, i, last) && !src->tok[i].var_decl) {
			if (region == REGION_CONTROL)
				v->control_assigned = true;
			else
				v->region_assigned = true;
		}
		if (!(v->regions & bit) && !(leaf && kills(src, leaf, i)))
			v->exposed |= bit;
		v->regions |= bit;
	}
}

static void walk_uses(struct kernel *k, struct node *n)
{
	if (!n)
		return;
	switch (n->kind) {
	case NODE_REGION:
		for (unsigned i = 0; i < n->nr_kids; i++)
			note_uses(k, n->kids[i]->first, n->kids[i]->last,
				  n->region, n->kids[i]);
		return;
	case NODE_IF:
	case NODE_LOOP:
	case NODE_DO:
		note_uses(k, n->first, n->last, REGION_CONTROL, NULL);
		break;
	default:
		break;
	}
	for (unsigned i = 0; i < n->nr_kids; i++)
		walk_uses(k, n->kids[i]);
}

/* ---- variance fixpoint ---- */

static bool assign_variance(struct kernel *k, unsigned first, unsigned last,
			    unsigned variance)
{
	bool changed = false;

	for (unsigned i = first; i < last; i++) {
		int v = k->src->tok[i].var;

		if (v < 0 || !assigned_at(k->src, i, last))
			continue;
		if ((k->vars[v].variance | variance) != k->vars[v].variance) {
			k->vars[v].variance |= variance;
			changed = true;
		}
	}
	return changed;
}

static bool walk_variance(struct kernel *k, struct node *n, unsigned control)
{
	bool changed = false;
	unsigned head;

	if (!n)
		return false;
	switch (n->kind) {
	case NODE_REGION:
		for (unsigned i = 0; i < n->nr_kids; i++) {
			struct node *s = n->kids[i];
			unsigned v = range_variance(k, s->first, s->last);

			changed |= assign_variance(k, s->first, s->last,
						   v | control);
		}
		return changed;
	case NODE_IF:
	case NODE_LOOP:
	case NODE_DO:
		head = range_variance(k, n->first, n->last) | control;
		changed |= assign_variance(k, n->first, n->last, head);
		control = head;
		break;
	default:
		break;
	}
	for (unsigned i = 0; i < n->nr_kids; i++)
		changed |= walk_variance(k, n->kids[i], control);
	return changed;
}

/* ---- checks ---- */

static void dims_text(unsigned dims, char *buf)
{
	char *p = buf;

	for (int d = 0; d < 3; d++)
		if (dims & (1u << d)) {
			if (p != buf)
				*p++ = ',';
			p += sprintf(p, "threadIdx.%c", "xyz"[d]);
		}
	if (p == buf)
		strcpy(buf, "nothing");
}

static void check_control(struct kernel *k, struct node *n)
{
	struct source *src = k->src;

	if (!n)
		return;
	if (n->kind == NODE_IF || n->kind == NODE_LOOP || n->kind == NODE_DO) {
		unsigned v = range_variance(k, n->first, n->last);

		if (v) {
			char dims[64], where[512];

			dims_text(v, dims);
			source_where(src, n->first, where, sizeof(where));
			diag(src, n->barrier,
			     "__syncthreads() under thread-dependent control flow: the condition at %s depends on %s, so not every thread of the block would reach this barrier",
			     where, dims);
		}
	}
	for (unsigned i = 0; i < n->nr_kids; i++)
		check_control(k, n->kids[i]);
}

struct leaf_check {
	struct kernel *k;
	struct node *region;
	int loops, switches;
};

static enum CXChildVisitResult check_leaf_visit(CXCursor c, CXCursor parent,
						CXClientData data);

static void check_leaf_cursor(struct leaf_check *lc, CXCursor c)
{
	struct source *src = lc->k->src;
	enum CXCursorKind kind = clang_getCursorKind(c);
	unsigned first, last;
	struct leaf_check inner = *lc;

	cursor_tokens(src, c, &first, &last);
	switch (kind) {
	case CXCursor_ReturnStmt:
		lc->region->has_return = true;
		lc->k->has_return = true;
		break;
	case CXCursor_BreakStmt:
		if (!lc->loops && !lc->switches)
			diag(src, first,
			     "break out of a loop that holds a barrier is not handled");
		break;
	case CXCursor_ContinueStmt:
		if (!lc->loops)
			diag(src, first,
			     "continue in a loop that holds a barrier is not handled");
		break;
	case CXCursor_GotoStmt:
	case CXCursor_IndirectGotoStmt:
		diag(src, first, "goto in a kernel is not handled");
		break;
	case CXCursor_ForStmt:
	case CXCursor_WhileStmt:
	case CXCursor_DoStmt:
		inner.loops++;
		break;
	case CXCursor_SwitchStmt:
		inner.switches++;
		break;
	case CXCursor_LambdaExpr:
		diag(src, first, "lambdas in a kernel are not handled");
		return;
	default:
		break;
	}
	clang_visitChildren(c, check_leaf_visit, &inner);
}

static enum CXChildVisitResult check_leaf_visit(CXCursor c, CXCursor parent,
						CXClientData data)
{
	(void)parent;
	check_leaf_cursor(data, c);
	return CXChildVisit_Continue;
}

/* Returns after which a barrier still comes, for some thread. */
static void check_returns(struct kernel *k, struct node *n, bool in_loop,
			  unsigned last_barrier)
{
	struct source *src = k->src;

	if (!n)
		return;
	if (n->kind == NODE_REGION) {
		for (unsigned i = 0; i < n->nr_kids; i++) {
			struct node *s = n->kids[i];

			for (unsigned t = s->first; t < s->last; t++) {
				char where[512];

				if (!tok_is(src, t, "return"))
					continue;
				if (!in_loop && t > last_barrier)
					continue;
				if (!range_variance(k, s->first, s->last))
					continue;
				source_where(src,
					     in_loop ? n->first : last_barrier,
					     where, sizeof(where));
				diag(src, t,
				     "return under thread-dependent control flow before the barrier at %s: the threads that returned would miss it",
				     where);
			}
		}
		return;
	}
	if (n->kind == NODE_LOOP || n->kind == NODE_DO)
		in_loop = true;
	for (unsigned i = 0; i < n->nr_kids; i++)
		check_returns(k, n->kids[i], in_loop, last_barrier);
}

static void find_last_barrier(const struct node *n, unsigned *last)
{
	if (!n)
		return;
	if (n->kind == NODE_BARRIER && n->first > *last)
		*last = n->first;
	if (n->kind != NODE_BARRIER && n->barrier > *last)
		*last = n->barrier;
	for (unsigned i = 0; i < n->nr_kids; i++)
		find_last_barrier(n->kids[i], last);
}

/* ---- the region schedule ---- */

/* Whether running @first..@last for fewer threads would show. */
static bool impure(const struct kernel *k, unsigned first, unsigned last)
{
	const struct source *src = k->src;

	for (unsigned i = first; i < last; i++) {
		const struct token *t = &src->tok[i];

		if (t->var >= 0 && k->vars[t->var].promoted)
			return true;
		if (is_call(src, i) && !one_of(t->text, pure_calls))
			return true;
		if (t->kind != CXToken_Punctuation)
			continue;
		if (!strcmp(t->text, "++") || !strcmp(t->text, "--") ||
		    (one_of(t->text, assign_ops) && strcmp(t->text, "="))) {
			/* a local scalar's own update is per thread: fine */
			bool post = i > first && src->tok[i - 1].var >= 0;
			unsigned v = post ? i - 1 : i + 1;
			bool scalar = v < last && src->tok[v].var >= 0 &&
				      !k->vars[src->tok[v].var].shared;

			if (post && v > first &&
			    (tok_is(src, v - 1, ".") ||
			     tok_is(src, v - 1, "->") ||
			     tok_is(src, v - 1, "*")))
				scalar = false;
			if (!post && (tok_is(src, v + 1, "[") ||
				      tok_is(src, v + 1, ".") ||
				      tok_is(src, v + 1, "->")))
				scalar = false;
			if (!scalar)
				return true;
		}
	}
	return false;
}

static void schedule(struct kernel *k)
{
	for (int r = 1; r <= k->nr_regions; r++) {
		struct node *n = k->regions[r];
		unsigned dims = 0;
		bool all = n->has_return; /* _nr_done must count them all */

		for (unsigned i = 0; i < n->nr_kids; i++) {
			struct node *s = n->kids[i];

			dims |= range_variance(k, s->first, s->last);
			all |= impure(k, s->first, s->last);
		}
		n->needs_all = all;
		n->dims = all ? VAR_XYZ : dims;
	}
}

static void promote(struct kernel *k)
{
	struct source *src = k->src;

	for (unsigned i = 0; i < k->nr_vars; i++) {
		struct var *v = &k->vars[i];
		uint64_t elsewhere;

		if (v->param) {
			if (v->region_assigned || v->control_assigned)
				diag(src, tok_at(src, v->decl_offset),
				     "%s: kernel parameter %s is assigned: copy it into a local first (not handled)",
				     k->fn->name, v->name);
			continue;
		}
		if (v->shared)
			continue;
		if (v->control_assigned) {
			if (v->region_assigned)
				diag(src, tok_at(src, v->decl_offset),
				     "%s: %s is assigned both in a region and in the head of a loop or branch that holds a barrier (not handled)",
				     k->fn->name, v->name);
			v->hoisted = v->decl_region != REGION_CONTROL;
			continue;
		}
		if (v->control_decl)
			continue;
		elsewhere = v->regions & ~(1ULL << v->decl_region);
		if (__builtin_popcountll(v->regions) >= 2 && v->exposed)
			v->promoted = true;
		else if (elsewhere)
			v->hoisted = true;
	}
}

int kernel_analyse(struct kernel *k)
{
	struct source *src = k->src;
	int errors = src->errors;
	unsigned last_barrier = 0;

	walk_uses(k, k->body);
	while (walk_variance(k, k->body, 0))
		;
	check_control(k, k->body);
	for (int r = 1; r <= k->nr_regions; r++) {
		struct node *n = k->regions[r];

		for (unsigned i = 0; i < n->nr_kids; i++) {
			struct leaf_check lc = { .k = k, .region = n };

			check_leaf_cursor(&lc, n->kids[i]->cursor);
		}
	}
	find_last_barrier(k->body, &last_barrier);
	check_returns(k, k->body, false, last_barrier);
	promote(k);
	schedule(k);
	return src->errors > errors ? -1 : 0;
}
