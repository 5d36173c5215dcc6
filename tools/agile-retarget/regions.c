// SPDX-License-Identifier: MIT
/*
 * regions.c - a kernel's body cut into regions at its barriers (seed 004,
 * step 305), MCUDA's deep fission included: a statement that holds no
 * barrier joins the current region; a barrier ends it; an if, for, while
 * or do that holds a barrier becomes control code (run once per block,
 * outside any thread loop: its condition must be thread-uniform, which
 * variance.c checks) whose body is cut the same way, recursively.  Any
 * other statement holding a barrier (switch, a barrier inside an
 * expression) is refused.  A warp exchange (warp.c) is a barrier inside
 * its statement: its operand is staged at the end of the region before,
 * the statement starts the region after.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "retarget.h"

struct builder {
	struct kernel *k;
	struct node *region; /* the one statements join, or NULL */
};

static struct node *node_new(enum node_kind kind, CXCursor c)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n)
		abort();
	n->kind = kind;
	n->cursor = c;
	return n;
}

static void node_add(struct node *parent, struct node *kid)
{
	parent->kids = realloc(parent->kids,
			       (parent->nr_kids + 1) * sizeof(*parent->kids));
	if (!parent->kids)
		abort();
	parent->kids[parent->nr_kids++] = kid;
}

struct barrier_find {
	CXCursor found;
	bool any;
};

static enum CXChildVisitResult find_barrier(CXCursor c, CXCursor parent,
					    CXClientData data)
{
	struct barrier_find *f = data;

	(void)parent;
	if (is_barrier_call(c)) {
		f->found = c;
		f->any = true;
		return CXChildVisit_Break;
	}
	return CXChildVisit_Recurse;
}

/* The first barrier in @c (itself included), or false. */
static bool has_barrier(CXCursor c, CXCursor *where)
{
	struct barrier_find f = { .any = false };

	if (is_barrier_call(c)) {
		*where = c;
		return true;
	}
	clang_visitChildren(c, find_barrier, &f);
	*where = f.found;
	return f.any;
}

struct kids {
	CXCursor c[8];
	unsigned n;
};

static enum CXChildVisitResult collect_kids(CXCursor c, CXCursor parent,
					    CXClientData data)
{
	struct kids *k = data;

	(void)parent;
	if (k->n < 8)
		k->c[k->n++] = c;
	return CXChildVisit_Continue;
}

static void build_stmt(struct builder *b, struct node *seq, CXCursor c);

/* @c as a sequence of its own: a compound's statements, or @c alone. */
static struct node *build_body(struct builder *b, CXCursor c)
{
	struct node *seq = node_new(NODE_SEQ, c);

	b->region = NULL;
	build_stmt(b, seq, c);
	b->region = NULL;
	return seq;
}

static void end_region(struct builder *b)
{
	b->region = NULL;
}

struct stmt_walk {
	struct builder *b;
	struct node *seq;
};

static enum CXChildVisitResult walk_compound(CXCursor c, CXCursor parent,
					     CXClientData data)
{
	struct stmt_walk *w = data;

	(void)parent;
	build_stmt(w->b, w->seq, c);
	return CXChildVisit_Continue;
}

/* The statement's tokens, with the ';' an expression statement ends in. */
static void stmt_tokens(const struct source *src, CXCursor c, unsigned *first,
			unsigned *last)
{
	cursor_tokens(src, c, first, last);
	if (*last > *first && !tok_is(src, *last - 1, ";") &&
	    !tok_is(src, *last - 1, "}") && tok_is(src, *last, ";"))
		(*last)++;
}

/* @leaf joins the current region, or starts one. */
static void add_node_leaf(struct builder *b, struct node *seq,
			  struct node *leaf)
{
	struct kernel *k = b->k;

	if (!b->region) {
		struct node *r;

		if (k->nr_regions + 1 >= MAX_REGIONS) {
			diag(k->src, leaf->first,
			     "more than %d regions in one kernel are not handled",
			     MAX_REGIONS - 1);
			free(leaf);
			return;
		}
		r = node_new(NODE_REGION, leaf->cursor);
		r->region = ++k->nr_regions;
		k->regions = realloc(k->regions,
				     (k->nr_regions + 1) * sizeof(*k->regions));
		if (!k->regions)
			abort();
		k->regions[r->region] = r;
		r->first = leaf->first;
		node_add(seq, r);
		b->region = r;
	}
	node_add(b->region, leaf);
	b->region->last = leaf->last;
}

static void add_leaf(struct builder *b, struct node *seq, CXCursor c)
{
	struct node *leaf;

	if (clang_getCursorKind(c) == CXCursor_NullStmt)
		return;
	leaf = node_new(NODE_STMT, c);
	stmt_tokens(b->k->src, c, &leaf->first, &leaf->last);
	add_node_leaf(b, seq, leaf);
}

/*
 * A statement whose barriers are all warp exchanges in its own
 * expressions (an expression, a declaration, a return, an if's
 * condition), none in a statement inside it: each exchange's operand
 * joins the current region, the exchange ends it, the statement starts
 * the next.  False: not such a statement, for the caller to cut.
 */
static bool warp_leaf(struct builder *b, struct node *seq, CXCursor c)
{
	struct kernel *k = b->k;
	enum CXCursorKind kind = clang_getCursorKind(c);
	unsigned first, last, from;
	struct node *n;
	int nr;

	if (kind == CXCursor_IfStmt) {
		struct kids kids = { .n = 0 };
		CXCursor barrier;

		clang_visitChildren(c, collect_kids, &kids);
		for (unsigned i = 1; i < kids.n; i++)
			if (has_barrier(kids.c[i], &barrier))
				return false;
	} else if (!clang_isExpression(kind) && kind != CXCursor_DeclStmt &&
		   kind != CXCursor_ReturnStmt) {
		return false;
	}
	stmt_tokens(k->src, c, &first, &last);
	nr = warp_collect(k, c, first, &from);
	if (nr < 0)
		return true;
	if (!nr)
		return false;
	for (unsigned i = from; i < k->nr_warps; i++) {
		struct warp_call *w = &k->warps[i];
		struct node *stage = node_new(
			NODE_STMT, clang_Cursor_getArgument(w->call, 1));

		stage->first = w->arg[1][0];
		stage->last = w->arg[1][1];
		stage->warp_stage = i + 1;
		add_node_leaf(b, seq, stage);
	}
	n = node_new(NODE_BARRIER, k->warps[from].call);
	n->first = k->warps[from].first;
	n->last = k->warps[from].last;
	node_add(seq, n);
	end_region(b);
	add_leaf(b, seq, c);
	return true;
}

/* A control construct: head tokens [first, last), the barrier inside. */
static struct node *control_node(struct builder *b, enum node_kind kind,
				 CXCursor c, CXCursor barrier)
{
	struct node *n = node_new(kind, c);
	unsigned bf, bl;

	cursor_tokens(b->k->src, barrier, &bf, &bl);
	n->barrier = bf;
	return n;
}

/* A warp exchange in the head of control code: it would run once a block. */
static void head_barrier(struct builder *b, const struct node *n)
{
	struct source *src = b->k->src;
	unsigned at = warp_find(src, n->first, n->last);

	if (at < n->last)
		diag(src, at,
		     "%s() in the condition of a loop, or of a branch that holds a barrier, is not handled: assign it to a local first",
		     src->tok[at].text);
}

static void build_stmt(struct builder *b, struct node *seq, CXCursor c)
{
	struct source *src = b->k->src;
	enum CXCursorKind kind = clang_getCursorKind(c);
	unsigned first, last, open;
	struct kids kids = { .n = 0 };
	CXCursor barrier;
	struct node *n;

	if (!has_barrier(c, &barrier)) {
		add_leaf(b, seq, c);
		return;
	}
	if (warp_leaf(b, seq, c))
		return;
	cursor_tokens(src, c, &first, &last);
	switch (kind) {
	case CXCursor_CompoundStmt: {
		struct stmt_walk w = { b, seq };

		clang_visitChildren(c, walk_compound, &w);
		return;
	}
	case CXCursor_CallExpr:
		if (!is_barrier_call(c))
			break;
		b->region = NULL; /* the barrier ends the region */
		n = node_new(NODE_BARRIER, c);
		n->first = first;
		n->last = last;
		node_add(seq, n);
		return;
	case CXCursor_IfStmt:
		end_region(b);
		n = control_node(b, NODE_IF, c, barrier);
		open = first + 1;
		n->first = first;
		n->last = tok_close(src, open, last) + 1;
		clang_visitChildren(c, collect_kids, &kids);
		for (unsigned i = 0; i < kids.n; i++) {
			unsigned kf, kl;

			cursor_tokens(src, kids.c[i], &kf, &kl);
			if (kf >= n->last && n->nr_kids < 2)
				node_add(n, build_body(b, kids.c[i]));
		}
		if (n->nr_kids == 1)
			node_add(n, NULL);
		head_barrier(b, n);
		node_add(seq, n);
		end_region(b);
		return;
	case CXCursor_ForStmt:
	case CXCursor_WhileStmt:
		end_region(b);
		n = control_node(b, NODE_LOOP, c, barrier);
		n->first = first;
		n->last = tok_close(src, first + 1, last) + 1;
		clang_visitChildren(c, collect_kids, &kids);
		if (kids.n)
			node_add(n, build_body(b, kids.c[kids.n - 1]));
		head_barrier(b, n);
		node_add(seq, n);
		end_region(b);
		return;
	case CXCursor_DoStmt:
		end_region(b);
		n = control_node(b, NODE_DO, c, barrier);
		clang_visitChildren(c, collect_kids, &kids);
		if (kids.n) {
			unsigned kf, kl;

			cursor_tokens(src, kids.c[0], &kf, &kl);
			node_add(n, build_body(b, kids.c[0]));
			/* "while (cond)" after the body */
			n->first = kl;
			n->last = tok_close(src, kl + 1, last) + 1;
		}
		head_barrier(b, n);
		node_add(seq, n);
		end_region(b);
		return;
	default:
		break;
	}
	{
		unsigned bf, bl;

		cursor_tokens(src, barrier, &bf, &bl);
		diag(src, bf,
		     "%s() inside this kind of statement (line %u) is not handled: only in sequence, in if/else, for, while and do",
		     src->tok[bf].text, src->tok[first].line);
	}
}

static int var_of(struct kernel *k, CXCursor decl)
{
	unsigned off;
	struct var *v;
	CXString s;

	clang_getFileLocation(clang_getCursorLocation(decl), NULL, NULL, NULL,
			      &off);
	for (unsigned i = 0; i < k->nr_vars; i++)
		if (k->vars[i].decl_offset == off)
			return (int)i;
	k->vars = realloc(k->vars, (k->nr_vars + 1) * sizeof(*k->vars));
	if (!k->vars)
		abort();
	v = &k->vars[k->nr_vars];
	memset(v, 0, sizeof(*v));
	v->decl = decl;
	v->decl_offset = off;
	s = clang_getCursorSpelling(decl);
	v->name = strdup(clang_getCString(s));
	clang_disposeString(s);
	v->param = clang_getCursorKind(decl) == CXCursor_ParmDecl;
	v->shared = cursor_annotated(decl, "agile_shared");
	v->decl_region = v->param ? -1 : REGION_CONTROL;
	return (int)k->nr_vars++;
}

/* Whether @decl is a variable (or parameter) of the function @fn. */
static bool local_of(CXCursor decl, CXCursor fn)
{
	enum CXCursorKind kind = clang_getCursorKind(decl);

	if (kind != CXCursor_VarDecl && kind != CXCursor_ParmDecl)
		return false;
	/* lexical: a block-scope extern's semantic parent is the file */
	for (CXCursor p = clang_getCursorLexicalParent(decl);
	     !clang_Cursor_isNull(p) &&
	     clang_getCursorKind(p) != CXCursor_TranslationUnit;
	     p = clang_getCursorLexicalParent(p))
		if (clang_equalCursors(p, fn))
			return true;
	return false;
}

/* Which of the function's variables each of its tokens names. */
static void resolve_vars(struct kernel *k)
{
	struct source *src = k->src;
	struct func *fn = k->fn;

	for (unsigned i = fn->first; i < fn->last; i++) {
		struct token *t = &src->tok[i];
		enum CXCursorKind kind = clang_getCursorKind(t->cursor);
		CXCursor decl;
		unsigned off;

		t->var = -1;
		t->var_decl = false;
		if (t->kind != CXToken_Identifier)
			continue;
		if (kind == CXCursor_DeclRefExpr) {
			decl = clang_getCursorReferenced(t->cursor);
			if (local_of(decl, fn->cursor))
				t->var = var_of(k, decl);
		} else if (kind == CXCursor_VarDecl ||
			   kind == CXCursor_ParmDecl) {
			clang_getFileLocation(
				clang_getCursorLocation(t->cursor), NULL, NULL,
				NULL, &off);
			if (off == t->offset &&
			    local_of(t->cursor, fn->cursor)) {
				t->var = var_of(k, t->cursor);
				t->var_decl = true;
			}
		}
	}
}

struct params {
	struct kernel *k;
	CXCursor body;
	bool has_body;
};

static enum CXChildVisitResult collect_params(CXCursor c, CXCursor parent,
					      CXClientData data)
{
	struct params *p = data;
	struct kernel *k = p->k;

	(void)parent;
	if (clang_getCursorKind(c) == CXCursor_ParmDecl) {
		k->params = realloc(k->params,
				    (k->nr_params + 1) * sizeof(*k->params));
		if (!k->params)
			abort();
		k->params[k->nr_params++] = (unsigned)var_of(k, c);
	} else if (clang_getCursorKind(c) == CXCursor_CompoundStmt) {
		p->body = c;
		p->has_body = true;
	}
	return CXChildVisit_Continue;
}

int kernel_build(struct kernel *k, struct source *src, struct func *fn)
{
	struct params p = { .k = k, .has_body = false };
	struct builder b = { .k = k };
	int errors = src->errors;

	memset(k, 0, sizeof(*k));
	k->src = src;
	k->fn = fn;
	k->regions = calloc(1, sizeof(*k->regions));
	clang_visitChildren(fn->cursor, collect_params, &p);
	resolve_vars(k);
	if (!p.has_body)
		return -1;
	k->body = node_new(NODE_SEQ, p.body);
	cursor_tokens(src, p.body, &k->body->first, &k->body->last);
	{
		struct stmt_walk w = { &b, k->body };

		clang_visitChildren(p.body, walk_compound, &w);
	}
	return src->errors > errors ? -1 : 0;
}

static void node_free(struct node *n)
{
	if (!n)
		return;
	for (unsigned i = 0; i < n->nr_kids; i++)
		node_free(n->kids[i]);
	free(n->kids);
	free(n);
}

void kernel_free(struct kernel *k)
{
	node_free(k->body);
	for (unsigned i = 0; i < k->nr_vars; i++)
		free(k->vars[i].name);
	free(k->vars);
	free(k->params);
	free(k->regions);
	free(k->warps);
}
