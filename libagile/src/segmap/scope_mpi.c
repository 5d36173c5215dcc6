// SPDX-License-Identifier: MIT
/*
 * scope_mpi.c - segmap's MPI scope (scope_mpi.h, agile/segmap_mpi.h), in
 * libagile-mpi: node q is rank q of a duplicate of the caller's
 * communicator (MPI_ERRORS_RETURN on it and on every window: an MPI
 * error is -EPROTO, never an abort of ours).
 *
 * Home memory: a field's homes are one MPI window (MPI_Win_allocate of
 * each rank's bytes, zeroed); this process addresses its own rank's
 * home only (home_addr is NULL for the others).  home_get is MPI_Get
 * under a shared passive lock of the target, home_put MPI_Put under an
 * exclusive one: each completes before it returns.  The owner reads and
 * writes its home with loads and stores; barrier brings the window's
 * public and private copies together around its MPI_Barrier
 * (MPI_Win_sync in a lock epoch on the own rank, before: our stores
 * become visible to others' gets; after: their puts to our loads), so
 * that it orders every home write before it against every read after it.
 *
 * agree is mpi_any_error (transport/mpi.h); allreduce goes through an
 * agile_coll_mpi_create communicator of the same ranks (exchange pieces
 * of 64 KiB, as the processes scope's).
 *
 * Locking: one mutex serialises every MPI call of the scope, so that the
 * pool's workers may get and put at once (an MPI process may hold only
 * one lock epoch per target and window, whatever its thread level):
 * MPI must be initialised with MPI_THREAD_SERIALIZED or more when more
 * than one thread calls, MPI_THREAD_MULTIPLE when the application makes
 * its own MPI calls from other threads meanwhile (Open MPI 4.1's windows
 * over TCP between machines refuse MPI_THREAD_MULTIPLE: home_alloc is
 * then -EPROTO).  Collectives (home_alloc,
 * home_free, barrier, agree, allreduce, destroy) are made by one thread
 * per rank, in the same order on every rank, as scope.h says.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <agile/coll_mpi.h>
#include <agile/segmap_mpi.h>

#include "segmap/scope_mpi.h"
#include "transport/mpi.h"

/* The communicator's exchange pieces: a field's sums, not fields. */
#define SEGMAP_MPI_COLL_BYTES (64u << 10)
/* Bytes per MPI_Get or MPI_Put (their counts are ints). */
#define SEGMAP_MPI_CHUNK (1u << 30)

struct mpi_scope {
	struct segmap_scope base;
	MPI_Comm comm;
	struct agile_coll *coll;
	pthread_mutex_t lock; /* every MPI call of the scope */
	struct segmap_home *homes; /* live, for barrier's window syncs */
};

/*
 * struct segmap_home - one field's homes: one window
 * @ms:         the scope
 * @win:        the window
 * @base:       this rank's home (MPI_Win_allocate's)
 * @empty:      home_addr's answer where @base is NULL (a 0-byte home)
 * @prev, @next: the scope's live homes
 * @bytes:      every rank's home bytes
 */
struct segmap_home {
	struct mpi_scope *ms;
	MPI_Win win;
	void *base;
	char empty;
	struct segmap_home *prev, *next;
	uint64_t bytes[];
};

static inline struct mpi_scope *to_mpi(struct segmap_scope *sc)
{
	return (struct mpi_scope *)sc;
}

/* Our stores and others' puts meet in the window (a lock epoch on us). */
static int sync_own(struct segmap_home *h)
{
	int self = (int)h->ms->base.self;

	if (MPI_Win_lock(MPI_LOCK_SHARED, self, 0, h->win))
		return -EPROTO;
	if (MPI_Win_sync(h->win)) {
		MPI_Win_unlock(self, h->win);
		return -EPROTO;
	}
	return MPI_Win_unlock(self, h->win) ? -EPROTO : 0;
}

static int sync_all(struct mpi_scope *ms)
{
	int err = 0;

	for (struct segmap_home *h = ms->homes; h && !err; h = h->next)
		err = sync_own(h);
	return err;
}

static int mpi_barrier(struct segmap_scope *sc)
{
	struct mpi_scope *ms = to_mpi(sc);
	int err;

	pthread_mutex_lock(&ms->lock);
	err = sync_all(ms);
	if (!err && MPI_Barrier(ms->comm))
		err = -EPROTO;
	if (!err)
		err = sync_all(ms);
	pthread_mutex_unlock(&ms->lock);
	return err;
}

static int mpi_agree(struct segmap_scope *sc, int err)
{
	struct mpi_scope *ms = to_mpi(sc);

	pthread_mutex_lock(&ms->lock);
	err = mpi_any_error(ms->comm, err);
	pthread_mutex_unlock(&ms->lock);
	return err;
}

/* Zero our home in a lock epoch on it: a get after the next sync sees it. */
static int zero_own(struct segmap_home *h)
{
	int self = (int)h->ms->base.self;

	if (!h->bytes[self])
		return 0;
	if (MPI_Win_lock(MPI_LOCK_EXCLUSIVE, self, 0, h->win))
		return -EPROTO;
	memset(h->base, 0, (size_t)h->bytes[self]);
	return MPI_Win_unlock(self, h->win) ? -EPROTO : 0;
}

static int mpi_home_alloc(struct segmap_scope *sc, const uint64_t *bytes,
			  struct segmap_home **out)
{
	struct mpi_scope *ms = to_mpi(sc);
	uint32_t n = sc->nr_nodes, self = sc->self;
	struct segmap_home *h;
	int err = 0;

	if (!bytes || !out)
		return -EINVAL;
	h = calloc(1, sizeof(*h) + n * sizeof(*h->bytes));
	if (!h || bytes[self] > (uint64_t)(PTRDIFF_MAX / 2))
		err = -ENOMEM;
	pthread_mutex_lock(&ms->lock);
	/* Every rank allocates, or none (MPI_Win_allocate is collective). */
	err = mpi_any_error(ms->comm, err);
	if (err)
		goto fail;
	h->ms = ms;
	memcpy(h->bytes, bytes, n * sizeof(*bytes));
	/* A failure here leaves the ranks out of step: fatal to the scope. */
	if (MPI_Win_allocate((MPI_Aint)bytes[self], 1, MPI_INFO_NULL, ms->comm,
			     &h->base, &h->win)) {
		err = -EPROTO;
		goto fail;
	}
	MPI_Win_set_errhandler(h->win, MPI_ERRORS_RETURN);
	err = mpi_any_error(ms->comm, zero_own(h));
	if (err) {
		MPI_Win_free(&h->win);
		goto fail;
	}
	h->next = ms->homes;
	if (ms->homes)
		ms->homes->prev = h;
	ms->homes = h;
	pthread_mutex_unlock(&ms->lock);
	*out = h;
	return 0;
fail:
	pthread_mutex_unlock(&ms->lock);
	free(h);
	return err;
}

static void mpi_home_free(struct segmap_scope *sc, struct segmap_home *h)
{
	struct mpi_scope *ms = to_mpi(sc);

	if (!h)
		return;
	pthread_mutex_lock(&ms->lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		ms->homes = h->next;
	if (h->next)
		h->next->prev = h->prev;
	/* Collective, and waits for every rank's part in the window. */
	MPI_Win_free(&h->win);
	pthread_mutex_unlock(&ms->lock);
	free(h);
}

static void *mpi_home_addr(struct segmap_home *h, uint32_t node)
{
	if (node != h->ms->base.self)
		return NULL;
	return h->base ? h->base : &h->empty;
}

/*
 * One passive-target epoch on @node: MPI_Get (or MPI_Put, @put) of @bytes
 * at @off of its home, complete when the unlock returns.
 */
static int move(struct segmap_home *h, uint32_t node, uint64_t off, void *buf,
		size_t bytes, bool put)
{
	struct mpi_scope *ms = h->ms;
	int rc;

	if (node >= ms->base.nr_nodes || off > h->bytes[node] ||
	    bytes > h->bytes[node] - off)
		return -EINVAL;
	if (!bytes)
		return 0;
	pthread_mutex_lock(&ms->lock);
	rc = MPI_Win_lock(put ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, (int)node,
			  0, h->win);
	if (rc) {
		pthread_mutex_unlock(&ms->lock);
		return -EPROTO;
	}
	for (size_t done = 0; !rc && done < bytes;) {
		int count = bytes - done > SEGMAP_MPI_CHUNK ?
				    (int)SEGMAP_MPI_CHUNK :
				    (int)(bytes - done);
		char *at = (char *)buf + done;
		MPI_Aint disp = (MPI_Aint)(off + done);

		rc = put ? MPI_Put(at, count, MPI_BYTE, (int)node, disp, count,
				   MPI_BYTE, h->win) :
			   MPI_Get(at, count, MPI_BYTE, (int)node, disp, count,
				   MPI_BYTE, h->win);
		done += (size_t)count;
	}
	if (MPI_Win_unlock((int)node, h->win))
		rc = -1;
	pthread_mutex_unlock(&ms->lock);
	return rc ? -EPROTO : 0;
}

static int mpi_home_get(struct segmap_home *h, uint32_t node, uint64_t off,
			void *dst, size_t bytes)
{
	return move(h, node, off, dst, bytes, false);
}

static int mpi_home_put(struct segmap_home *h, uint32_t node, uint64_t off,
			const void *src, size_t bytes)
{
	/* MPI_Put only reads @src. */
	return move(h, node, off, (void *)src, bytes, true);
}

static int mpi_allreduce(struct segmap_scope *sc, const void *send, void *recv,
			 size_t count, enum agile_coll_type type,
			 enum agile_coll_op op)
{
	struct mpi_scope *ms = to_mpi(sc);
	int err;

	pthread_mutex_lock(&ms->lock);
	err = agile_coll_allreduce(ms->coll, send, recv, count, type, op);
	pthread_mutex_unlock(&ms->lock);
	return err;
}

static void mpi_free(struct mpi_scope *ms)
{
	/* Homes the caller left: every rank has the same, in one order. */
	while (ms->homes)
		mpi_home_free(&ms->base, ms->homes);
	if (ms->coll)
		agile_coll_destroy(ms->coll);
	if (ms->comm != MPI_COMM_NULL)
		MPI_Comm_free(&ms->comm);
	pthread_mutex_destroy(&ms->lock);
	free(ms);
}

static void mpi_destroy(struct segmap_scope *sc)
{
	if (sc)
		mpi_free(to_mpi(sc));
}

static const struct segmap_scope_ops mpi_ops = {
	.name = "mpi",
	.home_alloc = mpi_home_alloc,
	.home_free = mpi_home_free,
	.home_addr = mpi_home_addr,
	.home_get = mpi_home_get,
	.home_put = mpi_home_put,
	.barrier = mpi_barrier,
	.agree = mpi_agree,
	.allreduce = mpi_allreduce,
	.destroy = mpi_destroy,
};

int agile__segmap_scope_mpi(MPI_Comm comm, struct segmap_scope **out)
{
	struct agile_coll_opts o;
	struct mpi_scope *ms;
	int flag = 0, rank, size, err;

	if (!out || MPI_Initialized(&flag) || !flag || comm == MPI_COMM_NULL)
		return -EINVAL;
	ms = calloc(1, sizeof(*ms));
	if (!ms)
		return -ENOMEM;
	ms->comm = MPI_COMM_NULL;
	pthread_mutex_init(&ms->lock, NULL);
	if (MPI_Comm_dup(comm, &ms->comm)) {
		err = -EPROTO;
		goto fail;
	}
	MPI_Comm_set_errhandler(ms->comm, MPI_ERRORS_RETURN);
	if (MPI_Comm_rank(ms->comm, &rank) || MPI_Comm_size(ms->comm, &size)) {
		err = -EPROTO;
		goto fail;
	}
	/* Every rank sees the same size: they all fail alike. */
	if (size > AGILE_SEGMAP_MAX_NODES) {
		err = -EINVAL;
		goto fail;
	}
	ms->base.ops = &mpi_ops;
	ms->base.kind = AGILE_NODE_RANK;
	ms->base.nr_nodes = (uint32_t)size;
	ms->base.self = (uint32_t)rank;
	ms->base.priv = ms;
	agile_coll_opts_init(&o);
	o.max_bytes = SEGMAP_MPI_COLL_BYTES;
	/* Its ranks are the communicator's: ours. */
	err = agile_coll_mpi_create(ms->comm, &o, &ms->coll);
	if (err)
		goto fail;
	*out = &ms->base;
	return 0;
fail:
	mpi_free(ms);
	return err;
}

/*
 * A pool of several workers gets blocks from several threads at once:
 * MPI must have been initialised for that (MPI_THREAD_SERIALIZED at
 * least; the scope's mutex does the serialising).  Collective, before
 * anything else is: every rank returns the same, so none goes on into
 * the collectives another refused.
 */
static int check_thread_level(MPI_Comm comm, struct agile_sched *pool)
{
	int initialized = 0, level = MPI_THREAD_SINGLE, err = 0;

	if (MPI_Initialized(&initialized) || !initialized)
		return -EINVAL;
	if (pool && agile_sched_nr_workers(pool) > 1 &&
	    (MPI_Query_thread(&level) || level < MPI_THREAD_SERIALIZED))
		err = -EINVAL;
	return mpi_any_error(comm, err);
}

int agile_segmap_mpi_create(MPI_Comm comm, struct agile_sched *pool,
			    struct agile_segmap **out)
{
	struct segmap_scope *sc;
	int err;

	if (!out)
		return -EINVAL;
	err = check_thread_level(comm, pool);
	if (err)
		return err;
	err = agile__segmap_scope_mpi(comm, &sc);
	if (err)
		return err;
	return agile__segmap_create(sc, pool, out); /* takes @sc over */
}
