// SPDX-License-Identifier: GPL-2.0-only
/*
 * agile contexts: the slots, the doorbell and task-register pages, and
 * their mapping into userspace.
 *
 * The pages are ordinary order-0 pages, zeroed and charged to the
 * caller's memory cgroup.  They are inserted into a VM_SHARED mapping
 * with vm_insert_pages(), not as raw PFNs, so that get_user_pages() and
 * FOLL_LONGTERM pins (what GPU drivers do to register host memory) work.
 * Each mapped PTE holds a page reference: a mapping stays valid after
 * its file is closed, and the pages are freed by whoever drops the last
 * reference, the context or the last mapping.
 */

#include <linux/err.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "agile.h"
#include "compat.h"

atomic_t agile_nr_contexts = ATOMIC_INIT(0);
DEFINE_PER_CPU(struct agile_counters, agile_totals);

static atomic_t agile_ctx_ids = ATOMIC_INIT(0);

/* EINVAL unless @nr_slots and @task_reg_size make a valid context. */
int agile_ctx_check_sizes(u32 nr_slots, u32 task_reg_size)
{
	u32 bytes;

	if (!nr_slots)
		return -EINVAL;
	if (!is_power_of_2(task_reg_size) ||
	    task_reg_size < AGILE_TASK_REG_MIN_SIZE ||
	    task_reg_size > AGILE_TASK_REG_MAX_SIZE)
		return -EINVAL;
	/* Sizes are reported in 32 bits: reject overflow before the limit. */
	if (check_mul_overflow(nr_slots, task_reg_size, &bytes) ||
	    check_mul_overflow(nr_slots, (u32)AGILE_DOORBELL_STRIDE, &bytes))
		return -EINVAL;
	return 0;
}

/* ENOSPC when a new context of @nr_slots slots is over max_slots. */
int agile_ctx_check_limit(u32 nr_slots)
{
	return nr_slots > READ_ONCE(agile_max_slots) ? -ENOSPC : 0;
}

int agile_ctx_check_init(const struct agile_ctx_init *args)
{
	if (args->flags || args->pad ||
	    memchr_inv(args->reserved, 0, sizeof(args->reserved)))
		return -EINVAL;
	return agile_ctx_check_sizes(args->nr_slots, args->task_reg_size) ?:
		       agile_ctx_check_limit(args->nr_slots);
}

/* May run for a million pages: it yields the CPU as it goes. */
void agile_pages_free(struct page **pages, unsigned long nr_pages)
{
	unsigned long i;

	/* Mapped pages keep the references their PTEs hold. */
	for (i = 0; i < nr_pages; i++) {
		put_page(pages[i]);
		cond_resched();
	}
	kvfree(pages);
	atomic_long_sub(nr_pages, &agile_nr_pages);
}

/*
 * @nr_pages zeroed pages, charged to the caller's memory cgroup, or NULL.
 * A large request that memory cannot meet fails (ENOMEM for the caller)
 * rather than invoking the OOM killer on someone else: no retries, no
 * warning.  May run for a million pages: it yields the CPU as it goes.
 */
struct page **agile_pages_alloc(unsigned long nr_pages)
{
	const gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NORETRY |
			  __GFP_NOWARN;
	struct page **pages;
	unsigned long i;

	pages = kvcalloc(nr_pages, sizeof(*pages),
			 GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!pages)
		return NULL;
	atomic_long_add(nr_pages, &agile_nr_pages);
	for (i = 0; i < nr_pages; i++) {
		pages[i] = alloc_page(gfp);
		if (!pages[i]) {
			atomic_long_sub(nr_pages - i, &agile_nr_pages);
			agile_pages_free(pages, i);
			return NULL;
		}
		cond_resched();
	}
	return pages;
}

/**
 * agile_ctx_create - a new context, made by and charged to the caller
 * @nr_slots: its slots, checked by agile_ctx_check_sizes().
 * @task_reg_size: bytes per task register, likewise.
 *
 * Counts for the caller's user (ENOSPC over max_contexts_per_user) and
 * charges its pages to the caller's RLIMIT_MEMLOCK (ENOMEM over it), its
 * VmPin and its memory cgroup.  Returns the context with one reference,
 * or an ERR_PTR().
 */
struct agile_ctx *agile_ctx_create(u32 nr_slots, u32 task_reg_size)
{
	struct agile_ctx *ctx;
	int ret = -ENOMEM;
	u32 i;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx)
		return ERR_PTR(-ENOMEM);
	ctx->nr_slots = nr_slots;
	ctx->task_reg_size = task_reg_size;
	ctx->nr_doorbell_pages =
		PAGE_ALIGN((size_t)nr_slots * AGILE_DOORBELL_STRIDE) >>
		PAGE_SHIFT;
	ctx->nr_pages =
		ctx->nr_doorbell_pages +
		(PAGE_ALIGN((size_t)nr_slots * task_reg_size) >> PAGE_SHIFT);

	ctx->owner = agile_user_get();
	if (IS_ERR(ctx->owner)) {
		ret = PTR_ERR(ctx->owner);
		goto err_free_ctx;
	}
	ret = agile_charge(&ctx->charge, ctx->nr_pages);
	if (ret)
		goto err_put_user;
	ret = -ENOMEM;
	ctx->pages = agile_pages_alloc(ctx->nr_pages);
	if (!ctx->pages)
		goto err_uncharge;
	ctx->slots = kvcalloc(nr_slots, sizeof(*ctx->slots),
			      GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!ctx->slots)
		goto err_free_pages;
	ctx->counters =
		alloc_percpu_gfp(struct agile_counters, GFP_KERNEL_ACCOUNT);
	if (!ctx->counters)
		goto err_free_slots;

	for (i = 0; i < nr_slots; i++) {
		size_t offset = (size_t)i * AGILE_DOORBELL_STRIDE;

		INIT_LIST_HEAD(&ctx->slots[i].waiters);
		ctx->slots[i].doorbell =
			page_address(ctx->pages[offset >> PAGE_SHIFT]) +
			offset_in_page(offset);
	}
	kref_init(&ctx->ref);
	spin_lock_init(&ctx->lock);
	INIT_LIST_HEAD(&ctx->sleepers);
	spin_lock_init(&ctx->seg_lock);
	ctx->id = atomic_inc_return(&agile_ctx_ids);
	atomic_inc(&agile_nr_contexts);
	return ctx;

err_free_slots:
	kvfree(ctx->slots);
err_free_pages:
	agile_pages_free(ctx->pages, ctx->nr_pages);
err_uncharge:
	agile_uncharge(&ctx->charge);
err_put_user:
	agile_user_put(ctx->owner);
err_free_ctx:
	kfree(ctx);
	return ERR_PTR(ret);
}

void agile_ctx_fill_init(const struct agile_ctx *ctx,
			 struct agile_ctx_init *args)
{
	args->doorbell_offset = AGILE_MMAP_DOORBELLS;
	args->doorbell_bytes = (u64)ctx->nr_doorbell_pages << PAGE_SHIFT;
	args->task_reg_offset = AGILE_MMAP_TASK_REGS;
	args->task_reg_bytes = (u64)(ctx->nr_pages - ctx->nr_doorbell_pages)
			       << PAGE_SHIFT;
}

static void agile_ctx_release(struct kref *ref)
{
	struct agile_ctx *ctx = container_of(ref, struct agile_ctx, ref);

	/* Waiters hold a reference through their file: none is queued. */
	WARN_ON_ONCE(!list_empty(&ctx->sleepers));
	agile_poll_ctx_release(ctx);
	agile_seg_free_all(ctx);
	/* Unpublished by the last member's release: no one finds it. */
	agile_group_free(ctx->group);
	free_percpu(ctx->counters);
	kvfree(ctx->slots);
	agile_pages_free(ctx->pages, ctx->nr_pages);
	agile_uncharge(&ctx->charge);
	agile_user_put(ctx->owner);
	kfree(ctx);
	atomic_dec(&agile_nr_contexts);
}

void agile_ctx_put(struct agile_ctx *ctx)
{
	kref_put(&ctx->ref, agile_ctx_release);
}

u64 agile_counter_sum(const struct agile_counters __percpu *counters,
		      enum agile_counter counter)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(counters, cpu)->count[counter]);
	return sum;
}

/*
 * The head of slot @slot's task register, through the kernel's mapping of
 * its page: a register (64 to 4096 bytes, a power of two) never crosses a
 * page.  Userspace writes it at any time: read it with READ_ONCE().
 */
const struct agile_task_reg *agile_ctx_task_reg(const struct agile_ctx *ctx,
						u32 slot)
{
	size_t offset = (size_t)slot * ctx->task_reg_size;

	return page_address(ctx->pages[ctx->nr_doorbell_pages +
				       (offset >> PAGE_SHIFT)]) +
	       offset_in_page(offset);
}

void agile_ctx_stats(const struct agile_ctx *ctx, struct agile_stats *stats)
{
	const struct agile_counters __percpu *c = ctx->counters;

	stats->signals = agile_counter_sum(c, AGILE_CNT_SIGNALS);
	stats->waits = agile_counter_sum(c, AGILE_CNT_WAITS);
	stats->wakeups_signal = agile_counter_sum(c, AGILE_CNT_WAKEUPS_SIGNAL);
	stats->wakeups_poll = agile_counter_sum(c, AGILE_CNT_WAKEUPS_POLL);
	stats->timeouts = agile_counter_sum(c, AGILE_CNT_TIMEOUTS);
	stats->interrupted = agile_counter_sum(c, AGILE_CNT_INTERRUPTED);
	stats->spin_hits = agile_counter_sum(c, AGILE_CNT_SPIN_HITS);
}

/*
 * Every page is inserted at mmap time, so a fault means the user zapped
 * part of the mapping (madvise(MADV_DONTNEED)): nothing is refilled.
 */
static vm_fault_t agile_vm_fault(struct vm_fault *vmf)
{
	return VM_FAULT_SIGBUS;
}

static const struct vm_operations_struct agile_vm_ops = {
	.fault = agile_vm_fault,
};

static int agile_vma_check(struct vm_area_struct *vma)
{
	/* VM_MAYSHARE, not VM_SHARED: a read-only file loses VM_SHARED. */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	return 0;
}

/*
 * Map all of @pages: MAP_SHARED, no exec, exactly @nr_pages long.  Used
 * for the areas, the segments and their dma-bufs alike.
 */
int agile_pages_mmap(struct vm_area_struct *vma, struct page **pages,
		     unsigned long nr_pages)
{
	unsigned long size = vma->vm_end - vma->vm_start;
	unsigned long nr = nr_pages;
	int ret;

	ret = agile_vma_check(vma);
	if (ret)
		return ret;
	if (size != nr_pages << PAGE_SHIFT)
		return -EINVAL;

	agile_vm_flags_mod(vma, VM_DONTEXPAND | VM_DONTCOPY | VM_DONTDUMP,
			   VM_MAYEXEC);
	vma->vm_ops = &agile_vm_ops;
	/* On failure mmap unmaps the VMA, dropping what was inserted. */
	return vm_insert_pages(vma, vma->vm_start, pages, &nr);
}

int agile_ctx_mmap(struct agile_ctx *ctx, struct vm_area_struct *vma)
{
	struct page **pages;
	unsigned long nr;
	int ret;

	ret = agile_vma_check(vma);
	if (ret)
		return ret;
	if (vma->vm_pgoff == AGILE_MMAP_DOORBELLS >> PAGE_SHIFT) {
		pages = ctx->pages;
		nr = ctx->nr_doorbell_pages;
	} else if (vma->vm_pgoff == AGILE_MMAP_TASK_REGS >> PAGE_SHIFT) {
		pages = ctx->pages + ctx->nr_doorbell_pages;
		nr = ctx->nr_pages - ctx->nr_doorbell_pages;
	} else {
		ret = agile_seg_find_mmap(ctx, vma->vm_pgoff, &pages, &nr);
		if (ret)
			return ret;
	}
	return agile_pages_mmap(vma, pages, nr);
}
