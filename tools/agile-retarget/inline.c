// SPDX-License-Identifier: MIT
/*
 * inline.c - __device__ functions that hold barriers (__syncthreads(),
 * __syncwarp(), warp shuffles and votes, or a call of such a function),
 * inlined at their calls before the translation (docs/retarget.md,
 * "Inlining").  The source's text is rewritten and parsed again: each
 * call, a statement "f(a);", "x = f(a);" or "T x = f(a);", becomes
 *
 *	{ RT _ret_iN; { P p_iN = (a); ... body ... _ret_iN = (e); }
 *	  x = _ret_iN; }
 *
 * with every parameter and local of the helper renamed NAME_iN, its
 * final "return e;" an assignment; the helper's definition is dropped.
 * Then the kernel's regions, variance and promotion see the body as if it
 * had been written there.  A map from the new text's bytes back to the
 * source's keeps every diagnostic at the source's line and column (in the
 * helper for its own tokens) and notes the call a token was inlined at.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "retarget.h"

enum site_form {
	SITE_STMT, /* f(a); */
	SITE_ASSIGN, /* lhs op= f(a); */
	SITE_DECL, /* T x = f(a); */
};

struct site {
	unsigned fn; /* the function it is in */
	unsigned callee;
	enum site_form form;
	unsigned s, e; /* the statement's tokens [s, e), ';' included */
	unsigned c0, c1; /* the call's tokens [c0, c1) */
};

struct helper {
	bool barrier;
	unsigned body_open, body_close; /* '{' and '}' */
	unsigned ret_first, ret_last; /* its final return statement, or 0 */
	int state; /* recursion check: 0 new, 1 on the path, 2 done */
};

struct inliner {
	struct source *src;
	struct helper *h;
	struct site *sites;
	unsigned nr_sites;
	struct coop_repl *repl; /* coop.c */
	unsigned nr_repl;
	char *buf;
	size_t len, cap;
	struct inline_seg *segs;
	unsigned nr_segs, cap_segs;
	unsigned counter;
	bool nomem;
};

struct ctx {
	unsigned fn; /* the helper whose body is copied */
	unsigned n; /* its instance: the names' suffix */
	unsigned at; /* the kernel's call: 1 + its byte offset */
};

static void put(struct inliner *in, const char *text, size_t len, unsigned orig,
		bool synthetic, unsigned at)
{
	struct inline_seg *sg;

	if (!len)
		return;
	if (in->len + len + 1 > in->cap) {
		size_t cap = (in->cap + len + 1) * 2;
		char *b = realloc(in->buf, cap);

		if (!b) {
			in->nomem = true;
			return;
		}
		in->buf = b;
		in->cap = cap;
	}
	if (in->nr_segs == in->cap_segs) {
		unsigned cap = in->cap_segs ? in->cap_segs * 2 : 64;
		struct inline_seg *s = realloc(in->segs, cap * sizeof(*s));

		if (!s) {
			in->nomem = true;
			return;
		}
		in->segs = s;
		in->cap_segs = cap;
	}
	sg = &in->segs[in->nr_segs++];
	sg->start = (unsigned)in->len;
	sg->orig = orig;
	sg->synthetic = synthetic;
	sg->at = at;
	memcpy(in->buf + in->len, text, len);
	in->len += len;
	in->buf[in->len] = '\0';
}

/* The source's bytes [from, to), as they are. */
static void copy(struct inliner *in, unsigned from, unsigned to,
		 const struct ctx *c)
{
	if (to > from)
		put(in, in->src->text + from, to - from, from, false,
		    c ? c->at : 0);
}

static void synth(struct inliner *in, unsigned orig_tok, const struct ctx *c,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void synth(struct inliner *in, unsigned orig_tok, const struct ctx *c,
		  const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(text)) {
		in->nomem = true;
		return;
	}
	put(in, text, (size_t)n, in->src->tok[orig_tok].offset, true,
	    c ? c->at : 0);
}

static unsigned cursor_offset(CXCursor c)
{
	unsigned off;

	clang_getFileLocation(clang_getCursorLocation(c), NULL, NULL, NULL,
			      &off);
	return off;
}

/* Token @i names a parameter or local of function @fn: true. */
static bool helper_local(const struct source *src, unsigned i, unsigned fn)
{
	const struct token *t = &src->tok[i];
	enum CXCursorKind kind = clang_getCursorKind(t->cursor);
	const struct func *f = &src->funcs[fn];
	CXCursor ref;
	unsigned off;

	if (t->kind != CXToken_Identifier)
		return false;
	if (kind == CXCursor_DeclRefExpr)
		ref = clang_getCursorReferenced(t->cursor);
	else if ((kind == CXCursor_VarDecl || kind == CXCursor_ParmDecl) &&
		 cursor_offset(t->cursor) == t->offset)
		ref = t->cursor;
	else
		return false;
	kind = clang_getCursorKind(ref);
	if (kind != CXCursor_VarDecl && kind != CXCursor_ParmDecl)
		return false;
	off = cursor_offset(ref);
	return off >= src->tok[f->first].offset &&
	       off < src->tok[f->last - 1].end;
}

static const struct site *site_at(const struct inliner *in, unsigned tok)
{
	for (unsigned i = 0; i < in->nr_sites; i++)
		if (in->sites[i].s == tok)
			return &in->sites[i];
	return NULL;
}

static void emit_site(struct inliner *in, const struct site *st,
		      const struct ctx *c);

/* The widest rewrite of a cooperative group's use at token @tok. */
static const struct coop_repl *repl_at(const struct inliner *in, unsigned tok)
{
	const struct coop_repl *best = NULL;

	for (unsigned i = 0; i < in->nr_repl; i++) {
		const struct coop_repl *r = &in->repl[i];

		if (r->first == tok && !r->check_only &&
		    (!best || r->last > best->last))
			best = r;
	}
	return best;
}

static void emit_tokens(struct inliner *in, unsigned first, unsigned last,
			const struct ctx *c, unsigned nosite);

/* @r's text; the position after it. */
static unsigned emit_repl(struct inliner *in, const struct coop_repl *r,
			  const struct ctx *c)
{
	if (r->drop) {
		synth(in, r->first, c, " ");
		return r->last;
	}
	synth(in, r->first, c, "%s", r->pre);
	if (r->arg_last > r->arg_first) {
		emit_tokens(in, r->arg_first, r->arg_last, c, ~0u);
		synth(in, r->arg_last - 1, c, "%s", r->post);
	}
	return r->last;
}

/*
 * Tokens [first, last) of the source, the bytes between them too: the
 * calls to inline expanded (but the one at @nosite), in a helper's body
 * (@c) its locals renamed and its final return an assignment.
 */
static void emit_tokens(struct inliner *in, unsigned first, unsigned last,
			const struct ctx *c, unsigned nosite)
{
	struct source *src = in->src;
	unsigned pos;

	if (first >= last)
		return;
	pos = src->tok[first].offset;
	for (unsigned i = first; i < last && !in->nomem;) {
		const struct site *st = i != nosite ? site_at(in, i) : NULL;
		const struct helper *h = c ? &in->h[c->fn] : NULL;
		const struct coop_repl *r = st ? NULL : repl_at(in, i);

		if (r) {
			copy(in, pos, src->tok[i].offset, c);
			i = emit_repl(in, r, c);
			pos = src->tok[i - 1].end;
		} else if (st) {
			copy(in, pos, src->tok[i].offset, c);
			emit_site(in, st, c);
			i = st->e;
			pos = src->tok[i - 1].end;
		} else if (h && h->ret_last && i == h->ret_first) {
			copy(in, pos, src->tok[i].offset, c);
			if (h->ret_last - h->ret_first > 2) {
				synth(in, i, c, "_ret_i%u = (", c->n);
				emit_tokens(in, i + 1, h->ret_last - 1, c, ~0u);
				synth(in, h->ret_last - 1, c, ");");
			}
			i = h->ret_last;
			pos = src->tok[i - 1].end;
		} else if (c && helper_local(src, i, c->fn)) {
			copy(in, pos, src->tok[i].offset, c);
			synth(in, i, c, "%s_i%u", src->tok[i].text, c->n);
			pos = src->tok[i].end;
			i++;
		} else {
			i++;
		}
	}
	copy(in, pos, src->tok[last - 1].end, c);
}

static void emit_site(struct inliner *in, const struct site *st,
		      const struct ctx *c)
{
	struct source *src = in->src;
	const struct func *g = &src->funcs[st->callee];
	const struct helper *h = &in->h[st->callee];
	CXType ret = clang_getResultType(clang_getCursorType(g->cursor));
	int nr = clang_Cursor_getNumArguments(g->cursor);
	struct ctx inner = {
		.fn = st->callee,
		.n = ++in->counter,
		.at = c ? c->at : src->tok[st->c0].offset + 1,
	};
	bool value = ret.kind != CXType_Void;
	unsigned arg = st->c0 + 2; /* after "f (" */
	char *text = NULL;
	size_t len = 0;
	FILE *m;

	if (st->form != SITE_DECL)
		synth(in, st->s, c, "{ ");
	if (value) {
		char name[32];

		snprintf(name, sizeof(name), "_ret_i%u", inner.n);
		m = open_memstream(&text, &len);
		if (!m) {
			in->nomem = true;
			return;
		}
		decl_text(m, ret, name, "");
		fclose(m);
		synth(in, st->c0, c, "%s; ", text);
		free(text);
		text = NULL;
	}
	synth(in, st->c0, c, "{ ");
	for (int p = 0; p < nr; p++) {
		CXCursor pc = clang_Cursor_getArgument(g->cursor, (unsigned)p);
		CXString s = clang_getCursorSpelling(pc);
		unsigned end = arg;
		int depth = 0;
		char name[256];

		/* the argument: to the ',' or ')' at depth 0 */
		for (; end < st->c1 - 1; end++) {
			if (tok_is(src, end, "(") || tok_is(src, end, "[") ||
			    tok_is(src, end, "{"))
				depth++;
			else if (tok_is(src, end, ")") ||
				 tok_is(src, end, "]") || tok_is(src, end, "}"))
				depth--;
			else if (!depth && tok_is(src, end, ","))
				break;
		}
		snprintf(name, sizeof(name), "%s_i%u", clang_getCString(s),
			 inner.n);
		clang_disposeString(s);
		if (coop_type(clang_getCursorType(pc), NULL)) {
			arg = end + 1; /* a group: its uses are rewritten */
			continue;
		}
		m = open_memstream(&text, &len);
		if (!m) {
			in->nomem = true;
			return;
		}
		decl_text(m, clang_getCursorType(pc), name, "");
		fclose(m);
		synth(in, arg < end ? arg : st->c0, c, "%s = (", text);
		free(text);
		text = NULL;
		emit_tokens(in, arg, end, c, ~0u);
		synth(in, end, c, "); ");
		arg = end + 1;
	}
	emit_tokens(in, h->body_open + 1, h->body_close, &inner, ~0u);
	synth(in, st->c1 - 1, c, " }");
	if (st->form != SITE_STMT) {
		/* the statement, the call replaced by the result */
		synth(in, st->s, c, " ");
		emit_tokens(in, st->s, st->c0, c, st->s);
		synth(in, st->c0, c, "_ret_i%u", inner.n);
		emit_tokens(in, st->c1, st->e, c, ~0u);
	}
	if (st->form != SITE_DECL)
		synth(in, st->e - 1, c, " }");
}

static bool is_assign_op(const struct source *src, unsigned i)
{
	static const char *const ops[] = { "=",	 "+=", "-=", "*=", "/=",
					   "%=", "&=", "|=", "^=" };

	for (unsigned k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
		if (tok_is(src, i, ops[k]))
			return true;
	return false;
}

/* Token @i ends what comes before a statement (in @fn's body). */
static bool stmt_boundary(const struct source *src, unsigned i)
{
	if (tok_is(src, i, ";") || tok_is(src, i, "{") || tok_is(src, i, "}") ||
	    tok_is(src, i, "else") || tok_is(src, i, "do"))
		return true;
	if (tok_is(src, i, ")")) {
		/* if (...), for (...), while (...): not a cast */
		int depth = 0;

		for (unsigned j = i + 1; j-- > 0;) {
			if (tok_is(src, j, ")"))
				depth++;
			else if (tok_is(src, j, "(") && --depth == 0)
				return j > 0 && (tok_is(src, j - 1, "if") ||
						 tok_is(src, j - 1, "for") ||
						 tok_is(src, j - 1, "while"));
		}
	}
	return false;
}

/* The call of barrier helper @callee whose name is token @i, in @fn. */
static int add_site(struct inliner *in, unsigned fn, unsigned i)
{
	struct source *src = in->src;
	const struct func *f = &src->funcs[fn];
	struct site st = { .fn = fn, .callee = (unsigned)src->tok[i].func };
	const char *name = src->funcs[st.callee].name;
	struct site *sites;
	unsigned close, s;

	if (!tok_is(src, i + 1, "(")) {
		diag(src, i,
		     "%s() holds a barrier and is inlined: taking its address is not handled",
		     name);
		return -1;
	}
	close = tok_close(src, i + 1, f->last);
	st.c0 = i;
	st.c1 = close + 1;
	st.e = close + 2;
	if (!tok_is(src, close + 1, ";"))
		goto refuse;
	if (stmt_boundary(src, i - 1)) {
		st.form = SITE_STMT;
		st.s = i;
	} else if (is_assign_op(src, i - 1)) {
		bool decl = false;

		for (s = i - 1; s > f->first && !stmt_boundary(src, s - 1); s--)
			if (tok_is(src, s - 1, "(") ||
			    tok_is(src, s - 1, "++") ||
			    tok_is(src, s - 1, "--") ||
			    tok_is(src, s - 1, ",") ||
			    tok_is(src, s - 1, "?") || is_assign_op(src, s - 1))
				goto refuse;
		if (i >= 2 &&
		    clang_getCursorKind(src->tok[i - 2].cursor) ==
			    CXCursor_VarDecl &&
		    cursor_offset(src->tok[i - 2].cursor) ==
			    src->tok[i - 2].offset)
			decl = true;
		if (decl &&
		    (!tok_is(src, i - 1, "=") || tok_is(src, s - 1, ")")))
			goto refuse;
		st.form = decl ? SITE_DECL : SITE_ASSIGN;
		st.s = s;
	} else {
		goto refuse;
	}
	sites = realloc(in->sites, (in->nr_sites + 1) * sizeof(*sites));
	if (!sites) {
		in->nomem = true;
		return -1;
	}
	in->sites = sites;
	in->sites[in->nr_sites++] = st;
	return 0;
refuse:
	diag(src, i,
	     "%s() holds a barrier and is inlined: a call of it is handled only as a statement of its own, \"f(...);\", \"x = f(...);\" or \"T x = f(...);\" (docs/retarget.md)",
	     name);
	return -1;
}

static bool barrier_name(const struct source *src, unsigned i)
{
	return tok_is(src, i + 1, "(") &&
	       (tok_is(src, i, "__syncthreads") ||
		tok_is(src, i, "__syncwarp") || warp_name(src->tok[i].text));
}

struct last_child {
	CXCursor c;
	bool found;
};

static enum CXChildVisitResult last_child(CXCursor c, CXCursor parent,
					  CXClientData data)
{
	struct last_child *l = data;

	(void)parent;
	l->c = c;
	l->found = true;
	return CXChildVisit_Continue;
}

/* A helper's body, its final return, its parameters: -1 when refused. */
static int helper_check(struct inliner *in, unsigned fn)
{
	struct source *src = in->src;
	struct func *f = &src->funcs[fn];
	struct helper *h = &in->h[fn];
	struct last_child body = { .found = false }, ret = { .found = false };
	CXType rt = clang_getResultType(clang_getCursorType(f->cursor));
	int nr = clang_Cursor_getNumArguments(f->cursor);
	int rc = 0;

	clang_visitChildren(f->cursor, last_child, &body);
	if (!body.found ||
	    clang_getCursorKind(body.c) != CXCursor_CompoundStmt) {
		diag(src, f->name_tok, "%s(): no body to inline", f->name);
		return -1;
	}
	cursor_tokens(src, body.c, &h->body_open, &h->body_close);
	h->body_close--;
	clang_visitChildren(body.c, last_child, &ret);
	if (ret.found && clang_getCursorKind(ret.c) == CXCursor_ReturnStmt)
		cursor_tokens(src, ret.c, &h->ret_first, &h->ret_last);
	if (h->ret_last && tok_is(src, h->ret_last, ";"))
		h->ret_last++;
	if (rt.kind != CXType_Void && !h->ret_last) {
		diag(src, f->name_tok,
		     "%s() holds a barrier and is inlined: it must end in \"return value;\"",
		     f->name);
		rc = -1;
	}
	for (unsigned i = h->body_open; i < h->body_close; i++)
		if (tok_is(src, i, "return") && i != h->ret_first) {
			diag(src, i,
			     "return before the end of %s(), which holds a barrier and is inlined, is not handled",
			     f->name);
			rc = -1;
		}
	for (int p = 0; p < nr; p++) {
		CXCursor pc = clang_Cursor_getArgument(f->cursor, (unsigned)p);
		CXType t = clang_getCursorType(pc);
		unsigned first, last;

		cursor_tokens(src, pc, &first, &last);
		CXString s = clang_getCursorSpelling(pc);
		bool unnamed = !*clang_getCString(s);

		clang_disposeString(s);
		if (coop_type(t, NULL) > 0)
			continue;
		if (t.kind == CXType_LValueReference ||
		    t.kind == CXType_RValueReference || unnamed) {
			diag(src, first,
			     "a parameter of %s(), which holds a barrier and is inlined, that is a reference or unnamed is not handled",
			     f->name);
			rc = -1;
		}
	}
	if (clang_Cursor_isVariadic(f->cursor)) {
		diag(src, f->name_tok,
		     "%s() holds a barrier: a variadic one is not inlined",
		     f->name);
		rc = -1;
	}
	return rc;
}

/* The helpers @fn calls, depth first: a call back into the path is refused. */
static int recursion_check(struct inliner *in, unsigned fn)
{
	int rc = 0;

	in->h[fn].state = 1;
	for (unsigned i = 0; i < in->nr_sites; i++) {
		const struct site *st = &in->sites[i];

		if (st->fn != fn)
			continue;
		if (in->h[st->callee].state == 1) {
			diag(in->src, st->c0,
			     "%s() holds a barrier and is inlined: a recursive call is not handled",
			     in->src->funcs[st->callee].name);
			rc = -1;
		} else if (!in->h[st->callee].state &&
			   recursion_check(in, st->callee)) {
			rc = -1;
		}
	}
	in->h[fn].state = 2;
	return rc;
}

/* A group read anywhere but in a rewritten use or a call to inline. */
static int group_uses(struct inliner *in)
{
	struct source *src = in->src;
	int rc = 0;

	for (unsigned i = 0; i < src->nr_tok; i++) {
		const struct token *t = &src->tok[i];
		bool ok = false;
		CXCursor ref;

		if (t->kind != CXToken_Identifier ||
		    clang_getCursorKind(t->cursor) != CXCursor_DeclRefExpr)
			continue;
		ref = clang_getCursorReferenced(t->cursor);
		if ((clang_getCursorKind(ref) != CXCursor_VarDecl &&
		     clang_getCursorKind(ref) != CXCursor_ParmDecl) ||
		    !coop_type(clang_getCursorType(ref), NULL))
			continue;
		for (unsigned r = 0; r < in->nr_repl && !ok; r++)
			ok = !in->repl[r].check_only &&
			     in->repl[r].first <= i && i < in->repl[r].last;
		for (unsigned s = 0; s < in->nr_sites && !ok; s++)
			ok = in->sites[s].c0 < i && i < in->sites[s].c1;
		if (!ok) {
			diag(src, i,
			     "this use of cooperative group %s is not handled: only its calls, and as an argument of a __device__ function (docs/retarget.md)",
			     t->text);
			rc = -1;
		}
	}
	return rc;
}

int inline_rewrite(struct source *src, char **text, size_t *size,
		   struct inline_seg **segs, unsigned *nr_segs)
{
	struct inliner in = { .src = src };
	unsigned nr = src->nr_funcs, pos = 0;
	bool any = false, more = true, *forced;
	int rc = 0;

	if (!nr)
		return 0;
	in.h = calloc(nr, sizeof(*in.h));
	forced = calloc(nr, sizeof(*forced));
	if (!in.h || !forced) {
		free(in.h);
		free(forced);
		return -2;
	}
	rc = coop_collect(src, forced, &in.repl, &in.nr_repl);
	if (rc == -2)
		in.nomem = true;
	any = in.nr_repl > 0;
	/* the helpers that hold a barrier, or call one that does */
	for (unsigned f = 0; f < nr; f++) {
		const struct func *fn = &src->funcs[f];

		if (forced[f] && !fn->kernel)
			in.h[f].barrier = any = true;
		for (unsigned i = fn->first; i < fn->last && !fn->kernel; i++)
			if (barrier_name(src, i))
				in.h[f].barrier = any = true;
	}
	free(forced);
	while (any && more) {
		more = false;
		for (unsigned f = 0; f < nr; f++) {
			const struct func *fn = &src->funcs[f];

			for (unsigned i = fn->first;
			     i < fn->last && !fn->kernel && !in.h[f].barrier;
			     i++)
				if (src->tok[i].func >= 0 &&
				    in.h[src->tok[i].func].barrier)
					in.h[f].barrier = more = true;
		}
	}
	if (!any && !rc) {
		free(in.h);
		free(in.repl);
		return 0;
	}
	for (unsigned f = 0; f < nr; f++)
		if (in.h[f].barrier && helper_check(&in, f))
			rc = -1;
	/* every use of such a helper: a call to inline */
	for (unsigned i = 0; i < src->nr_tok; i++) {
		int g = src->tok[i].func;
		unsigned f;

		if (g < 0 || !in.h[g].barrier || i == src->funcs[g].name_tok)
			continue;
		for (f = 0; f < nr; f++)
			if (i >= src->funcs[f].first && i < src->funcs[f].last)
				break;
		if (f == nr || (!src->funcs[f].kernel && !in.h[f].barrier)) {
			diag(src, i,
			     "%s() holds a barrier: it is inlined into kernels and __device__ functions only",
			     src->funcs[g].name);
			rc = -1;
		} else if (add_site(&in, f, i)) {
			rc = -1;
		}
	}
	for (unsigned f = 0; f < nr && !in.nomem; f++)
		if (in.h[f].barrier && !in.h[f].state &&
		    recursion_check(&in, f))
			rc = -1;
	if (!in.nomem && group_uses(&in))
		rc = -1;
	if (rc || in.nomem)
		goto out;
	/* the new text: the helpers' definitions dropped, the calls inlined */
	pos = 0;
	for (unsigned i = 0; i < src->nr_tok && !in.nomem;) {
		const struct site *st = site_at(&in, i);
		unsigned f;

		for (f = 0; f < nr; f++)
			if (in.h[f].barrier && src->funcs[f].first == i)
				break;
		const struct coop_repl *r = repl_at(&in, i);

		if (r && f == nr && !st) {
			copy(&in, pos, src->tok[i].offset, NULL);
			i = emit_repl(&in, r, NULL);
			pos = src->tok[i - 1].end;
		} else if (f < nr) {
			copy(&in, pos, src->tok[i].offset, NULL);
			synth(&in, i, NULL,
			      "/* %s(): inlined where it is called */",
			      src->funcs[f].name);
			i = src->funcs[f].last;
			pos = src->tok[i - 1].end;
		} else if (st) {
			copy(&in, pos, src->tok[i].offset, NULL);
			emit_site(&in, st, NULL);
			i = st->e;
			pos = src->tok[i - 1].end;
		} else {
			i++;
		}
	}
	copy(&in, pos, (unsigned)src->size, NULL);
out:
	free(in.h);
	free(in.sites);
	free(in.repl);
	if (rc || in.nomem) {
		if (in.nomem)
			fprintf(source_err(src),
				"agile-retarget: out of memory\n");
		free(in.buf);
		free(in.segs);
		return in.nomem ? -2 : -1;
	}
	*text = in.buf ? in.buf : strdup("");
	*size = in.len;
	*segs = in.segs;
	*nr_segs = in.nr_segs;
	return 1;
}

/*
 * The source's line and column of byte @orig of the text before the
 * rewrite: counted in that text, through the #line directives cxx.c's
 * lowering left there (a line "#line N ..." makes the next line N).
 */
static void orig_line_col(const struct source *src, unsigned orig,
			  unsigned *line, unsigned *col)
{
	const char *text = src->orig_text;
	unsigned l = 1, c = 1;

	for (unsigned i = 0; i < orig && i < src->orig_size; i++) {
		if (text[i] != '\n') {
			c++;
			continue;
		}
		l++;
		c = 1;
		if (src->orig_size - (i + 1) > 6 &&
		    !strncmp(text + i + 1, "#line ", 6)) {
			unsigned long n = strtoul(text + i + 7, NULL, 10);

			/* the directive's own line, then line n */
			if (n)
				l = (unsigned)n - 1;
		}
	}
	*line = l;
	*col = c;
}

void inline_map(const struct source *src, struct token *t)
{
	unsigned lo = 0, hi = src->nr_segs, orig, line = 1, col = 1;
	const struct inline_seg *sg;

	t->inlined_at = 0;
	if (!src->segs || !hi)
		return;
	while (hi - lo > 1) {
		unsigned mid = (lo + hi) / 2;

		if (src->segs[mid].start <= t->offset)
			lo = mid;
		else
			hi = mid;
	}
	sg = &src->segs[lo];
	orig = sg->synthetic ? sg->orig : sg->orig + (t->offset - sg->start);
	orig_line_col(src, orig, &line, &col);
	t->line = line;
	t->col = col;
	t->inlined_at = sg->at;
}

void inline_where(const struct source *src, unsigned at, char *buf, size_t len)
{
	unsigned line = 1, col = 1;

	orig_line_col(src, at ? at - 1 : 0, &line, &col);
	snprintf(buf, len, "%s:%u:%u", src->path, line, col);
}
