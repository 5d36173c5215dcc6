// SPDX-License-Identifier: MIT
/*
 * agile-retarget - run unmodified CUDA/HIP kernels on CPU threads (seed
 * 004): translate each __global__ function of a .cu/.hip file into a C
 * function that runs one thread block, callable through agile_launch
 * (agile/launch.h).  docs/retarget.md describes the translation.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "retarget.h"

static bool is_regular(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

static void usage(FILE *out)
{
	fputs("usage: agile-retarget [options] FILE.cu [-- CLANG-ARGS...]\n"
	      "\n"
	      "Translates every __global__ kernel of FILE (CUDA or HIP, unmodified)\n"
	      "into C that runs one thread block on a CPU thread:\n"
	      "  - the body is cut into regions at each __syncthreads(), also inside\n"
	      "    thread-uniform if/for/while/do (deep fission);\n"
	      "  - each region is wrapped in loops over the block's threads, over\n"
	      "    just the dimensions it depends on when that is safe;\n"
	      "  - locals whose value crosses a barrier become per-thread arrays;\n"
	      "    __shared__ arrays stay one per block;\n"
	      "  - warp shuffles and votes (full mask) become exchanges at a\n"
	      "    barrier, 32-lane warps;\n"
	      "  - __device__ helpers become static C functions taking the thread;\n"
	      "  - C++ first lowered to C: templates (each instantiation NAME_ARGS,\n"
	      "    block_reduce<float, 64> -> block_reduce_float_64), namespaces\n"
	      "    (n::x -> n_x), constexpr, static_assert, references.\n"
	      "Per kernel NAME it emits NAME_kernel (a struct agile_launch_kernel),\n"
	      "struct NAME_args and NAME_launch(pool, grid, block, shared_bytes, ...).\n"
	      "\n"
	      "A barrier under thread-dependent control flow, a return before a\n"
	      "barrier some thread would then miss, and the constructs listed in\n"
	      "docs/retarget.md are refused with FILE:LINE:COL: error: ... and exit 1.\n"
	      "\n"
	      "options:\n"
	      "  -o FILE     the C output (default: standard output)\n"
	      "  -H FILE     also write the declarations to this header (the C file\n"
	      "              includes it by its base name; with --emit=runtime, the\n"
	      "              argument words of each kernel)\n"
	      "  --emit=launch   (the default) C for agile_launch, as above\n"
	      "  --emit=runtime  the kernels as a source of the runtime's dialect\n"
	      "              (docs/runtime.md), for agile_rt_program_create: C for\n"
	      "              CPU EUs and CUDA/HIP C++ for GPU EUs; one EU task runs\n"
	      "              one block, each region one phase (docs/retarget.md)\n"
	      "  --lane-threads=N  with --emit=runtime: the most threads one lane\n"
	      "              runs (default 16: blocks of up to 1024 threads on 64\n"
	      "              lanes); the promoted locals take N copies a lane\n"
	      "  --dynamic-shared=BYTES  with --emit=runtime: the size of extern\n"
	      "              __shared__ arrays, fixed when the program is built\n"
	      "              (without it: sized at launch, the entry's local\n"
	      "              memory, word NAME_ARG_DYNAMIC_SHARED)\n"
	      "  -I DIR, -D NAME[=VALUE]\n"
	      "              passed to the parser (as are CLANG-ARGS after --)\n"
	      "  -h, --help  this text\n"
	      "  --version   the version, then exit\n"
	      "\n"
	      "environment:\n"
	      "  AGILE_RETARGET_PRELUDE_DIR  where cuda_prelude.h and include/ are\n"
	      "              (default: the source directory it was built from)\n"
	      "\n"
	      "exit status: 0 translated, 1 refused (diagnostics on stderr), 2 usage\n"
	      "or parse errors.\n",
	      out);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "emit", required_argument, NULL, 'e' },
		{ "lane-threads", required_argument, NULL, 'l' },
		{ "dynamic-shared", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct runtime_opts rt = { .lane_threads = 16 };
	bool runtime = false;
	const char *out_path = NULL, *h_path = NULL, *in_path;
	const char *clang_args[50];
	int nr_clang = 0, opt, rc = 0;
	FILE *c_out = stdout, *h_out = NULL;
	struct translation t = { 0 };
	struct source src;

	while ((opt = getopt_long(argc, argv, "ho:H:I:D:", longopts, NULL)) !=
	       -1) {
		char *arg;

		switch (opt) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("agile-retarget %s\n", AGILE_PROJECT_VERSION);
			return 0;
		case 'e':
			if (!strcmp(optarg, "runtime") ||
			    !strcmp(optarg, "launch")) {
				runtime = !strcmp(optarg, "runtime");
				break;
			}
			fprintf(stderr,
				"agile-retarget: --emit=%s: launch or runtime\n",
				optarg);
			return 2;
		case 'l':
		case 's':
			if (runtime_opt((char)opt, optarg, &rt, stderr))
				return 2;
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'H':
			h_path = optarg;
			break;
		case 'I':
		case 'D':
			if (nr_clang >= 48 ||
			    asprintf(&arg, "-%c%s", opt, optarg) < 0)
				return 2;
			clang_args[nr_clang++] = arg;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	in_path = argv[optind++];
	if (optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	while (optind < argc && nr_clang < 48)
		clang_args[nr_clang++] = argv[optind++];

	rc = source_open(&src, in_path, nr_clang, clang_args);
	if (rc) {
		source_close(&src);
		return rc == -2 ? 1 : 2; /* -2: C++ refused */
	}
	rc = translate_analyse(&src, &t);
	if (!rc && out_path && !(c_out = fopen(out_path, "w")))
		rc = 2;
	if (!rc && h_path && !(h_out = fopen(h_path, "w")))
		rc = 2;
	if (!rc)
		rc = translate_emit(&t, runtime, &rt, c_out, h_out,
				    h_path ? h_path : "");
	if (c_out != stdout && c_out && fclose(c_out))
		rc = 2;
	if (h_out && fclose(h_out))
		rc = 2;
	/* only what we made: never a device given as the output */
	if (rc && out_path && is_regular(out_path))
		remove(out_path);
	if (rc && h_path && is_regular(h_path))
		remove(h_path);
	translate_free(&t);
	source_close(&src);
	return rc;
}
