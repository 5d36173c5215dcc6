// SPDX-License-Identifier: MIT
/*
 * cxx.c - the C++ subset kernels use, lowered to the C subset the rest of
 * the tool translates (docs/retarget.md, "C++"), before the rest sees the
 * source.  Each round parses the text, finds what to lower through
 * libclang's AST and rewrites the text (edits on token extents); the
 * next round parses the result, until nothing is left to lower:
 *
 *	basic       namespaces flattened (n::x -> n_x), constexpr variables
 *	            substituted by their values, constexpr dropped from
 *	            functions, static_assert (checked by clang) dropped,
 *	            explicit instantiations turned into references clang
 *	            resolves
 *	templates   each specialisation referenced from non-template code
 *	            instantiated under a mangled name (f<float, 256> ->
 *	            f_float_256), its parameters' tokens substituted; then the
 *	            templates themselves dropped
 *	references  T & parameters of __device__ functions -> T * (uses
 *	            (*x), arguments &(arg)); const T & -> T by value; local
 *	            references the same way
 *
 * An instantiation is inserted after its template between #line
 * directives, and every edit keeps the lines it replaces, so clang's and
 * the translator's diagnostics (which read the presumed location) still
 * name the source's FILE:LINE:COL.  What is not lowered is refused here,
 * at its line and column.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "retarget.h"

#define CXX_MAX_ROUNDS 64
#define INST_PREFIX "_agile_inst_"

struct ctok {
	char *text;
	CXTokenKind kind;
	unsigned off, end;
	CXCursor cur;
	CXCursor ref; /* a reference (DeclRefExpr, TypeRef, ...) named here */
};

struct edit {
	unsigned start, end, seq;
	char *text;
};

struct cxx {
	struct source *src;
	const char *const *argv;
	int argc;
	CXToken *cx;
	struct ctok *tok;
	unsigned nr_tok;
	struct edit *ed;
	unsigned nr_ed, cap_ed;
	char **made; /* instantiations made: their names */
	unsigned nr_made;
	char **made_tmpl; /* and their templates' names */
	unsigned nr_inst; /* explicit instantiations seen */
	int oom;
	bool refused; /* a diagnostic of ours, not clang's */
	/* round 0: the file's functions, to refuse overloads (names, USRs) */
	char **fn_name, **fn_usr;
	unsigned nr_fn;
};

static bool in_main(struct cxx *c, CXCursor cur)
{
	CXFile file;

	clang_getFileLocation(clang_getCursorLocation(cur), &file, NULL, NULL,
			      NULL);
	return file && clang_File_isEqual(file, c->src->file);
}

static unsigned off_of(CXSourceLocation loc)
{
	unsigned off;

	clang_getFileLocation(loc, NULL, NULL, NULL, &off);
	return off;
}

static unsigned cur_off(CXCursor cur)
{
	return off_of(clang_getCursorLocation(cur));
}

/* The presumed line and column (#line) of byte @off of the text. */
static void presumed(struct cxx *c, unsigned off, unsigned *line, unsigned *col)
{
	CXSourceLocation loc =
		clang_getLocationForOffset(c->src->tu, c->src->file, off);
	CXString name;

	clang_getPresumedLocation(loc, &name, line, col);
	clang_disposeString(name);
}

static void cdiag(struct cxx *c, unsigned off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void cdiag(struct cxx *c, unsigned off, const char *fmt, ...)
{
	FILE *err = source_err(c->src);
	unsigned line, col;
	va_list ap;

	presumed(c, off, &line, &col);
	fprintf(err, "%s:%u:%u: error: ", c->src->path, line, col);
	va_start(ap, fmt);
	vfprintf(err, fmt, ap);
	va_end(ap);
	fputc('\n', err);
	c->src->errors++;
	c->refused = true;
}

static char *cur_name(CXCursor cur)
{
	CXString s = clang_getCursorSpelling(cur);
	char *n = strdup(clang_getCString(s));

	clang_disposeString(s);
	return n;
}

static bool name_is(CXCursor cur, const char *name)
{
	char *n = cur_name(cur);
	bool yes = n && !strcmp(n, name);

	free(n);
	return yes;
}

/* ---- the text's tokens ---- */

static void tokens_free(struct cxx *c)
{
	for (unsigned i = 0; i < c->nr_tok; i++)
		free(c->tok[i].text);
	free(c->tok);
	if (c->cx)
		clang_disposeTokens(c->src->tu, c->cx, c->nr_tok);
	c->tok = NULL;
	c->cx = NULL;
	c->nr_tok = 0;
}

static unsigned ct_at(struct cxx *c, unsigned off);

/*
 * The references of the AST at their names' tokens: clang_annotateTokens
 * gives some (an array's size in a declaration) the declaration instead.
 */
static enum CXChildVisitResult ref_visit(CXCursor cur, CXCursor parent,
					 CXClientData data)
{
	struct cxx *c = data;
	enum CXCursorKind k = clang_getCursorKind(cur);
	unsigned i;

	(void)parent;
	if (!in_main(c, cur))
		return CXChildVisit_Continue;
	if (clang_isReference(k) || k == CXCursor_DeclRefExpr ||
	    k == CXCursor_MemberRefExpr) {
		i = ct_at(c, off_of(clang_getCursorLocation(cur)));
		if (i < c->nr_tok && c->tok[i].off == cur_off(cur) &&
		    c->tok[i].kind == CXToken_Identifier)
			c->tok[i].ref = cur;
	}
	return CXChildVisit_Recurse;
}

static int tokens_get(struct cxx *c)
{
	struct source *src = c->src;
	CXSourceRange whole = clang_getRange(
		clang_getLocationForOffset(src->tu, src->file, 0),
		clang_getLocationForOffset(src->tu, src->file,
					   (unsigned)src->size));
	CXCursor *curs;

	clang_tokenize(src->tu, whole, &c->cx, &c->nr_tok);
	c->tok = calloc(c->nr_tok + 1, sizeof(*c->tok));
	curs = calloc(c->nr_tok + 1, sizeof(*curs));
	if (!c->tok || !curs) {
		free(curs);
		return -1;
	}
	clang_annotateTokens(src->tu, c->cx, c->nr_tok, curs);
	for (unsigned i = 0; i < c->nr_tok; i++) {
		CXSourceRange r = clang_getTokenExtent(src->tu, c->cx[i]);
		CXString s = clang_getTokenSpelling(src->tu, c->cx[i]);

		c->tok[i].text = strdup(clang_getCString(s));
		clang_disposeString(s);
		if (!c->tok[i].text)
			c->oom = 1;
		c->tok[i].kind = clang_getTokenKind(c->cx[i]);
		c->tok[i].off = off_of(clang_getRangeStart(r));
		c->tok[i].end = off_of(clang_getRangeEnd(r));
		c->tok[i].cur = curs[i];
		c->tok[i].ref = clang_getNullCursor();
	}
	free(curs);
	clang_visitChildren(clang_getTranslationUnitCursor(src->tu), ref_visit,
			    c);
	return c->oom ? -1 : 0;
}

static bool ct_is(struct cxx *c, unsigned i, const char *text)
{
	return i < c->nr_tok && c->tok[i].text && !strcmp(c->tok[i].text, text);
}

static unsigned ct_at(struct cxx *c, unsigned off)
{
	unsigned lo = 0, hi = c->nr_tok;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (c->tok[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void ct_range(struct cxx *c, CXCursor cur, unsigned *first,
		     unsigned *last)
{
	CXSourceRange r = clang_getCursorExtent(cur);

	*first = ct_at(c, off_of(clang_getRangeStart(r)));
	*last = ct_at(c, off_of(clang_getRangeEnd(r)));
}

/* The '>' closing the '<' at @open (parentheses nest), or c->nr_tok. */
static unsigned ct_angle_close(struct cxx *c, unsigned open)
{
	int angle = 0, paren = 0;

	for (unsigned i = open; i < c->nr_tok; i++) {
		if (ct_is(c, i, "(") || ct_is(c, i, "["))
			paren++;
		else if (ct_is(c, i, ")") || ct_is(c, i, "]"))
			paren--;
		else if (!paren && ct_is(c, i, "<"))
			angle++;
		else if (!paren && ct_is(c, i, ">") && --angle == 0)
			return i;
		else if (!paren && ct_is(c, i, ">>") && (angle -= 2) <= 0)
			return i;
		else if (!paren && (ct_is(c, i, ";") || ct_is(c, i, "{")))
			break;
	}
	return c->nr_tok;
}

static unsigned ct_paren_close(struct cxx *c, unsigned open)
{
	int depth = 0;

	for (unsigned i = open; i < c->nr_tok; i++) {
		if (ct_is(c, i, "("))
			depth++;
		else if (ct_is(c, i, ")") && --depth == 0)
			return i;
	}
	return c->nr_tok;
}

/* ---- edits ---- */

static void edit(struct cxx *c, unsigned start, unsigned end, const char *fmt,
		 ...) __attribute__((format(printf, 4, 5)));
static void edit(struct cxx *c, unsigned start, unsigned end, const char *fmt,
		 ...)
{
	struct edit *e;
	va_list ap;
	char *text;

	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0) {
		va_end(ap);
		c->oom = 1;
		return;
	}
	va_end(ap);
	if (c->nr_ed == c->cap_ed) {
		unsigned cap = c->cap_ed ? 2 * c->cap_ed : 64;

		e = realloc(c->ed, cap * sizeof(*e));
		if (!e) {
			free(text);
			c->oom = 1;
			return;
		}
		c->ed = e;
		c->cap_ed = cap;
	}
	e = &c->ed[c->nr_ed];
	e->start = start;
	e->end = end;
	e->seq = c->nr_ed++;
	e->text = text;
}

/* Tokens [first, last) blanked (their lines kept). */
static void blank(struct cxx *c, unsigned first, unsigned last)
{
	if (first < last && last <= c->nr_tok)
		edit(c, c->tok[first].off, c->tok[last - 1].end, "%s", "");
}

static void replace(struct cxx *c, unsigned tok, const char *text)
{
	edit(c, c->tok[tok].off, c->tok[tok].end, "%s", text);
}

static int edit_cmp(const void *a, const void *b)
{
	const struct edit *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* an insertion before a replacement at the same place */
	if ((x->start == x->end) != (y->start == y->end))
		return x->start == x->end ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void edits_clear(struct cxx *c)
{
	for (unsigned i = 0; i < c->nr_ed; i++)
		free(c->ed[i].text);
	c->nr_ed = 0;
}

/*
 * The edits applied to the text: a replaced range keeps its newlines; of
 * two overlapping edits the first (the outer one) wins.
 */
static char *edits_apply(struct cxx *c, size_t *size)
{
	const char *text = c->src->text;
	size_t len = 0;
	unsigned at = 0;
	char *out = NULL;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	qsort(c->ed, c->nr_ed, sizeof(*c->ed), edit_cmp);
	for (unsigned i = 0; i < c->nr_ed; i++) {
		struct edit *e = &c->ed[i];

		if (e->start < at ||
		    (e->start == at && e->end > e->start && i &&
		     c->ed[i - 1].end > c->ed[i - 1].start &&
		     c->ed[i - 1].end > e->start))
			continue; /* inside an earlier edit */
		fwrite(text + at, 1, e->start - at, f);
		fputs(e->text, f);
		for (unsigned p = e->start; p < e->end; p++)
			if (text[p] == '\n')
				fputc('\n', f);
		if (e->end > at)
			at = e->end;
	}
	fwrite(text + at, 1, c->src->size - at, f);
	if (fclose(f)) {
		free(out);
		return NULL;
	}
	*size = len;
	return out;
}

/* ---- what is refused ---- */

static const char *refused_kind(CXCursor cur)
{
	switch (clang_getCursorKind(cur)) {
	case CXCursor_CXXMethod:
		return "a member function";
	case CXCursor_Constructor:
		return "a constructor";
	case CXCursor_Destructor:
		return "a destructor";
	case CXCursor_ConversionFunction:
		return "a conversion function";
	case CXCursor_CXXBaseSpecifier:
		return "inheritance";
	case CXCursor_ClassTemplate:
	case CXCursor_ClassTemplatePartialSpecialization:
		return "a class template";
	case CXCursor_ClassDecl:
		return "a class";
	case CXCursor_LambdaExpr:
		return "a lambda";
	case CXCursor_CXXThrowExpr:
	case CXCursor_CXXTryStmt:
		return "an exception";
	case CXCursor_CXXNewExpr:
		return "new";
	case CXCursor_CXXDeleteExpr:
		return "delete";
	case CXCursor_TemplateTemplateParameter:
		return "a template template parameter";
	case CXCursor_TypeAliasDecl:
	case CXCursor_TypeAliasTemplateDecl:
		return "a type alias (using X = ...)";
	case CXCursor_CXXForRangeStmt:
		return "a range for";
	default:
		return NULL;
	}
}

static bool at_file_scope(CXCursor cur);

/*
 * A member function lowered to a free one: of a named struct at file
 * scope, defined in it, __device__, not virtual, not an operator.
 */
static bool method_simple(struct cxx *c, CXCursor m)
{
	CXCursor s = clang_getCursorSemanticParent(m);
	char *sn = cur_name(s), *mn = cur_name(m);
	bool ok = clang_getCursorKind(s) == CXCursor_StructDecl &&
		  at_file_scope(s) && in_main(c, s) && sn && *sn && mn &&
		  strncmp(mn, "operator", 8) && !clang_CXXMethod_isVirtual(m) &&
		  clang_isCursorDefinition(m) &&
		  clang_equalCursors(clang_getCursorLexicalParent(m), s) &&
		  cursor_annotated(m, "agile_device");

	free(sn);
	free(mn);
	return ok;
}

/*
 * A function of the file's that overloads one seen before: the same name
 * in the same scope, another signature (its USR).  C has one function a
 * name: the output would not compile.
 */
static bool overloads(struct cxx *c, CXCursor fn)
{
	CXString us = clang_getCursorUSR(fn);
	CXString ps = clang_getCursorUSR(clang_getCursorSemanticParent(fn));
	char *name = NULL, *usr = strdup(clang_getCString(us)),
	     *n = cur_name(fn);
	bool clash = false;

	if (n && asprintf(&name, "%s::%s", clang_getCString(ps), n) < 0)
		name = NULL;
	clang_disposeString(us);
	clang_disposeString(ps);
	free(n);
	if (!name || !usr) {
		free(name);
		free(usr);
		c->oom = 1;
		return false;
	}
	for (unsigned i = 0; i < c->nr_fn; i++) {
		if (strcmp(c->fn_name[i], name))
			continue;
		clash = strcmp(c->fn_usr[i], usr) != 0;
		free(name);
		free(usr);
		return clash;
	}
	if (!(c->nr_fn & (c->nr_fn + 1))) {
		unsigned cap = 2 * (c->nr_fn + 1);
		char **nn = realloc(c->fn_name, cap * sizeof(*nn));

		if (nn)
			c->fn_name = nn;
		nn = nn ? realloc(c->fn_usr, cap * sizeof(*nn)) : NULL;
		if (!nn) {
			free(name);
			free(usr);
			c->oom = 1;
			return false;
		}
		c->fn_usr = nn;
	}
	c->fn_name[c->nr_fn] = name;
	c->fn_usr[c->nr_fn++] = usr;
	return false;
}

static enum CXChildVisitResult init_visit(CXCursor cur, CXCursor parent,
					  CXClientData data)
{
	(void)parent;
	if (clang_isExpression(clang_getCursorKind(cur))) {
		*(bool *)data = true;
		return CXChildVisit_Break;
	}
	return CXChildVisit_Continue;
}

/* A member with a default initialiser (int n = 4;): not C. */
static bool member_initialised(CXCursor field)
{
	bool init = false;

	if (clang_Cursor_isBitField(field))
		return false;
	clang_visitChildren(field, init_visit, &init);
	return init;
}

/* A parameter with a default argument (float b = 1.0f): not C. */
static bool default_arg(struct cxx *c, CXCursor parm)
{
	unsigned first, last;

	ct_range(c, parm, &first, &last);
	for (unsigned i = first; i <= last && i < c->nr_tok; i++)
		if (ct_is(c, i, "="))
			return true;
	return false;
}

static enum CXChildVisitResult refuse_visit(CXCursor cur, CXCursor parent,
					    CXClientData data)
{
	struct cxx *c = data;
	enum CXCursorKind kind = clang_getCursorKind(cur);
	const char *what;

	(void)parent;
	if (!in_main(c, cur))
		return CXChildVisit_Continue;
	what = refused_kind(cur);
	if (what && kind == CXCursor_CXXMethod)
		what = method_simple(c, cur) ?
			       NULL :
		       clang_CXXMethod_isVirtual(cur) ?
			       "a virtual member function" :
			       "this member function (non-virtual __device__ ones defined in a named struct at file scope are lowered)";
	if (what) {
		cdiag(c, cur_off(cur),
		      "C++: %s is not handled (docs/retarget.md, \"C++\")",
		      what);
		return CXChildVisit_Continue;
	}
	if (kind == CXCursor_ParmDecl && default_arg(c, cur))
		cdiag(c, cur_off(cur),
		      "C++: a default argument is not handled (docs/retarget.md, \"C++\")");
	if (kind == CXCursor_FieldDecl && member_initialised(cur))
		cdiag(c, cur_off(cur),
		      "C++: a default member initialiser is not handled (docs/retarget.md, \"C++\")");
	if (kind == CXCursor_FunctionDecl && overloads(c, cur)) {
		char *n = cur_name(cur);

		cdiag(c, cur_off(cur),
		      "C++: overloaded functions (%s) are not handled: give each its own name (docs/retarget.md, \"C++\")",
		      n ? n : "");
		free(n);
	}
	if (kind == CXCursor_FunctionDecl ||
	    kind == CXCursor_FunctionTemplate) {
		char *n = cur_name(cur);
		CXType rt = clang_getResultType(clang_getCursorType(cur));

		if (n && !strncmp(n, "operator", 8))
			cdiag(c, cur_off(cur),
			      "C++: operator overloading (%s) is not handled (docs/retarget.md, \"C++\")",
			      n);
		else if (rt.kind == CXType_LValueReference ||
			 rt.kind == CXType_RValueReference)
			cdiag(c, cur_off(cur),
			      "C++: %s returns a reference: not handled (docs/retarget.md, \"C++\")",
			      n ? n : "");
		free(n);
	}
	if (kind == CXCursor_ParmDecl || kind == CXCursor_VarDecl) {
		CXType t = clang_getCursorType(cur);

		if (t.kind == CXType_RValueReference)
			cdiag(c, cur_off(cur),
			      "C++: an rvalue reference is not handled (docs/retarget.md, \"C++\")");
	}
	return CXChildVisit_Recurse;
}

/* Keywords of C++ a C compiler would take otherwise, or not at all. */
static void refuse_tokens(struct cxx *c)
{
	static const char *const words[] = {
		"decltype", "dynamic_cast", "typeid", "friend", "virtual",
	};

	for (unsigned i = 0; i < c->nr_tok; i++) {
		if (c->tok[i].kind != CXToken_Keyword &&
		    c->tok[i].kind != CXToken_Identifier)
			continue;
		for (unsigned w = 0; w < sizeof(words) / sizeof(*words); w++) {
			if (!strcmp(c->tok[i].text, words[w]))
				cdiag(c, c->tok[i].off,
				      "C++: %s is not handled (docs/retarget.md, \"C++\")",
				      words[w]);
		}
		if (ct_is(c, i, "template") && ct_is(c, i + 1, "<") &&
		    ct_is(c, i + 2, ">"))
			cdiag(c, c->tok[i].off,
			      "C++: an explicit specialisation (template <>) is not handled (docs/retarget.md, \"C++\")");
	}
}

/* ---- basic: namespaces, constexpr, static_assert, explicit instantiations */

/* A namespace (or an alias of one) this file defines. */
static bool ns_ours(struct cxx *c, CXCursor ns);

static enum CXChildVisitResult alias_target(CXCursor cur, CXCursor parent,
					    CXClientData data)
{
	CXCursor *out = data;

	(void)parent;
	if (clang_getCursorKind(cur) == CXCursor_NamespaceRef) {
		*out = clang_getCursorReferenced(cur);
		return CXChildVisit_Break;
	}
	return CXChildVisit_Continue;
}

static bool ns_ours(struct cxx *c, CXCursor ns)
{
	for (int depth = 0; depth < 16; depth++) {
		CXCursor to = clang_getNullCursor();

		if (clang_getCursorKind(ns) == CXCursor_Namespace)
			return in_main(c, ns);
		if (clang_getCursorKind(ns) != CXCursor_NamespaceAlias ||
		    !in_main(c, ns))
			return false;
		clang_visitChildren(ns, alias_target, &to);
		if (clang_Cursor_isNull(to))
			return false;
		ns = to;
	}
	return false;
}

/*
 * @decl's name with the namespaces around it (ours, named) as prefixes,
 * or NULL when it is in none.
 */
static char *ns_name(struct cxx *c, CXCursor decl)
{
	char *name = cur_name(decl), *n;
	bool any = false;
	CXCursor p = clang_getCursorSemanticParent(decl);

	if (clang_getCursorKind(p) == CXCursor_EnumDecl)
		p = clang_getCursorSemanticParent(p);
	while (name && clang_getCursorKind(p) == CXCursor_Namespace &&
	       ns_ours(c, p)) {
		char *ns = cur_name(p);

		if (ns && *ns) {
			if (asprintf(&n, "%s_%s", ns, name) < 0)
				n = NULL;
			free(name);
			name = n;
			any = true;
		}
		free(ns);
		p = clang_getCursorSemanticParent(p);
	}
	if (!any) {
		free(name);
		return NULL;
	}
	return name;
}

static bool in_template(CXCursor cur)
{
	for (CXCursor p = clang_getCursorSemanticParent(cur);
	     !clang_Cursor_isNull(p) &&
	     clang_getCursorKind(p) != CXCursor_TranslationUnit;
	     p = clang_getCursorSemanticParent(p))
		if (clang_getCursorKind(p) == CXCursor_FunctionTemplate ||
		    clang_getCursorKind(p) == CXCursor_ClassTemplate)
			return true;
	return false;
}

static bool at_file_scope(CXCursor cur)
{
	enum CXCursorKind k =
		clang_getCursorKind(clang_getCursorSemanticParent(cur));

	return k == CXCursor_TranslationUnit || k == CXCursor_Namespace;
}

struct constexpr_var {
	CXCursor decl;
	char *value;
};

struct basic {
	struct cxx *c;
	struct constexpr_var *vars;
	unsigned nr_vars;
};

/* A constexpr variable's value as a C constant, or NULL. */
static char *constexpr_value(CXCursor decl)
{
	CXEvalResult r = clang_Cursor_Evaluate(decl);
	CXType t = clang_getCanonicalType(clang_getCursorType(decl));
	char *v = NULL;
	int rc = -1;

	if (!r)
		return NULL;
	if (clang_EvalResult_getKind(r) == CXEval_Int) {
		if (t.kind == CXType_Bool)
			rc = asprintf(&v, "%d",
				      clang_EvalResult_getAsLongLong(r) != 0);
		else if (clang_EvalResult_isUnsignedInt(r))
			rc = asprintf(&v, "%lluu",
				      clang_EvalResult_getAsUnsigned(r));
		else if (clang_EvalResult_getAsLongLong(r) < 0)
			rc = asprintf(&v, "(%lld)",
				      clang_EvalResult_getAsLongLong(r));
		else
			rc = asprintf(&v, "%lld",
				      clang_EvalResult_getAsLongLong(r));
		if (rc >= 0 && t.kind != CXType_Bool && t.kind != CXType_Enum) {
			CXString ts = clang_getTypeSpelling(t);
			const char *tn = clang_getCString(ts);
			char *w;

			/* the value's type, not the variable's const */
			while (!strncmp(tn, "const ", 6) ||
			       !strncmp(tn, "volatile ", 9))
				tn = strchr(tn, ' ') + 1;
			rc = asprintf(&w, "((%s)%s)", tn, v);
			clang_disposeString(ts);
			free(v);
			v = rc < 0 ? NULL : w;
		}
	} else if (clang_EvalResult_getKind(r) == CXEval_Float) {
		double d = clang_EvalResult_getAsDouble(r);

		if (t.kind == CXType_Float)
			rc = asprintf(&v, "%.9ef", d);
		else if (t.kind == CXType_Double)
			rc = asprintf(&v, "%.17e", d);
	}
	clang_EvalResult_dispose(r);
	return rc < 0 ? NULL : v;
}

/* Tokens before @decl's name in its extent: is one of them constexpr? */
static bool has_constexpr(struct cxx *c, CXCursor decl, unsigned *at)
{
	unsigned first, last, name = ct_at(c, cur_off(decl));

	ct_range(c, decl, &first, &last);
	for (unsigned i = first; i < name && i < last; i++)
		if (ct_is(c, i, "constexpr")) {
			*at = i;
			return true;
		}
	return false;
}

/* Blanks a declaration, and its ';' at file scope. */
static void blank_decl(struct cxx *c, CXCursor decl)
{
	unsigned first, last;

	ct_range(c, decl, &first, &last);
	if (at_file_scope(decl) && ct_is(c, last, ";"))
		last++;
	blank(c, first, last);
}

/*
 * A const scalar at file or namespace scope (const int BLOCK = 256;):
 * a constant in C++, not in C, where the tool does not copy it either;
 * lowered as constexpr when clang can compute it.
 */
static bool file_const(CXCursor decl)
{
	CXType t = clang_getCursorType(decl);

	return at_file_scope(decl) && clang_isConstQualifiedType(t) &&
	       t.kind != CXType_ConstantArray &&
	       t.kind != CXType_IncompleteArray &&
	       clang_Cursor_getStorageClass(decl) != CX_SC_Extern &&
	       !cursor_annotated(decl, "agile_constant") &&
	       !cursor_annotated(decl, "agile_device") &&
	       !cursor_annotated(decl, "agile_shared");
}

/*
 * auto x = ...; (in C, gnu11, an int) -> the type clang deduced, when it
 * is a scalar, a vector type or a pointer or reference to one; other
 * ones (cooperative_groups' types) are left as they are.
 */
static void lower_auto(struct cxx *c, CXCursor decl)
{
	unsigned first, last, name = ct_at(c, cur_off(decl)), at = 0;
	CXType t = clang_getCursorType(decl), base = t;
	CXString sp;
	const char *text;

	ct_range(c, decl, &first, &last);
	for (unsigned i = first; i < name && i < last; i++)
		if (ct_is(c, i, "auto"))
			at = i + 1;
	if (!at)
		return;
	if (t.kind == CXType_Pointer || t.kind == CXType_LValueReference) {
		base = clang_getPointeeType(t);
		/* auto *p, auto &r: auto is the pointee */
		for (unsigned i = at; i < name; i++)
			if (ct_is(c, i, "*") || ct_is(c, i, "&"))
				t = base;
	}
	base = clang_getCanonicalType(base);
	sp = clang_getTypeSpelling(t);
	text = clang_getCString(sp);
	if ((base.kind >= CXType_FirstBuiltin &&
	     base.kind <= CXType_LastBuiltin) ||
	    (base.kind == CXType_Record && !strstr(text, "::"))) {
		/* the spelling's own const, if any, is the declaration's */
		if (clang_isConstQualifiedType(t) &&
		    !strncmp(text, "const ", 6))
			text += 6;
		replace(c, at - 1, text);
	}
	clang_disposeString(sp);
}

static enum CXChildVisitResult basic_visit(CXCursor cur, CXCursor parent,
					   CXClientData data)
{
	struct basic *b = data;
	struct cxx *c = b->c;
	enum CXCursorKind kind = clang_getCursorKind(cur);
	unsigned first, last, at;

	(void)parent;
	if (!in_main(c, cur))
		return CXChildVisit_Continue;
	switch (kind) {
	case CXCursor_Namespace:
		ct_range(c, cur, &first, &last);
		for (unsigned i = first; i < last; i++)
			if (ct_is(c, i, "{")) {
				blank(c, first, i + 1);
				break;
			}
		if (last > first && ct_is(c, last - 1, "}"))
			blank(c, last - 1, last);
		return CXChildVisit_Recurse;
	case CXCursor_NamespaceAlias:
	case CXCursor_UsingDirective:
		if (kind == CXCursor_UsingDirective) {
			CXCursor to = clang_getNullCursor();

			clang_visitChildren(cur, alias_target, &to);
			if (!clang_Cursor_isNull(to) && ns_ours(c, to))
				blank_decl(c, cur);
		} else if (ns_ours(c, cur)) {
			blank_decl(c, cur);
		}
		return CXChildVisit_Continue;
	case CXCursor_UsingDeclaration: {
		/* using n::x; of this file's namespace: x is renamed */
		CXCursor to = clang_getNullCursor();

		clang_visitChildren(cur, alias_target, &to);
		if (!clang_Cursor_isNull(to) && ns_ours(c, to))
			blank_decl(c, cur);
		return CXChildVisit_Continue;
	}
	case CXCursor_StaticAssert:
		if (!in_template(cur))
			blank_decl(c, cur);
		return CXChildVisit_Continue;
	case CXCursor_VarDecl:
		if (!in_template(cur))
			lower_auto(c, cur);
		if (has_constexpr(c, cur, &at) || file_const(cur)) {
			struct constexpr_var *v;
			char *value = constexpr_value(cur);

			ct_range(c, cur, &first, &last);
			if (!value) {
				if (!in_template(cur) && !file_const(cur))
					cdiag(c, cur_off(cur),
					      "C++: constexpr variable whose value is not an integer or floating constant (an array: make it __constant__) is not handled");
				return CXChildVisit_Continue;
			}
			if (ct_is(c, last, ",")) {
				cdiag(c, c->tok[last].off,
				      "C++: declare one constexpr variable a declaration");
				free(value);
				return CXChildVisit_Continue;
			}
			v = realloc(b->vars, (b->nr_vars + 1) * sizeof(*v));
			if (!v) {
				free(value);
				c->oom = 1;
				return CXChildVisit_Break;
			}
			b->vars = v;
			b->vars[b->nr_vars].decl = cur;
			b->vars[b->nr_vars++].value = value;
			blank_decl(c, cur);
		}
		return CXChildVisit_Recurse;
	case CXCursor_FunctionDecl:
	case CXCursor_FunctionTemplate:
		if (has_constexpr(c, cur, &at)) {
			if (!cursor_annotated(cur, "agile_device"))
				cdiag(c, cur_off(cur),
				      "C++: a constexpr function called from device code must be __device__ (or __host__ __device__)");
			blank(c, at, at + 1);
		}
		return CXChildVisit_Recurse;
	default:
		return CXChildVisit_Recurse;
	}
}

/* The declaration token @i names or refers to, or a null cursor. */
static CXCursor tok_decl(struct cxx *c, unsigned i)
{
	CXCursor cur = c->tok[i].cur, d;
	enum CXCursorKind k;

	if (c->tok[i].kind != CXToken_Identifier)
		return clang_getNullCursor();
	if (!clang_Cursor_isNull(c->tok[i].ref))
		cur = c->tok[i].ref;
	k = clang_getCursorKind(cur);
	if (clang_isDeclaration(k)) {
		if (cur_off(cur) != c->tok[i].off)
			return clang_getNullCursor();
		d = cur;
	} else if (k == CXCursor_OverloadedDeclRef) {
		d = clang_getOverloadedDecl(cur, 0);
	} else {
		d = clang_getCursorReferenced(cur);
		if (clang_getCursorKind(d) == CXCursor_OverloadedDeclRef)
			d = clang_getOverloadedDecl(d, 0);
	}
	if (clang_Cursor_isNull(d) ||
	    !clang_isDeclaration(clang_getCursorKind(d)))
		return clang_getNullCursor();
	if (clang_getCursorKind(d) == CXCursor_FunctionDecl) {
		CXCursor t = clang_getSpecializedCursorTemplate(d);

		if (!clang_Cursor_isNull(t))
			d = t;
	}
	if (!name_is(d, c->tok[i].text))
		return clang_getNullCursor();
	return d;
}

/*
 * "template DECL;" (an explicit instantiation; libclang shows no cursor
 * for it) into a pointer to the specialisation clang then resolves:
 * "static RET (*const _agile_inst_N)(PARAMS) = &NAME<ARGS>;", dropped
 * once the instantiation is made.
 */
static void explicit_inst(struct cxx *c, unsigned t)
{
	unsigned end = t, open = 0, name = 0, close;
	size_t len = 0;
	char *text = NULL;
	FILE *f;

	while (end < c->nr_tok && !ct_is(c, end, ";") && !ct_is(c, end, "{"))
		end++;
	if (!ct_is(c, end, ";")) {
		cdiag(c, c->tok[t].off,
		      "C++: this template declaration is not handled");
		return;
	}
	for (unsigned i = t + 1; i < end; i++)
		if (ct_is(c, i, "(")) {
			open = i;
			break;
		}
	if (!open || open < t + 2) {
		cdiag(c, c->tok[t].off,
		      "C++: an explicit instantiation of a function is handled, not this");
		return;
	}
	name = open - 1;
	if (ct_is(c, name, ">")) {
		int depth = 0;

		for (unsigned i = name; i > t; i--) {
			if (ct_is(c, i, ">"))
				depth++;
			else if (ct_is(c, i, "<") && --depth == 0) {
				name = i - 1;
				break;
			}
		}
	}
	close = ct_paren_close(c, open);
	/* ns::name: the qualifier goes with the name */
	while (name >= t + 3 && ct_is(c, name - 1, "::") &&
	       c->tok[name - 2].kind == CXToken_Identifier)
		name -= 2;
	if (c->tok[name].kind != CXToken_Identifier || close >= end) {
		cdiag(c, c->tok[t].off,
		      "C++: an explicit instantiation of a function is handled, not this");
		return;
	}
	f = open_memstream(&text, &len);
	if (!f) {
		c->oom = 1;
		return;
	}
	fputs("static ", f);
	for (unsigned i = t + 1; i < name; i++)
		if (!ct_is(c, i, "__global__") && !ct_is(c, i, "__device__") &&
		    !ct_is(c, i, "__host__") && !ct_is(c, i, "inline") &&
		    !ct_is(c, i, "__forceinline__") &&
		    !ct_is(c, i, "__noinline__") && !ct_is(c, i, "static"))
			fprintf(f, "%s ", c->tok[i].text);
	fprintf(f, "(*const " INST_PREFIX "%u)", c->nr_inst++);
	for (unsigned i = open; i <= close; i++)
		fprintf(f, "%s ", c->tok[i].text);
	fputs("= &", f);
	for (unsigned i = name; i < open; i++)
		fprintf(f, "%s ", c->tok[i].text);
	fputs(";", f);
	if (fclose(f)) {
		free(text);
		c->oom = 1;
		return;
	}
	edit(c, c->tok[t].off, c->tok[end].end, "%s", text);
	free(text);
}

static void lower_basic(struct cxx *c)
{
	struct basic b = { .c = c };

	/* first alone: their names are resolved in the next round */
	for (unsigned i = 0; i < c->nr_tok; i++)
		if (ct_is(c, i, "template") && !ct_is(c, i + 1, "<") &&
		    (!i || !ct_is(c, i - 1, "extern")))
			explicit_inst(c, i);
	if (c->nr_ed || c->src->errors)
		return;
	clang_visitChildren(clang_getTranslationUnitCursor(c->src->tu),
			    basic_visit, &b);
	for (unsigned i = 0; i < c->nr_tok; i++) {
		CXCursor d;
		char *n;

		if ((ct_is(c, i, "static_cast") ||
		     ct_is(c, i, "reinterpret_cast") ||
		     ct_is(c, i, "const_cast")) &&
		    ct_is(c, i + 1, "<")) {
			/* static_cast<T>(e) -> ((T)(e)) */
			unsigned gt = ct_angle_close(c, i + 1), cl;

			cl = gt + 1 < c->nr_tok && ct_is(c, gt + 1, "(") ?
				     ct_paren_close(c, gt + 1) :
				     c->nr_tok;
			if (cl >= c->nr_tok || !ct_is(c, gt, ">")) {
				cdiag(c, c->tok[i].off,
				      "C++: this %s is not handled",
				      c->tok[i].text);
				continue;
			}
			edit(c, c->tok[i].off, c->tok[gt].end, "((%.*s)",
			     (int)(c->tok[gt].off - c->tok[i + 1].end),
			     c->src->text + c->tok[i + 1].end);
			edit(c, c->tok[cl].end, c->tok[cl].end, ")");
			continue;
		}
		if (ct_is(c, i, "extern") && ct_is(c, i + 1, "template")) {
			unsigned e = i;

			while (e < c->nr_tok && !ct_is(c, e, ";"))
				e++;
			blank(c, i, e + 1); /* nothing to declare in C */
			i = e;
			continue;
		}
		if (clang_getCursorKind(c->tok[i].cur) ==
		    CXCursor_NamespaceRef) {
			CXCursor ns = clang_getCursorReferenced(c->tok[i].cur);

			if (ns_ours(c, ns) && ct_is(c, i + 1, "::") &&
			    (clang_getCursorKind(clang_getCursorSemanticParent(
				     c->tok[i].cur)) !=
			     CXCursor_NamespaceAlias))
				blank(c, i, i + 2);
			continue;
		}
		d = tok_decl(c, i);
		if (clang_Cursor_isNull(d))
			continue;
		for (unsigned v = 0; v < b.nr_vars; v++)
			if (clang_equalCursors(d, b.vars[v].decl)) {
				replace(c, i, b.vars[v].value);
				goto next;
			}
		n = ns_name(c, d);
		if (n) {
			if (i >= 2 && ct_is(c, i - 1, "::") &&
			    c->tok[i - 2].kind != CXToken_Identifier)
				blank(c, i - 1, i); /* a leading :: */
			else if (i == 1 && ct_is(c, 0, "::"))
				blank(c, 0, 1);
			replace(c, i, n);
			free(n);
		}
next:;
	}
	for (unsigned v = 0; v < b.nr_vars; v++)
		free(b.vars[v].value);
	free(b.vars);
}

/* ---- templates ---- */

static bool type_unsigned(CXType t)
{
	switch (clang_getCanonicalType(t).kind) {
	case CXType_Bool:
	case CXType_UChar:
	case CXType_Char_U:
	case CXType_UShort:
	case CXType_UInt:
	case CXType_ULong:
	case CXType_ULongLong:
		return true;
	default:
		return false;
	}
}

struct tparams {
	CXCursor p[16];
	unsigned n;
	bool bad;
};

static enum CXChildVisitResult tparam_visit(CXCursor cur, CXCursor parent,
					    CXClientData data)
{
	struct tparams *tp = data;
	enum CXCursorKind k = clang_getCursorKind(cur);

	(void)parent;
	if (k == CXCursor_TemplateTypeParameter ||
	    k == CXCursor_NonTypeTemplateParameter ||
	    k == CXCursor_TemplateTemplateParameter) {
		if (tp->n == 16 || k == CXCursor_TemplateTemplateParameter)
			tp->bad = true;
		else
			tp->p[tp->n++] = cur;
	}
	return CXChildVisit_Continue;
}

/* Appends @s to @name as a part of a C name. */
static void mangle_part(FILE *f, const char *s)
{
	bool sep = true;

	fputc('_', f);
	for (; *s; s++) {
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || *s == '_') {
			fputc(*s, f);
			sep = false;
		} else if (*s == '*') {
			fputc('p', f);
			sep = false;
		} else if (*s == '-') {
			fputc('m', f);
			sep = false;
		} else if (*s == ' ' && !sep && s[1] && s[1] != '*') {
			fputc('_', f);
			sep = true;
		}
	}
}

/*
 * The specialisation @spec of template @tmpl: its C name, and the text
 * each template parameter is replaced with; -1 when not handled (said).
 */
static int spec_args(struct cxx *c, CXCursor tmpl, CXCursor spec, unsigned at,
		     struct tparams *tp, char **name, char **subst)
{
	int nr = clang_Cursor_getNumTemplateArguments(spec);
	char *tname = cur_name(tmpl);
	size_t len = 0;
	FILE *f;

	memset(tp, 0, sizeof(*tp));
	clang_visitChildren(tmpl, tparam_visit, tp);
	if (tp->bad || nr < 0 || (unsigned)nr != tp->n || !tname) {
		cdiag(c, at,
		      "C++: the template arguments of %s are not handled (types and integers only, no packs)",
		      tname ? tname : "");
		free(tname);
		return -1;
	}
	f = open_memstream(name, &len);
	if (!f) {
		free(tname);
		c->oom = 1;
		return -1;
	}
	fputs(tname, f);
	free(tname);
	for (unsigned a = 0; a < tp->n; a++) {
		enum CXTemplateArgumentKind k =
			clang_Cursor_getTemplateArgumentKind(spec, a);
		int rc = -1;

		subst[a] = NULL;
		if (k == CXTemplateArgumentKind_Type) {
			CXType t =
				clang_Cursor_getTemplateArgumentType(spec, a);
			CXString s = clang_getTypeSpelling(t);

			rc = asprintf(&subst[a], "%s", clang_getCString(s));
			mangle_part(f, clang_getCString(s));
			clang_disposeString(s);
		} else if (k == CXTemplateArgumentKind_Integral) {
			CXType pt = clang_getCursorType(tp->p[a]);
			char part[32];

			if (type_unsigned(pt)) {
				unsigned long long v =
					clang_Cursor_getTemplateArgumentUnsignedValue(
						spec, a);

				rc = clang_getCanonicalType(pt).kind ==
						     CXType_Bool ?
					     asprintf(&subst[a], "%llu", v) :
					     asprintf(&subst[a], "%lluu", v);
				snprintf(part, sizeof(part), "%llu", v);
			} else {
				long long v =
					clang_Cursor_getTemplateArgumentValue(
						spec, a);

				rc = asprintf(&subst[a],
					      v < 0 ? "(%lld)" : "%lld", v);
				snprintf(part, sizeof(part), "%lld", v);
			}
			mangle_part(f, part);
		}
		if (rc < 0) {
			for (unsigned b = 0; b <= a; b++)
				free(subst[b]);
			fclose(f);
			free(*name);
			cdiag(c, at,
			      "C++: template argument %u: only types and integers are handled",
			      a + 1);
			return -1;
		}
	}
	if (fclose(f)) {
		c->oom = 1;
		return -1;
	}
	return 0;
}

static bool made(struct cxx *c, const char *name)
{
	for (unsigned i = 0; i < c->nr_made; i++)
		if (!strcmp(c->made[i], name))
			return true;
	return false;
}

static bool tmpl_made(struct cxx *c, CXCursor tmpl)
{
	char *n = cur_name(tmpl);
	bool yes = false;

	for (unsigned i = 0; n && i < c->nr_made; i++)
		if (!strcmp(c->made_tmpl[i], n))
			yes = true;
	free(n);
	return yes;
}

/* #line @line "@path", the name's quotes and backslashes escaped. */
static void line_directive(FILE *f, unsigned line, const char *path)
{
	fprintf(f, "#line %u \"", line);
	for (const char *p = path; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', f);
		fputc(*p, f);
	}
	fputs("\"\n", f);
}

/*
 * The text of @tmpl's specialisation named @name: the template after its
 * parameter list, each parameter replaced, between #line directives,
 * inserted after the template's line.
 */
static void instantiate(struct cxx *c, CXCursor tmpl, const struct tparams *tp,
			char **subst, const char *name)
{
	unsigned first, last, body = 0, nm = ct_at(c, cur_off(tmpl));
	unsigned line, col, at, tline, tcol;
	const char *text = c->src->text;
	char **names = calloc(tp->n + 1, sizeof(*names)), **m, **mt;
	size_t len = 0;
	char *out = NULL;
	FILE *f;

	if (!names) {
		c->oom = 1;
		return;
	}
	ct_range(c, tmpl, &first, &last);
	if (ct_is(c, first, "template") && ct_is(c, first + 1, "<"))
		body = ct_angle_close(c, first + 1) + 1;
	if (!body || body >= last) {
		cdiag(c, cur_off(tmpl), "C++: this template is not handled");
		free(names);
		return;
	}
	for (unsigned a = 0; a < tp->n; a++)
		names[a] = cur_name(tp->p[a]);
	presumed(c, c->tok[body].off, &line, &col);
	f = open_memstream(&out, &len);
	if (!f) {
		c->oom = 1;
		goto out;
	}
	line_directive(f, line, c->src->path);
	fprintf(f, "%*s", (int)col - 1, "");
	for (unsigned i = body; i < last; i++) {
		const char *sub = NULL;

		if (i > body)
			fwrite(text + c->tok[i - 1].end, 1,
			       c->tok[i].off - c->tok[i - 1].end, f);
		if (i == nm)
			sub = name;
		else if (c->tok[i].kind == CXToken_Identifier &&
			 !ct_is(c, i - 1, ".") && !ct_is(c, i - 1, "->") &&
			 !ct_is(c, i - 1, "::"))
			for (unsigned a = 0; a < tp->n; a++)
				if (names[a] &&
				    !strcmp(names[a], c->tok[i].text))
					sub = subst[a];
		fputs(sub ? sub : c->tok[i].text, f);
	}
	/* after the template's line */
	at = c->tok[last - 1].end;
	while (at < c->src->size && text[at] != '\n')
		at++;
	if (at < c->src->size)
		at++;
	presumed(c, at < c->src->size ? at : c->tok[last - 1].end, &tline,
		 &tcol);
	fputc('\n', f);
	if (at < c->src->size)
		line_directive(f, tline, c->src->path);
	if (fclose(f)) {
		c->oom = 1;
		goto out;
	}
	if (at >= c->src->size)
		edit(c, at, at, "\n%s", out);
	else
		edit(c, at, at, "%s", out);
	m = realloc(c->made, (c->nr_made + 1) * sizeof(*m));
	if (m)
		c->made = m;
	mt = realloc(c->made_tmpl, (c->nr_made + 1) * sizeof(*mt));
	if (mt)
		c->made_tmpl = mt;
	if (!m || !mt || !(c->made[c->nr_made] = strdup(name))) {
		c->oom = 1;
		goto out;
	}
	c->made_tmpl[c->nr_made] = cur_name(tmpl);
	if (!c->made_tmpl[c->nr_made++])
		c->oom = 1;
out:
	free(out);
	for (unsigned a = 0; a < tp->n; a++)
		free(names[a]);
	free(names);
}

struct span {
	unsigned first, last;
};

struct tmpls {
	struct cxx *c;
	CXCursor *t;
	unsigned n;
};

static enum CXChildVisitResult tmpl_visit(CXCursor cur, CXCursor parent,
					  CXClientData data)
{
	struct tmpls *ts = data;
	CXCursor *t;

	(void)parent;
	if (!in_main(ts->c, cur))
		return CXChildVisit_Continue;
	if (clang_getCursorKind(cur) == CXCursor_FunctionTemplate) {
		t = realloc(ts->t, (ts->n + 1) * sizeof(*t));
		if (!t) {
			ts->c->oom = 1;
			return CXChildVisit_Break;
		}
		ts->t = t;
		ts->t[ts->n++] = cur;
		return CXChildVisit_Continue;
	}
	return CXChildVisit_Recurse;
}

static enum CXChildVisitResult inst_var_visit(CXCursor cur, CXCursor parent,
					      CXClientData data)
{
	struct cxx *c = data;
	char *n;

	(void)parent;
	if (!in_main(c, cur) || clang_getCursorKind(cur) != CXCursor_VarDecl)
		return CXChildVisit_Continue;
	n = cur_name(cur);
	if (n && !strncmp(n, INST_PREFIX, strlen(INST_PREFIX)))
		blank_decl(c, cur);
	free(n);
	return CXChildVisit_Continue;
}

static void lower_templates(struct cxx *c)
{
	struct tmpls ts = { .c = c };

	clang_visitChildren(clang_getTranslationUnitCursor(c->src->tu),
			    tmpl_visit, &ts);
	if (!ts.n)
		goto out;
	/* overloads would share the instantiations' names */
	for (unsigned t = 0; t < ts.n; t++)
		for (unsigned u = 0; u < t; u++) {
			char *n = cur_name(ts.t[t]);

			if (n && clang_isCursorDefinition(ts.t[t]) &&
			    clang_isCursorDefinition(ts.t[u]) &&
			    name_is(ts.t[u], n))
				cdiag(c, cur_off(ts.t[t]),
				      "C++: overloaded function templates (%s) are not handled",
				      n);
			free(n);
		}
	if (c->src->errors)
		goto out;
	for (unsigned i = 0; i < c->nr_tok; i++) {
		CXCursor ref, tmpl, def;
		unsigned end = i + 1;
		bool inside = false;
		struct tparams tp;
		char *name, *subst[16];

		if (c->tok[i].kind != CXToken_Identifier)
			continue;
		for (unsigned t = 0; t < ts.n && !inside; t++) {
			unsigned f, l;

			ct_range(c, ts.t[t], &f, &l);
			inside = i >= f && i < l;
		}
		if (inside)
			continue;
		ref = clang_getCursorReferenced(
			clang_Cursor_isNull(c->tok[i].ref) ? c->tok[i].cur :
							     c->tok[i].ref);
		if (clang_getCursorKind(ref) != CXCursor_FunctionDecl)
			continue;
		tmpl = clang_getSpecializedCursorTemplate(ref);
		if (clang_Cursor_isNull(tmpl) || !in_main(c, tmpl) ||
		    !name_is(tmpl, c->tok[i].text))
			continue;
		def = clang_getCursorDefinition(tmpl);
		if (clang_Cursor_isNull(def)) {
			cdiag(c, c->tok[i].off,
			      "C++: %s: the template has no definition in this file",
			      c->tok[i].text);
			continue;
		}
		if (c->tok[i].off < cur_off(def)) {
			/* its instantiation goes after the template */
			cdiag(c, c->tok[i].off,
			      "C++: %s is used before its template is defined: C needs the instantiation before this call; define the template above it",
			      c->tok[i].text);
			continue;
		}
		if (spec_args(c, def, ref, c->tok[i].off, &tp, &name, subst))
			continue;
		if (ct_is(c, i + 1, "<"))
			end = ct_angle_close(c, i + 1) + 1;
		if (end > c->nr_tok) {
			cdiag(c, c->tok[i].off, "C++: unbalanced < >");
		} else {
			edit(c, c->tok[i].off, c->tok[end - 1].end, "%s", name);
			if (!made(c, name))
				instantiate(c, def, &tp, subst, name);
		}
		for (unsigned a = 0; a < tp.n; a++)
			free(subst[a]);
		free(name);
		i = end - 1;
	}
	if (c->nr_ed)
		goto out;
	/* every use instantiated: the templates go */
	for (unsigned t = 0; t < ts.n; t++) {
		CXCursor tm = ts.t[t];
		unsigned f, l;

		if (clang_isCursorDefinition(tm) &&
		    cursor_annotated(tm, "agile_global") && !tmpl_made(c, tm)) {
			char *n = cur_name(tm);

			cdiag(c, cur_off(tm),
			      "C++: template __global__ %s is never instantiated: add an explicit instantiation, e.g. template __global__ void %s<float>(...); (docs/retarget.md, \"C++\")",
			      n ? n : "", n ? n : "");
			free(n);
		}
		ct_range(c, tm, &f, &l);
		if (ct_is(c, l, ";"))
			l++;
		blank(c, f, l);
	}
	clang_visitChildren(clang_getTranslationUnitCursor(c->src->tu),
			    inst_var_visit, c);
out:
	free(ts.t);
}

/* ---- references ---- */

struct refs {
	struct cxx *c;
	CXCursor *ptr; /* lowered to pointers: uses become (*x) */
	unsigned nr_ptr;
};

/* @cur's '&' in its declaration, or c->nr_tok. */
static unsigned amp_tok(struct cxx *c, CXCursor decl)
{
	unsigned first, last, name = ct_at(c, cur_off(decl));

	ct_range(c, decl, &first, &last);
	for (unsigned i = name; i-- > first;)
		if (ct_is(c, i, "&"))
			return i;
	return c->nr_tok;
}

static int refs_add(struct refs *r, CXCursor decl)
{
	CXCursor *p = realloc(r->ptr, (r->nr_ptr + 1) * sizeof(*p));

	if (!p) {
		r->c->oom = 1;
		return -1;
	}
	r->ptr = p;
	r->ptr[r->nr_ptr++] = decl;
	return 0;
}

static bool ref_const(CXCursor decl)
{
	return clang_isConstQualifiedType(
		clang_getPointeeType(clang_getCursorType(decl)));
}

static enum CXChildVisitResult refs_visit(CXCursor cur, CXCursor parent,
					  CXClientData data)
{
	struct refs *r = data;
	struct cxx *c = r->c;
	enum CXCursorKind kind = clang_getCursorKind(cur);
	unsigned amp;

	(void)parent;
	if (!in_main(c, cur))
		return CXChildVisit_Continue;
	if ((kind == CXCursor_ParmDecl || kind == CXCursor_VarDecl) &&
	    clang_getCursorType(cur).kind == CXType_LValueReference) {
		CXCursor fn = clang_getCursorSemanticParent(cur);

		amp = amp_tok(c, cur);
		if (amp == c->nr_tok) {
			cdiag(c, cur_off(cur),
			      "C++: a reference whose & is not written here is not handled");
			return CXChildVisit_Continue;
		}
		if (kind == CXCursor_ParmDecl &&
		    cursor_annotated(fn, "agile_global")) {
			cdiag(c, cur_off(cur),
			      "C++: a __global__ function cannot take a reference");
			return CXChildVisit_Continue;
		}
		if (ref_const(cur)) {
			blank(c, amp, amp + 1); /* by value */
			return CXChildVisit_Continue;
		}
		replace(c, amp, "*");
		if (refs_add(r, cur))
			return CXChildVisit_Break;
		if (kind == CXCursor_VarDecl) {
			unsigned first, last, eq = 0;

			ct_range(c, cur, &first, &last);
			for (unsigned i = ct_at(c, cur_off(cur)); i < last; i++)
				if (ct_is(c, i, "=")) {
					eq = i;
					break;
				}
			if (!eq || eq + 1 >= last) {
				cdiag(c, cur_off(cur),
				      "C++: a reference without = is not handled");
				return CXChildVisit_Continue;
			}
			edit(c, c->tok[eq + 1].off, c->tok[eq + 1].off, "&(");
			edit(c, c->tok[last - 1].end, c->tok[last - 1].end,
			     ")");
		}
		return CXChildVisit_Continue;
	}
	if (kind == CXCursor_CallExpr) {
		CXCursor fn = clang_getCursorReferenced(cur);
		int nr = clang_Cursor_getNumArguments(cur);

		if (clang_getCursorKind(fn) == CXCursor_FunctionDecl &&
		    in_main(c, fn))
			for (int a = 0; a < nr; a++) {
				CXCursor p = clang_Cursor_getArgument(
					fn, (unsigned)a);
				CXCursor arg = clang_Cursor_getArgument(
					cur, (unsigned)a);
				unsigned f, l;

				if (clang_Cursor_isNull(p) ||
				    clang_getCursorType(p).kind !=
					    CXType_LValueReference ||
				    ref_const(p))
					continue;
				ct_range(c, arg, &f, &l);
				if (f >= l)
					continue;
				edit(c, c->tok[f].off, c->tok[f].off, "&(");
				edit(c, c->tok[l - 1].end, c->tok[l - 1].end,
				     ")");
			}
	}
	return CXChildVisit_Recurse;
}

static void lower_refs(struct cxx *c)
{
	struct refs r = { .c = c };

	clang_visitChildren(clang_getTranslationUnitCursor(c->src->tu),
			    refs_visit, &r);
	for (unsigned i = 0; r.nr_ptr && i < c->nr_tok; i++) {
		CXCursor d;

		if (c->tok[i].kind != CXToken_Identifier)
			continue;
		if (!clang_Cursor_isNull(c->tok[i].ref))
			d = clang_getCursorReferenced(c->tok[i].ref);
		else if (clang_isDeclaration(
				 clang_getCursorKind(c->tok[i].cur)))
			continue;
		else
			d = clang_getCursorReferenced(c->tok[i].cur);
		if (clang_Cursor_isNull(d) || !name_is(d, c->tok[i].text))
			continue;
		for (unsigned p = 0; p < r.nr_ptr; p++)
			if (clang_equalCursors(d, r.ptr[p])) {
				edit(c, c->tok[i].off, c->tok[i].end, "(*%s)",
				     c->tok[i].text);
				break;
			}
	}
	free(r.ptr);
}

/* ---- structs with member functions ---- */

struct methods {
	struct cxx *c;
	CXCursor m[64], s[64];
	unsigned n;
};

static enum CXChildVisitResult method_visit(CXCursor cur, CXCursor parent,
					    CXClientData data)
{
	struct methods *ms = data;

	(void)parent;
	if (!in_main(ms->c, cur))
		return CXChildVisit_Continue;
	if (clang_getCursorKind(cur) == CXCursor_CXXMethod) {
		if (ms->n == 64) {
			cdiag(ms->c, cur_off(cur),
			      "C++: more than 64 member functions");
			return CXChildVisit_Break;
		}
		ms->s[ms->n] = clang_getCursorSemanticParent(cur);
		ms->m[ms->n++] = cur;
		return CXChildVisit_Continue;
	}
	return CXChildVisit_Recurse;
}

/* Is @d a member (field or function) of one of @ms's structs? */
static bool our_member(struct methods *ms, CXCursor d)
{
	CXCursor p = clang_getCursorSemanticParent(d);

	for (unsigned i = 0; i < ms->n; i++)
		if (clang_equalCursors(p, ms->s[i]))
			return true;
	return false;
}

/* "S_m": @m's free function. */
static char *method_name(CXCursor m)
{
	char *sn = cur_name(clang_getCursorSemanticParent(m)),
	     *mn = cur_name(m), *n = NULL;

	if (sn && mn && asprintf(&n, "%s_%s", sn, mn) < 0)
		n = NULL;
	free(sn);
	free(mn);
	return n;
}

/* The text of bytes [from, to) with the edits inside it applied. */
static char *apply_range(struct cxx *c, unsigned from, unsigned to)
{
	const char *text = c->src->text;
	unsigned at = from;
	size_t len = 0;
	char *out = NULL;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	qsort(c->ed, c->nr_ed, sizeof(*c->ed), edit_cmp);
	for (unsigned i = 0; i < c->nr_ed; i++) {
		struct edit *e = &c->ed[i];

		if (e->start < at || e->end > to ||
		    (e->start == to && e->end == to && to > from))
			continue;
		fwrite(text + at, 1, e->start - at, f);
		fputs(e->text, f);
		at = e->end;
	}
	fwrite(text + at, 1, to - at, f);
	if (fclose(f)) {
		free(out);
		return NULL;
	}
	return out;
}

static void member_refs(struct cxx *c, struct methods *ms)
{
	for (unsigned i = 0; i < c->nr_tok; i++) {
		CXCursor r = clang_Cursor_isNull(c->tok[i].ref) ?
				     c->tok[i].cur :
				     c->tok[i].ref;
		CXCursor d;
		char *n;

		if (ct_is(c, i, "this")) {
			replace(c, i, "this_");
			continue;
		}
		if (c->tok[i].kind != CXToken_Identifier)
			continue;
		d = clang_getCursorReferenced(r);
		if (clang_Cursor_isNull(d) || !name_is(d, c->tok[i].text) ||
		    !our_member(ms, d) || cur_off(d) == c->tok[i].off)
			continue;
		if (clang_getCursorKind(d) == CXCursor_FieldDecl) {
			if (!ct_is(c, i - 1, ".") && !ct_is(c, i - 1, "->"))
				edit(c, c->tok[i].off, c->tok[i].end,
				     "this_->%s", c->tok[i].text);
			continue;
		}
		if (clang_getCursorKind(d) != CXCursor_CXXMethod ||
		    cur_off(d) == c->tok[i].off)
			continue;
		n = method_name(d);
		if (!n) {
			c->oom = 1;
			return;
		}
		if (c->tok[i].off < cur_off(d)) {
			/* the free functions keep the struct's order */
			cdiag(c, c->tok[i].off,
			      "C++: %s is called before it is defined in its struct: C needs it first; define it above its caller",
			      c->tok[i].text);
			free(n);
			continue;
		}
		if (ct_is(c, i - 1, "::") && i >= 2) {
			/* S::f(...) */
			edit(c, c->tok[i - 2].off, c->tok[i].end, "%s", n);
		} else if (!ct_is(c, i + 1, "(")) {
			cdiag(c, c->tok[i].off,
			      "C++: a member function not called is not handled");
		} else if (clang_CXXMethod_isStatic(d)) {
			if (ct_is(c, i - 1, ".") || ct_is(c, i - 1, "->"))
				cdiag(c, c->tok[i].off,
				      "C++: call a static member function as S::f()");
			else
				replace(c, i, n);
		} else if (ct_is(c, i - 1, ".") || ct_is(c, i - 1, "->")) {
			/* b.m(a) -> S_m(&(b), a); p->m(a) -> S_m((p), a) */
			CXSourceRange ext = clang_getCursorExtent(r);
			unsigned bf =
				ct_at(c, off_of(clang_getRangeStart(ext)));

			if (clang_getCursorKind(r) != CXCursor_MemberRefExpr ||
			    bf >= i - 1) {
				cdiag(c, c->tok[i].off,
				      "C++: this member function call is not handled");
			} else {
				edit(c, c->tok[bf].off, c->tok[bf].off,
				     "%s(%s(", n,
				     ct_is(c, i - 1, ".") ? "&" : "");
				edit(c, c->tok[i - 1].off, c->tok[i + 1].end,
				     ")%s", ct_is(c, i + 2, ")") ? "" : ", ");
			}
		} else {
			/* m(a) inside a member function: S_m(this_, a) */
			edit(c, c->tok[i].off, c->tok[i + 1].end, "%s(this_%s",
			     n, ct_is(c, i + 2, ")") ? "" : ", ");
		}
		free(n);
	}
}

/*
 * Member functions of structs to free functions after their struct:
 * float dot(const Vec3 &o) const {...} -> float Vec3_dot(const Vec3
 * *this_, const Vec3 &o) {...}, members through this_; calls v.dot(w) ->
 * Vec3_dot(&(v), w).
 */
static void lower_structs(struct cxx *c)
{
	struct methods ms = { .c = c };

	clang_visitChildren(clang_getTranslationUnitCursor(c->src->tu),
			    method_visit, &ms);
	if (!ms.n || c->src->errors)
		return;
	member_refs(c, &ms);
	if (c->oom || c->src->errors)
		return;
	for (unsigned k = 0; k < ms.n; k++) {
		CXCursor m = ms.m[k];
		unsigned first, last, sf, sl, nm = ct_at(c, cur_off(m)), open,
					      close, body = 0, at, line, col;
		char *n = method_name(m), *params, *text, *sname;
		size_t len = 0;
		char *out = NULL;
		FILE *f;

		ct_range(c, m, &first, &last);
		ct_range(c, ms.s[k], &sf, &sl);
		open = nm + 1;
		close = ct_paren_close(c, open);
		for (unsigned i = close; i < last; i++)
			if (ct_is(c, i, "{")) {
				body = i;
				break;
			}
		if (!n || !ct_is(c, open, "(") || !body || last > c->nr_tok ||
		    sl >= c->nr_tok) {
			free(n);
			cdiag(c, cur_off(m),
			      "C++: this member function is not handled");
			return;
		}
		params = apply_range(c, c->tok[open].end, c->tok[close].off);
		text = apply_range(c, c->tok[body].off, c->tok[last - 1].end);
		sname = cur_name(ms.s[k]);
		f = open_memstream(&out, &len);
		if (!params || !text || !sname || !f) {
			free(params);
			free(text);
			free(sname);
			free(n);
			if (f)
				fclose(f);
			free(out);
			c->oom = 1;
			return;
		}
		presumed(c, c->tok[first].off, &line, &col);
		line_directive(f, line, c->src->path);
		fprintf(f, "%*s", (int)col - 1, "");
		for (unsigned i = first; i < nm; i++)
			if (!ct_is(c, i, "static") && !ct_is(c, i, "inline"))
				fprintf(f, "%s ", c->tok[i].text);
		if (clang_CXXMethod_isStatic(m))
			fprintf(f, "%s(%s)\n%s\n", n, *params ? params : "void",
				text);
		else
			fprintf(f, "%s(%s%s *this_%s%s)\n%s\n", n,
				clang_CXXMethod_isConst(m) ? "const " : "",
				sname, *params ? ", " : "", params, text);
		/* after the struct's line */
		at = c->tok[ct_is(c, sl, ";") ? sl : sl - 1].end;
		while (at < c->src->size && c->src->text[at] != '\n')
			at++;
		if (at < c->src->size)
			at++;
		if (at < c->src->size) {
			presumed(c, at, &line, &col);
			line_directive(f, line, c->src->path);
		}
		if (fclose(f))
			c->oom = 1;
		else
			edit(c, at, at, "%s%s", at >= c->src->size ? "\n" : "",
			     out);
		blank(c, first, last);
		free(out);
		free(params);
		free(text);
		free(sname);
		free(n);
	}
}

/*
 * The struct, union and enum definitions and typedefs of the (lowered)
 * file, for the output: a struct S also as typedef struct S S, as C++
 * names it.
 */
struct types {
	struct source *src;
	FILE *out;
	unsigned done; /* end of the last one written */
	bool any;
};

static enum CXChildVisitResult types_visit(CXCursor cur, CXCursor parent,
					   CXClientData data)
{
	struct types *t = data;
	enum CXCursorKind k = clang_getCursorKind(cur);
	CXSourceRange r;
	unsigned from, to;
	CXFile file;
	char *n;

	(void)parent;
	clang_getFileLocation(clang_getCursorLocation(cur), &file, NULL, NULL,
			      NULL);
	if (!file || !clang_File_isEqual(file, t->src->file))
		return CXChildVisit_Continue;
	if ((k != CXCursor_StructDecl && k != CXCursor_UnionDecl &&
	     k != CXCursor_EnumDecl && k != CXCursor_TypedefDecl) ||
	    (k != CXCursor_TypedefDecl && !clang_isCursorDefinition(cur)))
		return CXChildVisit_Continue;
	r = clang_getCursorExtent(cur);
	from = off_of(clang_getRangeStart(r));
	to = off_of(clang_getRangeEnd(r));
	if (from < t->done)
		return CXChildVisit_Continue; /* inside the last one */
	if (!t->any)
		fputs("\n/* the source's types */\n", t->out);
	t->any = true;
	n = cur_name(cur);
	if (n && *n && k != CXCursor_TypedefDecl && k != CXCursor_EnumDecl)
		fprintf(t->out, "typedef %s %s %s;\n",
			k == CXCursor_StructDecl ? "struct" : "union", n, n);
	free(n);
	fwrite(t->src->text + from, 1, to - from, t->out);
	fputs(";\n", t->out);
	t->done = to;
	return CXChildVisit_Continue;
}

void cxx_emit_types(struct source *src, FILE *out)
{
	struct types t = { .src = src, .out = out };

	clang_visitChildren(clang_getTranslationUnitCursor(src->tu),
			    types_visit, &t);
}

/* ---- the rounds ---- */

static int reparse(struct cxx *c, char *text, size_t size)
{
	struct source *src = c->src;
	struct CXUnsavedFile mem = { .Filename = src->path,
				     .Contents = text,
				     .Length = (unsigned long)size };
	unsigned n;

	tokens_free(c);
	clang_disposeTranslationUnit(src->tu);
	src->tu = NULL;
	free((char *)src->text);
	src->text = text;
	src->size = size;
	if (clang_parseTranslationUnit2(
		    src->index, src->path, c->argv, c->argc, &mem, 1,
		    CXTranslationUnit_DetailedPreprocessingRecord |
			    CXTranslationUnit_KeepGoing,
		    &src->tu) != CXError_Success) {
		fprintf(source_err(src),
			"agile-retarget: %s: libclang could not parse its lowered C++\n",
			src->path);
		return -1;
	}
	n = clang_getNumDiagnostics(src->tu);
	for (unsigned i = 0; i < n; i++) {
		CXDiagnostic d = clang_getDiagnostic(src->tu, i);

		if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error) {
			CXString s = clang_formatDiagnostic(
				d, clang_defaultDiagnosticDisplayOptions());

			fprintf(source_err(src), "%s (after lowering C++)\n",
				clang_getCString(s));
			clang_disposeString(s);
			src->errors++;
		}
		clang_disposeDiagnostic(d);
	}
	src->file = clang_getFile(src->tu, src->path);
	return src->errors || !src->file ? -1 : 0;
}

int cxx_lower(struct source *src, const char *const *argv, int argc)
{
	struct cxx c = { .src = src, .argv = argv, .argc = argc };
	int rc = 0;

	for (int round = 0;; round++) {
		char *text;
		size_t size;

		if (tokens_get(&c)) {
			rc = -1;
			break;
		}
		if (!round) {
			clang_visitChildren(
				clang_getTranslationUnitCursor(src->tu),
				refuse_visit, &c);
			refuse_tokens(&c);
		}
		if (src->errors) {
			rc = -1;
			break;
		}
		if (round == CXX_MAX_ROUNDS) {
			fprintf(source_err(src),
				"%s: error: C++: templates nested over %d deep\n",
				src->path, CXX_MAX_ROUNDS);
			src->errors++;
			rc = -1;
			break;
		}
		lower_basic(&c);
		if (!c.nr_ed && !src->errors)
			lower_templates(&c);
		if (!c.nr_ed && !src->errors)
			lower_structs(&c);
		if (!c.nr_ed && !src->errors)
			lower_refs(&c);
		if (c.oom || src->errors) {
			if (c.oom)
				fprintf(source_err(src),
					"agile-retarget: out of memory\n");
			rc = -1;
			break;
		}
		if (!c.nr_ed)
			break;
		text = edits_apply(&c, &size);
		edits_clear(&c);
		if (!text) {
			fprintf(source_err(src),
				"agile-retarget: out of memory\n");
			rc = -1;
			break;
		}
		if (getenv("AGILE_RETARGET_CXX_DUMP"))
			fprintf(stderr, "---- round %d ----\n%s\n", round,
				text);
		if (reparse(&c, text, size)) {
			rc = -1;
			break;
		}
	}
	edits_clear(&c);
	free(c.ed);
	tokens_free(&c);
	for (unsigned i = 0; i < c.nr_made; i++) {
		free(c.made[i]);
		free(c.made_tmpl[i]);
	}
	free(c.made);
	free(c.made_tmpl);
	for (unsigned i = 0; i < c.nr_fn; i++) {
		free(c.fn_name[i]);
		free(c.fn_usr[i]);
	}
	free(c.fn_name);
	free(c.fn_usr);
	return rc && c.refused ? -2 : rc;
}
