// SPDX-License-Identifier: MIT
/*
 * user_group.c - the user backend's groups: files under SHM_DIR, their
 * OFD locks, joining, creating, ending, sweeping the dead, and sleeping
 * in a group (see user.h for the layout and the locks).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dev/user.h"
#include "sys.h"

/* ---- group locks ---- */

static int ofd_lock(int fd, int cmd, short type, off_t byte)
{
	struct flock fl = {
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = byte,
		.l_len = 1,
	};
	int ret;

	do
		ret = fcntl(fd, cmd, &fl);
	while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : 0;
}

void user_gate_acquire(struct agile_dev *dev)
{
	pthread_mutex_lock(&dev->user->gate_lock);
	/* Held briefly by whoever holds it: waiting cannot hang. */
	ofd_lock(dev->fd, F_OFD_SETLKW, F_WRLCK, LOCK_GATE);
}

void user_gate_release(struct agile_dev *dev)
{
	ofd_lock(dev->fd, F_OFD_SETLK, F_UNLCK, LOCK_GATE);
	pthread_mutex_unlock(&dev->user->gate_lock);
}

/* Does member @i hold its lock byte?  An error counts as alive. */
static bool member_alive(int fd, uint32_t i)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = LOCK_MEMBERS + (off_t)i,
		.l_len = 1,
	};

	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return true;
	return fl.l_type != F_UNLCK;
}

/*
 * Has a member other than @self (UINT32_MAX: none) lost its lock?  Our
 * own lock does not conflict with our own GETLK, hence the exception.
 */
static bool member_dead(int fd, const struct user_group_hdr *hdr, uint32_t self)
{
	/* Acquire: pairs with the joiner's release; its lock came first. */
	uint32_t n = __atomic_load_n(&hdr->nr_members, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < n; i++)
		if (i != self && !member_alive(fd, i))
			return true;
	return false;
}

/* Does a counted member other than @self (UINT32_MAX: none) hold its lock? */
static bool member_left_alive(int fd, const struct user_group_hdr *hdr,
			      uint32_t self)
{
	/* Acquire: pairs with the joiner's release; its lock came first. */
	uint32_t n = __atomic_load_n(&hdr->nr_members, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < n; i++)
		if (i != self && member_alive(fd, i))
			return true;
	return false;
}

/* With the gate held: unlink the name if it still names our inode. */
static void unlink_if_ours(struct dev_user *u)
{
	struct stat st;

	if (!stat(u->name, &st) && st.st_dev == u->st_dev &&
	    st.st_ino == u->st_ino)
		unlink(u->name);
}

/*
 * End the group: every wait of every member fails with -EPIPE from now
 * on, and so does a join.  @leaving (agile_dev_close): the key is freed
 * if no other member holds the group (else the last one frees it); a
 * member that stays (it saw a death) leaves the name alone.  Idempotent.
 */
void user_group_end(struct agile_dev *dev, bool leaving)
{
	struct user_group_hdr *hdr = dev->user->hdr;

	/*
	 * Full fence between the store and the sleeper counts; pairs with
	 * the one in user_sleep between raising the count and loading
	 * "ended": either we see its count and wake it, or it sees "ended".
	 */
	__atomic_store_n(&hdr->ended, 1, __ATOMIC_SEQ_CST);
	atomic_thread_fence(memory_order_seq_cst);
	for (uint32_t slot = 0; slot < dev->nr_slots; slot++) {
		struct agile_doorbell *db = dev_doorbell(dev, slot);

		if (__atomic_load_n(&db->sleepers, __ATOMIC_RELAXED))
			user_futex(dev, &db->value, FUTEX_WAKE, INT_MAX, NULL,
				   0);
	}
	if (!leaving)
		return;
	user_gate_acquire(dev);
	if (!member_left_alive(dev->fd, hdr, dev->member))
		unlink_if_ours(dev->user);
	user_gate_release(dev);
}

/* -EPIPE if the group ended or a member died (which ends it), else 0. */
int user_group_check(struct agile_dev *dev, bool scan_members)
{
	struct user_group_hdr *hdr = dev->user->hdr;

	if (__atomic_load_n(&hdr->ended, __ATOMIC_ACQUIRE))
		return -EPIPE;
	if (scan_members && member_dead(dev->fd, hdr, dev->member)) {
		user_group_end(dev, false);
		return -EPIPE;
	}
	return 0;
}

/* ---- joining and creating a group ---- */

/* The expected layout of a group file for @dev's sizes. */
static void group_layout(struct agile_dev *dev, struct user_group_hdr *want)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	memset(want, 0, sizeof(*want));
	user_area_sizes(dev);
	dev->user->hdr_bytes = agile_dev_page_round(sizeof(*want));
	want->magic = USER_GROUP_MAGIC;
	want->layout = USER_GROUP_LAYOUT;
	want->page_size = (uint32_t)page;
	want->nr_slots = dev->nr_slots;
	want->task_reg_size = dev->task_reg_size;
	want->doorbell_offset = dev->user->hdr_bytes;
	want->task_reg_offset = want->doorbell_offset + dev->doorbell_bytes;
	want->seg_base = want->task_reg_offset + dev->task_reg_bytes;
}

/* Map the header and both areas of dev->fd; on failure unmap them. */
static int group_map(struct agile_dev *dev, const struct user_group_hdr *want)
{
	struct dev_user *u = dev->user;
	unsigned char *hdr;
	int err;

	err = agile_dev_map_area(dev, u->hdr_bytes, 0, &hdr);
	if (err)
		return err;
	u->hdr = (struct user_group_hdr *)hdr;
	err = agile_dev_map_area(dev, dev->doorbell_bytes,
				 want->doorbell_offset, &dev->doorbells);
	if (!err)
		err = agile_dev_map_area(dev, dev->task_reg_bytes,
					 want->task_reg_offset,
					 &dev->task_regs);
	if (err) {
		if (dev->doorbells)
			munmap(dev->doorbells, dev->doorbell_bytes);
		munmap(u->hdr, u->hdr_bytes);
		dev->doorbells = NULL;
		u->hdr = NULL;
	}
	return err;
}

void user_group_unmap_close(struct agile_dev *dev)
{
	if (dev->user->hdr)
		munmap(dev->user->hdr, dev->user->hdr_bytes);
	dev->user->hdr = NULL;
	agile_dev_unmap_close(dev);
}

static void group_name(char *buf, size_t len, unsigned int uid, uint64_t key)
{
	snprintf(buf, len, SHM_DIR "/agile-%u-%016llx", uid,
		 (unsigned long long)key);
}

/*
 * Join the group file @name, which @uid must own.  Returns 0 (a member,
 * gate released), -EPIPE (the group there ended and a member still holds
 * it), -ESTALE (it ended and every member is gone; we removed its name if
 * we may), or an errno, leaving nothing open.
 */
static int group_try_join(struct agile_dev *dev,
			  const struct agile_dev_group_opts *opts,
			  const char *name, unsigned int uid)
{
	struct dev_user *u = dev->user;
	struct user_group_hdr want, *hdr;
	struct stat st;
	uint32_t index;
	int err;

	dev->fd = open(name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (dev->fd < 0)
		return -errno;
	snprintf(u->name, sizeof(u->name), "%s", name);
	group_layout(dev, &want);
	user_gate_acquire(dev);
	if (fstat(dev->fd, &st)) {
		err = -errno;
		goto fail_gate;
	}
	u->st_dev = st.st_dev;
	u->st_ino = st.st_ino;
	/* Anyone may create any name in SHM_DIR: not the creator's file. */
	err = -EACCES;
	if (st.st_uid != uid)
		goto fail_gate;
	/* Too short for a header (a mapping past the end would SIGBUS). */
	err = -EINVAL;
	if ((uint64_t)st.st_size < u->hdr_bytes)
		goto fail_gate;
	err = agile_dev_map_area(dev, u->hdr_bytes, 0,
				 (unsigned char **)&u->hdr);
	if (err)
		goto fail_gate;
	hdr = u->hdr;
	err = -EINVAL;
	if (hdr->magic != USER_GROUP_MAGIC ||
	    hdr->layout != USER_GROUP_LAYOUT ||
	    hdr->page_size != want.page_size)
		goto fail_unmap;
	if (__atomic_load_n(&hdr->ended, __ATOMIC_ACQUIRE) ||
	    member_dead(dev->fd, hdr, UINT32_MAX)) {
		/* A member left or died: the group is over. */
		__atomic_store_n(&hdr->ended, 1, __ATOMIC_SEQ_CST);
		/* Members still hold it: say so, at once. */
		err = -EPIPE;
		if (member_left_alive(dev->fd, hdr, UINT32_MAX))
			goto fail_unmap;
		/* All gone: its key is free. */
		unlink_if_ours(u);
		err = -ESTALE;
		goto fail_unmap;
	}
	err = -EEXIST;
	if ((opts->flags & AGILE_DEV_GROUP_CREATE) &&
	    (opts->flags & AGILE_DEV_GROUP_EXCL))
		goto fail_unmap;
	err = -EINVAL;
	if (hdr->nr_slots != want.nr_slots ||
	    hdr->task_reg_size != want.task_reg_size ||
	    hdr->max_members != opts->max_members ||
	    hdr->doorbell_offset != want.doorbell_offset ||
	    hdr->task_reg_offset != want.task_reg_offset ||
	    hdr->seg_base != want.seg_base ||
	    (uint64_t)st.st_size < want.seg_base)
		goto fail_unmap;
	err = -ENOSPC;
	/* Only gate holders change it. */
	index = __atomic_load_n(&hdr->nr_members, __ATOMIC_RELAXED);
	if (index >= hdr->max_members)
		goto fail_unmap;
	munmap(hdr, u->hdr_bytes);
	u->hdr = NULL;
	err = group_map(dev, &want);
	if (err)
		goto fail_gate;
	hdr = u->hdr;
	/* Lock first, count second: a counted member always holds its byte. */
	err = ofd_lock(dev->fd, F_OFD_SETLK, F_WRLCK, LOCK_MEMBERS + index);
	if (err)
		goto fail_unmap;
	/* Release: pairs with the acquire in member_dead. */
	__atomic_store_n(&hdr->nr_members, index + 1, __ATOMIC_RELEASE);
	user_gate_release(dev);
	dev->member = index;
	dev->max_members = hdr->max_members;
	u->seg_base = hdr->seg_base;
	atomic_init(&u->last_scan_ns, agile_mono_ns());
	return 0;

fail_unmap:
	if (u->hdr)
		munmap(u->hdr, u->hdr_bytes);
	u->hdr = NULL;
fail_gate:
	user_gate_release(dev);
	agile_dev_unmap_close(dev);
	return err;
}

/* fallocate where the file system can (pages now, or ENOSPC now). */
int user_file_reserve(int fd, uint64_t offset, uint64_t bytes)
{
	int ret;

	do
		ret = fallocate(fd, 0, (off_t)offset, (off_t)bytes);
	while (ret < 0 && errno == EINTR);
	if (!ret)
		return 0;
	if (errno != EOPNOTSUPP)
		return errno == EFBIG ? -ENOSPC : -errno;
	if (ftruncate(fd, (off_t)(offset + bytes)))
		return errno == EFBIG ? -ENOSPC : -errno;
	return 0;
}

/*
 * Create the group at @name: build it under a temporary name, member 0
 * locked, then link it to @name, which publishes it whole.  -EEXIST when
 * someone else's group got the name first.
 */
static int group_create(struct agile_dev *dev,
			const struct agile_dev_group_opts *opts,
			const char *name)
{
	struct dev_user *u = dev->user;
	struct user_group_hdr want;
	char tmp[96];
	struct stat st;
	int err;

	group_layout(dev, &want);
	want.max_members = opts->max_members;
	want.nr_members = 1;
	want.key = opts->key;
	/* Unique per process and context: no two creators share it. */
	snprintf(tmp, sizeof(tmp), "%s.%d.%lx.tmp", name, (int)getpid(),
		 (unsigned long)(uintptr_t)dev);
	/* So one left by a dead process that had our pid is no obstacle. */
	unlink(tmp);
	dev->fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		       0600);
	if (dev->fd < 0)
		return -errno;
	snprintf(u->name, sizeof(u->name), "%s", name);
	/* fchmod, not open's mode: the umask must not narrow it. */
	if (fchmod(dev->fd, opts->mode)) {
		err = -errno;
		goto fail;
	}
	err = user_file_reserve(dev->fd, 0, want.seg_base);
	if (err)
		goto fail;
	err = group_map(dev, &want);
	if (err)
		goto fail;
	memcpy(u->hdr, &want, sizeof(want));
	err = ofd_lock(dev->fd, F_OFD_SETLK, F_WRLCK, LOCK_MEMBERS + 0);
	if (err)
		goto fail;
	if (fstat(dev->fd, &st)) {
		err = -errno;
		goto fail;
	}
	u->st_dev = st.st_dev;
	u->st_ino = st.st_ino;
	if (link(tmp, name)) {
		err = -errno;
		goto fail;
	}
	unlink(tmp);
	dev->member = 0;
	dev->max_members = opts->max_members;
	u->seg_base = want.seg_base;
	atomic_init(&u->last_scan_ns, agile_mono_ns());
	return 0;
fail:
	unlink(tmp);
	user_group_unmap_close(dev);
	return err;
}

/* "agile-<uid>-<key>" of another uid than @own: its uid, else -1. */
static long other_uid(const char *entry, unsigned int own, uint64_t key)
{
	char want[32], *end;
	unsigned long uid;

	if (strncmp(entry, "agile-", 6))
		return -1;
	errno = 0;
	uid = strtoul(entry + 6, &end, 10);
	if (errno || end == entry + 6 || uid > UINT_MAX || uid == own)
		return -1;
	snprintf(want, sizeof(want), "-%016llx", (unsigned long long)key);
	return strcmp(end, want) ? -1 : (long)uid;
}

/*
 * Join another user's group with the key: keys are global, as on the
 * module.  -ENOENT if there is none we could join, -EACCES if one refused
 * us; a stale one we cannot remove (not ours) counts as none.
 */
static int group_join_other(struct agile_dev *dev,
			    const struct agile_dev_group_opts *opts,
			    unsigned int own)
{
	char name[64];
	struct dirent *e;
	int err = -ENOENT;
	DIR *d;
	long uid;

	d = opendir(SHM_DIR);
	if (!d)
		return -ENOENT;
	while ((e = readdir(d))) {
		int ret;

		uid = other_uid(e->d_name, own, opts->key);
		if (uid < 0)
			continue;
		group_name(name, sizeof(name), (unsigned int)uid, opts->key);
		ret = group_try_join(dev, opts, name, (unsigned int)uid);
		if (ret == -ENOENT || ret == -ESTALE)
			continue;
		err = ret;
		if (ret != -EACCES)
			break;
	}
	closedir(d);
	return err;
}

/* "agile-<own>-<16 hex digits>": one of our group names, any key. */
static bool own_group_name(const char *entry, unsigned int own)
{
	char *end;
	unsigned long uid;
	size_t i;

	if (strncmp(entry, "agile-", 6))
		return false;
	errno = 0;
	uid = strtoul(entry + 6, &end, 10);
	if (errno || end == entry + 6 || uid != own || *end != '-')
		return false;
	for (i = 1; i <= 16; i++)
		if (!((end[i] >= '0' && end[i] <= '9') ||
		      (end[i] >= 'a' && end[i] <= 'f')))
			return false;
	return end[i] == '\0';
}

/*
 * With the group file @fd's gate held: is it a group whose members all
 * left or died?  Its header says so, or a counted member lost its lock.
 */
static bool group_over(int fd, const struct stat *st)
{
	size_t bytes = agile_dev_page_round(sizeof(struct user_group_hdr));
	struct user_group_hdr *hdr;
	bool over;

	if ((uint64_t)st->st_size < bytes)
		return false;
	hdr = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED)
		return false;
	over = hdr->magic == USER_GROUP_MAGIC &&
	       hdr->layout == USER_GROUP_LAYOUT &&
	       (__atomic_load_n(&hdr->ended, __ATOMIC_ACQUIRE) ||
		member_dead(fd, hdr, UINT32_MAX));
	munmap(hdr, bytes);
	return over;
}

/*
 * Before creating a group: remove the names (so the memory) of our groups
 * whose members all died, whatever their keys.  A dead group's file keeps
 * its segments in SHM_DIR, and the join of its own key, which would
 * remove it, may never come.  Each is judged under its gate, as a joiner
 * does (group_try_join), and unlinked only if the name still names the
 * inode judged; a live group always has a member holding its lock.
 */
static void sweep_dead_groups(unsigned int own)
{
	struct dirent *e;
	DIR *d = opendir(SHM_DIR);

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct stat st, now;
		int fd;

		if (!own_group_name(e->d_name, own))
			continue;
		fd = openat(dirfd(d), e->d_name,
			    O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (!fstat(fd, &st) && st.st_uid == own &&
		    !ofd_lock(fd, F_OFD_SETLKW, F_WRLCK, LOCK_GATE)) {
			if (group_over(fd, &st) &&
			    !fstatat(dirfd(d), e->d_name, &now,
				     AT_SYMLINK_NOFOLLOW) &&
			    now.st_dev == st.st_dev && now.st_ino == st.st_ino)
				unlinkat(dirfd(d), e->d_name, 0);
			ofd_lock(fd, F_OFD_SETLK, F_UNLCK, LOCK_GATE);
		}
		close(fd);
	}
	closedir(d);
}

int user_group_join(struct agile_dev *dev,
		    const struct agile_dev_group_opts *opts)
{
	unsigned int uid = (unsigned int)geteuid();
	char name[64];
	int err = -EAGAIN;

	if (dev->nr_slots > AGILE_DEV_USER_MAX_SLOTS)
		return -ENOSPC;
	dev->sleeper_count = true;
	dev->user = user_alloc();
	if (!dev->user)
		return -ENOMEM;
	group_name(name, sizeof(name), uid, opts->key);
	for (int tries = 0; tries < JOIN_TRIES; tries++) {
		err = group_try_join(dev, opts, name, uid);
		if (err == -ESTALE)
			continue; /* removed a group that had ended: again */
		if (err == -ENOENT)
			err = group_join_other(dev, opts, uid);
		if (err != -ENOENT || !(opts->flags & AGILE_DEV_GROUP_CREATE))
			break;
		if (!tries)
			sweep_dead_groups(uid);
		err = group_create(dev, opts, name);
		if (err != -EEXIST)
			break; /* else another creator won: join theirs */
	}
	/* Out of tries: groups kept ending, or appearing, under us. */
	if (err == -ESTALE ||
	    (err == -EEXIST && !(opts->flags & AGILE_DEV_GROUP_EXCL)))
		err = -EAGAIN;
	if (err)
		user_free(dev);
	return err;
}

static bool scan_due(struct dev_user *u, uint64_t now)
{
	uint64_t last =
		atomic_load_explicit(&u->last_scan_ns, memory_order_relaxed);

	if (now - last < USER_GROUP_SLICE_NS)
		return false;
	atomic_store_explicit(&u->last_scan_ns, now, memory_order_relaxed);
	return true;
}

/*
 * A group's sleep: slices of USER_GROUP_SLICE_NS, looking at "ended"
 * before each, and at the members' locks when due: a sleep woken soon
 * costs no lock look-ups, and a member dead is seen within a slice or
 * two, however often the sleepers are woken.
 */
int user_group_sleep(struct agile_dev *dev, struct agile_doorbell *db,
		     uint32_t seen, uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = agile_mono_ns(), end = now + USER_GROUP_SLICE_NS;
		bool last = deadline_ns && deadline_ns <= end;
		int err = user_group_check(dev, scan_due(dev->user, now));

		if (err)
			return err;
		err = user_futex_sleep(dev, db, seen, last ? deadline_ns : end);
		if (err != -ETIMEDOUT || last)
			return err;
	}
}
