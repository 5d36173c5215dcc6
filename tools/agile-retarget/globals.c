// SPDX-License-Identifier: MIT
/*
 * globals.c - __constant__ and __device__ variables at file scope (issue
 * 31).  With --emit=launch they become C globals of the output, defined
 * by the source's own declaration less its memory space, and declared
 * extern in the -H header: the host sets them as it would with
 * cudaMemcpyToSymbol, by assigning or memcpy'ing the symbol itself.
 * Kernels of the launch read them on every CPU thread; a __device__
 * variable the kernels write is shared by the blocks, as on the GPU
 * (its updates need atomics there too).  A static one stays the file's
 * own, not in the header.  --emit=runtime has no symbols the host could
 * set in a program the runtime compiles: there the file's variables, in
 * source order, are the members of one struct (struct NAME_globals, C's
 * layout), a buffer the host passes as a hidden argument word of every
 * kernel (the -H header's NAME_ARG_GLOBALS) and fills with the header's
 * NAME_globals_init (the source's initialisers, evaluated by clang) and
 * its own values; the kernels and their helpers reach them through _g.
 * A __shared__ variable at file scope is refused either way.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "retarget.h"

struct global_list {
	struct source *src;
	struct emitter *e;
	FILE *h_out;
	unsigned done_stmt; /* the last statement emitted: once each */
	bool any; /* the comment above them is out */
	struct decls *rt; /* --emit=runtime: the variables, in order */
};

/* ---- --emit=runtime: one struct of them, a buffer of the host's ---- */

/* An arithmetic type a C and a CUDA compiler lay out alike. */
static bool rt_scalar(CXType t)
{
	switch (clang_getCanonicalType(t).kind) {
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
		return true;
	default:
		return false;
	}
}

static CXType rt_element(CXType t)
{
	while (t.kind == CXType_ConstantArray)
		t = clang_getArrayElementType(t);
	return t;
}

/* "float [15]" + "taps" -> "float taps[15]": canonical, no qualifier. */
static void rt_decl(FILE *out, CXType type, const char *name,
		    const char *suffix)
{
	CXType el = clang_getCanonicalType(rt_element(type));
	CXString sp = clang_getTypeSpelling(el);
	const char *t = clang_getCString(sp);

	for (;;) {
		if (!strncmp(t, "const ", 6))
			t += 6;
		else if (!strncmp(t, "volatile ", 9))
			t += 9;
		else
			break;
	}
	fprintf(out, "%s %s", t, name);
	for (; type.kind == CXType_ConstantArray;
	     type = clang_getArrayElementType(type))
		fprintf(out, "[%lld]", clang_getArraySize(type));
	fputs(suffix, out);
	clang_disposeString(sp);
}

/* Whether @c's declaration at token @name has an initialiser. */
static bool rt_has_init(const struct source *src, unsigned name)
{
	unsigned i = name + 1;

	while (tok_is(src, i, "[")) {
		while (i < src->nr_tok && !tok_is(src, i, "]"))
			i++;
		i++;
	}
	return tok_is(src, i, "=") || tok_is(src, i, "{") ||
	       tok_is(src, i, "(");
}

static enum CXChildVisitResult last_expr(CXCursor c, CXCursor parent,
					 CXClientData data)
{
	(void)parent;
	if (clang_isExpression(clang_getCursorKind(c)))
		*(CXCursor *)data = c;
	return CXChildVisit_Continue;
}

struct init_out {
	struct source *src;
	FILE *out; /* NULL: only check */
	int failed;
	bool first; /* the first element of its braces */
	const char *space, *id; /* the variable's, for the refusal */
};

static enum CXChildVisitResult init_item(CXCursor c, CXCursor parent,
					 CXClientData data);

/*
 * An initialiser as C: braces as written, each element the constant
 * clang evaluates it to (so macros and constant expressions of the
 * source need not be in the header).
 */
static void rt_init_expr(struct init_out *io, CXCursor c)
{
	CXEvalResult r;

	if (clang_getCursorKind(c) == CXCursor_InitListExpr) {
		bool first = io->first;

		if (io->out)
			fputs("{ ", io->out);
		io->first = true;
		clang_visitChildren(c, init_item, io);
		io->first = first;
		if (io->out)
			fputs(" }", io->out);
		return;
	}
	r = clang_Cursor_Evaluate(c);
	if (!r || (clang_EvalResult_getKind(r) != CXEval_Int &&
		   clang_EvalResult_getKind(r) != CXEval_Float)) {
		unsigned first, last;

		cursor_tokens(io->src, c, &first, &last);
		if (!io->failed)
			diag(io->src, first,
			     "%s %s: an initialiser that is not a constant is not handled by --emit=runtime (the host's _init sets the globals' buffer)",
			     io->space, io->id);
		io->failed = 1;
	} else if (!io->out) {
	} else if (clang_EvalResult_getKind(r) == CXEval_Float) {
		double v = clang_EvalResult_getAsDouble(r);

		if (isnan(v))
			fputs("__builtin_nan(\"\")", io->out);
		else if (isinf(v))
			fputs(v < 0 ? "-__builtin_inf()" : "__builtin_inf()",
			      io->out);
		else
			fprintf(io->out, "%a", v);
	} else if (clang_EvalResult_isUnsignedInt(r)) {
		fprintf(io->out, "%lluULL", clang_EvalResult_getAsUnsigned(r));
	} else {
		long long v = clang_EvalResult_getAsLongLong(r);

		if (v == -0x7fffffffffffffffLL - 1)
			fputs("(-0x7fffffffffffffffLL - 1)", io->out);
		else
			fprintf(io->out, "%lldLL", v);
	}
	if (r)
		clang_EvalResult_dispose(r);
}

static enum CXChildVisitResult init_item(CXCursor c, CXCursor parent,
					 CXClientData data)
{
	struct init_out *io = data;

	(void)parent;
	if (!clang_isExpression(clang_getCursorKind(c)))
		return CXChildVisit_Continue;
	if (io->out && !io->first)
		fputs(", ", io->out);
	io->first = false;
	rt_init_expr(io, c);
	return CXChildVisit_Continue;
}

static void rt_global_check(struct global_list *g, CXCursor c, unsigned name,
			    const char *space, const char *id)
{
	struct source *src = g->src;
	CXType t = clang_getCursorType(c);
	struct init_out io = { .src = src, .space = space, .id = id };
	CXCursor init = clang_getNullCursor();

	if (clang_Cursor_getStorageClass(c) == CX_SC_Extern) {
		diag(src, name,
		     "%s %s: an extern global variable is not handled by --emit=runtime (a file is one program: define it there)",
		     space, id);
		g->e->failed = 1;
		return;
	}
	if (!rt_scalar(rt_element(t))) {
		CXString ts = clang_getTypeSpelling(t);

		diag(src, name,
		     "%s %s: a global variable of type %s is not handled by --emit=runtime (only integers, floats and their arrays)",
		     space, id, clang_getCString(ts));
		clang_disposeString(ts);
		g->e->failed = 1;
		return;
	}
	if (g->rt->n >= sizeof(g->rt->c) / sizeof(g->rt->c[0])) {
		diag(src, name,
		     "%s %s: more than %zu global variables in a file are not handled by --emit=runtime",
		     space, id, sizeof(g->rt->c) / sizeof(g->rt->c[0]));
		g->e->failed = 1;
		return;
	}
	if (rt_has_init(src, name)) {
		clang_visitChildren(c, last_expr, &init);
		if (!clang_Cursor_isNull(init))
			rt_init_expr(&io, init);
		if (io.failed)
			g->e->failed = 1;
	}
	g->rt->c[g->rt->n++] = c;
}

static void heading(struct global_list *g, FILE *out)
{
	if (g->any)
		return;
	g->any = true;
	fputs(g->h_out ?
		      "\n/* The source's __constant__ and __device__ variables: set them\n"
		      " * from the host (cudaMemcpyToSymbol's part) before a launch. */\n" :
		      "\n/* __constant__ and __device__ variables: one per program */\n",
	      out);
}

static const char *memory_space(CXCursor c)
{
	if (cursor_annotated(c, "agile_constant"))
		return "__constant__";
	if (cursor_annotated(c, "agile_device"))
		return "__device__";
	if (cursor_annotated(c, "agile_shared"))
		return "__shared__";
	return NULL;
}

/* "float [32]" + "taps" -> "float taps[32]", every qualifier kept. */
static void extern_decl(FILE *out, CXType type, const char *name,
			const char *suffix)
{
	CXString s;
	const char *t;

	if (type.kind == CXType_ConstantArray) {
		char dims[128];

		snprintf(dims, sizeof(dims), "%s[%lld]", suffix,
			 clang_getArraySize(type));
		extern_decl(out, clang_getArrayElementType(type), name, dims);
		return;
	}
	s = clang_getTypeSpelling(type);
	t = clang_getCString(s);
	fprintf(out, "%s%s%s%s", t, t[0] && t[strlen(t) - 1] == '*' ? "" : " ",
		name, suffix);
	clang_disposeString(s);
}

/* The declaration statement of @c, less its memory space, into the C. */
static void emit_definition(struct global_list *g, CXCursor c)
{
	struct source *src = g->src;
	unsigned first, last, end;

	cursor_tokens(src, c, &first, &last);
	for (end = last; end < src->nr_tok && !tok_is(src, end, ";"); end++)
		;
	if (first == g->done_stmt)
		return;
	g->done_stmt = first;
	for (unsigned i = first, from = first; i <= end && i < src->nr_tok;
	     i++) {
		bool space = tok_is(src, i, "__constant__") ||
			     tok_is(src, i, "__device__");

		if (!space && i < end)
			continue;
		if (i > from) {
			g->e->mode = MODE_PLAIN;
			emit_range(g->e, from, i == end ? end + 1 : i, 0);
			if (i < end)
				fputc(' ', g->e->out);
		}
		from = i + 1;
	}
	fputc('\n', g->e->out);
}

static enum CXChildVisitResult visit_global(CXCursor c, CXCursor parent,
					    CXClientData data)
{
	struct global_list *g = data;
	struct source *src = g->src;
	const char *space;
	unsigned name;
	CXString s;

	(void)parent;
	if (clang_getCursorKind(c) != CXCursor_VarDecl ||
	    !clang_Location_isFromMainFile(clang_getCursorLocation(c)))
		return CXChildVisit_Continue;
	space = memory_space(c);
	if (!space)
		return CXChildVisit_Continue;
	clang_getFileLocation(clang_getCursorLocation(c), NULL, NULL, NULL,
			      &name);
	name = tok_at(src, name);
	s = clang_getCursorSpelling(c);
	if (!strcmp(space, "__shared__")) {
		diag(src, name,
		     "__shared__ %s at file scope is not handled: declare it in the kernel",
		     clang_getCString(s));
		g->e->failed = 1;
	} else if (g->e->runtime) {
		rt_global_check(g, c, name, space, clang_getCString(s));
	} else if (g->h_out) {
		if (clang_Cursor_getStorageClass(c) != CX_SC_Static) {
			heading(g, g->h_out);
			fprintf(g->h_out, "extern ");
			extern_decl(g->h_out, clang_getCursorType(c),
				    clang_getCString(s), "");
			fputs(";\n", g->h_out);
		}
	} else {
		heading(g, g->e->out);
		emit_definition(g, c);
	}
	clang_disposeString(s);
	return CXChildVisit_Continue;
}

int emit_globals(struct emitter *e, FILE *h_out)
{
	struct global_list g = { .src = e->src, .e = e, .h_out = h_out };

	clang_visitChildren(clang_getTranslationUnitCursor(e->src->tu),
			    visit_global, &g);
	return e->failed ? -1 : 0;
}

int rt_globals_collect(struct emitter *e, struct decls *d)
{
	struct global_list g = { .src = e->src, .e = e, .rt = d };

	d->n = 0;
	clang_visitChildren(clang_getTranslationUnitCursor(e->src->tu),
			    visit_global, &g);
	return e->failed ? -1 : (int)d->n;
}

void rt_globals_struct(FILE *out, const struct decls *d, const char *tag)
{
	fprintf(out, "struct %s {\n", tag);
	for (unsigned i = 0; i < d->n; i++) {
		CXString s = clang_getCursorSpelling(d->c[i]);

		fputc('\t', out);
		rt_decl(out, clang_getCursorType(d->c[i]), clang_getCString(s),
			";\n");
		clang_disposeString(s);
	}
	fputs("};\n", out);
}

void rt_globals_init(struct source *src, FILE *out, const struct decls *d,
		     const char *tag)
{
	fprintf(out,
		"\n/* The source's initial values (0 where it has none), as a GPU's\n"
		" * program load sets them: what to put in the buffer first. */\n"
		"static inline void %s_init(struct %s *g)\n{\n"
		"\tmemset(g, 0, sizeof(*g));\n",
		tag, tag);
	for (unsigned i = 0; i < d->n; i++) {
		CXString s = clang_getCursorSpelling(d->c[i]);
		const char *id = clang_getCString(s);
		struct init_out io = { .src = src, .out = out };
		CXCursor init = clang_getNullCursor();
		unsigned name;

		clang_getFileLocation(clang_getCursorLocation(d->c[i]), NULL,
				      NULL, NULL, &name);
		if (rt_has_init(src, tok_at(src, name))) {
			clang_visitChildren(d->c[i], last_expr, &init);
			fputs("\t{\n\t\tstatic const ", out);
			rt_decl(out, clang_getCursorType(d->c[i]), "v", " = ");
			rt_init_expr(&io, init);
			fprintf(out,
				";\n\n\t\tmemcpy(&g->%s, &v, sizeof(g->%s));\n\t}\n",
				id, id);
		}
		clang_disposeString(s);
	}
	fputs("}\n", out);
}

bool rt_global_ref(CXCursor c)
{
	CXCursor r = clang_getCursorReferenced(c);

	return clang_getCursorKind(r) == CXCursor_VarDecl &&
	       clang_getCursorKind(clang_getCursorSemanticParent(r)) ==
		       CXCursor_TranslationUnit &&
	       (cursor_annotated(r, "agile_constant") ||
		cursor_annotated(r, "agile_device"));
}
