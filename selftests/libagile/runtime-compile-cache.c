// SPDX-License-Identifier: MIT
/*
 * runtime-compile-cache - the disk cache of compiled kernels: where it is,
 * its key (FNV-1a-128), a hit on the second build (no compiler run, the
 * same file), a new key for new options, a corrupt or truncated entry
 * rebuilt, AGILE_RT_NO_CACHE, processes building one entry at once (one
 * compiler run in all, the same bytes for each), and writers racing on an
 * entry while a reader never sees a part of one; the CPU's compiler
 * flags (AGILE_RT_CPU_FLAGS) in the key.
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tap.h"
#include "compiletest.h"
#include "runtime/compile_impl.h"

#define NR_PROCS 6
#define NR_PUTS 40

static void test_location(void)
{
	char dir[512], want[512], home[300];
	struct stat st;
	int err;

	err = agile__rt_cache_dir(dir, sizeof(dir), NULL);
	tap_ok(!err && !strcmp(dir, cache_dir), "AGILE_CACHE_DIR: %s",
	       err ? agile_strerror(err) : dir);

	snprintf(home, sizeof(home), "%s/xdg", cache_dir);
	unsetenv("AGILE_CACHE_DIR");
	setenv("XDG_CACHE_HOME", home, 1);
	snprintf(want, sizeof(want), "%s/agile/kernels", home);
	err = agile__rt_cache_dir(dir, sizeof(dir), NULL);
	tap_ok(!err && !strcmp(dir, want) && !stat(want, &st) &&
		       S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700,
	       "else $XDG_CACHE_HOME/agile/kernels, made 0700: %s",
	       err ? agile_strerror(err) : dir);

	unsetenv("XDG_CACHE_HOME");
	snprintf(home, sizeof(home), "%s/home", cache_dir);
	setenv("HOME", home, 1);
	snprintf(want, sizeof(want), "%s/.cache/agile/kernels", home);
	err = agile__rt_cache_dir(dir, sizeof(dir), NULL);
	tap_ok(!err && !strcmp(dir, want) && !stat(want, &st),
	       "else $HOME/.cache/agile/kernels: %s",
	       err ? agile_strerror(err) : dir);

	setenv("AGILE_CACHE_DIR", "relative/dir", 1);
	err = agile__rt_cache_dir(dir, sizeof(dir), NULL);
	tap_ok(err == -EINVAL, "a relative AGILE_CACHE_DIR: %s",
	       agile_strerror(err));
	setenv("AGILE_CACHE_DIR", cache_dir, 1);

	/* Entries are loaded as code: a folder others may write is refused. */
	chmod(cache_dir, 0777);
	err = agile__rt_cache_dir(dir, sizeof(dir), NULL);
	tap_ok(err == -EPERM, "a cache folder others may write: %s",
	       agile_strerror(err));
	chmod(cache_dir, 0700);
	err = agile__rt_cache_dir(dir, sizeof(dir), NULL);
	tap_ok(!err, "private again: %s", agile_strerror(err));
}

static void test_hash(void)
{
	struct agile__rt_hash h;
	char hex[33];

	agile__rt_hash_init(&h);
	agile__rt_hash_hex(&h, hex);
	tap_ok(!strcmp(hex, "6c62272e07bb014262b821756295c58d"),
	       "FNV-1a-128 of nothing: the offset basis");
	agile__rt_hash_bytes(&h, "a", 1);
	agile__rt_hash_hex(&h, hex);
	tap_ok(!strcmp(hex, "d228cb696f1a8caf78912b704e4a8964"),
	       "FNV-1a-128 of \"a\": the published value (%s)", hex);
}

/*
 * The CPU's compiler flags and instruction set are keyed: another
 * AGILE_RT_CPU_FLAGS is another entry, compiled (never a hit on an object
 * made with other flags, or -march=native on another machine); the
 * user's options still go after them.
 */
static void test_flags_keyed(void)
{
	static const char *const flags[] = { "-O1",
					     "-O2 -DAGILE_FLAGS_TEST=1" };
	struct agile__rt_build b = { .target = AGILE_RT_CPU };
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *img[3] = { NULL };
	char isa[48], def[512];
	uint64_t runs = agile__rt_compiler_count(AGILE_RT_CPU);
	int err = 0;

	unsetenv("AGILE_RT_CPU_FLAGS");
	agile__rt_cc_flags(def, sizeof(def));
	tap_ok(!strcmp(def, AGILE_RT_CPU_FLAGS_DEFAULT) && strstr(def, "-O3") &&
		       strstr(def, "-march=native"),
	       "default CPU flags: \"%s\"", def);
	tap_ok(!agile__rt_cc_isa(isa, sizeof(isa)) && !strncmp(isa, "isa ", 4),
	       "the host's instruction set for the key: %s", isa);
	err = agile__rt_compile(user_source, &b, &img[0], &diag);
	for (int i = 0; !err && i < 2; i++) {
		setenv("AGILE_RT_CPU_FLAGS", flags[i], 1);
		err = agile__rt_compile(user_source, &b, &img[i + 1], &diag);
		tap_ok(!err && !img[i + 1]->from_cache &&
			       strcmp(img[i + 1]->key, img[i]->key),
		       "AGILE_RT_CPU_FLAGS=\"%s\": another key, compiled: %s",
		       flags[i], agile_strerror(err));
	}
	if (!err) {
		agile__rt_image_free(img[1]);
		err = agile__rt_compile(user_source, &b, &img[1], &diag);
		tap_ok(!err && img[1]->from_cache &&
			       agile__rt_compiler_count(AGILE_RT_CPU) ==
				       runs + 2 + !img[0]->from_cache,
		       "the same flags again: a hit, %llu compiler runs",
		       (unsigned long long)(agile__rt_compiler_count(
						    AGILE_RT_CPU) -
					    runs));
	} else {
		tap_diag("build: %s: %s", diag.step, diag.message);
		tap_ok(0, "builds with other CPU flags");
	}
	unsetenv("AGILE_RT_CPU_FLAGS");
	for (int i = 0; i < 3; i++)
		agile__rt_image_free(img[i]);
	agile__rt_diag_clear(&diag);
}

/* Builds @source with @options; the image, or NULL (a failed check). */
static struct agile__rt_image *build(const char *options, uint32_t flags,
				     int *err)
{
	struct agile__rt_build b = { .target = AGILE_RT_CPU,
				     .options = options,
				     .flags = flags };
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *img = NULL;

	*err = agile__rt_compile(user_source, &b, &img, &diag);
	if (*err)
		tap_diag("build: %s: %s", diag.step, diag.message);
	agile__rt_diag_clear(&diag);
	return img;
}

/* Overwrites the entry at @path: byte @at flipped, or cut to @len. */
static void damage(const char *path, long at, long len)
{
	int fd = open(path, O_RDWR);
	unsigned char c;

	if (fd < 0)
		return;
	if (len >= 0) {
		if (ftruncate(fd, len))
			tap_diag("ftruncate: %s", strerror(errno));
	} else if (pread(fd, &c, 1, at) == 1) {
		c ^= 0x5a;
		if (pwrite(fd, &c, 1, at) != 1)
			tap_diag("pwrite: %s", strerror(errno));
	}
	close(fd);
}

static void test_hits(void)
{
	struct agile__rt_image *a, *b;
	struct stat sa, sb;
	uint64_t n0 = agile__rt_compiler_count(AGILE_RT_CPU);
	int err;

	a = build(NULL, 0, &err);
	if (!tap_ok(a && !a->from_cache && a->path[0] &&
			    agile__rt_compiler_count(AGILE_RT_CPU) == n0 + 1 &&
			    cache_count(a->key) == 2 /* entry, lock */,
		    "first build: compiled, stored as %s.so", a ? a->key : "?"))
		return;
	stat(a->path, &sa);
	b = build(NULL, 0, &err);
	tap_ok(b && b->from_cache && !strcmp(a->key, b->key) &&
		       !strcmp(a->path, b->path) && a->size == b->size &&
		       !memcmp(a->data, b->data, a->size) &&
		       agile__rt_compiler_count(AGILE_RT_CPU) == n0 + 1 &&
		       !stat(b->path, &sb) && sa.st_ino == sb.st_ino &&
		       sa.st_mtim.tv_nsec == sb.st_mtim.tv_nsec,
	       "second build: a hit, no compiler run, the same file");
	agile__rt_image_free(b);

	b = build("-DUNUSED_OPTION=1", 0, &err);
	tap_ok(b && !b->from_cache && strcmp(a->key, b->key) &&
		       agile__rt_compiler_count(AGILE_RT_CPU) == n0 + 2,
	       "other options: another key, compiled");
	agile__rt_image_free(b);

	/* A byte of the shared object flipped: the checksum says so. */
	damage(a->path, (long)a->size / 2, -1);
	b = build(NULL, 0, &err);
	tap_ok(b && !b->from_cache && !memcmp(a->data, b->data, a->size) &&
		       agile__rt_compiler_count(AGILE_RT_CPU) == n0 + 3,
	       "a flipped byte: detected, rebuilt");
	agile__rt_image_free(b);
	b = build(NULL, 0, &err);
	tap_ok(b && b->from_cache, "and the rebuilt entry is a hit again");
	agile__rt_image_free(b);

	damage(a->path, 0, (long)a->size / 3);
	b = build(NULL, 0, &err);
	tap_ok(b && !b->from_cache && b->size == a->size &&
		       agile__rt_compiler_count(AGILE_RT_CPU) == n0 + 4,
	       "a truncated entry: detected, rebuilt");
	agile__rt_image_free(b);

	b = build(NULL, AGILE_RT_NO_CACHE, &err);
	tap_ok(b && !b->from_cache && b->temp && access(b->path, R_OK) == 0 &&
		       strncmp(b->path, cache_dir, strlen(cache_dir)) &&
		       agile__rt_compiler_count(AGILE_RT_CPU) == n0 + 5,
	       "AGILE_RT_NO_CACHE: compiled into a temporary file");
	if (b) {
		char path[sizeof(b->path)];

		snprintf(path, sizeof(path), "%s", b->path);
		agile__rt_image_free(b);
		tap_ok(access(path, F_OK) && errno == ENOENT,
		       "which goes with the image");
	}
	tap_ok(cache_count(".tmp-") == 0, "no temporary file left behind");
	agile__rt_image_free(a);
}

/* What a child reports of its build. */
struct report {
	int err, from_cache;
	uint64_t compiles;
	char key[33], data_hash[33];
};

static void test_processes(void)
{
	struct report r[NR_PROCS];
	char options[64], path[512];
	int fds[2], ok = 1, compiles = 0, hits = 0;
	pid_t pids[NR_PROCS];

	snprintf(options, sizeof(options), "-DROUND=%d", (int)getpid());
	if (pipe(fds)) {
		tap_ok(0, "pipe");
		return;
	}
	fflush(stdout);
	for (int i = 0; i < NR_PROCS; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct report me = { 0 };
			struct agile__rt_image *img;
			struct agile__rt_hash h;
			/* The parent's runs, inherited: not this child's. */
			uint64_t before =
				agile__rt_compiler_count(AGILE_RT_CPU);

			close(fds[0]);
			img = build(options, 0, &me.err);
			if (img) {
				me.from_cache = img->from_cache;
				snprintf(me.key, sizeof(me.key), "%s",
					 img->key);
				agile__rt_hash_init(&h);
				agile__rt_hash_bytes(&h, img->data, img->size);
				agile__rt_hash_hex(&h, me.data_hash);
			}
			me.compiles =
				agile__rt_compiler_count(AGILE_RT_CPU) - before;
			_exit(write(fds[1], &me, sizeof(me)) == sizeof(me) ? 0 :
									     1);
		}
	}
	close(fds[1]);
	for (int i = 0; i < NR_PROCS; i++) {
		int status;

		ok &= read(fds[0], &r[i], sizeof(r[i])) == sizeof(r[i]);
		waitpid(pids[i], &status, 0);
		ok &= WIFEXITED(status) && !WEXITSTATUS(status);
	}
	close(fds[0]);
	for (int i = 0; ok && i < NR_PROCS; i++) {
		ok &= !r[i].err && !strcmp(r[i].key, r[0].key) &&
		      !strcmp(r[i].data_hash, r[0].data_hash);
		compiles += (int)r[i].compiles;
		hits += r[i].from_cache;
	}
	tap_ok(ok,
	       "%d processes build one new entry at once: the same key "
	       "and the same bytes in each",
	       NR_PROCS);
	tap_ok(ok && compiles == 1 && hits == NR_PROCS - 1,
	       "the compiler ran once in all (%d), the others waited and hit "
	       "(%d)",
	       compiles, hits);
	snprintf(path, sizeof(path), "%s.so", r[0].key);
	tap_ok(cache_count(path) == 1 && cache_count(".tmp-") == 0,
	       "one entry, no temporary file left");
}

/* Writers race on one entry; a reader sees none, or a whole one. */
static void test_no_partial_reads(void)
{
	static char data[256 * 1024];
	const char *key = "00112233445566778899aabbccddeeff";
	char path[512];
	int bad = 0, whole = 0, status, ok = 1, started = 0;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7);
	fflush(stdout);
	for (int i = 0; i < NR_PROCS; i++) {
		pid_t pid = fork();

		started += pid > 0;
		ok &= pid >= 0;
		if (pid == 0) {
			int err = 0;

			for (int n = 0; n < NR_PUTS && !err; n++)
				err = agile__rt_cache_put(cache_dir, key, "bin",
							  data, sizeof(data),
							  path, sizeof(path));
			_exit(err ? 1 : 0);
		}
	}
	/* Read while they write, and once more after the last one. */
	for (int left = started, last = 0; !last;) {
		void *got = NULL;
		size_t size = 0;
		int err;

		last = !left;
		err = agile__rt_cache_get(cache_dir, key, "bin", &got, &size,
					  path, sizeof(path));
		if (!err) {
			whole += size == sizeof(data) &&
				 !memcmp(got, data, sizeof(data));
			bad += size != sizeof(data);
			free(got);
		} else if (err != -ENOENT || last) {
			bad++;
		}
		while (left && waitpid(-1, &status, WNOHANG) > 0) {
			ok &= WIFEXITED(status) && !WEXITSTATUS(status);
			left--;
		}
	}
	tap_ok(ok && !bad && whole > 0,
	       "%d writers x %d renames over one entry: %d whole reads, %d "
	       "partial or corrupt",
	       NR_PROCS, NR_PUTS, whole, bad);
	tap_ok(cache_count(".tmp-") == 0, "no temporary file left");
}

int main(void)
{
	struct agile__rt_diag diag = { 0 };
	char id[256];

	unsetenv("AGILE_CC");
	if (!tap_ok_call(cache_fresh(), "a fresh cache folder"))
		return tap_done();
	test_location();
	test_hash();
	test_no_partial_reads();
	if (agile__rt_compiler_id(AGILE_RT_CPU, id, sizeof(id), &diag)) {
		tap_skip("builds through the cache", "%s", diag.message);
	} else {
		test_hits();
		test_processes();
		test_flags_keyed();
	}
	cache_remove();
	return tap_done();
}
