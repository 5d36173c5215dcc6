/* SPDX-License-Identifier: MIT */
/*
 * agile/sched.hpp - lambdas on the scheduler of agile/sched.h, for C++17
 *
 *	int64_t fib(agile_worker *w, int n)
 *	{
 *		if (n < 2)
 *			return n;
 *		auto a = agile::spawn(w, [n](agile_worker *w) {
 *			return fib(w, n - 1);
 *		});
 *		int64_t b = fib(w, n - 2);
 *		return a.sync() + b;
 *	}
 *
 *	err = agile::run(sched, [&](agile_worker *w) { r = fib(w, 30); });
 *	err = agile::parallel_for(sched, 0, n, 0, [&](int64_t i) { x[i] = i; });
 *	err = agile::parallel_reduce(sched, 0, n, 0, 0.0,
 *		[&](int64_t i, double &acc) { acc += x[i]; },
 *		[](double &acc, const double &other) { acc += other; }, sum);
 *
 * A spawn is the same fast path as AGILE_SPAWN (a frame written into the
 * worker's frame stack, no heap allocation): the frame holds a pointer to
 * the agile::task, which owns the lambda and receives its result.  The
 * task stays where it was made (it cannot be copied or moved), on the
 * spawning task's stack, until it is synced.
 *
 * The rules of agile/sched.h hold: spawn and sync in worker context only;
 * sync in reverse order of spawn (a task not synced explicitly syncs in
 * its destructor, and destructors run in reverse order of construction).
 * Lambdas run on C frames: one that throws ends the program
 * (std::terminate), as the callbacks here are noexcept.  Errors: return
 * a negative errno from a root or a parallel-for body (an int result), or
 * call agile_sched_fail.
 */
#ifndef AGILE_SCHED_HPP
#define AGILE_SCHED_HPP

#include <agile/sched.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace agile
{

namespace detail
{

/* The frame of an agile::task: the header and who to run. */
struct spawn_frame {
	struct agile_frame hdr;
	void *task;
};

/* Calls @fn with @args; its int result, or 0 for a void one. */
template <typename Fn, typename... Args>
inline int call_for_error(Fn &fn, Args &&...args)
{
	if constexpr (std::is_void_v<std::invoke_result_t<Fn &, Args...>>) {
		fn(std::forward<Args>(args)...);
		return 0;
	} else {
		return fn(std::forward<Args>(args)...);
	}
}

template <typename Body>
int for_range(int64_t lo, int64_t hi, void *arg) noexcept
{
	Body &body = *static_cast<Body *>(arg);

	for (int64_t i = lo; i < hi; i++) {
		int err = call_for_error(body, i);

		if (err)
			return err;
	}
	return 0;
}

template <typename Fn>
int run_root(struct agile_worker *w, void *arg) noexcept
{
	return call_for_error(*static_cast<Fn *>(arg), w);
}

template <typename T>
inline void *as_arg(T &obj)
{
	return const_cast<void *>(static_cast<const void *>(std::addressof(obj)));
}

} /* namespace detail */

/**
 * run - run @fn(w) as the root task of a run on @s
 * @s:  the pool
 * @fn: callable with (struct agile_worker *), returning int (0 or a
 *      negative errno) or void
 *
 * agile_sched_run with a lambda.
 *
 * Thread safety: as agile_sched_run: any number of threads at once.
 *
 * Return: as agile_sched_run.
 */
template <typename Fn>
inline int run(struct agile_sched *s, Fn &&fn)
{
	using F = std::remove_reference_t<Fn>;

	return agile_sched_run(s, detail::run_root<F>, detail::as_arg(fn));
}

/**
 * parallel_for - run @body(i) for every i in [@begin, @end) in parallel
 * @s:     the pool
 * @begin: first index
 * @end:   one past the last index
 * @grain: leaves get at most @grain indices; 0 picks one
 * @body:  callable with (int64_t), returning int (0 or a negative errno,
 *         which ends the loop) or void
 *
 * agile_sched_parallel_for with a per-index lambda, called concurrently
 * from every worker.
 *
 * Thread safety: as agile_sched_parallel_for.
 *
 * Return: as agile_sched_parallel_for.
 */
template <typename Body>
inline int parallel_for(struct agile_sched *s, int64_t begin, int64_t end,
			int64_t grain, Body &&body)
{
	using B = std::remove_reference_t<Body>;

	return agile_sched_parallel_for(s, begin, end, grain,
					detail::for_range<B>,
					detail::as_arg(body));
}

/**
 * parallel_for - the same from inside a task (agile_sched_parallel_for_w)
 * @w:     the worker the calling task was given
 * @begin: first index
 * @end:   one past the last index
 * @grain: leaves get at most @grain indices; 0 picks one
 * @body:  callable with (int64_t), returning int or void
 *
 * Thread safety: worker context only, on @w.
 *
 * Return: as agile_sched_parallel_for_w (the run goes on after an error).
 */
template <typename Body>
inline int parallel_for(struct agile_worker *w, int64_t begin, int64_t end,
			int64_t grain, Body &&body)
{
	using B = std::remove_reference_t<Body>;

	return agile_sched_parallel_for_w(w, begin, end, grain,
					  detail::for_range<B>,
					  detail::as_arg(body));
}

namespace detail
{

template <typename T, typename Body, typename Combine> struct reduce_fns {
	Body &body;
	Combine &combine;

	static int leaf(int64_t lo, int64_t hi, void *acc, void *arg) noexcept
	{
		auto *self = static_cast<reduce_fns *>(arg);
		T &a = *static_cast<T *>(acc);

		for (int64_t i = lo; i < hi; i++) {
			int err = call_for_error(self->body, i, a);

			if (err)
				return err;
		}
		return 0;
	}

	static void join(void *acc, const void *other, void *arg) noexcept
	{
		auto *self = static_cast<reduce_fns *>(arg);

		self->combine(*static_cast<T *>(acc),
			      *static_cast<const T *>(other));
	}
};

} /* namespace detail */

/**
 * parallel_reduce - reduce [@begin, @end) into @result in parallel
 * @s:        the pool (agile_sched_parallel_reduce), or the worker of the
 *            calling task (agile_sched_parallel_reduce_w)
 * @begin:    first index
 * @end:      one past the last index
 * @grain:    leaves get at most @grain indices; 0 picks one
 * @identity: what each leaf starts from
 * @body:     callable with (int64_t i, T &acc): folds index @i into @acc;
 *            returns int (0 or a negative errno) or void
 * @combine:  callable with (T &acc, const T &other): folds the upper
 *            half's @other into @acc
 * @result:   receives the reduction
 *
 * @T is trivially copyable and at most AGILE_REDUCE_MAX_SIZE bytes (the
 * accumulators are copied as bytes).  The order of combination is fixed by
 * the range and @grain, so floating-point results repeat bit for bit.
 *
 * Thread safety: as the C call it wraps.
 *
 * Return: as the C call it wraps.
 */
template <typename Where, typename T, typename Body, typename Combine>
inline int parallel_reduce(Where *where, int64_t begin, int64_t end,
			   int64_t grain, const T &identity, Body &&body,
			   Combine &&combine, T &result)
{
	static_assert(std::is_trivially_copyable_v<T>,
		      "agile::parallel_reduce: T is copied as bytes");
	static_assert(sizeof(T) <= AGILE_REDUCE_MAX_SIZE,
		      "agile::parallel_reduce: T exceeds AGILE_REDUCE_MAX_SIZE");
	using B = std::remove_reference_t<Body>;
	using C = std::remove_reference_t<Combine>;
	using F = detail::reduce_fns<T, B, C>;
	F fns{ body, combine };

	if constexpr (std::is_same_v<Where, struct agile_worker>)
		return agile_sched_parallel_reduce_w(
			where, begin, end, grain, sizeof(T), &identity,
			F::leaf, F::join, &fns, &result);
	else
		return agile_sched_parallel_reduce(where, begin, end, grain,
						   sizeof(T), &identity,
						   F::leaf, F::join, &fns,
						   &result);
}

/**
 * class task - a spawned lambda: agile::spawn makes one, sync joins it
 *
 * @Fn is callable with (struct agile_worker *) and returns a result
 * (default constructible, as a task whose frame is lost yields a
 * value-initialised result, like a C task's zeroed one) or void.
 *
 * Thread safety: worker context only, on the worker that spawned it.
 */
template <typename Fn>
class task
{
public:
	using result_type = std::invoke_result_t<Fn &, struct agile_worker *>;

	task(struct agile_worker *w, Fn fn) : w_(w), fn_(std::move(fn))
	{
		union agile_frame_slot *slot;
		detail::spawn_frame *f;

		if (agile__spawn_full(w_, &slot)) {
			detail::spawn_frame tmp;

			tmp.hdr.fn = frame_run;
			tmp.task = this;
			agile__spawn_slow(w_, &tmp.hdr, sizeof(tmp));
			return;
		}
		f = reinterpret_cast<detail::spawn_frame *>(slot);
		f->hdr.fn = frame_run;
		f->task = this;
		agile__spawn_push(w_, slot);
	}

	task(const task &) = delete;
	task &operator=(const task &) = delete;

	~task()
	{
		if (!synced_)
			sync();
	}

	/**
	 * sync - wait for the task, and yield its result
	 *
	 * Runs it inline when no other worker took it; otherwise works on
	 * the thief's tasks until the thief is done (AGILE_SYNC).  Only the
	 * newest unsynced spawn may be synced, and only once.
	 *
	 * Return: the lambda's result (nothing for void).
	 */
	result_type sync()
	{
		union agile_frame_slot *slot = w_->sp - 1;

		synced_ = true;
		if (agile__sync_pop(w_, slot, agile__base, frame_run)) {
			if constexpr (std::is_void_v<result_type>) {
				fn_(w_);
				agile__balanced(w_, slot);
				return;
			} else {
				result_type r = fn_(w_);

				agile__balanced(w_, slot);
				return r;
			}
		}

		detail::spawn_frame tmp;

		/*
		 * A thief's result: sync_check acquires its release of done.
		 * A frame of another task on top is left there, and the run
		 * fails (AGILE_E_SYNC): result_ stays empty.
		 */
		agile__sync_check(w_, agile__base, frame_run, &tmp.hdr,
				  sizeof(tmp));
		if constexpr (!std::is_void_v<result_type>)
			return result_ ? std::move(*result_) : result_type();
	}

private:
	static void frame_run(struct agile_worker *w,
			      struct agile_frame *hdr) noexcept
	{
		auto *f = reinterpret_cast<detail::spawn_frame *>(hdr);
		auto *t = static_cast<task *>(f->task);
		union agile_frame_slot *base = w->sp;

		if constexpr (std::is_void_v<result_type>)
			t->fn_(w);
		else
			t->result_.emplace(t->fn_(w));
		agile__balanced(w, base);
	}

	struct no_result {
	};
	using storage = std::conditional_t<std::is_void_v<result_type>,
					   no_result, std::optional<result_type>>;

	struct agile_worker *w_;
	Fn fn_;
	storage result_{};
	bool synced_ = false;
};

/**
 * spawn - make @fn(w) available to run in parallel (AGILE_SPAWN)
 * @w:  the worker the calling task was given
 * @fn: callable with (struct agile_worker *)
 *
 * Thread safety: worker context only.
 *
 * Return: the task, to be synced (task::sync) before the spawning task
 * returns; it must stay where it is (C++17 builds it in place).
 */
template <typename Fn>
inline task<std::decay_t<Fn>> spawn(struct agile_worker *w, Fn &&fn)
{
	return task<std::decay_t<Fn>>(w, std::forward<Fn>(fn));
}

} /* namespace agile */

#endif /* AGILE_SCHED_HPP */
