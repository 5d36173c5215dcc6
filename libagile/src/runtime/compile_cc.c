// SPDX-License-Identifier: MIT
/*
 * compile_cc.c - the CPU target: the system C compiler makes a shared
 * object of the dialect's translation unit.
 *
 * The compiler is $AGILE_CC when set, else "cc", found on PATH; it runs
 * as "CC -x c -std=gnu11 -fPIC -shared -Wall FLAGS [options] -o OUT IN" in
 * a temporary folder, its stdout and stderr together in the log, where
 * FLAGS are $AGILE_RT_CPU_FLAGS or AGILE_RT_CPU_FLAGS_DEFAULT (the user's
 * options come after them, so theirs win).  Its identity for the cache
 * key is its name and the first line of "CC --version"; the key also has
 * FLAGS and the host's instruction set (agile__rt_cc_isa), since
 * -march=native makes an object only machines like this one run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "runtime/compile_impl.h"

extern char **environ;

#define MAX_ARGS 64

static const char *cc_name(void)
{
	const char *cc = getenv("AGILE_CC");

	return cc && *cc ? cc : "cc";
}

/*
 * Runs @argv (argv[0] looked up on PATH) with stdout and stderr into
 * @log_path; 0 with its exit status in @status, or -errno of the spawn
 * (-ENOENT: no such program).
 */
static int run(char *const argv[], const char *log_path, int *status)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int err;

	err = posix_spawn_file_actions_init(&fa);
	if (err)
		return -err;
	err = posix_spawn_file_actions_addopen(
		&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (!err)
		err = posix_spawn_file_actions_adddup2(&fa, 1, 2);
	if (!err)
		err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err)
		return -err;
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* The file @path into @buf (malloc'd, NUL-terminated). */
static int slurp(const char *path, char **buf, size_t *size)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return -EIO;
	}
	*buf = malloc((size_t)n + 1);
	if (!*buf) {
		fclose(f);
		return -ENOMEM;
	}
	if (fread(*buf, 1, (size_t)n, f) != (size_t)n) {
		free(*buf);
		fclose(f);
		return -EIO;
	}
	(*buf)[n] = '\0';
	*size = (size_t)n;
	fclose(f);
	return 0;
}

/* A temporary folder for one build, and paths in it. */
struct work {
	char dir[PATH_MAX / 2];
	char in[PATH_MAX], out[PATH_MAX], log[PATH_MAX];
};

static int work_make(struct work *w)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(w->dir, sizeof(w->dir), "%s/agile-cc-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(w->dir))
		return -errno;
	snprintf(w->in, sizeof(w->in), "%s/kernels.c", w->dir);
	snprintf(w->out, sizeof(w->out), "%s/kernels.so", w->dir);
	snprintf(w->log, sizeof(w->log), "%s/log", w->dir);
	return 0;
}

static void work_remove(struct work *w)
{
	unlink(w->in);
	unlink(w->out);
	unlink(w->log);
	rmdir(w->dir);
}

/* Last $AGILE_CC asked about and its identity, under id_lock. */
static pthread_mutex_t id_lock = PTHREAD_MUTEX_INITIALIZER;
static char id_cc[256], id_text[256];

int agile__rt_cc_id(char *id, size_t len, struct agile__rt_diag *diag)
{
	const char *cc = cc_name();
	char *argv[] = { (char *)cc, "--version", NULL };
	struct work w;
	char *log = NULL;
	size_t size;
	int err, status = 0;

	pthread_mutex_lock(&id_lock);
	if (id_text[0] && !strcmp(id_cc, cc)) {
		snprintf(id, len, "%s", id_text);
		pthread_mutex_unlock(&id_lock);
		return 0;
	}
	pthread_mutex_unlock(&id_lock);

	err = work_make(&w);
	if (err)
		return agile__rt_fail(diag, err, "cc",
				      "no temporary folder: %s",
				      strerror(-err));
	err = run(argv, w.log, &status);
	if (!err && (!WIFEXITED(status) || WEXITSTATUS(status)))
		err = -ENOENT;
	if (!err)
		err = slurp(w.log, &log, &size);
	work_remove(&w);
	if (err) {
		free(log);
		return agile__rt_fail(diag, -ENOENT, "cc",
				      "C compiler %.100s not found or not "
				      "working (%s --version); AGILE_CC "
				      "names another",
				      cc, cc);
	}
	log[strcspn(log, "\n")] = '\0';
	snprintf(id, len, "cc %.100s: %.140s", cc, log);
	free(log);
	pthread_mutex_lock(&id_lock);
	snprintf(id_cc, sizeof(id_cc), "%s", cc);
	snprintf(id_text, sizeof(id_text), "%s", id);
	pthread_mutex_unlock(&id_lock);
	return 0;
}

void agile__rt_cc_flags(char *flags, size_t len)
{
	const char *env = getenv("AGILE_RT_CPU_FLAGS");

	snprintf(flags, len, "%s",
		 env && *env ? env : AGILE_RT_CPU_FLAGS_DEFAULT);
}

/*
 * The first line of /proc/cpuinfo that names the instruction set
 * extensions, hashed into @h: 0, or -ENOENT (no such file or line).
 */
static int isa_from_cpuinfo(struct agile__rt_hash *h)
{
	static const char *const keys[] = { "flags", "Features", "isa" };
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[8192];
	int err = -ENOENT;

	if (!f)
		return -ENOENT;
	while (err && fgets(line, sizeof(line), f)) {
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			size_t n = strlen(keys[i]);

			if (strncmp(line, keys[i], n) ||
			    (line[n] != ' ' && line[n] != '\t' &&
			     line[n] != ':'))
				continue;
			agile__rt_hash_string(h, keys[i]);
			agile__rt_hash_string(h, line + n);
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

/*
 * What the compiler makes of -march=native ("CC -march=native -Q
 * --help=target": the resolved -march and every -m option), hashed into
 * @h: 0, or -ENOENT (a compiler that does not answer that).
 */
static int isa_from_cc(struct agile__rt_hash *h)
{
	char *argv[] = { (char *)cc_name(), "-march=native", "-Q",
			 "--help=target", NULL };
	char *log = NULL;
	struct work w;
	size_t size;
	int err, status = 0;

	err = work_make(&w);
	if (err)
		return -ENOENT;
	err = run(argv, w.log, &status);
	if (!err && (!WIFEXITED(status) || WEXITSTATUS(status)))
		err = -ENOENT;
	if (!err)
		err = slurp(w.log, &log, &size);
	work_remove(&w);
	if (err || !strstr(log, "-march=")) {
		free(log);
		return -ENOENT;
	}
	agile__rt_hash_string(h, "cc -Q --help=target");
	agile__rt_hash_field(h, log, size);
	free(log);
	return 0;
}

/* The ISA text (never "" once known) and the $AGILE_CC it was asked of. */
static char isa_cc[256], isa_text[48];

int agile__rt_cc_isa(char *isa, size_t len)
{
	const char *cc = cc_name();
	struct agile__rt_hash h;
	char hex[33];

	pthread_mutex_lock(&id_lock);
	if (isa_text[0] && !strcmp(isa_cc, cc)) {
		snprintf(isa, len, "%s", isa_text);
		pthread_mutex_unlock(&id_lock);
		return 0;
	}
	pthread_mutex_unlock(&id_lock);

	agile__rt_hash_init(&h);
	if (isa_from_cpuinfo(&h) && isa_from_cc(&h))
		return -ENOENT;
	agile__rt_hash_hex(&h, hex);
	snprintf(isa, len, "isa %s", hex);
	pthread_mutex_lock(&id_lock);
	snprintf(isa_cc, sizeof(isa_cc), "%s", cc);
	snprintf(isa_text, sizeof(isa_text), "%s", isa);
	pthread_mutex_unlock(&id_lock);
	return 0;
}

/* @options split at spaces into @argv from @n on; the count after. */
static int split_options(char *options, char **argv, int n)
{
	for (char *save = NULL, *tok = strtok_r(options, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save)) {
		if (n >= MAX_ARGS - 4)
			return -E2BIG;
		argv[n++] = tok;
	}
	return n;
}

int agile__rt_cc_build(const char *unit, const char *flags, const char *options,
		       void **data, size_t *size, struct agile__rt_diag *diag)
{
	char *argv[MAX_ARGS] = {
		(char *)cc_name(), "-x",      "c",     "-std=gnu11",
		"-fPIC",	   "-shared", "-Wall", AGILE_RT_FP_CONTRACT_OFF
	};
	char *fl = strdup(flags ? flags : ""), *log = NULL, *so = NULL;
	char *opts = strdup(options ? options : "");
	size_t log_size = 0;
	struct work w;
	int n = 8, err, status = 0;
	FILE *f;

	if (!fl || !opts) {
		free(fl);
		free(opts);
		return agile__rt_fail(diag, -ENOMEM, "cc", "no memory");
	}
	/* The user's options last: a later -O or -march wins. */
	n = split_options(fl, argv, n);
	if (n >= 0)
		n = split_options(opts, argv, n);
	if (n < 0) {
		free(fl);
		free(opts);
		return agile__rt_fail(diag, n, "cc", "too many options");
	}
	err = work_make(&w);
	if (err) {
		free(fl);
		free(opts);
		return agile__rt_fail(diag, err, "cc",
				      "no temporary folder: %s",
				      strerror(-err));
	}
	argv[n++] = "-o";
	argv[n++] = w.out;
	argv[n++] = w.in;
	argv[n] = NULL;

	f = fopen(w.in, "w");
	if (!f || fputs(unit, f) < 0 || fclose(f)) {
		err = agile__rt_fail(diag, -EIO, "cc", "cannot write %s", w.in);
		goto out;
	}
	agile__rt_count_compile(AGILE_RT_CPU);
	err = run(argv, w.log, &status);
	if (err) {
		agile__rt_fail(diag, err == -ENOENT ? -ENOENT : err, "cc",
			       "cannot run the C compiler %.100s: %s", argv[0],
			       strerror(-err));
		goto out;
	}
	if (!slurp(w.log, &log, &log_size))
		agile__rt_set_log(diag, log, log_size);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		err = agile__rt_fail(
			diag, -EIO, "cc",
			"%.100s failed (exit status %d): see the "
			"log",
			argv[0], WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		goto out;
	}
	err = slurp(w.out, &so, size);
	if (err) {
		agile__rt_fail(diag, err, "cc", "no shared object from %.100s",
			       argv[0]);
		goto out;
	}
	*data = so;
out:
	free(log);
	free(fl);
	free(opts);
	work_remove(&w);
	return err;
}
