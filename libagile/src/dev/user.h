/* SPDX-License-Identifier: MIT */
/*
 * user.h - the user backend of the doorbell layer, for machines
 * without /dev/agile (user.c: contexts, waits, segments; user_group.c:
 * groups in shared-memory files): the module's page layout in a shared-memory file,
 * waits on a futex on the doorbell word, and agile_doorbell.sleepers kept
 * here with atomics, so that signallers skip FUTEX_WAKE exactly as they
 * skip the SIGNAL ioctl on the kmod backend.
 *
 * A context of one process is a memfd with private futexes.  Its segments
 * lie in the same memfd, after the two areas, each at a page-aligned
 * offset the context's segment table records.
 *
 * A group is a file SHM_DIR/agile-<creator's euid>-<key in 16 hex digits>,
 * laid out as:
 *
 *	page 0         struct user_group_hdr: sizes, member count, "ended",
 *	               the segment table
 *	doorbell area  from the first page after the header
 *	task registers page aligned, after the doorbells
 *	segments       page aligned, after the task registers, as created
 *
 * and its futexes are shared ones.  The file's mode is the creator's
 * @mode, so open(O_RDWR) decides who may join (root, bypassing DAC, may
 * always join: unlike the module, which checks the mode itself).  Keys
 * are global as on the module: a joiner that finds no group of its own
 * euid looks for another user's.
 *
 * Locks, all OFD locks (fcntl F_OFD_*) on the group file, so each open of
 * the file, even two in one process, is a separate owner:
 *  - byte LOCK_MEMBERS + i is held by member i for as long as it is a
 *    member: a member that dies loses it, and the others see that with
 *    F_OFD_GETLK;
 *  - byte LOCK_GATE serialises joins, segment creation and unlinking
 *    the name.  The name is unlinked only by a holder of the gate of the
 *    inode it names, who checked that it still names that inode: so a
 *    group that ended never takes a new group's name with it.
 *
 * A group ends when a member closes it (agile_dev_close) or dies: "ended"
 * is set and every sleeper woken; for a death, by the first member to
 * notice it, or by the next joiner.  While a counted member still holds
 * its lock byte, a join of the key fails with -EPIPE (the module's
 * AGILE_FEAT_GROUP_ENDED); the last member to close unlinks the name, or
 * the next joiner or sweep does when the last ones died, and the key is
 * free.  A sleeping waiter sleeps in slices of USER_GROUP_SLICE_NS and
 * looks at "ended" before each, and at the members' locks once a slice
 * per context; either ends the wait with -EPIPE.  A group whose members
 * all died (SIGKILL) leaves its file behind until the next join with its
 * key, or the next creation of any group by its uid (sweep_dead_groups),
 * removes it.  A file is a group only if the uid in its name owns it:
 * anyone may create any name under SHM_DIR.
 */
#ifndef AGILE_DEV_USER_H
#define AGILE_DEV_USER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "dev/dev_impl.h"

#define SHM_DIR "/dev/shm"
#define USER_GROUP_MAGIC 0x707267656c696761ULL /* "agilegrp" in memory */
#define USER_GROUP_LAYOUT 1
/* How long a group's sleeping waiter sleeps before it looks at its peers. */
#define USER_GROUP_SLICE_NS 5000000ULL
/* Lock bytes (see the top of the file). */
#define LOCK_GATE 0
#define LOCK_MEMBERS 1
/* Attempts to join when keys keep turning out stale under our feet. */
#define JOIN_TRIES 64

/*
 * A context's segments.  In a group it lives in the header page: entries
 * are written under the gate, and nr_segs is stored last with release,
 * so a member that loads it with acquire reads complete entries below it.
 */
struct user_seg_table {
	uint32_t nr_segs;
	uint32_t pad;
	uint64_t end; /* bytes of the segment region in use (whole pages) */
	uint64_t offset[AGILE_MAX_SEGMENTS]; /* in the file */
	uint64_t bytes[AGILE_MAX_SEGMENTS]; /* as created */
};

/* Page 0 of a group file. */
struct user_group_hdr {
	uint64_t magic;
	uint32_t layout;
	uint32_t page_size;
	uint32_t nr_slots;
	uint32_t task_reg_size;
	uint32_t max_members;
	/* Members counted here hold their lock byte (taken first). */
	uint32_t nr_members;
	uint32_t ended;
	uint32_t pad;
	uint64_t key;
	uint64_t doorbell_offset, task_reg_offset, seg_base;
	struct user_seg_table segs;
};

_Static_assert(sizeof(struct user_group_hdr) <= 4096,
	       "the group header fits the smallest page");

struct dev_user {
	/* Group: its header page, NULL outside a group. */
	struct user_group_hdr *hdr;
	size_t hdr_bytes;
	/*
	 * OFD locks of one open file do not nest: one gate holder per
	 * context at a time, or one thread's unlock would drop another's.
	 */
	pthread_mutex_t gate_lock;
	/*
	 * When a sleeper of this context last looked at the members' locks:
	 * one look per slice serves every sleeping thread of the context.
	 */
	_Atomic uint64_t last_scan_ns;
	/* The group's name and the inode it named when we joined. */
	char name[64];
	dev_t st_dev;
	ino_t st_ino;
	/* Outside a group: the segment table; seg_base for both. */
	struct user_seg_table local;
	uint64_t seg_base;
};

struct user_seg_table *user_segs(struct dev_user *u);
long user_futex(const struct agile_dev *dev, void *word, int op, uint32_t val,
		const struct timespec *timeout, uint32_t val3);
void user_area_sizes(struct agile_dev *dev);
struct dev_user *user_alloc(void);
void user_free(struct agile_dev *dev);
/* Reserve [offset, offset + bytes) of @fd: 0, -ENOSPC or -errno. */
int user_file_reserve(int fd, uint64_t offset, uint64_t bytes);
void user_gate_acquire(struct agile_dev *dev);
void user_gate_release(struct agile_dev *dev);
void user_group_end(struct agile_dev *dev, bool leaving);
int user_group_check(struct agile_dev *dev, bool scan_members);
void user_group_unmap_close(struct agile_dev *dev);
int user_group_join(struct agile_dev *dev,
		    const struct agile_dev_group_opts *opts);
int user_futex_sleep(struct agile_dev *dev, struct agile_doorbell *db,
		     uint32_t seen, uint64_t deadline_ns);
int user_group_sleep(struct agile_dev *dev, struct agile_doorbell *db,
		     uint32_t seen, uint64_t deadline_ns);

#endif /* AGILE_DEV_USER_H */
