// SPDX-License-Identifier: MIT
/*
 * coll-ops - the collectives' reduce kernels (src/coll/ops.c) for the
 * 16-bit floats, against a naive reference: the result in double (exact
 * for float16; for bfloat16 possibly rounded once, harmlessly, as
 * 53 >= 2 x 8 + 2), rounded to the type's precision with rint() (nearest
 * even) at the quantum of its binade, then encoded (float16: GCC's
 * _Float16, exact by then; bfloat16: the upper half of the float).
 * Every float16 and every bfloat16 value against 1 and against its
 * neighbour, then 2M random pairs ($AGILE_TEST_QUICK: 256 Ki): sum, prod,
 * min, max; hand-checked cases for ties to even, overflow to inf,
 * subnormals and NaN.  Also: the streaming path (results of 1 MiB and
 * more) equals the plain one at unaligned starts, and the results land
 * in place (dst = left or right).  All of it twice: on the AVX2+F16C
 * kernels (where the CPU has them, the default) and the portable C.
 */
#define _GNU_SOURCE
#include <agile/coll.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll/ops.h"
#include "tap.h"

struct fmt {
	enum agile_coll_type type;
	const char *name;
	int precision; /* significand bits, the hidden one included */
	int min_exp; /* the smallest subnormal is 2^(min_exp) */
	double overflow; /* rounded magnitudes from here on are inf */
};

static const struct fmt f16 = { AGILE_COLL_FLOAT16, "float16", 11, -24,
				65536.0 };
static const struct fmt bf16 = { AGILE_COLL_BFLOAT16, "bfloat16", 8, -133,
				 0x1p128 };

static double decode(const struct fmt *f, uint16_t h)
{
	if (f->type == AGILE_COLL_FLOAT16) {
		_Float16 v;

		memcpy(&v, &h, sizeof(v));
		return (double)v;
	} else {
		uint32_t u = (uint32_t)h << 16;
		float v;

		memcpy(&v, &u, sizeof(v));
		return (double)v;
	}
}

/* @v exactly representable in @f (or inf); NaN gives a NaN. */
static uint16_t encode(const struct fmt *f, double v)
{
	uint16_t h;

	if (f->type == AGILE_COLL_FLOAT16) {
		_Float16 x = (_Float16)v;

		memcpy(&h, &x, sizeof(h));
	} else {
		float x = (float)v;
		uint32_t u;

		memcpy(&u, &x, sizeof(u));
		h = (uint16_t)(u >> 16);
	}
	return h;
}

/* @v rounded to nearest even in @f: the quantum of its binade. */
static double round_to(const struct fmt *f, double v)
{
	double q, r;
	int e;

	if (isnan(v) || isinf(v) || v == 0)
		return v;
	frexp(v, &e); /* |v| in [2^(e-1), 2^e) */
	q = ldexp(1.0, e - f->precision > f->min_exp ? e - f->precision :
						       f->min_exp);
	r = rint(v / q) * q;
	if (fabs(r) >= f->overflow)
		return copysign(INFINITY, v);
	return r;
}

static bool is_nan16(const struct fmt *f, uint16_t h)
{
	return isnan(decode(f, h));
}

/* The reference of a op b, as bits (a NaN result: any NaN). */
static uint16_t reference(const struct fmt *f, enum agile_coll_op op,
			  uint16_t a, uint16_t b)
{
	double x = decode(f, a), y = decode(f, b);

	switch (op) {
	case AGILE_COLL_SUM:
		return encode(f, round_to(f, x + y));
	case AGILE_COLL_PROD:
		return encode(f, round_to(f, x * y));
	case AGILE_COLL_MIN:
		return isnan(x) || x < y ? a : b;
	default:
		return isnan(x) || x > y ? a : b;
	}
}

/* Equal bits, or both NaN, or (min/max) equal values (+0 and -0). */
static bool same(const struct fmt *f, enum agile_coll_op op, uint16_t got,
		 uint16_t want)
{
	if (is_nan16(f, want))
		return is_nan16(f, got);
	if (op == AGILE_COLL_MIN || op == AGILE_COLL_MAX)
		return decode(f, got) == decode(f, want);
	return got == want;
}

static const char *const op_names[] = { "sum", "min", "max", "prod" };

/* Reduce @n pairs with the library, in the three-operand form, and check
 * each against the reference; the first miss goes to the diagnostics. */
static bool check_pairs(const struct fmt *f, enum agile_coll_op op,
			const uint16_t *a, const uint16_t *b, size_t n,
			uint16_t *out)
{
	struct coll_reducer rd;

	if (agile__coll_reducer_init(&rd, f->type, op, NULL, NULL, true))
		return false;
	agile__coll_reduce(&rd, out, a, b, n);
	for (size_t i = 0; i < n; i++) {
		uint16_t want = reference(f, op, a[i], b[i]);

		if (!same(f, op, out[i], want)) {
			tap_diag(
				"%s %s: 0x%04x op 0x%04x = 0x%04x, want 0x%04x",
				f->name, op_names[op], a[i], b[i], out[i],
				want);
			return false;
		}
	}
	return true;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint16_t random16(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint16_t)(rng >> 24);
}

static int random_rounds = 32;
/* which kernels run: " (AVX2+F16C)" or " (portable)" */
static const char *path = "";

static void every_value(const struct fmt *f)
{
	enum { N = 65536 };
	uint16_t *a = malloc(N * 2), *b = malloc(N * 2), *out = malloc(N * 2);
	uint16_t one = encode(f, 1.0);

	if (!a || !b || !out) {
		tap_ok(0, "%s: memory", f->name);
		goto out;
	}
	for (int op = 0; op < AGILE_COLL_USER; op++) {
		bool ok;

		/* every value against 1, then against its bit neighbour:
		 * ties, carries into the exponent, inf and NaN patterns */
		for (uint32_t i = 0; i < N; i++) {
			a[i] = (uint16_t)i;
			b[i] = one;
		}
		ok = check_pairs(f, op, a, b, N, out);
		for (uint32_t i = 0; i < N; i++)
			b[i] = (uint16_t)(i + 1);
		ok = ok && check_pairs(f, op, a, b, N, out);
		/* random pairs: 2M (the guests, emulated: 256 Ki) */
		for (int round = 0; round < random_rounds && ok; round++) {
			for (uint32_t i = 0; i < N; i++) {
				a[i] = random16();
				b[i] = random16();
			}
			ok = check_pairs(f, op, a, b, N, out);
		}
		tap_ok(ok,
		       "%s %s: every value, neighbours, %d Ki random pairs%s",
		       f->name, op_names[op], random_rounds * 64, path);
	}
out:
	free(a);
	free(b);
	free(out);
}

/* Fixed cases a reader can check by hand. */
static void by_hand(void)
{
	struct coll_reducer rd;
	uint16_t out[1];
	const struct {
		const struct fmt *f;
		enum agile_coll_op op;
		uint16_t a, b, want;
		const char *what;
	} cases[] = {
		{ &f16, AGILE_COLL_SUM, 0x3c00, 0x3c00, 0x4000, "1 + 1 = 2" },
		{ &f16, AGILE_COLL_SUM, 0x7bff, 0x7bff, 0x7c00,
		  "65504 + 65504 = inf" },
		{ &f16, AGILE_COLL_SUM, 0x0001, 0x0001, 0x0002,
		  "2^-24 + 2^-24 = 2^-23 (subnormal)" },
		{ &f16, AGILE_COLL_SUM, 0x6800, 0x3c00, 0x6800,
		  "2048 + 1 = 2048 (a tie, to even)" },
		{ &f16, AGILE_COLL_SUM, 0x6801, 0x3c00, 0x6802,
		  "2050 + 1 = 2052 (a tie, to even)" },
		{ &f16, AGILE_COLL_PROD, 0xc000, 0x4200, 0xc600,
		  "-2 x 3 = -6" },
		{ &f16, AGILE_COLL_MIN, 0x7e00, 0x3c00, 0x7e00,
		  "min(NaN, 1) = NaN" },
		{ &f16, AGILE_COLL_MAX, 0x3c00, 0x7e00, 0x7e00,
		  "max(1, NaN) = NaN" },
		{ &bf16, AGILE_COLL_SUM, 0x3f80, 0x3f80, 0x4000, "1 + 1 = 2" },
		{ &bf16, AGILE_COLL_SUM, 0x4380, 0x3f80, 0x4380,
		  "256 + 1 = 256 (a tie, to even)" },
		{ &bf16, AGILE_COLL_SUM, 0x4381, 0x3f80, 0x4382,
		  "258 + 1 = 260 (a tie, to even)" },
		{ &bf16, AGILE_COLL_PROD, 0x7f7f, 0x4000, 0x7f80,
		  "max x 2 = inf" },
		{ &bf16, AGILE_COLL_MIN, 0xff80, 0x3f80, 0xff80,
		  "min(-inf, 1) = -inf" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		agile__coll_reducer_init(&rd, cases[i].f->type, cases[i].op,
					 NULL, NULL, true);
		agile__coll_reduce(&rd, out, &cases[i].a, &cases[i].b, 1);
		tap_ok(out[0] == cases[i].want, "%s: %s (got 0x%04x)%s",
		       cases[i].f->name, cases[i].what, out[0], path);
	}
}

/* 1 MiB and more goes out through non-temporal stores: the same bits as
 * below the threshold, from unaligned starts, and in place. */
static void streaming(const struct fmt *f)
{
	enum { N = (2 << 20) / 2 + 7 };
	uint16_t *a = malloc(N * 2 + 64), *b = malloc(N * 2 + 64);
	uint16_t *big = malloc(N * 2 + 64), *small = malloc(N * 2 + 64);
	struct coll_reducer rd;
	bool ok = true;

	if (!a || !b || !big || !small) {
		tap_ok(0, "%s streaming: memory", f->name);
		goto out;
	}
	agile__coll_reducer_init(&rd, f->type, AGILE_COLL_SUM, NULL, NULL,
				 true);
	for (size_t i = 0; i < N + 32; i++) {
		a[i] = random16();
		b[i] = random16();
	}
	for (size_t skew = 0; skew < 8 && ok; skew += 3) {
		/* one call over N (streamed), then 4 KiB calls (plain) */
		agile__coll_reduce(&rd, big + skew, a + skew, b + skew, N);
		for (size_t at = 0; at < N; at += 2048) {
			size_t n = N - at < 2048 ? N - at : 2048;

			agile__coll_reduce(&rd, small + skew + at,
					   a + skew + at, b + skew + at, n);
		}
		ok = !memcmp(big + skew, small + skew, N * 2);
	}
	tap_ok(ok, "%s sum of 2 MiB: streamed = plain, unaligned starts%s",
	       f->name, path);
	/* in place, both sides */
	memcpy(big, a, N * 2);
	agile__coll_reduce(&rd, big, big, b, N);
	agile__coll_reduce(&rd, small, a, b, N);
	ok = !memcmp(big, small, N * 2);
	memcpy(big, b, N * 2);
	agile__coll_reduce(&rd, big, a, big, N);
	tap_ok(ok && !memcmp(big, small, N * 2),
	       "%s: dst = left and dst = right give a op b%s", f->name, path);
out:
	free(a);
	free(b);
	free(big);
	free(small);
}

/*
 * agile__coll_copy_streaming: the bytes of memcpy, for every start alignment of
 * both sides and lengths around the 16-byte head and 64-byte body, and
 * not one byte past the end.
 */
static void copy_streaming(void)
{
	enum { MAX = 4096 + 200, PAD = 64 };
	unsigned char *src = malloc(MAX + 2 * PAD);
	unsigned char *dst = malloc(MAX + 2 * PAD);
	const size_t lens[] = { 0,  1,	15,  16,  17,	63,
				64, 65, 127, 200, 4096, 4096 + 199 };
	bool ok = true;

	if (!src || !dst) {
		tap_ok(0, "copy streaming: memory");
		goto out;
	}
	for (size_t i = 0; i < MAX + 2 * PAD; i++)
		src[i] = (unsigned char)random16();
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]) && ok; l++)
		for (size_t so = 0; so < 16 && ok; so += 5)
			for (size_t d_o = 0; d_o < 17 && ok; d_o++) {
				memset(dst, 0xa5, MAX + 2 * PAD);
				agile__coll_copy_streaming(dst + PAD + d_o,
							   src + PAD + so,
							   lens[l]);
				agile__coll_stream_fence();
				ok = !memcmp(dst + PAD + d_o, src + PAD + so,
					     lens[l]) &&
				     dst[PAD + d_o - 1] == 0xa5 &&
				     dst[PAD + d_o + lens[l]] == 0xa5;
				if (!ok)
					tap_diag("length %zu, source +%zu, "
						 "destination +%zu",
						 lens[l], so, d_o);
			}
	tap_ok(ok, "copy streaming: memcpy's bytes, every alignment, nothing "
		   "past either end");
out:
	free(src);
	free(dst);
}

int main(void)
{
	if (getenv("AGILE_TEST_QUICK"))
		random_rounds = 4;
	tap_ok(agile_coll_type_size(AGILE_COLL_FLOAT16) == 2 &&
		       agile_coll_type_size(AGILE_COLL_BFLOAT16) == 2 &&
		       agile_coll_type_size(AGILE_COLL_NR_TYPES) == 0,
	       "16-bit types are 2 bytes");
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0 && !agile__coll_ops_use_simd(true)) {
			tap_skip("the AVX2+F16C kernels",
				 "this CPU has none (or is not x86)");
			continue;
		}
		if (pass == 1)
			agile__coll_ops_use_simd(false);
		path = pass ? " (portable)" : " (AVX2+F16C)";
		by_hand();
		every_value(&f16);
		every_value(&bf16);
		streaming(&f16);
		streaming(&bf16);
	}
	copy_streaming();
	return tap_done();
}
