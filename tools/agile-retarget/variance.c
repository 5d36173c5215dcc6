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
		/* a vote is uniform in its warp only */
		if (is_atomic(src, i) ||
		    (is_call(src, i) && warp_name(t->text)))
			v |= VAR_XYZ;
	}
	return v;
}

/* Whether the variable token @i is written there (or its address taken). */
static bool assigned_at(const struct source *src, unsigned i)
{
	if (src->tok[i].var_decl)
		return tok_is(src, i + 1, "=") || tok_is(src, i + 1, "(") ||
		       tok_is(src, i + 1, "{");
	return src->tok[i].written;
}

/*
 * Which references write their variable (struct token's written), from
 * the AST rather than the tokens around them: clang loads a variable it
 * only reads through an implicit cast (lvalue to rvalue; an array's decay
 * to a pointer), so a reference with no cast above it is the variable
 * itself: assigned (=, +=, ...), incremented, its address taken (&v), or
 * bound to a reference.  p[i] = x, *p = x, *(p + i) = x, &p[i], &p->m
 * and p + i all load p first and write, or point into, what p points
 * to; (p) = x, p++ and &p write p.  The parts of a local array or struct
 * (a[i] = x, s.m = x, &a[i], &s.m) write the local itself: an element
 * reaches the array through its decay, a member through ".".
 */
struct writes {
	struct kernel *k;
	CXCursor parent;
	enum CXCursorKind parent_kind;
	bool parent_written; /* the parent is an lvalue that is written */
	unsigned index; /* of the child being visited */
};

static void mark_writes(struct kernel *k, CXCursor c, bool written);

static bool array_decay(CXCursor cast, CXCursor from)
{
	CXType to = clang_getCanonicalType(clang_getCursorType(cast));
	CXType of = clang_getCanonicalType(clang_getCursorType(from));

	return to.kind == CXType_Pointer &&
	       (of.kind == CXType_ConstantArray ||
		of.kind == CXType_IncompleteArray ||
		of.kind == CXType_VariableArray);
}

/* Whether the comma operator is @bin's (its operator follows @lhs). */
static bool is_comma(const struct source *src, CXCursor lhs)
{
	unsigned first, last;

	cursor_tokens(src, lhs, &first, &last);
	return tok_is(src, last, ",");
}

static bool child_written(const struct writes *w, CXCursor c)
{
	switch (w->parent_kind) {
	case CXCursor_ParenExpr:
	case CXCursor_MemberRefExpr: /* s.m: s itself ("->" loads p first) */
	case CXCursor_ArraySubscriptExpr: /* a[i]: a's decay (p[i]: p loaded) */
		return w->parent_written;
	case CXCursor_ConditionalOperator: /* (c ? a : b) = x */
		return w->index && w->parent_written;
	case CXCursor_UnexposedExpr: /* an implicit cast: a load, or a decay */
		return w->parent_written && array_decay(w->parent, c);
	case CXCursor_BinaryOperator:
		/* an lvalue operand: "=" (or "," and its right-hand side) */
		if (w->index == 0)
			return !is_comma(w->k->src, c);
		return w->parent_written;
	case CXCursor_CompoundAssignOperator:
		return w->index == 0;
	case CXCursor_UnaryOperator: /* an lvalue operand: &, ++, -- */
	case CXCursor_CallExpr: /* a reference argument; C++'s s = t */
	case CXCursor_VarDecl: /* a reference bound to it */
		return true;
	default:
		return false;
	}
}

static enum CXChildVisitResult writes_visit(CXCursor c, CXCursor parent,
					    CXClientData data)
{
	struct writes *w = data;

	(void)parent;
	mark_writes(w->k, c, child_written(w, c));
	w->index++;
	return CXChildVisit_Continue;
}

static void mark_writes(struct kernel *k, CXCursor c, bool written)
{
	struct source *src = k->src;
	struct writes w = {
		.k = k,
		.parent = c,
		.parent_kind = clang_getCursorKind(c),
		.parent_written = written,
	};

	if (w.parent_kind == CXCursor_DeclRefExpr) {
		unsigned off, i;

		if (!written)
			return;
		clang_getFileLocation(clang_getCursorLocation(c), NULL, NULL,
				      NULL, &off);
		i = tok_at(src, off);
		if (i < src->nr_tok && src->tok[i].offset == off &&
		    src->tok[i].var >= 0)
			src->tok[i].written = true;
		return;
	}
	clang_visitChildren(c, writes_visit, &w);
}

bool range_assigns(const struct source *src, unsigned first, unsigned last,
		   int var)
{
	for (unsigned i = first; i < last; i++)
		if (src->tok[i].var == var && assigned_at(src, i))
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
		if (assigned_at(src, i) && !src->tok[i].var_decl) {
			if (region == REGION_CONTROL && !v->control_assigned) {
				v->control_assigned = true;
				v->control_write = i;
			} else if (region != REGION_CONTROL &&
				   !v->region_assigned) {
				v->region_assigned = true;
				v->region_write = i;
			}
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

		if (v < 0 || !assigned_at(k->src, i))
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
			     "%s() under thread-dependent control flow: the condition at %s depends on %s, so not every thread of the block would reach this barrier",
			     src->tok[n->barrier].text, where, dims);
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
		if (is_call(src, i) && !one_of(t->text, pure_calls) &&
		    !builtin_pure(t->text))
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
			all |= impure(k, s->first, s->last) || s->warp_stage;
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
			/* the first write, in the source's order */
			unsigned at = v->region_write;

			if (v->control_assigned &&
			    (!v->region_assigned || v->control_write < at))
				at = v->control_write;
			if (v->region_assigned || v->control_assigned)
				diag(src, at,
				     "%s: kernel parameter %s is assigned: copy it into a local first (not handled)",
				     k->fn->name, v->name);
			continue;
		}
		if (v->shared)
			continue;
		if (v->control_assigned) {
			char where[512];

			source_where(src, v->control_write, where,
				     sizeof(where));
			if (v->region_assigned)
				diag(src, v->region_write,
				     "%s: %s is assigned both in a region and in the head of a loop or branch that holds a barrier, at %s (not handled)",
				     k->fn->name, v->name, where);
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

	mark_writes(k, k->body->cursor, false);
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
