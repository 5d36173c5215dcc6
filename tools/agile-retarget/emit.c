// SPDX-License-Identifier: MIT
/*
 * emit.c - the C a kernel becomes (seed 004, step 325): the source's own
 * text, token by token with its spacing and comments, re-indented under
 * the thread loops, and rewritten only where it must be:
 *
 *	promoted local v        v[_t] in a region, v[0] in control code
 *	helper(a, b)            helper(AGILE_THREAD(_blk, threadIdx), a, b)
 *	return (in a kernel)    { _nr_done++; goto next_thread_N; }, and after
 *	                        the region: every thread returned, so does
 *	                        the block
 *	__trap()                return -ECANCELED (the launch fails)
 *	hipThreadIdx_x, ...     threadIdx.x, ...
 *	__shared__ declarations moved to the top of the block function
 *	atomicAdd(&sh[i], v)    agile_shared_atomicAdd(&sh[i], v) when the
 *	                        address is in a __shared__ variable (any of
 *	                        CUDA's atomics): one OS thread runs a block,
 *	                        so <agile/retarget.h> makes it a plain
 *	                        read-modify-write; the GPU keeps its own
 *	__shfl_down_sync(m, v, d)  agile_warp_shfl_down(_warp_N, _t, _nt, d,
 *	                        warpSize), v staged before the barrier before
 *	                        (warp.c); the other shuffles and votes alike
 *	__activemask()          agile_warp_activemask(_t, _nt)
 *
 * threadIdx, blockIdx, blockDim and gridDim are locals of the block
 * function (struct agile_dim3), so the source's spelling of them stays.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "retarget.h"

void indent(FILE *out, int level)
{
	for (int i = 0; i < level; i++)
		fputc('\t', out);
}

/* The visual column (tabs of 8, from 0) of byte @offset of the file. */
static unsigned visual_col(const struct source *src, unsigned offset)
{
	unsigned start = offset, col = 0;

	while (start > 0 && src->text[start - 1] != '\n')
		start--;
	for (unsigned i = start; i < offset; i++)
		col = src->text[i] == '\t' ? (col / 8 + 1) * 8 : col + 1;
	return col;
}

/* The bytes between two tokens, re-indented from @base to @level. */
static void emit_gap(struct emitter *e, unsigned from, unsigned to,
		     unsigned base, int level)
{
	const char *text = e->src->text;
	unsigned i = from;

	while (i < to) {
		unsigned col = 0, extra;

		if (text[i] != '\n') {
			fputc(text[i++], e->out);
			continue;
		}
		fputc('\n', e->out);
		i++;
		/* a blank line: no trailing whitespace */
		while (i < to && (text[i] == ' ' || text[i] == '\t')) {
			col = text[i] == '\t' ? (col / 8 + 1) * 8 : col + 1;
			i++;
		}
		if (i < to && text[i] == '\n')
			continue;
		indent(e->out, level);
		extra = col > base ? col - base : 0;
		indent(e->out, (int)(extra / 8));
		for (unsigned s = 0; s < extra % 8; s++)
			fputc(' ', e->out);
	}
}

static const char *hip_builtin(const char *t)
{
	static const struct {
		const char *prefix, *cuda;
	} names[] = {
		{ "hipThreadIdx_", "threadIdx" },
		{ "hipBlockIdx_", "blockIdx" },
		{ "hipBlockDim_", "blockDim" },
		{ "hipGridDim_", "gridDim" },
	};

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i].prefix);

		if (!strncmp(t, names[i].prefix, n) && t[n] && !t[n + 1])
			return names[i].cuda;
	}
	return NULL;
}

/* CUDA's atomics, <agile/retarget.h>'s: "atomic" and one of these. */
static const char *const atomic_ops[] = { "Add", "Sub", "Exch", "Min",
					  "Max", "Inc", "Dec",	"And",
					  "Or",	 "Xor", "CAS" };

static bool is_atomic_name(const char *t)
{
	if (strncmp(t, "atomic", 6))
		return false;
	for (unsigned i = 0; i < sizeof(atomic_ops) / sizeof(atomic_ops[0]);
	     i++)
		if (!strcmp(t + 6, atomic_ops[i]))
			return true;
	return false;
}

static bool is_array(CXType t)
{
	return t.kind == CXType_ConstantArray ||
	       t.kind == CXType_IncompleteArray ||
	       t.kind == CXType_VariableArray ||
	       t.kind == CXType_DependentSizedArray;
}

/*
 * Whether the tokens [first, last), an atomic's address argument, point
 * into one of @k's __shared__ variables: "&v", "&v[i]", "&v[i][j]"
 * (elements of arrays, never through a pointer), or an array of v
 * decayed: "v", "v[i]" (v[i] itself an array), "v + i"; in parentheses
 * or not.  Anything else (a pointer local, a helper's parameter, a
 * struct member, "->") may point anywhere, or is not recognised: it
 * stays atomic.
 */
static bool address_in_shared(const struct kernel *k, const struct source *src,
			      unsigned first, unsigned last)
{
	bool address_of = false;
	CXType type;
	int var;

	while (last - first >= 2 && tok_is(src, first, "(") &&
	       tok_close(src, first, last) == last - 1) {
		first++;
		last--;
	}
	if (first < last && tok_is(src, first, "&")) {
		address_of = true;
		first++;
	}
	if (first >= last || src->tok[first].kind != CXToken_Identifier)
		return false;
	var = src->tok[first].var;
	if (var < 0 || !k->vars[var].shared)
		return false;
	type = clang_getCanonicalType(clang_getCursorType(k->vars[var].decl));
	for (first++; first < last;) {
		if (tok_is(src, first, "[")) {
			unsigned close = first + 1;

			for (int depth = 1; close < last; close++) {
				if (tok_is(src, close, "["))
					depth++;
				else if (tok_is(src, close, "]") && !--depth)
					break;
			}
			if (close >= last || !is_array(type))
				return false;
			type = clang_getCanonicalType(
				clang_getArrayElementType(type));
			first = close + 1;
		} else {
			break;
		}
	}
	if (address_of)
		return first == last;
	/* an array decays to a pointer to its first element */
	return is_array(type) && (first == last || tok_is(src, first, "+"));
}

/*
 * Whether token @i starts a call of a CUDA atomic on __shared__ memory:
 * then it is emitted as agile_shared_<name>.
 */
static bool shared_atomic_at(const struct emitter *e, unsigned i, unsigned last)
{
	const struct source *src = e->src;
	unsigned close, arg_end;
	int depth = 0;

	if (!e->k || src->tok[i].kind != CXToken_Identifier ||
	    !tok_is(src, i + 1, "(") || !is_atomic_name(src->tok[i].text) ||
	    (i > 0 && (tok_is(src, i - 1, ".") || tok_is(src, i - 1, "->"))))
		return false;
	close = tok_close(src, i + 1, last);
	for (arg_end = i + 2; arg_end < close; arg_end++) {
		if (tok_is(src, arg_end, "(") || tok_is(src, arg_end, "[") ||
		    tok_is(src, arg_end, "{"))
			depth++;
		else if (tok_is(src, arg_end, ")") ||
			 tok_is(src, arg_end, "]") || tok_is(src, arg_end, "}"))
			depth--;
		else if (!depth && tok_is(src, arg_end, ","))
			break;
	}
	return address_in_shared(e->k, src, i + 2, arg_end);
}

/*
 * Tokens [first, last) at @level, the first one already placed; @base is
 * the visual column the first token had in the source.
 */
void emit_range(struct emitter *e, unsigned first, unsigned last, int level)
{
	struct source *src = e->src;
	unsigned base = first < src->nr_tok ?
				visual_col(src, src->tok[first].offset) :
				0;

	for (unsigned i = first; i < last; i++) {
		const struct token *t = &src->tok[i];
		const char *hip = hip_builtin(t->text);

		if (i > first)
			emit_gap(e, src->tok[i - 1].end, t->offset, base,
				 level);
		if (!strcmp(t->text, "__shared__"))
			continue;
		if (warp_emit_call(e, &i))
			continue;
		if (shared_atomic_at(e, i, last)) {
			fprintf(e->out, "agile_shared_%s", t->text);
			continue;
		}
		if (hip) {
			fprintf(e->out, "%s.%c",
				e->runtime ? rt_builtin(hip) : hip,
				t->text[strlen(t->text) - 1]);
			continue;
		}
		if (e->runtime && t->kind == CXToken_Identifier &&
		    rt_builtin(t->text) &&
		    !(i > first &&
		      (tok_is(src, i - 1, ".") || tok_is(src, i - 1, "->")))) {
			fputs(rt_builtin(t->text), e->out);
			continue;
		}
		if (e->globals && t->kind == CXToken_Identifier &&
		    rt_global_ref(t->cursor) &&
		    !(i > first &&
		      (tok_is(src, i - 1, ".") || tok_is(src, i - 1, "->")))) {
			fprintf(e->out, "_g->%s", t->text);
			continue;
		}
		if (e->runtime && e->k && t->var >= 0 && !t->var_decl &&
		    e->mode != MODE_PLAIN && rt_var(e, t->var))
			continue;
		if (e->k && t->var >= 0 && !t->var_decl &&
		    e->k->vars[t->var].promoted && e->mode != MODE_PLAIN) {
			fprintf(e->out, "%s[%s]", t->text,
				e->mode == MODE_REGION ? "_t" : "0");
			continue;
		}
		if (t->func >= 0 && tok_is(src, i + 1, "(")) {
			fprintf(e->out, "%s(%s%s%s", t->text,
				!e->k ? "_th" :
				e->runtime ?
					"agile_rt_thread_of(_tidx, _bidx, _bdim, _gdim)" :
					"AGILE_THREAD(_blk, threadIdx)",
				e->globals ? ", _g" : "",
				tok_is(src, i + 2, ")") ? "" : ", ");
			i++;
			continue;
		}
		if (e->k && e->mode == MODE_REGION &&
		    !strcmp(t->text, "return")) {
			if (e->runtime)
				fprintf(e->out,
					"{ agile_shared_atomicAdd(&_sh->_nr_done, 1u); goto next_thread_%d; }",
					e->region);
			else
				fprintf(e->out,
					"{ _nr_done++; goto next_thread_%d; }",
					e->region);
			if (tok_is(src, i + 1, ";"))
				i++;
			continue;
		}
		if (!strcmp(t->text, "__trap") && tok_is(src, i + 1, "(") &&
		    tok_is(src, i + 2, ")")) {
			if (!e->k) {
				diag(src, i,
				     "__trap() in a __device__ helper is not handled");
				e->failed = 1;
			}
			fputs("return -ECANCELED", e->out);
			i += 2;
			continue;
		}
		fputs(t->text, e->out);
	}
}

/* "float *" + "p" -> "float *p"; "int [4]" -> "int name[4]"; no const. */
void decl_text(FILE *out, CXType type, const char *name, const char *suffix)
{
	CXString s;
	const char *spelling;
	size_t len;

	if (type.kind == CXType_ConstantArray) {
		char dims[64];

		snprintf(dims, sizeof(dims), "%s[%lld]", suffix,
			 clang_getArraySize(type));
		decl_text(out, clang_getArrayElementType(type), name, dims);
		return;
	}
	s = clang_getTypeSpelling(type);
	spelling = clang_getCString(s);
	len = strlen(spelling);
	/*
	 * Only the variable's own const goes (it is assigned where its
	 * declaration was): "const int", "int *const"; the pointee's stays
	 * ("const float *").
	 */
	if (clang_isConstQualifiedType(type)) {
		if (len > 6 && !strcmp(spelling + len - 6, " const"))
			len -= 6;
		else if (len > 5 && !strcmp(spelling + len - 5, "const") &&
			 spelling[len - 6] == '*')
			len -= 5;
		else if (!strncmp(spelling, "const ", 6)) {
			spelling += 6;
			len -= 6;
		}
	}
	fprintf(out, "%.*s%s%s%s", (int)len, spelling,
		len && spelling[len - 1] == '*' ? "" : " ", name, suffix);
	clang_disposeString(s);
}

enum CXChildVisitResult collect_decls(CXCursor c, CXCursor parent,
				      CXClientData data)
{
	struct decls *d = data;

	(void)parent;
	if (clang_getCursorKind(c) == CXCursor_VarDecl && d->n < 64)
		d->c[d->n++] = c;
	return CXChildVisit_Continue;
}

/* The token naming @decl's variable inside [first, last), or @last. */
unsigned name_token(const struct source *src, unsigned first, unsigned last,
		    CXCursor decl)
{
	unsigned off;

	clang_getFileLocation(clang_getCursorLocation(decl), NULL, NULL, NULL,
			      &off);
	for (unsigned i = first; i < last; i++)
		if (src->tok[i].offset == off)
			return i;
	return last;
}

static bool decl_moves(const struct emitter *e, const struct token *t)
{
	const struct kernel *k = e->k;

	return t->var >= 0 &&
	       (k->vars[t->var].promoted || k->vars[t->var].hoisted ||
		k->vars[t->var].shared ||
		(e->runtime && var_control(&k->vars[t->var])));
}

/*
 * A declaration in a region: unchanged unless it declares a promoted,
 * hoisted or shared variable; those are declared at the top, so here
 * their initialiser becomes an assignment (or nothing is left).
 */
static void emit_decl_stmt(struct emitter *e, struct node *s, int level)
{
	struct source *src = e->src;
	struct decls d = { .n = 0 };
	bool moves = false;

	clang_visitChildren(s->cursor, collect_decls, &d);
	for (unsigned i = 0; i < d.n; i++) {
		unsigned name = name_token(src, s->first, s->last, d.c[i]);

		if (name < s->last && decl_moves(e, &src->tok[name]))
			moves = true;
	}
	if (!moves) {
		indent(e->out, level);
		emit_range(e, s->first, s->last, level);
		fputc('\n', e->out);
		return;
	}
	for (unsigned i = 0; i < d.n; i++) {
		unsigned vf, vl, name;
		const struct token *t;

		cursor_tokens(src, d.c[i], &vf, &vl);
		name = name_token(src, s->first, s->last, d.c[i]);
		if (name >= s->last)
			continue;
		t = &src->tok[name];
		if (t->var >= 0 && e->k->vars[t->var].shared)
			continue;
		if (tok_is(src, name + 1, "=") && tok_is(src, name + 2, "{")) {
			diag(src, name,
			     "a braced initialiser of a local used across a barrier is not handled");
			e->failed = 1;
			continue;
		}
		if (decl_moves(e, t)) {
			if (!tok_is(src, name + 1, "="))
				continue;
			indent(e->out, level);
			if (e->runtime && !rt_var(e, t->var))
				fputs(t->text, e->out);
			else if (!e->runtime)
				fprintf(e->out, "%s%s", t->text,
					e->k->vars[t->var].promoted ? "[_t]" :
								      "");
			fputs(" = ", e->out);
		} else {
			indent(e->out, level);
			decl_text(e->out, clang_getCursorType(d.c[i]), t->text,
				  "");
			if (!tok_is(src, name + 1, "=")) {
				fputs(";\n", e->out);
				continue;
			}
			fputs(" = ", e->out);
		}
		emit_range(e, name + 2, vl, level);
		fputs(";\n", e->out);
	}
}

void emit_stmt(struct emitter *e, struct node *s, int level)
{
	if (s->warp_stage) {
		warp_emit_stage(e, s, level);
		return;
	}
	if (clang_getCursorKind(s->cursor) == CXCursor_DeclStmt) {
		emit_decl_stmt(e, s, level);
		return;
	}
	indent(e->out, level);
	emit_range(e, s->first, s->last, level);
	fputc('\n', e->out);
}

static void dims_list(char *buf, unsigned dims)
{
	char *p = buf;

	*p = '\0';
	for (int d = 2; d >= 0; d--)
		if (dims & (1u << d))
			p += sprintf(p, "%s%c", p == buf ? "" : ", ", "xyz"[d]);
}

static void emit_region(struct emitter *e, struct node *n, int level)
{
	char *body = NULL, dims[16];
	size_t size = 0;
	FILE *saved = e->out;
	int loops = __builtin_popcount(n->dims);
	bool blank = true;

	e->out = open_memstream(&body, &size);
	if (!e->out)
		abort();
	e->mode = MODE_REGION;
	e->region = n->region;
	for (unsigned i = 0; i < n->nr_kids; i++)
		emit_stmt(e, n->kids[i], level + (loops ? loops : 1));
	fclose(e->out);
	e->out = saved;
	for (size_t i = 0; i < size; i++)
		blank &= body[i] == ' ' || body[i] == '\t' || body[i] == '\n';
	if (blank) {
		free(body);
		return;
	}

	dims_list(dims, n->dims);
	indent(e->out, level);
	if (!loops)
		fprintf(e->out, "/* region %d: uniform, once per block */\n",
			n->region);
	else if (n->needs_all)
		fprintf(e->out, "/* region %d: every thread (%s) */\n",
			n->region,
			n->has_return ? "a thread may return" :
					"promoted locals or side effects");
	else
		fprintf(e->out, "/* region %d: varies in %s */\n", n->region,
			dims);
	if (!loops) {
		indent(e->out, level);
		fputs("{\n", e->out);
	}
	for (int d = 2, l = 0; d >= 0; d--) {
		if (!(n->dims & (1u << d)))
			continue;
		indent(e->out, level + l++);
		fprintf(e->out,
			"for (threadIdx.%c = 0; threadIdx.%c < blockDim.%c; threadIdx.%c++)%s\n",
			"xyz"[d], "xyz"[d], "xyz"[d], "xyz"[d],
			l == loops ? " {" : "");
	}
	if (n->needs_all) {
		indent(e->out, level + loops);
		fputs("AGILE_RT_UNUSED const uint32_t _t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;\n\n",
		      e->out);
	}
	fwrite(body, 1, size, e->out);
	free(body);
	if (n->has_return) {
		indent(e->out, level + loops - 1);
		fprintf(e->out, "next_thread_%d:;\n", n->region);
	}
	indent(e->out, level + (loops ? loops - 1 : 0));
	fputs("}\n", e->out);
	if (n->has_return) {
		/*
		 * Every thread returned: so does the block, control code and
		 * all.  Not every thread: the return depended on the thread,
		 * and variance.c made sure no barrier follows it, so no
		 * region does either.
		 */
		indent(e->out, level);
		fputs("if (_nr_done == _nt)\n", e->out);
		indent(e->out, level + 1);
		fputs("return 0;\n", e->out);
	}
}

static void emit_node(struct emitter *e, struct node *n, int level);

static void emit_block(struct emitter *e, struct node *n, int level)
{
	fputs(" {\n", e->out);
	emit_node(e, n, level + 1);
	indent(e->out, level);
	fputc('}', e->out);
}

static void emit_head(struct emitter *e, struct node *n, int level)
{
	e->mode = MODE_CONTROL;
	emit_range(e, n->first, n->last, level);
}

static void emit_node(struct emitter *e, struct node *n, int level)
{
	struct source *src = e->src;
	char where[512];

	if (!n)
		return;
	switch (n->kind) {
	case NODE_SEQ:
		for (unsigned i = 0; i < n->nr_kids; i++)
			emit_node(e, n->kids[i], level);
		break;
	case NODE_REGION:
		emit_region(e, n, level);
		break;
	case NODE_STMT:
		emit_stmt(e, n, level);
		break;
	case NODE_BARRIER:
		source_where(src, n->first, where, sizeof(where));
		indent(e->out, level);
		if (is_warp_exchange(n->cursor))
			fprintf(e->out,
				"/* %s() (%s): every thread staged its operand above */\n",
				src->tok[n->first].text, where);
		else
			fprintf(e->out,
				"/* %s() (%s): every thread finished the region above */\n",
				src->tok[n->first].text, where);
		break;
	case NODE_IF:
		indent(e->out, level);
		fputs("/* uniform branch holding a barrier: once per block */\n",
		      e->out);
		indent(e->out, level);
		emit_head(e, n, level);
		emit_block(e, n->kids[0], level);
		if (n->nr_kids > 1 && n->kids[1]) {
			fputs(" else", e->out);
			emit_block(e, n->kids[1], level);
		}
		fputc('\n', e->out);
		break;
	case NODE_LOOP:
		indent(e->out, level);
		fputs("/* uniform loop holding a barrier: once per block */\n",
		      e->out);
		indent(e->out, level);
		emit_head(e, n, level);
		emit_block(e, n->kids[0], level);
		fputc('\n', e->out);
		break;
	case NODE_DO:
		indent(e->out, level);
		fputs("/* uniform loop holding a barrier: once per block */\n",
		      e->out);
		indent(e->out, level);
		fputs("do", e->out);
		emit_block(e, n->kids[0], level);
		fputc(' ', e->out);
		emit_head(e, n, level);
		fputs(";\n", e->out);
		break;
	}
}

/* ---- the pieces around the body ---- */

static void emit_params(struct emitter *e, const struct kernel *k,
			const char *sep, const char *end)
{
	for (unsigned i = 0; i < k->nr_params; i++) {
		unsigned pf, pl;

		cursor_tokens(e->src, k->vars[k->params[i]].decl, &pf, &pl);
		e->mode = MODE_PLAIN;
		emit_range(e, pf, pl, 1);
		fputs(i + 1 < k->nr_params ? sep : end, e->out);
	}
}

static void emit_decls(struct emitter *e, struct kernel *kernels, unsigned nr)
{
	for (unsigned i = 0; i < nr; i++) {
		struct kernel *k = &kernels[i];
		const char *name = k->fn->name;

		fprintf(e->out,
			"\n/* %s's parameters, as %s_launch passes them to each block */\nstruct %s_args {\n",
			name, name, name);
		for (unsigned p = 0; p < k->nr_params; p++) {
			unsigned pf, pl;

			cursor_tokens(e->src, k->vars[k->params[p]].decl, &pf,
				      &pl);
			fputc('\t', e->out);
			e->mode = MODE_PLAIN;
			emit_range(e, pf, pl, 1);
			fputs(";\n", e->out);
		}
		if (!k->nr_params)
			fputs("\tchar unused;\n", e->out);
		fprintf(e->out,
			"};\n\nextern const struct agile_launch_kernel %s_kernel;\n\n",
			name);
		fprintf(e->out,
			"/* %s<<<grid, block, shared_bytes>>>(...) on the CPU threads of @pool. */\n"
			"int %s_launch(struct agile_launch_pool *pool, struct agile_dim3 grid,\n"
			"\tstruct agile_dim3 block, size_t shared_bytes%s",
			name, name, k->nr_params ? ",\n\t" : ");\n");
		if (k->nr_params)
			emit_params(e, k, ", ", ");\n");
	}
}

/* #define lines of the source, for the macros its kernels use. */
void emit_defines(struct emitter *e)
{
	const char *p = e->src->text, *end = p + e->src->size;
	bool any = false;

	while (p < end) {
		const char *line = p, *q = p;

		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (q < end && *q == '#') {
			const char *d = q + 1;

			while (d < end && (*d == ' ' || *d == '\t'))
				d++;
			if (!strncmp(d, "define", 6) &&
			    (d[6] == ' ' || d[6] == '\t')) {
				if (!any)
					fputs("\n/* the source's macros */\n",
					      e->out);
				any = true;
				for (;;) {
					const char *nl = memchr(
						p, '\n', (size_t)(end - p));
					const char *stop = nl ? nl : end;

					fwrite(p, 1, (size_t)(stop - p),
					       e->out);
					fputc('\n', e->out);
					p = nl ? nl + 1 : end;
					if (stop == line || stop[-1] != '\\')
						break;
					line = p;
				}
				continue;
			}
		}
		q = memchr(p, '\n', (size_t)(end - p));
		p = q ? q + 1 : end;
	}
}

void emit_helper(struct emitter *e, struct func *fn)
{
	struct source *src = e->src;
	CXType type = clang_getCursorType(fn->cursor);
	CXString ret = clang_getTypeSpelling(clang_getResultType(type));
	int nr = clang_Cursor_getNumArguments(fn->cursor);
	unsigned body_first = fn->last, body_last = fn->last;

	for (unsigned i = fn->first; i < fn->last; i++)
		if (tok_is(src, i, "{")) {
			body_first = i + 1;
			break;
		}
	if (body_last > body_first && tok_is(src, body_last - 1, "}"))
		body_last--;
	for (unsigned i = body_first; i < body_last; i++)
		if (tok_is(src, i, "__syncthreads") ||
		    (warp_name(src->tok[i].text) && tok_is(src, i + 1, "("))) {
			diag(src, i,
			     "%s() in a __device__ function is not handled: call it from the kernel",
			     src->tok[i].text);
			e->failed = 1;
		}

	fprintf(e->out,
		"\n/* __device__ %s: its first argument is the calling thread */\n",
		fn->name);
	if (e->runtime)
		fprintf(e->out,
			"static AGILE_LANE_FN __attribute__((unused)) %s %s(struct agile_rt_thread _th%s%s%s",
			clang_getCString(ret), fn->name,
			e->globals ? ", struct " : "",
			e->globals ? e->globals : "",
			e->globals ? " *_g __attribute__((unused))" : "");
	else
		fprintf(e->out,
			"static AGILE_RT_UNUSED %s %s(struct agile_thread_ctx _th",
			clang_getCString(ret), fn->name);
	clang_disposeString(ret);
	for (int a = 0; a < nr; a++) {
		unsigned pf, pl;

		cursor_tokens(src,
			      clang_Cursor_getArgument(fn->cursor, (unsigned)a),
			      &pf, &pl);
		fputs(", ", e->out);
		e->mode = MODE_PLAIN;
		emit_range(e, pf, pl, 1);
	}
	fputs(")\n{\n", e->out);
	if (e->runtime)
		fputs("\tconst struct agile_rt_dim3 _tidx __attribute__((unused)) = _th.idx;\n"
		      "\tconst struct agile_rt_dim3 _bidx __attribute__((unused)) = _th.block_idx;\n"
		      "\tconst struct agile_rt_dim3 _bdim __attribute__((unused)) = _th.block_dim;\n"
		      "\tconst struct agile_rt_dim3 _gdim __attribute__((unused)) = _th.grid_dim;\n\n",
		      e->out);
	else
		fputs("\tAGILE_RT_UNUSED const struct agile_dim3 threadIdx = _th.idx;\n"
		      "\tAGILE_RT_UNUSED const struct agile_dim3 blockIdx = _th.blk->block_idx;\n"
		      "\tAGILE_RT_UNUSED const struct agile_dim3 blockDim = _th.blk->block_dim;\n"
		      "\tAGILE_RT_UNUSED const struct agile_dim3 gridDim = _th.blk->grid_dim;\n\n",
		      e->out);
	if (body_first < body_last) {
		e->k = NULL;
		e->mode = MODE_PLAIN;
		fputc('\t', e->out);
		emit_range(e, body_first, body_last, 1);
		fputc('\n', e->out);
	}
	fputs("}\n", e->out);
}

static void emit_shared(struct emitter *e, struct kernel *k)
{
	struct source *src = e->src;
	unsigned done_stmt = 0;
	bool any = false;

	for (unsigned i = 0; i < k->nr_vars; i++) {
		struct var *v = &k->vars[i];
		CXType type = clang_getCursorType(v->decl);
		unsigned vf, vl, sf = 0, sl = 0;

		if (!v->shared)
			continue;
		if (!any)
			fputs("\t/* __shared__: one per block */\n", e->out);
		any = true;
		if (clang_Cursor_getStorageClass(v->decl) == CX_SC_Extern) {
			CXType elem = clang_getArrayElementType(type);
			CXString s = clang_getTypeSpelling(elem);

			fprintf(e->out, "\t%s *%s = _blk->dyn_shared;\n",
				clang_getCString(s), v->name);
			clang_disposeString(s);
			continue;
		}
		/* the whole declaration statement, once */
		cursor_tokens(src, v->decl, &vf, &vl);
		for (unsigned t = vf; t > k->fn->first; t--)
			if (tok_is(src, t - 1, ";") ||
			    tok_is(src, t - 1, "{") ||
			    tok_is(src, t - 1, "}")) {
				sf = t;
				break;
			}
		for (sl = vl; sl < k->fn->last && !tok_is(src, sl, ";"); sl++)
			;
		while (tok_is(src, sf, "__shared__"))
			sf++;
		if (sf == done_stmt)
			continue;
		done_stmt = sf;
		fputc('\t', e->out);
		e->mode = MODE_PLAIN;
		emit_range(e, sf, sl + 1, 1);
		fputc('\n', e->out);
	}
}

static void var_list(FILE *out, const struct kernel *k, const char *what,
		     bool promoted)
{
	unsigned n = 0;

	fputs(what, out);
	for (unsigned i = 0; i < k->nr_vars; i++)
		if (promoted ? k->vars[i].promoted : k->vars[i].hoisted)
			fprintf(out, "%s %s", n++ ? "," : "", k->vars[i].name);
	fputs(n ? ".\n" : " none.\n", out);
}

static void emit_kernel(struct emitter *e, struct kernel *k)
{
	const char *name = k->fn->name;
	struct source *src = e->src;
	bool per_thread = k->has_return; /* _nt */
	char where[512];

	e->k = k;
	source_where(src, k->fn->first, where, sizeof(where));
	for (unsigned i = 0; i < k->nr_vars; i++)
		per_thread |= k->vars[i].promoted;
	/* the warp primitives' lanes */
	per_thread |= k->nr_warps ||
		      warp_find(src, k->fn->first, k->fn->last) < k->fn->last;

	fprintf(e->out,
		"\n/*\n * __global__ %s (%s): one block, %d region%s.\n", name,
		where, k->nr_regions, k->nr_regions == 1 ? "" : "s");
	var_list(e->out, k, " * Promoted (one per thread):", true);
	var_list(e->out, k, " * Hoisted (one per block):", false);
	fputs(" */\n", e->out);
	fprintf(e->out,
		"static int %s_block(const struct agile_block_ctx *_blk, const void *_args)\n{\n"
		"\tAGILE_RT_UNUSED const struct %s_args *_a = _args;\n",
		name, name);
	for (unsigned p = 0; p < k->nr_params; p++) {
		unsigned pf, pl, v = k->params[p];

		cursor_tokens(src, k->vars[v].decl, &pf, &pl);
		fputs("\tAGILE_RT_UNUSED ", e->out);
		e->mode = MODE_PLAIN;
		emit_range(e, pf, pl, 1);
		fprintf(e->out, " = _a->%s;\n", k->vars[v].name);
	}
	fputs("\tAGILE_RT_UNUSED const struct agile_dim3 blockIdx = _blk->block_idx;\n"
	      "\tAGILE_RT_UNUSED const struct agile_dim3 blockDim = _blk->block_dim;\n"
	      "\tAGILE_RT_UNUSED const struct agile_dim3 gridDim = _blk->grid_dim;\n"
	      "\tAGILE_RT_UNUSED struct agile_dim3 threadIdx = { 0, 0, 0 };\n",
	      e->out);
	if (per_thread)
		fputs("\tconst uint32_t _nt = blockDim.x * blockDim.y * blockDim.z;\n",
		      e->out);
	emit_shared(e, k);
	if (per_thread)
		fputs("\t/* promoted: one per thread, indexed by the flat thread id _t */\n",
		      e->out);
	for (unsigned i = 0; i < k->nr_vars; i++)
		if (k->vars[i].promoted) {
			fputc('\t', e->out);
			decl_text(e->out, clang_getCursorType(k->vars[i].decl),
				  k->vars[i].name, "[_nt]");
			fputs(";\n", e->out);
		}
	warp_emit_decls(e, k);
	if (k->has_return) {
		fputs("\tuint32_t _nr_done = 0; /* threads that returned */\n",
		      e->out);
	}
	for (unsigned i = 0, n = 0; i < k->nr_vars; i++)
		if (k->vars[i].hoisted) {
			if (!n++)
				fputs("\t/* used in several regions, never across a barrier */\n",
				      e->out);
			fputs("\tAGILE_RT_UNUSED ", e->out);
			decl_text(e->out, clang_getCursorType(k->vars[i].decl),
				  k->vars[i].name, "");
			fputs(";\n", e->out);
		}
	fputc('\n', e->out);
	emit_node(e, k->body, 1);
	fputs("\treturn 0;\n}\n", e->out);

	fprintf(e->out,
		"\nconst struct agile_launch_kernel %s_kernel = {\n"
		"\t.name = \"%s\",\n\t.run_block = %s_block,\n};\n",
		name, name, name);
	fprintf(e->out,
		"\nint %s_launch(struct agile_launch_pool *pool, struct agile_dim3 grid,\n"
		"\tstruct agile_dim3 block, size_t shared_bytes%s",
		name, k->nr_params ? ",\n\t" : ")\n");
	if (k->nr_params)
		emit_params(e, k, ", ", ")\n");
	fprintf(e->out, "{\n\tconst struct %s_args args = {", name);
	for (unsigned p = 0; p < k->nr_params; p++)
		fprintf(e->out, "%s %s", p ? "," : "",
			k->vars[k->params[p]].name);
	fprintf(e->out,
		" };\n\n\treturn agile_launch(pool, &%s_kernel, grid, block, shared_bytes,\n\t\t\t    &args);\n}\n",
		name);
}

const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int emit_file(struct source *src, struct kernel *kernels, unsigned nr,
	      FILE *c_out, FILE *h_out, const char *h_name)
{
	struct emitter e = { .out = c_out, .src = src };
	const char *in = base_name(src->path);

	fprintf(c_out,
		"// SPDX-License-Identifier: MIT\n"
		"/*\n * Generated by agile-retarget from %s: do not edit.\n"
		" * Each kernel is one C function per thread block: its body cut into\n"
		" * regions at the barriers, each region inside loops over the block's\n"
		" * threads (docs/retarget.md).\n */\n"
		"#include <agile/retarget.h>\n",
		in);
	if (h_out) {
		char guard[256];
		size_t n = 0;

		for (const char *p = base_name(h_name); *p && n < 250; p++)
			guard[n++] =
				(char)((*p >= 'a' && *p <= 'z') ?
					       *p - 'a' + 'A' :
				       (*p >= 'A' && *p <= 'Z') || (*p >= '0' &&
								    *p <= '9') ?
					       *p :
					       '_');
		guard[n] = '\0';
		fprintf(c_out, "#include \"%s\"\n", base_name(h_name));
		fprintf(h_out,
			"/* SPDX-License-Identifier: MIT */\n"
			"/* Generated by agile-retarget from %s: do not edit. */\n"
			"#ifndef AGILE_RT_%s\n#define AGILE_RT_%s\n\n"
			"#include <agile/launch.h>\n"
			"#include <agile/retarget_types.h>\n",
			in, guard, guard);
		cxx_emit_types(src, h_out);
		e.out = h_out;
		emit_decls(&e, kernels, nr);
		emit_globals(&e, h_out);
		fprintf(h_out, "\n#endif\n");
		e.out = c_out;
	} else {
		cxx_emit_types(src, c_out);
		emit_decls(&e, kernels, nr);
	}
	emit_defines(&e);
	emit_globals(&e, NULL);
	for (unsigned f = 0; f < src->nr_funcs; f++)
		if (!src->funcs[f].kernel)
			emit_helper(&e, &src->funcs[f]);
	for (unsigned i = 0; i < nr; i++)
		emit_kernel(&e, &kernels[i]);
	return e.failed ? -1 : 0;
}
