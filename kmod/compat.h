/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel API differences between the releases agile builds for (Debian
 * 12's 6.1 and Debian 13's 6.12, and newer).  The only file that tests
 * LINUX_VERSION_CODE: an out-of-tree module has no single version to be
 * "merged" into.
 */
#ifndef AGILE_KMOD_COMPAT_H
#define AGILE_KMOD_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/version.h>

/* vm_flags_mod() appeared in 6.3; before it vm_flags was written directly. */
static inline void agile_vm_flags_mod(struct vm_area_struct *vma,
				      vm_flags_t set, vm_flags_t clear)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_mod(vma, set, clear);
#else
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
#endif
}

/* hrtimer_setup() appeared in 6.13 and replaces hrtimer_init(). */
static inline void
agile_hrtimer_setup(struct hrtimer *timer,
		    enum hrtimer_restart (*function)(struct hrtimer *),
		    clockid_t clock_id, enum hrtimer_mode mode)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
	hrtimer_setup(timer, function, clock_id, mode);
#else
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
#endif
}

/*
 * The dma-buf symbols live in namespace DMA_BUF; MODULE_IMPORT_NS() takes
 * a bare token up to 6.12 and a string literal from 6.13.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define AGILE_MODULE_IMPORT_NS_DMA_BUF MODULE_IMPORT_NS("DMA_BUF")
#else
#define AGILE_MODULE_IMPORT_NS_DMA_BUF MODULE_IMPORT_NS(DMA_BUF)
#endif

#endif /* AGILE_KMOD_COMPAT_H */
