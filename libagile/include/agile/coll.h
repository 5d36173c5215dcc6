/* SPDX-License-Identifier: MIT */
/*
 * agile/coll.h - collective reduce (SPEC §3, layer 6; seed 001)
 *
 * reduce, allreduce, reduce-scatter and allgather among the members of a
 * communicator, built on recursive-halving reduce-scatter with segmented,
 * overlapped exchanges and a deferred tail reduce, then a binomial gather
 * to the root (reduce) or a recursive-doubling allgather (allreduce).  Any
 * member count: the members above the largest power of two fold their
 * data into a partner first and get the result back last.
 *
 * Scopes, one algorithm core:
 *  - threads of one process (agile_coll_threads_create): members read
 *    each other's buffers directly;
 *  - processes on one node (agile_coll_procs_join): a device group
 *    (agile_dev_group_join: /dev/agile's GROUP_JOIN, or the user backend's
 *    shared memory); the exchange buffers are group segments that peers
 *    read directly, doorbells carry sequence numbers, waits spin then
 *    sleep, and a member that dies ends the collective with -EPIPE;
 *  - machines (agile/coll_mpi.h, libagile-mpi): MPI point-to-point with
 *    the same segmented schedule, hierarchical (inside each node first).
 *
 * Every member of a communicator calls the same collectives in the same
 * order with the same count, type, op and root.  Buffers may be anywhere;
 * in the process scope, buffers from agile_coll_alloc save a copy in and
 * out.  @send may equal @recv (in place) except where a call says not.
 *
 * Errors: 0 or a negative errno (agile/error.h).  Before a call starts,
 * every collective checks its arguments: -EINVAL for a NULL handle, an
 * unknown type or op, AGILE_COLL_USER without a callback, a bad root, NULL
 * buffers where count > 0, or buffers that overlap other than as allowed;
 * -EOVERFLOW when the vector's bytes do not fit in a size_t.  Such a call
 * has not started: the member may call again.  Once a call has started,
 * any member's error ends it for all, so that none returns 0 with data it
 * did not get, and none waits forever: -EPROTO for a member that finds a
 * peer in another call (each call, a barrier too, publishes its kind,
 * count, type, op and root, and every member compares every peer's with
 * its own before it returns 0: where the members disagree on a call,
 * whatever they called before or call after it, every one of them fails
 * it), -EPIPE for a member whose peer died or failed (a member whose part
 * was over before the peer died, a reduce's non-root or a barrier, may
 * return 0: its next call fails), -ENOMEM where the threads scope cannot
 * have its scratch buffer (all else a call needs is allocated when the
 * communicator is made).
 * The communicator is then unusable: every later call returns the
 * member's first error, a count of 0 included.  Otherwise a count of 0
 * returns 0 at once, on every member.  Thread safety: one communicator
 * handle is used by one thread at a time.
 */
#ifndef AGILE_COLL_H
#define AGILE_COLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct agile_coll; /* one member's communicator handle */
struct agile_coll_team; /* the threads scope's shared state */

/**
 * enum agile_coll_type - element types
 * @AGILE_COLL_INT32:    int32_t
 * @AGILE_COLL_INT64:    int64_t
 * @AGILE_COLL_FLOAT:    float
 * @AGILE_COLL_DOUBLE:   double
 * @AGILE_COLL_FLOAT16:  IEEE 754 binary16, as uint16_t bits
 * @AGILE_COLL_BFLOAT16: bfloat16, as uint16_t bits
 * @AGILE_COLL_NR_TYPES: how many types there are
 *
 * The 16-bit floats are stored as uint16_t bit patterns
 * (IEEE 754 binary16; bfloat16: a float's upper half), reduced in float
 * and rounded to nearest even, which for sum and prod is the correctly
 * rounded result; a NaN result is a quiet NaN (its payload may be lost).
 */
enum agile_coll_type {
	AGILE_COLL_INT32 = 0,
	AGILE_COLL_INT64 = 1,
	AGILE_COLL_FLOAT = 2,
	AGILE_COLL_DOUBLE = 3,
	AGILE_COLL_FLOAT16 = 4,
	AGILE_COLL_BFLOAT16 = 5,
	AGILE_COLL_NR_TYPES
};

/**
 * enum agile_coll_op - reduction operators
 * @AGILE_COLL_SUM:    sum
 * @AGILE_COLL_MIN:    minimum
 * @AGILE_COLL_MAX:    maximum
 * @AGILE_COLL_PROD:   product
 * @AGILE_COLL_USER:   agile_coll_opts.user_fn
 * @AGILE_COLL_NR_OPS: how many operators there are
 */
enum agile_coll_op {
	AGILE_COLL_SUM = 0,
	AGILE_COLL_MIN = 1,
	AGILE_COLL_MAX = 2,
	AGILE_COLL_PROD = 3,
	AGILE_COLL_USER = 4,
	AGILE_COLL_NR_OPS
};

/**
 * agile_coll_user_fn - a user reduction: inout[i] = inout[i] (op) in[i]
 * @inout: the left operands, and the results
 * @in:    the right operands
 * @count: elements
 * @type:  their type
 * @arg:   agile_coll_opts.user_arg
 *
 * Must be associative; the collectives keep the members' order (rank 0's
 * data on the left) only when the op is registered as not commutative.
 * Called from any member's thread, concurrently.
 */
typedef void (*agile_coll_user_fn)(void *inout, const void *in, size_t count,
				   enum agile_coll_type type, void *arg);

/* Most members of a threads team (a process group: AGILE_GROUP_MAX_MEMBERS). */
#define AGILE_COLL_MAX_MEMBERS 1024

/* Default segments per exchange (seed 001's M). */
#define AGILE_COLL_SEGMENTS_DEFAULT 2
#define AGILE_COLL_SEGMENTS_MAX 64

/**
 * struct agile_coll_opts - tunables of a communicator (agile_coll_opts_init)
 * @segments:    M, segments per exchange, 1 .. AGILE_COLL_SEGMENTS_MAX
 * @interleaved: 1: the interleaved halving of seed 001's Fig. 8
 * @backend:     process scope: enum agile_backend of the device group
 * @spin_ns:     how long a wait spins before it sleeps, in ns; or
 *               AGILE_COLL_SPIN_AUTO (the default): $AGILE_SPIN_NS where
 *               it is set; else, when the communicator has more members
 *               than CPUs to run them (threads: the creator's affinity
 *               mask; processes: the union of the members' masks at
 *               join), no spin but up to 1 ms of looks with a
 *               sched_yield between them, then sleep (a spin for a peer
 *               that has no CPU only keeps it off one); else
 *               AGILE_DEV_SPIN_NS_DEFAULT.
 * @max_bytes:   process scope: the most a collective moves in one piece
 *               (it sizes the exchange segments); a larger vector goes
 *               in pieces (allgather and reduce_scatter: the whole
 *               N x count vector, through a private buffer of
 *               max_bytes); 0: 64 MiB
 * @mode:        process scope: the group's mode (0600 by default)
 * @user_fn:     AGILE_COLL_USER's callback
 * @user_arg:    its last argument
 * @user_commutative: 1 if @user_fn is commutative (default 0: the
 *               members' order is kept, at the price of a bounce copy
 *               where the left operand is not in the destination)
 * @order:       process scope: the members' ranks follow their @order,
 *               lowest first, ties in join order; 0 on every member (the
 *               default): join order.  Give each member a distinct value
 *               (its index in the application) for ranks, and so float
 *               results, that do not depend on who joined first.
 * @reserved:    must be zero
 *
 * Built-in ops: integer sum and prod wrap around (two's complement);
 * float min and max return a NaN if either operand is one; every member
 * gets bit-identical results, and for a given member count, schedule
 * and input per rank, every run gives the same bits (the order of the
 * reduction depends on nothing else).
 */
struct agile_coll_opts {
	uint32_t segments;
	uint32_t interleaved;
	uint32_t backend;
	uint32_t mode;
	uint64_t spin_ns;
	uint64_t max_bytes;
	agile_coll_user_fn user_fn;
	void *user_arg;
	uint32_t user_commutative;
	uint32_t order;
	uint32_t reserved[4];
};

/* agile_coll_opts.spin_ns: spin or not by the CPUs there are (above). */
#define AGILE_COLL_SPIN_AUTO UINT64_MAX

/**
 * agile_coll_opts_init - fill @opts with the defaults
 * @opts: the options
 *
 * 2 segments, plain layout, AGILE_BACKEND_AUTO, mode 0600,
 * AGILE_COLL_SPIN_AUTO, 64 MiB max_bytes, no user op.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, or -EINVAL if @opts is NULL.
 */
int agile_coll_opts_init(struct agile_coll_opts *opts);

/**
 * agile_coll_threads_create - a team of @nr_members threads of this process
 * @nr_members: 1 .. AGILE_COLL_MAX_MEMBERS
 * @opts: NULL for the defaults (@max_bytes and @mode are not used)
 * @out:  receives the team; each thread then takes its handle with
 *        agile_coll_threads_member
 *
 * Thread safety: thread safe (each call makes its own team).
 *
 * Return: 0, -EINVAL, -ENOMEM, or an error of agile_dev_open.
 */
int agile_coll_threads_create(uint32_t nr_members,
			      const struct agile_coll_opts *opts,
			      struct agile_coll_team **out);

/**
 * agile_coll_threads_member - rank @rank's handle in @team
 * @team: the team
 * @rank: 0 .. nr_members - 1
 * @out:  receives the handle, owned by the team (not for
 *        agile_coll_destroy)
 *
 * Thread safety: thread safe: each member thread takes its own handle.
 *
 * Return: 0 or -EINVAL (NULL pointers, @rank out of range).
 */
int agile_coll_threads_member(struct agile_coll_team *team, uint32_t rank,
			      struct agile_coll **out);

/**
 * agile_coll_threads_destroy - free @team and its members' handles
 * @team: the team
 *
 * Call it once no member uses its handle any more.
 *
 * Thread safety: not thread safe against any use of the team's handles.
 *
 * Return: 0 or -EINVAL (@team NULL).
 */
int agile_coll_threads_destroy(struct agile_coll_team *team);

/**
 * agile_coll_procs_join - join the communicator of @nr_members processes
 * @key:        names the communicator (the device group's key)
 * @nr_members: how many processes join, 1 .. AGILE_GROUP_MAX_MEMBERS
 * @opts:       NULL for the defaults; the same schedule on every member
 * @timeout_ns: how long to wait for the others to join
 * @out:        receives this member's handle
 *
 * Ranks follow the members' @opts->order, then join order.  Returns once
 * all @nr_members have joined.  Each member holds one segment of 3 x @max_bytes (rounded to pages): an
 * exchange area, and twice that for
 * agile_coll_alloc; -ENOSPC where that passes the device's
 * max_segment_bytes (kmod: 256 MiB by default).  On the kmod backend
 * those pages count against the user's RLIMIT_MEMLOCK (ulimit -l, all of
 * the user's processes together; CAP_IPC_LOCK exempts): -ENOMEM when the
 * members' segments and contexts pass it, so a user who is not root
 * needs about 3 x @max_bytes per member there, or a smaller @max_bytes.
 *
 * Thread safety: thread safe (each call makes its own handle).
 *
 * Return: 0, -ETIMEDOUT (not everyone joined within @timeout_ns), the
 * errors of agile_dev_group_join; -EINVAL also when the members' opts
 * disagree on @max_bytes, @segments or @interleaved (the schedule);
 * -ENOSPC or -ENOMEM as above.
 */
int agile_coll_procs_join(uint64_t key, uint32_t nr_members,
			  const struct agile_coll_opts *opts,
			  uint64_t timeout_ns, struct agile_coll **out);

/**
 * agile_coll_destroy - leave, and free the handle
 * @coll: a process-scope or MPI handle (a team's handles go with
 *        agile_coll_threads_destroy)
 *
 * Collective: a barrier first, so that the others' last collective ends
 * before this member's buffers go.  The handle is freed even when the
 * barrier fails.
 *
 * Thread safety: as every call on a handle: one thread at a time.
 *
 * Return: 0, the barrier's error (-EPIPE for a dead peer), or -EINVAL
 * (@coll NULL, or a threads-scope handle).
 */
int agile_coll_destroy(struct agile_coll *coll);

/**
 * agile_coll_rank - the calling member's rank
 * @coll: its handle
 *
 * Thread safety: thread safe (reads what the handle was made with).
 *
 * Return: 0 .. size - 1, or -EINVAL if @coll is NULL.
 */
int agile_coll_rank(const struct agile_coll *coll);

/**
 * agile_coll_size - how many members the communicator has
 * @coll: a member's handle
 *
 * Thread safety: thread safe.
 *
 * Return: the member count, or -EINVAL if @coll is NULL.
 */
int agile_coll_size(const struct agile_coll *coll);

/**
 * agile_coll_alloc - memory for collective buffers
 * @coll:  the handle
 * @bytes: how much
 *
 * Process scope: memory inside the exchange segments; a collective whose
 * @send or @recv lies there skips the copy in or out.  Elsewhere: plain
 * memory (aligned_alloc).
 *
 * Thread safety: one thread at a time per handle.
 *
 * Return: the memory, or NULL (@coll NULL, @bytes 0, out of space).
 */
void *agile_coll_alloc(struct agile_coll *coll, size_t bytes);

/**
 * agile_coll_free - give back memory from agile_coll_alloc
 * @coll: the handle it came from
 * @ptr:  the memory; NULL does nothing
 *
 * Thread safety: one thread at a time per handle.
 */
void agile_coll_free(struct agile_coll *coll, void *ptr);

/**
 * agile_coll_allreduce - every member ends up with the reduction of all
 * members' @send
 * @coll:  the handle
 * @send:  @count elements
 * @recv:  receives @count elements (may equal @send)
 * @count: elements per member
 * @type:  their type
 * @op:    the reduction
 *
 * Collective: every member calls it with the same @count, @type and @op.
 *
 * Among processes (agile_coll_procs_join), a call may instead go straight
 * between the members' own buffers by Cross Memory Attach
 * (process_vm_readv and process_vm_writev), where every member could read
 * every other's memory at join (the same user and ptrace access: Yama's
 * ptrace_scope, a container's seccomp profile or a pid namespace apart
 * may refuse it; then all keep the schedule through the shared segments).
 * Both give the same bits.  $AGILE_COLL_CMA at join: "off" (the default:
 * never; through the shared segments was faster on a quiet machine),
 * "auto" (from 8 MiB up with 2 members, never with more: faster when the
 * machine is busy), "on" (every call, any number of members) or a size in
 * bytes (calls of at least that many); the members take the largest of
 * theirs, and "off" on any member switches it off for all.  A member
 * killed in a call gives the others -EPIPE either way.
 *
 * Through the shared segments, a call of 8 MiB or more writes its result
 * into a private @recv with non-temporal stores (x86), which do not read
 * the lines they overwrite; the call ends with a store fence.
 * $AGILE_COLL_STREAM_FROM at join changes that size (bytes, or "off");
 * each member decides for itself.
 *
 * Thread safety: one thread at a time per handle; the members of a team
 * call it concurrently, each with its own handle.
 *
 * Return: 0 or a negative errno, as described at the top.
 */
int agile_coll_allreduce(struct agile_coll *coll, const void *send, void *recv,
			 size_t count, enum agile_coll_type type,
			 enum agile_coll_op op);

/**
 * agile_coll_reduce - only @root's @recv receives the reduction
 * @coll:  the handle
 * @send:  @count elements
 * @recv:  @root: receives @count elements; others' may be NULL
 * @count: elements per member
 * @type:  their type
 * @op:    the reduction
 * @root:  the rank that receives it
 *
 * Collective, with the same arguments but buffers on every member.
 *
 * Thread safety: one thread at a time per handle.
 *
 * Return: 0 or a negative errno, as described at the top.
 */
int agile_coll_reduce(struct agile_coll *coll, const void *send, void *recv,
		      size_t count, enum agile_coll_type type,
		      enum agile_coll_op op, uint32_t root);

/**
 * agile_coll_reduce_scatter - rank r gets block r of the reduction
 * @coll:       the handle
 * @send:       size x @recv_count elements
 * @recv:       receives @recv_count elements; not in place
 * @recv_count: elements per block
 * @type:       their type
 * @op:         the reduction
 *
 * MPI_Reduce_scatter_block.  Collective.
 *
 * Thread safety: one thread at a time per handle.
 *
 * Return: 0 or a negative errno, as described at the top.
 */
int agile_coll_reduce_scatter(struct agile_coll *coll, const void *send,
			      void *recv, size_t recv_count,
			      enum agile_coll_type type, enum agile_coll_op op);

/**
 * agile_coll_allgather - every member gets every member's @send
 * @coll:  the handle
 * @send:  @count elements
 * @recv:  receives size x @count elements, rank r's @send at block r; in
 *         place when @send is the caller's own block of @recv
 * @count: elements per member
 * @type:  their type
 *
 * Collective.
 *
 * Thread safety: one thread at a time per handle.
 *
 * Return: 0 or a negative errno, as described at the top.
 */
int agile_coll_allgather(struct agile_coll *coll, const void *send, void *recv,
			 size_t count, enum agile_coll_type type);

/**
 * agile_coll_barrier - every member has called it before any returns
 * @coll: the handle
 *
 * Thread safety: one thread at a time per handle.
 *
 * Return: 0 or a negative errno, as described at the top.
 */
int agile_coll_barrier(struct agile_coll *coll);

/**
 * agile_coll_type_size - bytes per element of @type
 * @type: the element type
 *
 * Thread safety: thread safe.
 *
 * Return: the size, or 0 for an unknown type.
 */
size_t agile_coll_type_size(enum agile_coll_type type);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_COLL_H */
