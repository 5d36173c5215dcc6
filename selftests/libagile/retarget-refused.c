// SPDX-License-Identifier: MIT
/*
 * retarget-refused - what agile-retarget must not translate, it refuses
 * with exit status 1 and FILE:LINE:COL: error: naming the statement: a
 * barrier under a branch on threadIdx.x (retarget/divergent.cu, the
 * issue's example), and in retarget/refused.cu a barrier in a loop whose
 * trip count depends on the thread, a return some threads take before a
 * barrier, a barrier in a switch, a barrier under a condition that
 * depends on threadIdx.y through a local, or on threadIdx.x through a
 * struct member, kernel parameters written (assigned, incremented, in
 * parentheses, their address taken: each at the write, and nothing
 * that only writes through them), a barrier loop's counter assigned in a
 * region.  Every kernel's refusals are reported, each at FILE:LINE:COL of
 * what caused it.  No output file is left.  With --emit=runtime also
 * what the runtime cannot hold (retarget/runtime-refused.cu: ten
 * parameters, a struct by value, nine and the word of extern __shared__
 * sized at launch; grid3d.cu's extern __shared__ without
 * --dynamic-shared is that word, NAME_ARG_DYNAMIC_SHARED; matlist.cu's promoted locals for 1024 threads a
 * lane; warpreduce.cu's warp primitives; globals-runtime-refused.cu's
 * file-scope variables the globals' struct does not hold, each at its
 * name: extern, a struct, a pointer, an initialiser that is not a
 * constant, nine parameters and the globals' word; constant.cu's
 * globals it takes).  retarget/warp-refused.cu,
 * both ways: a shuffle under a branch on threadIdx.x, a mask other than
 * 0xffffffff, a width of 3, a shuffle under ?:, one in another's
 * arguments, a vote in a loop's condition; warp-helper.cu: a shuffle in
 * a __device__ helper called under a branch on threadIdx.x (at the
 * shuffle, the branch and the call it was inlined at); the same with
 * __syncthreads() in devbar-divergent.cu; devbar-refused.cu: helpers
 * with barriers it cannot inline (an early return, a call inside an
 * expression, its address taken, a recursive call); a tile's shuffle
 * under a branch on threadIdx.x (devbar-divergent.cu); coop-refused.cu:
 * cooperative groups it does not map (a tile sized at run time, a pointer
 * to a group, a grid group, a vote of a tile of 16, coalesced threads).  A __shared__ variable at file scope is refused
 * either way (retarget/globals-refused.cu).  C++ beyond the subset
 * cxx.c lowers (retarget/cxx-refused.cu: a virtual member function,
 * inheritance, operator overloading, a lambda, new, delete,
 * decltype), a __global__ template never instantiated
 * (cxx-uninst.cu), overloaded function templates (cxx-overload.cu),
 * overloaded functions, a default member initialiser and a default
 * argument (cxx-refused.cu), a template called above its definition
 * (cxx-order.cu) and a member function above its own
 * (cxx-method-order.cu),
 * and a divergent barrier in an instantiated template
 * at the template's own line:col (cxx-divergent.cu; also one in a
 * template helper inlined there), both ways.  --version prints the
 * project's version; an unknown option is a usage error (exit status 2).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "retargettest.h"
#include "tap.h"

static char out[65536];

static void expect(const char *needle, const char *what)
{
	tap_ok(strstr(out, needle) != NULL, "%s: \"%s\"", what, needle);
}

int main(void)
{
	char path[] = "/tmp/retarget-refused-XXXXXX", args[256];
	int rc, fd;

	if (!retarget_available()) {
		tap_skip("agile-retarget", "not built here (%s)",
			 RETARGET_TOOL);
		return tap_done();
	}
	fd = mkstemp(path);
	if (fd >= 0)
		close(fd);
	unlink(path);
	snprintf(args, sizeof(args), "divergent.cu -o %s", path);
	rc = retarget_run(args, out, sizeof(out));
	tap_ok(rc == 1, "divergent.cu is refused with exit status 1 (%d)", rc);
	expect("divergent.cu:18:3: error: __syncthreads() under thread-dependent control flow",
	       "the barrier's file:line:col");
	expect("the condition at divergent.cu:16:2 depends on threadIdx.x",
	       "the branch's line and the dimension");
	tap_ok(access(path, F_OK) != 0, "no output file is left behind");

	/* the warps' refusals are the same both ways */
	for (int rt = 0; rt < 2; rt++) {
		const char *mode = rt ? "--emit=runtime " : "";

		snprintf(args, sizeof(args), "%swarp-refused.cu", mode);
		rc = retarget_run(args, out, sizeof(out));
		tap_ok(rc == 1,
		       "%swarp-refused.cu is refused with exit status 1 (%d)",
		       mode, rc);
		expect("warp-refused.cu:13:8: error: __shfl_down_sync() under thread-dependent control flow: the condition at warp-refused.cu:12:2 depends on threadIdx.x",
		       "a shuffle under a divergent branch");
		expect("warp-refused.cu:21:7: error: __shfl_sync(): only the full mask 0xffffffff",
		       "a mask other than the full one");
		expect("warp-refused.cu:22:7: error: __shfl_xor_sync(): the width must be a power of two",
		       "a width of 3");
		expect("warp-refused.cu:23:14: error: __shfl_up_sync(): under ?:, && or ||",
		       "a shuffle only some threads evaluate");
		expect("warp-refused.cu:24:25: error: __shfl_sync(): inside another warp primitive's arguments",
		       "a shuffle in a shuffle's arguments");
		expect("warp-refused.cu:25:9: error: __any_sync() in the condition of a loop",
		       "a vote in a loop's condition");
		snprintf(args, sizeof(args), "%swarp-helper.cu", mode);
		rc = retarget_run(args, out, sizeof(out));
		tap_ok(rc == 1, "%swarp-helper.cu is refused (%d)", mode, rc);
		expect("warp-helper.cu:8:9: error: __shfl_sync() under thread-dependent control flow: the condition at warp-helper.cu:13:2 depends on threadIdx.x",
		       "a shuffle in a helper inlined under a divergent branch");
		expect("(inlined at warp-helper.cu:14:22)",
		       "the helper's call, where it was inlined");

		/* __device__ functions with barriers (inline.c) */
		snprintf(args, sizeof(args), "%sdevbar-divergent.cu", mode);
		rc = retarget_run(args, out, sizeof(out));
		tap_ok(rc == 1, "%sdevbar-divergent.cu is refused (%d)", mode,
		       rc);
		expect("devbar-divergent.cu:6:2: error: __syncthreads() under thread-dependent control flow: the condition at devbar-divergent.cu:13:2 depends on threadIdx.x",
		       "a helper's barrier, inlined under a divergent branch");
		expect("(inlined at devbar-divergent.cu:14:3)",
		       "the helper's call, where it was inlined");
		expect("devbar-divergent.cu:27:22: error: __shfl_down_sync() under thread-dependent control flow: the condition at devbar-divergent.cu:26:2 depends on threadIdx.x",
		       "a tile's shuffle under a divergent branch");
		snprintf(args, sizeof(args), "%sdevbar-refused.cu", mode);
		rc = retarget_run(args, out, sizeof(out));
		tap_ok(rc == 1, "%sdevbar-refused.cu is refused (%d)", mode,
		       rc);
		expect("devbar-refused.cu:25:3: error: return before the end of early(), which holds a barrier and is inlined, is not handled",
		       "an early return in a helper with barriers");
		expect("devbar-refused.cu:37:13: error: sync_load() holds a barrier and is inlined: a call of it is handled only as a statement of its own",
		       "a call of a helper with barriers inside an expression");
		expect("devbar-refused.cu:40:30: error: sync_store() holds a barrier and is inlined: taking its address is not handled",
		       "the address of a helper with barriers");
		expect("devbar-refused.cu:19:3: error: recurse() holds a barrier and is inlined: a recursive call is not handled",
		       "a recursive helper with barriers");

		/* cooperative groups (coop.c) */
		snprintf(args, sizeof(args), "%scoop-refused.cu", mode);
		rc = retarget_run(args, out, sizeof(out));
		tap_ok(rc == 1, "%scoop-refused.cu is refused (%d)", mode, rc);
		expect("coop-refused.cu:11:2: error: this cooperative group is not handled",
		       "a tile of a size known at run time");
		expect("coop-refused.cu:12:2: error: this cooperative group is not handled",
		       "a pointer to a group");
		expect("coop-refused.cu:14:2: error: cooperative_groups::this_grid() is not handled",
		       "a grid group");
		expect("coop-refused.cu:15:29: error: ballot() of a thread_block_tile<16>: only of a tile of 32 is handled",
		       "a vote of a tile of 16");
		expect("coop-refused.cu:16:22: error: cooperative_groups::coalesced_threads() is not handled",
		       "coalesced threads");
		expect("coop-refused.cu:12:25: error: this use of cooperative group block is not handled",
		       "a group's address");
	}

	/* C++ (docs/retarget.md, "C++"): the same both ways */
	for (int rt = 0; rt < 2; rt++) {
		const char *mode = rt ? "--emit=runtime " : "";

		snprintf(args, sizeof(args), "%scxx-refused.cu -o %s", mode,
			 path);
		rc = retarget_run(args, out, sizeof(out));
		tap_ok(rc == 1,
		       "%scxx-refused.cu is refused with exit status 1 (%d)",
		       mode, rc);
		expect("cxx-refused.cu:7:27: error: C++: a virtual member function is not handled",
		       "a virtual member function");
		expect("cxx-refused.cu:16:18: error: C++: inheritance is not handled",
		       "inheritance");
		expect("cxx-refused.cu:20:18: error: C++: operator overloading (operator*) is not handled",
		       "operator overloading");
		expect("cxx-refused.cu:27:15: error: C++: a lambda is not handled",
		       "a lambda");
		expect("cxx-refused.cu:28:15: error: C++: new is not handled",
		       "new");
		expect("cxx-refused.cu:32:2: error: C++: delete is not handled",
		       "delete");
		expect("cxx-refused.cu:31:38: error: C++: decltype is not handled",
		       "decltype");
		expect("cxx-refused.cu:40:16: error: C++: overloaded functions (sq) are not handled",
		       "two functions of one name");
		expect("cxx-refused.cu:46:6: error: C++: a default member initialiser is not handled",
		       "a default member initialiser");
		expect("cxx-refused.cu:50:39: error: C++: a default argument is not handled",
		       "a default argument");
		tap_ok(access(path, F_OK) != 0, "%sno output file is left",
		       mode);
		snprintf(args, sizeof(args), "%scxx-uninst.cu", mode);
		rc = retarget_run(args, out, sizeof(out));
		tap_ok(rc == 1, "%scxx-uninst.cu is refused (%d)", mode, rc);
		expect("cxx-uninst.cu:9:39: error: C++: template __global__ fill is never instantiated: add an explicit instantiation",
		       "a template kernel never instantiated");
		snprintf(args, sizeof(args), "%scxx-overload.cu", mode);
		rc = retarget_run(args, out, sizeof(out));
		tap_ok(rc == 1, "%scxx-overload.cu is refused (%d)", mode, rc);
		expect("cxx-overload.cu:11:36: error: C++: overloaded function templates (load) are not handled",
		       "overloaded function templates");
		snprintf(args, sizeof(args), "%scxx-order.cu", mode);
		rc = retarget_run(args, out, sizeof(out));
		tap_ok(rc == 1, "%scxx-order.cu is refused (%d)", mode, rc);
		expect("cxx-order.cu:15:21: error: C++: twice is used before its template is defined",
		       "a template called above its definition");
		snprintf(args, sizeof(args), "%scxx-method-order.cu", mode);
		rc = retarget_run(args, out, sizeof(out));
		tap_ok(rc == 1, "%scxx-method-order.cu is refused (%d)", mode,
		       rc);
		expect("cxx-method-order.cu:14:3: error: C++: add is called before it is defined in its struct",
		       "a member function called above its definition");
		snprintf(args, sizeof(args), "%scxx-divergent.cu", mode);
		rc = retarget_run(args, out, sizeof(out));
		tap_ok(rc == 1, "%scxx-divergent.cu is refused (%d)", mode, rc);
		expect("cxx-divergent.cu:17:3: error: __syncthreads() under thread-dependent control flow: the condition at cxx-divergent.cu:16:2 depends on threadIdx.x",
		       "an instantiated template's barrier, at the template's line:col");
		expect("cxx-divergent.cu:32:3: error: __syncthreads() under thread-dependent control flow: the condition at cxx-divergent.cu:31:2 depends on threadIdx.x, so not every thread of the block would reach this barrier (inlined at cxx-divergent.cu:38:2)",
		       "a template helper's barrier inlined in a lowered file, at the source's line:col (through cxx.c's #line)");
	}

	rc = retarget_run("refused.cu", out, sizeof(out));
	tap_ok(rc == 1, "refused.cu is refused with exit status 1 (%d)", rc);
	expect("refused.cu:16:3: error: __syncthreads() under thread-dependent control flow: the condition at refused.cu:14:2 depends on threadIdx.x",
	       "a loop whose trip count varies");
	expect("refused.cu:26:3: error: return under thread-dependent control flow before the barrier at refused.cu:28:2",
	       "an early return before a barrier");
	expect("refused.cu:37:3: error: __syncthreads() inside this kind of statement",
	       "a barrier in a switch");
	expect("refused.cu:51:3: error: __syncthreads() under thread-dependent control flow: the condition at refused.cu:50:2 depends on threadIdx.y",
	       "variance carried through a local");

	expect("refused.cu:68:3: error: __syncthreads() under thread-dependent control flow: the condition at refused.cu:67:2 depends on threadIdx.x",
	       "variance carried through a struct member");
	expect("refused.cu:84:2: error: param_assigned: kernel parameter p is assigned: copy it into a local first",
	       "a parameter assigned, at the assignment");
	expect("refused.cu:85:2: error: param_assigned: kernel parameter q is assigned",
	       "a parameter incremented, at the increment");
	expect("refused.cu:86:3: error: param_assigned: kernel parameter r is assigned",
	       "a parameter assigned in parentheses");
	expect("refused.cu:87:19: error: param_assigned: kernel parameter s is assigned",
	       "a parameter's own address taken, at the &");
	tap_ok(!strstr(out, "refused.cu:81:") &&
		       !strstr(out, "refused.cu:82:") &&
		       !strstr(out, "refused.cu:83:"),
	       "p[i] = x, *q = x, atomicAdd(&r[i], x) write through a parameter, not the parameter: not refused");
	expect("refused.cu:100:3: error: counter_assigned: s is assigned both in a region and in the head of a loop or branch that holds a barrier, at refused.cu:97:7",
	       "a barrier loop's counter assigned in a region, at that assignment");

	rc = retarget_run("--help", out, sizeof(out));
	tap_ok(rc == 0 && strstr(out, "usage: agile-retarget") &&
		       strstr(out, "NAME_launch"),
	       "--help: the usage, exit status 0");
	rc = retarget_run("--version", out, sizeof(out));
	tap_ok(rc == 0 && !strcmp(out,
				  "agile-retarget " AGILE_PROJECT_VERSION "\n"),
	       "--version: \"agile-retarget %s\", exit status 0 (%d: %s)",
	       AGILE_PROJECT_VERSION, rc, out);
	rc = retarget_run("--no-such-option matlist.cu", out, sizeof(out));
	tap_ok(rc == 2 && strstr(out, "usage:"),
	       "an unknown option: the usage, exit status 2 (%d)", rc);
	rc = retarget_run("", out, sizeof(out));
	tap_ok(rc == 2 && strstr(out, "usage:"),
	       "no file: the usage, exit status 2");
	rc = retarget_run("no-such-file.cu", out, sizeof(out));
	tap_ok(rc == 2 && strstr(out, "no-such-file.cu"),
	       "a missing file: named, exit status 2 (%d)", rc);

	rc = retarget_run("matlist.cu -o /dev/null", out, sizeof(out));
	tap_ok(rc == 0 && !out[0],
	       "the seed's kernel is translated silently (%d)", rc);

	/* --emit=runtime: what the runtime cannot hold */
	rc = retarget_run("--emit=runtime runtime-refused.cu", out,
			  sizeof(out));
	tap_ok(rc == 1, "--emit=runtime: runtime-refused.cu is refused (%d)",
	       rc);
	expect("runtime-refused.cu:14:25: error: ten_params: 10 parameters; the runtime passes at most 9",
	       "too many parameters, at the first that does not fit");
	expect("runtime-refused.cu:24:48: error: by_value: parameter p is neither a pointer, an integer nor a float",
	       "a struct by value");
	expect("runtime-refused.cu:33:26: error: nine_and_dynamic: 9 parameters and 1 hidden argument word (extern __shared__ sized at launch): the runtime passes at most 12 words",
	       "nine parameters and the dynamic shared memory's word");
	snprintf(args, sizeof(args), "--emit=runtime grid3d.cu -o %s -H %s.h",
		 path, path);
	rc = retarget_run(args, out, sizeof(out));
	tap_ok(rc == 0 && !out[0],
	       "--emit=runtime: grid3d.cu without --dynamic-shared is translated silently (%d)",
	       rc);
	snprintf(args, sizeof(args),
		 "grep -q 'grid3d_ARG_DYNAMIC_SHARED,' %s.h", path);
	rc = system(args);
	tap_ok(rc == 0,
	       "its extern __shared__ is the word the header names grid3d_ARG_DYNAMIC_SHARED (%d)",
	       rc);
	snprintf(args, sizeof(args), "%s.h", path);
	unlink(path);
	unlink(args);
	rc = retarget_run("--emit=runtime --lane-threads=1024 matlist.cu", out,
			  sizeof(out));
	tap_ok(rc == 1, "--emit=runtime --lane-threads=1024: refused (%d)", rc);
	expect("matlist.cu:12:17: error: small_mm_list: its promoted locals need 8192 bytes of lane state for 1024 threads a lane; the runtime gives a lane 4096",
	       "promoted locals over a lane's state");
	rc = retarget_run("--emit=runtime constant.cu -o /dev/null", out,
			  sizeof(out));
	tap_ok(rc == 0 && !out[0],
	       "--emit=runtime takes constant.cu's globals silently (%d)", rc);
	rc = retarget_run(
		"--emit=runtime globals-runtime-refused.cu -o /dev/null", out,
		sizeof(out));
	tap_ok(rc == 1,
	       "--emit=runtime: globals-runtime-refused.cu is refused (%d)",
	       rc);
	expect("globals-runtime-refused.cu:13:23: error: __device__ defined_elsewhere: an extern global variable is not handled by --emit=runtime",
	       "an extern __device__ variable, at its name");
	expect("globals-runtime-refused.cu:14:24: error: __device__ a_pair: a global variable of type struct pair is not handled by --emit=runtime",
	       "a struct, at its name");
	expect("globals-runtime-refused.cu:15:19: error: __device__ a_pointer: a global variable of type float * is not handled",
	       "a pointer, at its name");
	expect("globals-runtime-refused.cu:17:22: error: __device__ six: an initialiser that is not a constant is not handled by --emit=runtime",
	       "an initialiser that is not a constant, at it");
	expect("globals-runtime-refused.cu:25:17: error: nine_params: 9 parameters and 1 hidden argument word (the globals): the runtime passes at most 12 words",
	       "nine parameters and the globals' word, at the kernel's name");
	rc = retarget_run("globals-runtime-refused.cu -o /dev/null", out,
			  sizeof(out));
	tap_ok(rc == 0, "--emit=launch takes them (%d)", rc);
	for (int rt = 0; rt < 2; rt++) {
		snprintf(args, sizeof(args), "%sglobals-refused.cu -o %s",
			 rt ? "--emit=runtime " : "", path);
		rc = retarget_run(args, out, sizeof(out));
		tap_ok(rc == 1,
		       "%sa __shared__ variable at file scope is refused (%d)",
		       rt ? "--emit=runtime: " : "", rc);
		expect("globals-refused.cu:6:16: error: __shared__ file_scope_shared at file scope is not handled",
		       "at its name");
		tap_ok(access(path, F_OK) != 0,
		       "no output file is left behind");
	}
	rc = retarget_run("constant.cu -o /dev/null", out, sizeof(out));
	tap_ok(rc == 0 && !out[0],
	       "--emit=launch takes constant.cu silently (%d)", rc);
	rc = retarget_run("--emit=bogus matlist.cu", out, sizeof(out));
	tap_ok(rc == 2 && strstr(out, "--emit=bogus"),
	       "--emit=bogus: a usage error (%d)", rc);
	rc = retarget_run(
		"--emit=runtime --dynamic-shared=64 grid3d.cu -o /dev/null",
		out, sizeof(out));
	tap_ok(rc == 0 && !out[0],
	       "--emit=runtime with --dynamic-shared: translated silently (%d)",
	       rc);
	return tap_done();
}
