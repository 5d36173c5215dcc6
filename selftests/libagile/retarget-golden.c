// SPDX-License-Identifier: MIT
/*
 * retarget-golden - agile-retarget's output for seed 004's example
 * (retarget/matlist.cu) is checked in as retarget/matlist.c.golden, and
 * with --emit=runtime as retarget/matlist-dialect.c.golden: any change to
 * the translation shows here; so do the atomics of retarget/histogram.cu
 * that become plain (on __shared__) and those that stay atomic.  When a
 * change is meant,
 * regenerate it with `make -C selftests/libagile retarget-golden` and
 * review the diff.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "retargettest.h"
#include "tap.h"

static char out[1 << 16], golden[1 << 16];

static size_t read_all(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return n;
}

int main(void)
{
	char path[] = "/tmp/retarget-golden-XXXXXX", args[256];
	size_t n, g;
	int rc, fd;

	if (!retarget_available()) {
		tap_skip("agile-retarget", "not built here (%s)",
			 RETARGET_TOOL);
		return tap_done();
	}
	fd = mkstemp(path);
	if (fd < 0) {
		tap_ok(0, "a temporary file");
		return tap_done();
	}
	close(fd);
	snprintf(args, sizeof(args), "matlist.cu -o %s", path);
	rc = retarget_run(args, out, sizeof(out));
	tap_ok(rc == 0, "matlist.cu translated (%d)", rc);
	n = read_all(path, out, sizeof(out));
	g = read_all(RETARGET_SRC "/matlist.c.golden", golden, sizeof(golden));
	unlink(path);
	tap_ok(g > 0 && n == g && !memcmp(out, golden, n),
	       "the output equals retarget/matlist.c.golden (%zu and %zu bytes; make -C selftests/libagile retarget-golden regenerates it)",
	       n, g);
	tap_ok(strstr(out, "float sum[_nt];") &&
		       strstr(out, "int matrix_start[_nt];") &&
		       strstr(out, "sum[_t] += A_list[row + i]"),
	       "sum and matrix_start live across the barrier: per-thread arrays");
	tap_ok(strstr(out, "\t\t\t\tint col;\n") && !strstr(out, "col[_t]"),
	       "col stays a scalar inside its region");

	/* the thread-loop rule on the other kernels, by the region comments */
	rc = retarget_run("transpose.cu", out, sizeof(out));
	tap_ok(rc == 0 && strstr(out, "/* region 3: varies in y, x */") &&
		       !strstr(out, "threadIdx.z = 0"),
	       "transpose: regions loop over y and x only, no z loop");
	rc = retarget_run("grid3d.cu", out, sizeof(out));
	tap_ok(rc == 0 &&
		       strstr(out, "/* region 5: uniform, once per block */"),
	       "grid3d: the region that depends on no thread runs once per block");
	tap_ok(strstr(out, "} while (width[0] > 0);") != NULL,
	       "grid3d: control code reads a promoted local's copy 0");

	/* --emit=runtime: retarget/matlist-dialect.c.golden */
	snprintf(args, sizeof(args), "--emit=runtime matlist.cu -o %s", path);
	rc = retarget_run(args, out, sizeof(out));
	n = read_all(path, out, sizeof(out));
	g = read_all(RETARGET_SRC "/matlist-dialect.c.golden", golden,
		     sizeof(golden));
	unlink(path);
	tap_ok(rc == 0 && g > 0 && n == g && !memcmp(out, golden, n),
	       "--emit=runtime: the output equals retarget/matlist-dialect.c.golden (%zu and %zu bytes)",
	       n, g);
	tap_ok(strstr(out, "\tfloat sum[AGILE_RT_LANE_THREADS];\n") &&
		       strstr(out, "_st->sum[_i] += A_list[row + i]") &&
		       strstr(out,
			      "K(small_mm_list, struct small_mm_list_state, 0, small_mm_list_p0, small_mm_list_p1, small_mm_list_p2)"),
	       "--emit=runtime: sum in the lane's state, one per slot; three phases (the entry and two regions)");
	rc = retarget_run("--emit=runtime reduce.cu", out, sizeof(out));
	tap_ok(rc == 0 &&
		       strstr(out,
			      "for (_sh->_c_s = _bdim.x / 2; _sh->_c_s > 0; _sh->_c_s >>= 1) {") &&
		       strstr(out, "\tfloat partial[MAX_BLOCK];\n"),
	       "--emit=runtime: reduce's barrier loop in its control function, its counter and partial[] block-shared");

	/*
	 * Atomics (histogram.cu): on __shared__ memory plain, the rest
	 * atomic, both ways.  Its 15 atomics on __shared__ are every
	 * recognised form: &v, &v[i], &v[i][j], v + i.
	 */
	for (int rt = 0; rt < 2; rt++) {
		const char *shared_form =
			rt ? "agile_shared_atomicAdd(&_sh->local[in[i] % NR_BINS], 1u);" :
			     "agile_shared_atomicAdd(&local[in[i] % NR_BINS], 1u);";
		const char *global_form =
			rt ? "\tatomicAdd(&hist[b], _sh->local[b]);" :
			     "\tatomicAdd(&hist[b], local[b]);";
		int nr_shared = 0;

		rc = retarget_run(rt ? "--emit=runtime histogram.cu" :
				       "histogram.cu",
				  out, sizeof(out));
		for (const char *p = out;
		     (p = strstr(p, "agile_shared_atomic")); p++)
			nr_shared++;
		tap_ok(rc == 0 && strstr(out, shared_form) &&
			       strstr(out, "agile_shared_atomicInc(&") &&
			       strstr(out, "agile_shared_atomicAdd(") &&
			       nr_shared == 15,
		       "%s: histogram's 15 atomics on __shared__ memory are plain: agile_shared_atomic* (%d)",
		       rt ? "--emit=runtime" : "--emit=launch", nr_shared);
		tap_ok(rc == 0 && strstr(out, global_form) &&
			       strstr(out,
				      "\tatomicAdd(&hist[v % NR_GLOBAL_BINS], 1u);") &&
			       strstr(out, "list[atomicAdd(count, 1u)] = i;") &&
			       !strstr(out, "agile_shared_atomicAdd(&hist") &&
			       !strstr(out, "agile_shared_atomicAdd(count"),
		       "%s: histogram's atomics on global memory stay atomic",
		       rt ? "--emit=runtime" : "--emit=launch");
	}
	return tap_done();
}
