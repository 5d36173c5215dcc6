// SPDX-License-Identifier: MIT
/*
 * cache.c - the disk cache of compiled kernels, and the hash that keys it.
 *
 * An entry is one file, <key>.<ext>: the image's bytes as they are (so a
 * CPU image can be dlopen'ed in place: bytes after an ELF file's end are
 * ignored by the loader), then a trailer of fixed size
 *
 *	magic "AGILEKC1", the key (16 bytes), the image's size (u64,
 *	little endian as written on this machine), the image's hash (16)
 *
 * An entry is written to a temporary file in the same folder, fsync'ed and
 * renamed over its name (then the folder fsync'ed), so a reader sees a
 * whole entry or none, whichever processes fill the cache at once.  A
 * file whose trailer, size, key or hash does not match is corrupt: the
 * caller builds the image again and the rename replaces it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "runtime/compile_impl.h"

/* ---- FNV-1a, 128 bits (the FNV authors' published parameters) ---- */

/* offset basis 0x6c62272e07bb014262b821756295c58d */
#define FNV128_OFFSET_HI 0x6c62272e07bb0142ULL
#define FNV128_OFFSET_LO 0x62b821756295c58dULL
/* prime 2^88 + 2^8 + 0x3b */
#define FNV128_PRIME_HI 0x0000000001000000ULL
#define FNV128_PRIME_LO 0x000000000000013bULL

void agile__rt_hash_init(struct agile__rt_hash *hash)
{
	hash->h = ((unsigned __int128)FNV128_OFFSET_HI << 64) |
		  FNV128_OFFSET_LO;
}

void agile__rt_hash_bytes(struct agile__rt_hash *hash, const void *data,
			  size_t len)
{
	const unsigned __int128 prime =
		((unsigned __int128)FNV128_PRIME_HI << 64) | FNV128_PRIME_LO;
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		hash->h ^= p[i];
		hash->h *= prime;
	}
}

void agile__rt_hash_field(struct agile__rt_hash *hash, const void *data,
			  size_t len)
{
	uint64_t n = len;

	agile__rt_hash_bytes(hash, &n, sizeof(n));
	agile__rt_hash_bytes(hash, data, len);
}

void agile__rt_hash_string(struct agile__rt_hash *hash, const char *s)
{
	agile__rt_hash_field(hash, s ? s : "", s ? strlen(s) : 0);
}

void agile__rt_hash_hex(const struct agile__rt_hash *hash, char hex[33])
{
	snprintf(hex, 33, "%016llx%016llx", (unsigned long long)(hash->h >> 64),
		 (unsigned long long)hash->h);
}

/* ---- where ---- */

/* mkdir -p @path, 0700; 0 or a negative errno. */
static int make_dirs(char *path)
{
	for (char *p = path + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) && errno != EEXIST) {
			int err = -errno;

			*p = c;
			return err;
		}
		*p = c;
		if (!c)
			return 0;
	}
}

int agile__rt_cache_dir(char *dir, size_t len, struct agile__rt_diag *diag)
{
	const char *env = getenv("AGILE_CACHE_DIR");
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	struct stat st;
	int n, err;

	if (env && *env)
		n = snprintf(dir, len, "%s", env);
	else if (xdg && *xdg)
		n = snprintf(dir, len, "%s/agile/kernels", xdg);
	else if (home && *home)
		n = snprintf(dir, len, "%s/.cache/agile/kernels", home);
	else
		return agile__rt_fail(diag, -ENOENT, "cache",
				      "no cache folder: AGILE_CACHE_DIR, "
				      "XDG_CACHE_HOME and HOME are unset");
	if (n < 0 || (size_t)n >= len || dir[0] != '/')
		return agile__rt_fail(diag, -EINVAL, "cache",
				      "cache folder %.200s is not an absolute "
				      "path that fits",
				      dir);
	err = make_dirs(dir);
	if (!err && (stat(dir, &st) || !S_ISDIR(st.st_mode)))
		err = -ENOTDIR;
	if (err)
		return agile__rt_fail(diag, err, "cache",
				      "cache folder %.200s: %s", dir,
				      strerror(-err));
	/*
	 * Its entries are loaded as code (a CPU build is dlopen'ed, a GPU
	 * image runs on the device): a folder someone else owns or may
	 * write to would let them plant code, so it is refused.
	 */
	if (st.st_uid != geteuid() || st.st_mode & (S_IWGRP | S_IWOTH))
		return agile__rt_fail(diag, -EPERM, "cache",
				      "cache folder %.200s is not private "
				      "(owner uid %u, mode %03o; it must be "
				      "yours and writable by you alone: its "
				      "entries are loaded as code)",
				      dir, (unsigned int)st.st_uid,
				      (unsigned int)(st.st_mode & 0777));
	return 0;
}

/* ---- entries ---- */

#define TRAILER_MAGIC "AGILEKC1"

struct trailer {
	char magic[8];
	unsigned char key[16];
	uint64_t size;
	unsigned char data_hash[16];
};

static void hash_raw(const void *data, size_t size, unsigned char out[16])
{
	struct agile__rt_hash h;

	agile__rt_hash_init(&h);
	agile__rt_hash_bytes(&h, data, size);
	memcpy(out, &h.h, 16);
}

/* The key's 32 hex digits as the 16 bytes the trailer holds. */
static int key_raw(const char *key, unsigned char out[16])
{
	for (int i = 0; i < 16; i++) {
		unsigned int byte;

		if (sscanf(key + 2 * i, "%2x", &byte) != 1)
			return -EINVAL;
		out[i] = (unsigned char)byte;
	}
	return 0;
}

static int entry_path(const char *dir, const char *key, const char *ext,
		      char *path, size_t len)
{
	int n = snprintf(path, len, "%s/%s.%s", dir, key, ext);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The whole of @fd into @buf (malloc'd). */
static int read_all(int fd, unsigned char **buf, size_t *size)
{
	struct stat st;
	size_t done = 0;

	if (fstat(fd, &st))
		return -errno;
	*size = (size_t)st.st_size;
	*buf = malloc(*size ? *size : 1);
	if (!*buf)
		return -ENOMEM;
	while (done < *size) {
		ssize_t n = read(fd, *buf + done, *size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(*buf);
			return n < 0 ? -errno : -EBADMSG;
		}
		done += (size_t)n;
	}
	return 0;
}

int agile__rt_cache_get(const char *dir, const char *key, const char *ext,
			void **data, size_t *size, char *path, size_t len)
{
	unsigned char raw_key[16], hash[16], *buf = NULL;
	struct trailer t;
	size_t total = 0;
	int fd, err;

	err = entry_path(dir, key, ext, path, len);
	if (!err)
		err = key_raw(key, raw_key);
	if (err)
		return err;
	/* Not through a link: the folder's own files only. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	err = read_all(fd, &buf, &total);
	close(fd);
	if (err)
		return err;
	err = -EBADMSG;
	if (total < sizeof(t))
		goto bad;
	memcpy(&t, buf + total - sizeof(t), sizeof(t));
	if (memcmp(t.magic, TRAILER_MAGIC, sizeof(t.magic)) ||
	    memcmp(t.key, raw_key, sizeof(raw_key)) ||
	    t.size != total - sizeof(t))
		goto bad;
	hash_raw(buf, t.size, hash);
	if (memcmp(hash, t.data_hash, sizeof(hash)))
		goto bad;
	*data = buf;
	*size = t.size;
	return 0;
bad:
	free(buf);
	return err;
}

static int write_all(int fd, const void *data, size_t size)
{
	const unsigned char *p = data;

	while (size) {
		ssize_t n = write(fd, p, size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		size -= (size_t)n;
	}
	return 0;
}

int agile__rt_cache_put(const char *dir, const char *key, const char *ext,
			const void *data, size_t size, char *path, size_t len)
{
	char tmp[PATH_MAX];
	struct trailer t;
	int fd, dfd, err, n;

	err = entry_path(dir, key, ext, path, len);
	if (err)
		return err;
	memcpy(t.magic, TRAILER_MAGIC, sizeof(t.magic));
	err = key_raw(key, t.key);
	if (err)
		return err;
	t.size = size;
	hash_raw(data, size, t.data_hash);

	n = snprintf(tmp, sizeof(tmp), "%s/.tmp-%s.XXXXXX", dir, key);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = write_all(fd, data, size);
	if (!err)
		err = write_all(fd, &t, sizeof(t));
	/* The bytes are on disk before the name points at them. */
	if (!err && fsync(fd))
		err = -errno;
	if (!err && fchmod(fd, 0644))
		err = -errno;
	close(fd);
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	/* And the rename is on disk too. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

int agile__rt_cache_lock(const char *dir, const char *key)
{
	char path[PATH_MAX];
	int fd, n = snprintf(path, sizeof(path), "%s/%s.lock", dir, key);

	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_EX)) {
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

void agile__rt_cache_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* and with it the flock */
}
