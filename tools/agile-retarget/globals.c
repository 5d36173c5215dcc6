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
 * set in a program the runtime compiles, so there every such variable
 * is refused at its name; a __shared__ variable at file scope is
 * refused either way.
 */
#include <stdlib.h>
#include <string.h>

#include "retarget.h"

struct global_list {
	struct source *src;
	struct emitter *e;
	FILE *h_out;
	unsigned done_stmt; /* the last statement emitted: once each */
	bool any; /* the comment above them is out */
};

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
		diag(src, name,
		     "%s %s: a global variable is not handled by --emit=runtime (the runtime's programs have no symbol the host can set): pass it as a parameter",
		     space, clang_getCString(s));
		g->e->failed = 1;
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
