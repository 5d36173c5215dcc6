// SPDX-License-Identifier: MIT
/*
 * parse.c - the source through libclang: parsed as C++ with the CUDA/HIP
 * prelude (cuda_prelude.h) included first, so no CUDA or ROCm install is
 * needed; then every token of the file with the cursor libclang
 * annotates it with, which says what an identifier refers to.  The
 * translator works on these tokens: it re-prints the source's own text,
 * rewriting only what it must.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "retarget.h"

#ifndef RETARGET_PRELUDE_DIR
#define RETARGET_PRELUDE_DIR "."
#endif

static char *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET))
		goto out;
	buf = malloc((size_t)n + 1);
	if (!buf)
		goto out;
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[n] = '\0';
	*size = (size_t)n;
out:
	fclose(f);
	return buf;
}

void source_where(const struct source *src, unsigned tok, char *buf, size_t len)
{
	if (tok < src->nr_tok)
		snprintf(buf, len, "%s:%u:%u", src->path, src->tok[tok].line,
			 src->tok[tok].col);
	else
		snprintf(buf, len, "%s", src->path);
}

FILE *source_err(const struct source *src)
{
	return src->err ? src->err : stderr;
}

void diag(struct source *src, unsigned tok, const char *fmt, ...)
{
	char where[512];
	va_list ap;

	source_where(src, tok, where, sizeof(where));
	fprintf(source_err(src), "%s: error: ", where);
	va_start(ap, fmt);
	vfprintf(source_err(src), fmt, ap);
	va_end(ap);
	if (tok < src->nr_tok && src->tok[tok].inlined_at) {
		inline_where(src, src->tok[tok].inlined_at, where,
			     sizeof(where));
		fprintf(source_err(src), " (inlined at %s)", where);
	}
	fputc('\n', source_err(src));
	src->errors++;
}

bool tok_is(const struct source *src, unsigned i, const char *text)
{
	return i < src->nr_tok && !strcmp(src->tok[i].text, text);
}

unsigned tok_at(const struct source *src, unsigned offset)
{
	unsigned lo = 0, hi = src->nr_tok;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (src->tok[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static unsigned offset_of(CXSourceLocation loc)
{
	unsigned offset;

	clang_getFileLocation(loc, NULL, NULL, NULL, &offset);
	return offset;
}

void cursor_tokens(const struct source *src, CXCursor c, unsigned *first,
		   unsigned *last)
{
	CXSourceRange r = clang_getCursorExtent(c);

	*first = tok_at(src, offset_of(clang_getRangeStart(r)));
	*last = tok_at(src, offset_of(clang_getRangeEnd(r)));
}

unsigned tok_close(const struct source *src, unsigned open, unsigned limit)
{
	int depth = 0;

	for (unsigned i = open; i < limit; i++) {
		if (tok_is(src, i, "("))
			depth++;
		else if (tok_is(src, i, ")") && --depth == 0)
			return i;
	}
	return limit;
}

struct annotate_find {
	const char *what;
	bool found;
};

static enum CXChildVisitResult find_annotation(CXCursor c, CXCursor parent,
					       CXClientData data)
{
	struct annotate_find *f = data;
	CXString s;

	(void)parent;
	if (clang_getCursorKind(c) != CXCursor_AnnotateAttr)
		return CXChildVisit_Continue;
	s = clang_getCursorSpelling(c);
	if (!strcmp(clang_getCString(s), f->what))
		f->found = true;
	clang_disposeString(s);
	return CXChildVisit_Continue;
}

bool cursor_annotated(CXCursor c, const char *what)
{
	struct annotate_find f = { .what = what };

	clang_visitChildren(c, find_annotation, &f);
	return f.found;
}

bool is_barrier_call(CXCursor c)
{
	CXString s;
	bool yes;

	if (clang_getCursorKind(c) != CXCursor_CallExpr)
		return false;
	s = clang_getCursorSpelling(c);
	/* __syncwarp: all of the block reaches it (docs/retarget.md) */
	yes = !strcmp(clang_getCString(s), "__syncthreads") ||
	      !strcmp(clang_getCString(s), "__syncwarp");
	clang_disposeString(s);
	return yes || is_warp_exchange(c);
}

static bool in_main_file(const struct source *src, CXCursor c)
{
	CXFile file;

	clang_getFileLocation(clang_getCursorLocation(c), &file, NULL, NULL,
			      NULL);
	return file && clang_File_isEqual(file, src->file);
}

static int func_index(const struct source *src, CXCursor decl)
{
	unsigned off = offset_of(clang_getCursorLocation(decl));

	if (!in_main_file(src, decl))
		return -1;
	for (unsigned i = 0; i < src->nr_funcs; i++)
		if (offset_of(clang_getCursorLocation(src->funcs[i].cursor)) ==
		    off)
			return (int)i;
	return -1;
}

static enum CXChildVisitResult collect_funcs(CXCursor c, CXCursor parent,
					     CXClientData data)
{
	struct source *src = data;
	enum CXCursorKind kind = clang_getCursorKind(c);
	bool global, device;
	struct func *fn;
	CXString s;

	(void)parent;
	if (!in_main_file(src, c))
		return CXChildVisit_Continue;
	if (kind != CXCursor_FunctionDecl && kind != CXCursor_FunctionTemplate)
		return CXChildVisit_Continue;
	global = cursor_annotated(c, "agile_global");
	device = cursor_annotated(c, "agile_device");
	if ((!global && !device) || !clang_isCursorDefinition(c))
		return CXChildVisit_Continue;
	if (kind == CXCursor_FunctionTemplate) {
		unsigned first, last;

		cursor_tokens(src, c, &first, &last);
		diag(src, first,
		     "template %s functions are not handled (docs/retarget.md)",
		     global ? "__global__" : "__device__");
		return CXChildVisit_Continue;
	}
	fn = realloc(src->funcs, (src->nr_funcs + 1) * sizeof(*fn));
	if (!fn) {
		src->errors++;
		return CXChildVisit_Break;
	}
	src->funcs = fn;
	fn = &src->funcs[src->nr_funcs++];
	memset(fn, 0, sizeof(*fn));
	fn->cursor = c;
	s = clang_getCursorSpelling(c);
	fn->name = strdup(clang_getCString(s));
	clang_disposeString(s);
	fn->kernel = global;
	cursor_tokens(src, c, &fn->first, &fn->last);
	fn->name_tok = tok_at(src, offset_of(clang_getCursorLocation(c)));
	return CXChildVisit_Continue;
}

/* What identifier token @i refers to: a function of ours. */
static void resolve_token(struct source *src, unsigned i)
{
	struct token *t = &src->tok[i];
	enum CXCursorKind kind = clang_getCursorKind(t->cursor);
	CXCursor ref;

	t->var = -1;
	t->func = -1;
	if (t->kind != CXToken_Identifier)
		return;
	if (kind == CXCursor_DeclRefExpr || kind == CXCursor_CallExpr) {
		ref = clang_getCursorReferenced(t->cursor);
		if (clang_getCursorKind(ref) == CXCursor_FunctionDecl) {
			CXString s = clang_getCursorSpelling(ref);

			if (!strcmp(clang_getCString(s), t->text))
				t->func = func_index(src, ref);
			clang_disposeString(s);
		}
	}
}

static void presumed_line(CXSourceLocation loc, unsigned *line, unsigned *col)
{
	CXString name;

	clang_getPresumedLocation(loc, &name, line, col);
	clang_disposeString(name);
}

static void print_diagnostics(struct source *src)
{
	unsigned n = clang_getNumDiagnostics(src->tu);

	for (unsigned i = 0; i < n; i++) {
		CXDiagnostic d = clang_getDiagnostic(src->tu, i);
		enum CXDiagnosticSeverity sev = clang_getDiagnosticSeverity(d);

		if (sev >= CXDiagnostic_Error) {
			CXString s = clang_formatDiagnostic(
				d, clang_defaultDiagnosticDisplayOptions());

			fprintf(source_err(src), "%s\n", clang_getCString(s));
			clang_disposeString(s);
			src->errors++;
		}
		clang_disposeDiagnostic(d);
	}
}

static int parse_text(struct source *src, const char *path, const char **argv,
		      int argc, bool unsaved);

/* What a parse made, not the text. */
static void source_release(struct source *src)
{
	for (unsigned i = 0; i < src->nr_tok; i++)
		free((char *)src->tok[i].text);
	free(src->tok);
	src->tok = NULL;
	for (unsigned i = 0; i < src->nr_funcs; i++)
		free(src->funcs[i].name);
	free(src->funcs);
	src->funcs = NULL;
	src->nr_funcs = 0;
	if (src->cx_tokens)
		clang_disposeTokens(src->tu, src->cx_tokens, src->nr_tok);
	src->cx_tokens = NULL;
	src->nr_tok = 0;
	if (src->tu)
		clang_disposeTranslationUnit(src->tu);
	src->tu = NULL;
	if (src->index)
		clang_disposeIndex(src->index);
	src->index = NULL;
}

/*
 * Parses src->text as @path: from the file itself, or from memory
 * (@unsaved) when the text did not come from a file.
 */
static int source_parse(struct source *src, const char *path, int nr_args,
			const char *const *args, bool unsaved)
{
	const char *dir = getenv("AGILE_RETARGET_PRELUDE_DIR");
	struct inline_seg *segs;
	unsigned nr_segs;
	const char *argv[64];
	char prelude[4096], incdir[4096];
	char *text;
	size_t size;
	int argc = 0, rc;

	if (!dir || !*dir)
		dir = RETARGET_PRELUDE_DIR;
	if (nr_args > 50)
		return -1;
	snprintf(prelude, sizeof(prelude), "%s/cuda_prelude.h", dir);
	snprintf(incdir, sizeof(incdir), "-I%s/include", dir);
	argv[argc++] = "-x";
	argv[argc++] = "c++";
	argv[argc++] = "-std=c++14";
	argv[argc++] = "-include";
	argv[argc++] = prelude;
	argv[argc++] = incdir;
	argv[argc++] = "-D__AGILE_RETARGET__=1";
	for (int i = 0; i < nr_args; i++)
		argv[argc++] = args[i];

	rc = parse_text(src, path, argv, argc, unsaved);
	if (rc)
		return rc;
	rc = inline_rewrite(src, &text, &size, &segs, &nr_segs);
	if (rc <= 0) /* refused: translate_analyse says so */
		return rc == -2 ? -1 : 0;
	/* again, the rewritten text (inline.c) */
	source_release(src);
	src->orig_text = (char *)src->text;
	src->orig_size = src->size;
	src->text = text;
	src->size = size;
	src->segs = segs;
	src->nr_segs = nr_segs;
	return parse_text(src, path, argv, argc, true);
}

static int parse_text(struct source *src, const char *path, const char **argv,
		      int argc, bool unsaved)
{
	struct CXUnsavedFile mem = { .Filename = path,
				     .Contents = src->text,
				     .Length = (unsigned long)src->size };
	CXSourceRange whole;
	CXCursor *cursors;
	int rc;

	src->index = clang_createIndex(0, 0);
	if (clang_parseTranslationUnit2(
		    src->index, path, argv, argc, unsaved ? &mem : NULL,
		    unsaved ? 1 : 0,
		    CXTranslationUnit_DetailedPreprocessingRecord |
			    CXTranslationUnit_KeepGoing,
		    &src->tu) != CXError_Success) {
		fprintf(source_err(src),
			"agile-retarget: %s: libclang could not parse it\n",
			path);
		return -1;
	}
	print_diagnostics(src);
	if (src->errors)
		return -1;
	src->file = clang_getFile(src->tu, path);
	/* C++ lowered to C first (cxx.c): src->text may change */
	rc = cxx_lower(src, argv, argc);
	if (rc)
		return rc;
	whole = clang_getRange(clang_getLocationForOffset(src->tu, src->file,
							  0),
			       clang_getLocationForOffset(src->tu, src->file,
							  (unsigned)src->size));
	clang_tokenize(src->tu, whole, &src->cx_tokens, &src->nr_tok);
	src->tok = calloc(src->nr_tok + 1, sizeof(*src->tok));
	cursors = calloc(src->nr_tok + 1, sizeof(*cursors));
	if (!src->tok || !cursors) {
		free(cursors);
		return -1;
	}
	clang_annotateTokens(src->tu, src->cx_tokens, src->nr_tok, cursors);
	for (unsigned i = 0; i < src->nr_tok; i++) {
		struct token *t = &src->tok[i];
		CXSourceRange r =
			clang_getTokenExtent(src->tu, src->cx_tokens[i]);
		CXString s = clang_getTokenSpelling(src->tu, src->cx_tokens[i]);

		t->text = strdup(clang_getCString(s));
		clang_disposeString(s);
		t->kind = clang_getTokenKind(src->cx_tokens[i]);
		clang_getFileLocation(clang_getRangeStart(r), NULL, NULL, NULL,
				      &t->offset);
		/* the source's line, through cxx.c's #line directives */
		presumed_line(clang_getRangeStart(r), &t->line, &t->col);
		t->end = offset_of(clang_getRangeEnd(r));
		t->cursor = cursors[i];
		inline_map(src, t);
	}
	free(cursors);
	clang_visitChildren(clang_getTranslationUnitCursor(src->tu),
			    collect_funcs, src);
	for (unsigned i = 0; i < src->nr_tok; i++)
		resolve_token(src, i);
	return src->errors ? -1 : 0;
}

int source_open(struct source *src, const char *path, int nr_args,
		const char *const *args)
{
	memset(src, 0, sizeof(*src));
	src->path = path;
	src->text = read_file(path, &src->size);
	if (!src->text) {
		fprintf(stderr, "agile-retarget: %s: cannot read it\n", path);
		return -1;
	}
	return source_parse(src, path, nr_args, args, false);
}

int source_open_text(struct source *src, const char *path, const char *text,
		     size_t size, int nr_args, const char *const *args,
		     FILE *err)
{
	char *copy = malloc(size + 1);

	memset(src, 0, sizeof(*src));
	src->path = path;
	src->err = err;
	if (!copy) {
		fprintf(source_err(src), "agile-retarget: out of memory\n");
		return -1;
	}
	memcpy(copy, text, size);
	copy[size] = '\0';
	src->text = copy;
	src->size = size;
	return source_parse(src, path, nr_args, args, true);
}

void source_close(struct source *src)
{
	source_release(src);
	free((char *)src->text);
	free(src->orig_text);
	free(src->segs);
}
