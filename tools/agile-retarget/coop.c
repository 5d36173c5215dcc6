// SPDX-License-Identifier: MIT
/*
 * coop.c - CUDA's cooperative groups, the usual subset, mapped onto what
 * the translator already knows (docs/retarget.md, "Cooperative groups"):
 * inline.c rewrites each use before the translation.  A thread_block is
 * the block: sync() is __syncthreads(), thread_rank() the flat thread id.
 * A thread_block_tile<W> (W a power of two up to 32) is a segment of W
 * lanes of the 32-lane warps: sync() is __syncwarp() (the block's barrier
 * here), its shuffles are the warp's with width W, its votes (W = 32 only)
 * the warp's, its ranks the flat id's remainder and quotient by W.  The
 * groups' own declarations ("cg::thread_block b = cg::this_thread_block();")
 * are dropped: nothing else reads them.  Grid groups, coalesced groups,
 * run-time tile sizes and any other use of a group are refused.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "retarget.h"

#define FLAT \
	"((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x)"
#define NT "(blockDim.x * blockDim.y * blockDim.z)"
#define TEXT(buf, ...) snprintf(buf, sizeof(buf), __VA_ARGS__)

struct coop {
	struct source *src;
	struct coop_repl *r;
	unsigned nr;
	int failed;
	bool *forced;
	unsigned fn; /* the function being walked */
};

/* 1 a thread_block, 2 a thread_block_tile<*w>, -1 another group, 0 none. */
int coop_type(CXType t, unsigned *w)
{
	CXString s;
	const char *p;
	int kind = 0;

	if (t.kind == CXType_LValueReference ||
	    t.kind == CXType_RValueReference)
		t = clang_getPointeeType(t);
	t = clang_getCanonicalType(t);
	s = clang_getTypeSpelling(t);
	p = clang_getCString(s);
	if (!strncmp(p, "const ", 6))
		p += 6;
	if (!strncmp(p, "cooperative_groups::", 20)) {
		p += 20;
		if (!strcmp(p, "thread_block")) {
			kind = 1;
		} else if (!strncmp(p, "thread_block_tile<", 18)) {
			kind = 2;
			if (w)
				*w = (unsigned)strtoul(p + 18, NULL, 10);
		} else {
			kind = -1;
		}
	}
	clang_disposeString(s);
	return kind;
}

static struct coop_repl *repl_add(struct coop *c, unsigned first, unsigned last)
{
	struct coop_repl *r = realloc(c->r, (c->nr + 1) * sizeof(*r));

	if (!r) {
		c->failed = -2;
		return NULL;
	}
	c->r = r;
	r = &c->r[c->nr++];
	memset(r, 0, sizeof(*r));
	r->first = first;
	r->last = last;
	return r;
}

static bool in_namespace(CXCursor decl)
{
	CXCursor p = clang_getCursorSemanticParent(decl);
	CXString s;
	bool yes;

	while (clang_getCursorKind(p) != CXCursor_Namespace &&
	       !clang_Cursor_isNull(p) &&
	       clang_getCursorKind(p) != CXCursor_TranslationUnit)
		p = clang_getCursorSemanticParent(p);
	if (clang_getCursorKind(p) != CXCursor_Namespace)
		return false;
	s = clang_getCursorSpelling(p);
	yes = !strcmp(clang_getCString(s), "cooperative_groups");
	clang_disposeString(s);
	return yes;
}

struct first_kid {
	CXCursor c;
	bool found;
};

static enum CXChildVisitResult first_kid(CXCursor c, CXCursor parent,
					 CXClientData data)
{
	struct first_kid *k = data;

	(void)parent;
	k->c = c;
	k->found = true;
	return CXChildVisit_Break;
}

/* A member call on a group: @name, the object's group kind and tile. */
static void member_call(struct coop *c, CXCursor call, const char *name,
			unsigned first, unsigned last)
{
	struct source *src = c->src;
	struct first_kid callee = { .found = false }, obj = { .found = false };
	int nr = clang_Cursor_getNumArguments(call), kind;
	unsigned w = 32;
	struct coop_repl *r;
	const char *op = NULL;
	unsigned name_tok = first;

	clang_visitChildren(call, first_kid, &callee);
	if (callee.found)
		clang_visitChildren(callee.c, first_kid, &obj);
	kind = obj.found ? coop_type(clang_getCursorType(obj.c), &w) : 0;
	for (unsigned i = first; i < last; i++)
		if (tok_is(src, i, name)) {
			name_tok = i;
			break;
		}
	if (kind <= 0) {
		diag(src, name_tok,
		     "%s() of this cooperative group is not handled: only thread_block and thread_block_tile<N> (docs/retarget.md)",
		     name);
		c->failed = -1;
		return;
	}
	if (kind == 2 && (!w || w > 32 || (w & (w - 1)))) {
		diag(src, name_tok,
		     "thread_block_tile<%u>: only a power of two from 1 to 32 is handled",
		     w);
		c->failed = -1;
		return;
	}
	r = repl_add(c, first, last);
	if (!r)
		return;
	c->forced[c->fn] = true;
	if (!strcmp(name, "sync")) {
		snprintf(r->pre, sizeof(r->pre), "%s()",
			 kind == 1 ? "__syncthreads" : "__syncwarp");
	} else if (!strcmp(name, "thread_rank")) {
		if (kind == 1)
			snprintf(r->pre, sizeof(r->pre), "%s", FLAT);
		else
			TEXT(r->pre, "(" FLAT " %% %uu)", w);
	} else if (!strcmp(name, "size") || !strcmp(name, "num_threads")) {
		if (kind == 1)
			snprintf(r->pre, sizeof(r->pre), "%s", NT);
		else
			snprintf(r->pre, sizeof(r->pre), "%uu", w);
	} else if (kind == 1 && !strcmp(name, "group_index")) {
		snprintf(r->pre, sizeof(r->pre), "blockIdx");
	} else if (kind == 1 && !strcmp(name, "thread_index")) {
		snprintf(r->pre, sizeof(r->pre), "threadIdx");
	} else if (kind == 1 && (!strcmp(name, "group_dim") ||
				 !strcmp(name, "dim_threads"))) {
		snprintf(r->pre, sizeof(r->pre), "blockDim");
	} else if (kind == 2 && !strcmp(name, "meta_group_rank")) {
		snprintf(r->pre, sizeof(r->pre), "(%s / %uu)", FLAT, w);
	} else if (kind == 2 && !strcmp(name, "meta_group_size")) {
		snprintf(r->pre, sizeof(r->pre), "((%s + %uu) / %uu)", NT,
			 w - 1, w);
	} else if (kind == 2 && nr == 2 &&
		   (!strcmp(name, "shfl") || !strcmp(name, "shfl_down") ||
		    !strcmp(name, "shfl_up") || !strcmp(name, "shfl_xor"))) {
		op = name;
		snprintf(r->pre, sizeof(r->pre), "__%s_sync(0xffffffff, ",
			 name);
		snprintf(r->post, sizeof(r->post), ", %u)", w);
	} else if (kind == 2 && nr == 1 &&
		   (!strcmp(name, "any") || !strcmp(name, "all") ||
		    !strcmp(name, "ballot"))) {
		if (w != 32) {
			diag(src, name_tok,
			     "%s() of a thread_block_tile<%u>: only of a tile of 32 is handled",
			     name, w);
			c->failed = -1;
			c->nr--;
			return;
		}
		op = name;
		snprintf(r->pre, sizeof(r->pre), "__%s_sync(0xffffffff, ",
			 name);
		snprintf(r->post, sizeof(r->post), ")");
	} else {
		diag(src, name_tok,
		     "%s() of a cooperative group is not handled (docs/retarget.md)",
		     name);
		c->failed = -1;
		c->nr--;
		return;
	}
	if (op) {
		unsigned af, al, x;

		cursor_tokens(src, clang_Cursor_getArgument(call, 0), &af, &x);
		cursor_tokens(src,
			      clang_Cursor_getArgument(call, (unsigned)nr - 1),
			      &x, &al);
		r->arg_first = af;
		r->arg_last = al;
	}
}

/* A call of a free function of the namespace. */
static void free_call(struct coop *c, CXCursor call, const char *name,
		      unsigned first, unsigned last)
{
	struct source *src = c->src;
	int nr = clang_Cursor_getNumArguments(call);
	struct coop_repl *r;

	if (!strcmp(name, "sync") && nr == 1) {
		unsigned w = 32;
		int kind = coop_type(
			clang_getCursorType(clang_Cursor_getArgument(call, 0)),
			&w);

		if (kind > 0) {
			r = repl_add(c, first, last);
			if (r) {
				snprintf(r->pre, sizeof(r->pre), "%s()",
					 kind == 1 ? "__syncthreads" :
						     "__syncwarp");
				c->forced[c->fn] = true;
			}
			return;
		}
	} else if ((!strcmp(name, "this_thread_block") && !nr) ||
		   (!strcmp(name, "tiled_partition") && nr == 1)) {
		/* only in what is dropped or replaced: checked after */
		r = repl_add(c, first, last);
		if (r)
			r->check_only = true;
		return;
	}
	diag(src, first,
	     "cooperative_groups::%s() is not handled: only this_thread_block(), tiled_partition<N>() and sync() (docs/retarget.md)",
	     name);
	c->failed = -1;
}

static enum CXChildVisitResult walk(CXCursor cur, CXCursor parent,
				    CXClientData data)
{
	struct coop *c = data;
	struct source *src = c->src;
	enum CXCursorKind kind = clang_getCursorKind(cur);
	unsigned first, last;

	(void)parent;
	if (kind == CXCursor_VarDecl) {
		int k = coop_type(clang_getCursorType(cur), NULL);

		if (!k)
			return CXChildVisit_Recurse;
		cursor_tokens(src, cur, &first, &last);
		if (k < 0 || !tok_is(src, last, ";") ||
		    tok_is(src, first - 1, ",")) {
			diag(src, first,
			     "this cooperative group is not handled: only \"thread_block b = this_thread_block();\" and \"thread_block_tile<N> t = tiled_partition<N>(b);\", one a declaration (docs/retarget.md)");
			c->failed = -1;
			return CXChildVisit_Continue;
		}
		{
			struct coop_repl *r = repl_add(c, first, last + 1);

			if (r) {
				r->drop = true;
				c->forced[c->fn] = true;
			}
		}
		return CXChildVisit_Recurse;
	}
	if (kind == CXCursor_CallExpr) {
		CXCursor ref = clang_getCursorReferenced(cur);
		enum CXCursorKind rk = clang_getCursorKind(ref);
		CXString s;

		if (clang_Cursor_isNull(ref) || rk == CXCursor_Constructor ||
		    !in_namespace(ref))
			return CXChildVisit_Recurse;
		cursor_tokens(src, cur, &first, &last);
		s = clang_getCursorSpelling(ref);
		if (rk == CXCursor_CXXMethod)
			member_call(c, cur, clang_getCString(s), first, last);
		else
			free_call(c, cur, clang_getCString(s), first, last);
		clang_disposeString(s);
		return CXChildVisit_Recurse;
	}
	return CXChildVisit_Recurse;
}

int coop_collect(struct source *src, bool *forced, struct coop_repl **repl,
		 unsigned *nr)
{
	struct coop c = { .src = src, .forced = forced };

	for (unsigned f = 0; f < src->nr_funcs; f++) {
		int nr_args =
			clang_Cursor_getNumArguments(src->funcs[f].cursor);

		c.fn = f;
		clang_visitChildren(src->funcs[f].cursor, walk, &c);
		for (int a = 0; a < nr_args; a++) {
			CXCursor p = clang_Cursor_getArgument(
				src->funcs[f].cursor, (unsigned)a);

			if (coop_type(clang_getCursorType(p), NULL) &&
			    !src->funcs[f].kernel)
				forced[f] = true;
		}
	}
	/* this_thread_block(), tiled_partition<N>(): only where dropped */
	for (unsigned i = 0; i < c.nr && c.failed != -2; i++) {
		bool inside = false;

		if (!c.r[i].check_only)
			continue;
		for (unsigned j = 0; j < c.nr && !inside; j++)
			inside = j != i && !c.r[j].check_only &&
				 c.r[j].first <= c.r[i].first &&
				 c.r[i].last <= c.r[j].last;
		if (!inside) {
			diag(src, c.r[i].first,
			     "%s() is handled only to declare a group or as the object of its call (docs/retarget.md)",
			     src->tok[c.r[i].first +
				      (tok_is(src, c.r[i].first + 1, "::") ? 2 :
									     0)]
				     .text);
			c.failed = -1;
		}
	}
	*repl = c.r;
	*nr = c.nr;
	return c.failed;
}
