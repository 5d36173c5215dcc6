// SPDX-License-Identifier: MIT
/* A runtime context on the CPU device and one buffer in it. */
#include <agile/agile.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	struct agile_rt_ctx_opts opts;
	struct agile_rt_buffer *buf;
	agile_rt_ctx ctx;
	uint32_t nr;
	void *host;
	int ret;

	if (agile_rt_device_count(&nr))
		return 1;
	printf("%u devices\n", nr);
	agile_rt_ctx_opts_init(&opts); /* device 0, the CPU */
	ret = agile_rt_ctx_create(&opts, &ctx);
	if (ret) {
		fprintf(stderr, "agile_rt_ctx_create: %s\n",
			agile_strerror(ret));
		return 1;
	}
	ret = agile_rt_buffer_create(ctx, 1 << 20, &buf);
	if (!ret)
		ret = agile_rt_buffer_host(buf, &host, NULL);
	if (!ret) {
		memset(host, 0, 1 << 20);
		agile_rt_buffer_release(buf);
	}
	agile_rt_ctx_release(ctx);
	return ret ? 1 : 0;
}
