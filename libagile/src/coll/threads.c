// SPDX-License-Identifier: MIT
/*
 * threads.c - the threads scope (agile_coll_threads_create): one dev
 * context of 2 x N slots shared by N threads of one process (coll.c)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll/shm.h"
#include "sys.h"

/**
 * struct agile_coll_team - the threads scope's shared state
 * @dev:     the doorbells of all members (2 x @nr_members slots)
 * @addrs:   each member's SEND and WORK for the running collective
 * @members: the members' handles
 */
struct agile_coll_team {
	struct agile_dev *dev;
	uint32_t nr_members;
	struct coll_shm_addrs *addrs;
	struct coll_shm *members;
};

/* ---- threads scope ---- */

const struct coll_ops coll_threads_ops = {
	.allreduce = coll_node_allreduce,
	.reduce = coll_node_reduce,
	.reduce_scatter = coll_node_reduce_scatter,
	.allgather = coll_node_allgather,
	.barrier = coll_node_barrier,
	.user_fn = coll_node_user_fn,
	.error = coll_node_error,
};

int agile_coll_threads_create(uint32_t nr_members,
			      const struct agile_coll_opts *opts,
			      struct agile_coll_team **out)
{
	struct agile_coll_team *team;
	struct agile_dev_opts dopts;
	struct agile_coll_opts o;
	uint64_t yield_ns;
	int err;

	if (!out || !nr_members || nr_members > AGILE_COLL_MAX_MEMBERS)
		return -EINVAL;
	err = coll_take_opts(opts, &o);
	if (err)
		return err;
	o.spin_ns = agile__coll_spin_ns(o.spin_ns, nr_members,
					coll_affinity_cpus(), &yield_ns);
	team = calloc(1, sizeof(*team));
	if (!team)
		return -ENOMEM;
	team->nr_members = nr_members;
	team->addrs = aligned_alloc(_Alignof(struct coll_shm_addrs),
				    nr_members * sizeof(*team->addrs));
	team->members = calloc(nr_members, sizeof(*team->members));
	if (!team->addrs || !team->members) {
		err = -ENOMEM;
		goto fail;
	}
	memset(team->addrs, 0, nr_members * sizeof(*team->addrs));
	agile_dev_opts_init(&dopts);
	dopts.nr_slots = 2 * nr_members;
	dopts.backend = o.backend;
	dopts.spin_ns = o.spin_ns;
	err = agile_dev_open(&dopts, &team->dev);
	if (err)
		goto fail;
	for (uint32_t r = 0; r < nr_members; r++) {
		struct coll_shm *c = &team->members[r];

		coll_init_base(&c->base, &coll_threads_ops, (int)r,
			       (int)nr_members);
		c->scope = COLL_SCOPE_THREADS;
		c->dev = team->dev;
		c->spin_ns = o.spin_ns;
		c->yield_ns = yield_ns;
		c->opts = o;
		c->team = team;
		c->addrs = team->addrs;
		err = coll_shm_init(c);
		if (err)
			goto fail;
	}
	*out = team;
	return 0;
fail:
	agile_coll_threads_destroy(team);
	return err;
}

int agile_coll_threads_member(struct agile_coll_team *team, uint32_t rank,
			      struct agile_coll **out)
{
	if (!team || !out || rank >= team->nr_members)
		return -EINVAL;
	*out = &team->members[rank].base;
	return 0;
}

int agile_coll_threads_destroy(struct agile_coll_team *team)
{
	if (!team)
		return -EINVAL;
	for (uint32_t r = 0; team->members && r < team->nr_members; r++) {
		coll_shm_release(&team->members[r]);
		free(team->members[r].scratch);
	}
	if (team->dev)
		agile_dev_close(team->dev);
	free(team->members);
	free(team->addrs);
	free(team);
	return 0;
}
