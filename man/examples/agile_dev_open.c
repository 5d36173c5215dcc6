// SPDX-License-Identifier: MIT
/* Post a value through slot 0 from one thread to another. */
#include <agile/agile.h>
#include <pthread.h>
#include <stdio.h>

static void *eu(void *arg)
{
	struct agile_dev *dev = arg;
	uint32_t seen;

	/* Sleep (after a bounded spin) until slot 0 is posted. */
	agile_dev_wait(dev, 0, AGILE_CMP_EQ, AGILE_DOORBELL_POSTED,
		       AGILE_TIMEOUT_INFINITE, &seen);
	agile_dev_signal(dev, 0, AGILE_DOORBELL_IDLE); /* done */
	return NULL;
}

int main(void)
{
	struct agile_dev_opts opts;
	struct agile_dev *dev;
	pthread_t thread;
	int ret;

	agile_dev_opts_init(&opts);
	opts.nr_slots = 4;
	ret = agile_dev_open(&opts, &dev);
	if (ret) {
		fprintf(stderr, "agile_dev_open: %s\n", agile_strerror(ret));
		return 1;
	}
	printf("backend %s\n", agile_dev_backend_name(agile_dev_backend(dev)));
	pthread_create(&thread, NULL, eu, dev);
	agile_dev_signal(dev, 0, AGILE_DOORBELL_POSTED);
	agile_dev_wait(dev, 0, AGILE_CMP_EQ, AGILE_DOORBELL_IDLE,
		       AGILE_TIMEOUT_INFINITE, NULL);
	pthread_join(thread, NULL);
	return agile_dev_close(dev) ? 1 : 0;
}
