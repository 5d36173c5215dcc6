// SPDX-License-Identifier: GPL-2.0-only
/*
 * ctx_hold - a helper of agilectl_test.sh, not a test: holds a context in
 * a known state for agilectl to find in /proc/PID/fdinfo.
 *
 *   ctx_hold SLOTS SIGNALS SLOT VALUE OPCODE [fill]
 *
 * Makes a context of SLOTS slots (64-byte task registers), SIGNALs SLOT
 * SIGNALS times, the last time with VALUE, writes OPCODE into SLOT's task
 * register, with "fill" stores 1 into every other slot's doorbell (all
 * in use), prints "fd N" (its descriptor) and waits until it is killed.
 * Exits 1 with a message when any step fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/agile.h>

int main(int argc, char **argv)
{
	unsigned long slots, signals, slot, value, opcode, i;
	struct agile_ctx_init init;
	struct agile_task_reg *reg;
	char *regs;
	int fd;

	if (argc != 6 && !(argc == 7 && !strcmp(argv[6], "fill"))) {
		fprintf(stderr,
			"usage: ctx_hold SLOTS SIGNALS SLOT VALUE OPCODE [fill]\n");
		return 2;
	}
	slots = strtoul(argv[1], NULL, 0);
	signals = strtoul(argv[2], NULL, 0);
	slot = strtoul(argv[3], NULL, 0);
	value = strtoul(argv[4], NULL, 0);
	opcode = strtoul(argv[5], NULL, 0);
	if (!signals || slot >= slots) {
		fprintf(stderr, "ctx_hold: SIGNALS >= 1 and SLOT < SLOTS\n");
		return 2;
	}

	fd = open("/dev/agile", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror("ctx_hold: /dev/agile");
		return 1;
	}
	memset(&init, 0, sizeof(init));
	init.nr_slots = (__u32)slots;
	init.task_reg_size = 64;
	if (ioctl(fd, AGILE_IOC_CTX_INIT, &init) < 0) {
		perror("ctx_hold: CTX_INIT");
		return 1;
	}
	for (i = 0; i < signals; i++) {
		struct agile_fence fence = {
			.op = AGILE_FENCE_SIGNAL,
			.slot = (__u32)slot,
			.value = (__u32)(value - (signals - 1 - i)),
		};

		if (ioctl(fd, AGILE_IOC_FENCE, &fence) < 0) {
			perror("ctx_hold: SIGNAL");
			return 1;
		}
	}
	regs = mmap(NULL, init.task_reg_bytes, PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, (off_t)init.task_reg_offset);
	if (regs == MAP_FAILED) {
		perror("ctx_hold: mmap");
		return 1;
	}
	reg = (struct agile_task_reg *)(regs + slot * 64);
	reg->opcode = (__u32)opcode;
	if (argc == 7) {
		struct agile_doorbell *db;

		db = mmap(NULL, init.doorbell_bytes, PROT_READ | PROT_WRITE,
			  MAP_SHARED, fd, (off_t)init.doorbell_offset);
		if (db == MAP_FAILED) {
			perror("ctx_hold: mmap");
			return 1;
		}
		for (i = 0; i < slots; i++)
			if (i != slot)
				__atomic_store_n(&db[i].value, 1,
						 __ATOMIC_RELEASE);
	}
	printf("fd %d\n", fd);
	fflush(stdout);
	for (;;)
		pause();
}
