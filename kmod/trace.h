/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * agile tracepoints: the fence protocol as seen by perf and ftrace
 * (events/agile/ in tracefs).  @ctx is agile_ctx.id.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM agile

#if !defined(AGILE_KMOD_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define AGILE_KMOD_TRACE_H

#include <linux/tracepoint.h>
#include <linux/types.h>

#include "agile.h"

TRACE_DEFINE_ENUM(AGILE_WOKEN_NONE);
TRACE_DEFINE_ENUM(AGILE_WOKEN_SIGNAL);
TRACE_DEFINE_ENUM(AGILE_WOKEN_POLL);
TRACE_DEFINE_ENUM(AGILE_WOKEN_ENDED);

TRACE_EVENT(agile_signal,
	    TP_PROTO(u32 ctx, u32 slot, u32 value, u32 flags,
		     unsigned int woken),
	    TP_ARGS(ctx, slot, value, flags, woken),
	    TP_STRUCT__entry(__field(u32, ctx)
			     __field(u32, slot)
			     __field(u32, value)
			     __field(u32, flags)
			     __field(unsigned int, woken)),
	    TP_fast_assign(__entry->ctx = ctx;
			   __entry->slot = slot;
			   __entry->value = value;
			   __entry->flags = flags;
			   __entry->woken = woken;),
	    TP_printk("ctx=%u slot=%u value=%u flags=%#x woken=%u",
		      __entry->ctx, __entry->slot, __entry->value,
		      __entry->flags, __entry->woken)
);

TRACE_EVENT(agile_wait_start,
	    TP_PROTO(u32 ctx, u32 nr_conds, u32 slot, u32 cmp, u32 value,
		     u64 timeout_ns, u32 flags),
	    TP_ARGS(ctx, nr_conds, slot, cmp, value, timeout_ns, flags),
	    TP_STRUCT__entry(__field(u32, ctx)
			     __field(u32, nr_conds)
			     __field(u32, slot)
			     __field(u32, cmp)
			     __field(u32, value)
			     __field(u32, flags)
			     __field(u64, timeout_ns)),
	    TP_fast_assign(__entry->ctx = ctx;
			   __entry->nr_conds = nr_conds;
			   __entry->slot = slot;
			   __entry->cmp = cmp;
			   __entry->value = value;
			   __entry->flags = flags;
			   __entry->timeout_ns = timeout_ns;),
	    TP_printk("ctx=%u nr_conds=%u slot=%u cmp=%u value=%u flags=%#x timeout_ns=%llu",
		      __entry->ctx, __entry->nr_conds, __entry->slot,
		      __entry->cmp, __entry->value, __entry->flags,
		      __entry->timeout_ns)
);

TRACE_EVENT(agile_wait_end,
	    TP_PROTO(u32 ctx, int ret, u32 index, u32 observed, int woken),
	    TP_ARGS(ctx, ret, index, observed, woken),
	    TP_STRUCT__entry(__field(u32, ctx)
			     __field(int, ret)
			     __field(u32, index)
			     __field(u32, observed)
			     __field(int, woken)),
	    TP_fast_assign(__entry->ctx = ctx;
			   __entry->ret = ret;
			   __entry->index = index;
			   __entry->observed = observed;
			   __entry->woken = woken;),
	    TP_printk("ctx=%u ret=%d index=%u observed=%u woken=%s",
		      __entry->ctx, __entry->ret, __entry->index,
		      __entry->observed,
		      __print_symbolic(__entry->woken,
				       { AGILE_WOKEN_NONE, "none" },
				       { AGILE_WOKEN_SIGNAL, "signal" },
				       { AGILE_WOKEN_POLL, "poll" },
				       { AGILE_WOKEN_ENDED, "ended" }))
);

#endif /* AGILE_KMOD_TRACE_H */

/* Outside the include guard: define_trace.h reads this file again. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
