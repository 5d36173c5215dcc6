/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * agile_pin_test - test-only misc device /dev/agile_pin_test that pins a
 * user range the way GPU drivers register host memory
 * (pin_user_pages_fast() with FOLL_LONGTERM | FOLL_WRITE).
 */
#ifndef AGILE_PIN_TEST_H
#define AGILE_PIN_TEST_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* agile_pin_test_args.flags: write a marker into each page, read it back */
#define AGILE_PIN_TEST_WRITE 0x1U

/**
 * struct agile_pin_test_args - AGILE_PIN_TEST_IOC_PIN
 * @addr: start of the range, page aligned.
 * @length: bytes, a non-zero multiple of the page size.
 * @flags: AGILE_PIN_TEST_WRITE or zero.
 * @marker: with AGILE_PIN_TEST_WRITE, page i of the range gets the
 *	__u32 @marker + i in its first four bytes, written and read back
 *	through the kernel's own mapping of the pinned page.
 *
 * The ioctl returns the number of pages pinned (all of them), then
 * unpinned; or -1 with errno: EINVAL for a bad range or flags, what
 * pin_user_pages_fast() returned (EFAULT when it pinned only part), EIO
 * when a marker did not read back.
 */
struct agile_pin_test_args {
	__u64 addr;
	__u64 length;
	__u32 flags;
	__u32 marker;
};

#define AGILE_PIN_TEST_IOC_PIN _IOW(0xA9, 0x40, struct agile_pin_test_args)

#endif /* AGILE_PIN_TEST_H */
