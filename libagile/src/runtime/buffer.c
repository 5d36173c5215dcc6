// SPDX-License-Identifier: MIT
/*
 * buffer.c - memory objects: arena memory of the context's home pool,
 * mapped for every other device's EUs, shared with the host.
 */
#define _GNU_SOURCE
#include <agile/eu.h>
#include <agile/runtime.h>

#include <errno.h>
#include <stdlib.h>

#include "runtime_impl.h"

static void buffers_less(struct rt_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->nr_buffers--;
	pthread_mutex_unlock(&ctx->lock);
}

int agile_rt_buffer_create(agile_rt_ctx handle, size_t bytes,
			   struct agile_rt_buffer **out)
{
	struct agile_rt_buffer *buf;
	struct rt_ctx *ctx;
	struct rt_dev *home;
	uint32_t mapped = 0;
	int err;

	if (!bytes || !out)
		return -EINVAL;
	ctx = agile__rt_ctx_get(handle);
	if (!ctx)
		return -AGILE_E_INVALID_CONTEXT;
	buf = calloc(1, sizeof(*buf));
	if (!buf) {
		agile__rt_ctx_put(ctx);
		return -ENOMEM;
	}
	/* Counted first: a program's build restarts no pool under it. */
	pthread_mutex_lock(&ctx->lock);
	ctx->nr_buffers++;
	pthread_mutex_unlock(&ctx->lock);
	home = &ctx->devs[ctx->home];
	err = agile_eu_pool_alloc(home->pool, bytes, &buf->host,
				  &buf->eu_addr[ctx->home]);
	/* The other GPUs' EUs get it mapped; CPU EUs use the host address. */
	for (uint32_t i = 0; i < ctx->nr_devs && !err; i++, mapped = i) {
		if (i == ctx->home)
			continue;
		err = agile_eu_pool_map(ctx->devs[i].pool, buf->host, bytes,
					&buf->eu_addr[i]);
	}
	if (err) {
		for (uint32_t i = 0; i < mapped; i++)
			if (i != ctx->home)
				agile_eu_pool_unmap(ctx->devs[i].pool,
						    buf->host);
		if (buf->host)
			agile_eu_pool_free(home->pool, buf->host);
		free(buf);
		buffers_less(ctx);
		agile__rt_ctx_put(ctx);
		return err;
	}
	buf->bytes = bytes;
	buf->ctx =
		ctx; /* the reference agile__rt_ctx_get took is the buffer's */
	atomic_init(&buf->refs, 1);
	*out = buf;
	return 0;
}

int agile_rt_buffer_host(struct agile_rt_buffer *buf, void **host,
			 size_t *bytes)
{
	if (!buf || !host)
		return -EINVAL;
	*host = buf->host;
	if (bytes)
		*bytes = buf->bytes;
	return 0;
}

void agile__rt_buffer_get(struct agile_rt_buffer *buf)
{
	atomic_fetch_add_explicit(&buf->refs, 1, memory_order_relaxed);
}

void agile__rt_buffer_put(struct agile_rt_buffer *buf)
{
	struct rt_ctx *ctx = buf->ctx;

	/* acq_rel: the last holder sees every other holder's writes. */
	if (atomic_fetch_sub_explicit(&buf->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (uint32_t i = 0; i < ctx->nr_devs; i++)
		if (i != ctx->home)
			agile_eu_pool_unmap(ctx->devs[i].pool, buf->host);
	agile_eu_pool_free(ctx->devs[ctx->home].pool, buf->host);
	if (buf->last_writer)
		agile_rt_event_release(buf->last_writer);
	for (uint32_t i = 0; i < buf->nr_readers; i++)
		agile_rt_event_release(buf->readers[i]);
	free(buf->readers);
	free(buf);
	buffers_less(ctx);
	agile__rt_ctx_put(ctx);
}

int agile_rt_buffer_release(struct agile_rt_buffer *buf)
{
	if (!buf)
		return -EINVAL;
	agile__rt_buffer_put(buf);
	return 0;
}
