/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * agile_pin_test - test-only misc device /dev/agile_pin_test that does
 * what GPU drivers do with agile's memory: pins a user range the way they
 * register host memory (pin_user_pages_fast() with FOLL_LONGTERM |
 * FOLL_WRITE), and imports a dma-buf the way they import one (attach,
 * map, CPU access through the mapped pages or through a vmap).
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

/*
 * agile_pin_test_dmabuf.flags: reach the word through dma_buf_vmap()
 * instead of the pages of the attachment's scatterlist.
 */
#define AGILE_PIN_TEST_DMABUF_VMAP 0x1U
/*
 * agile_pin_test_dmabuf.flags, not with AGILE_PIN_TEST_DMABUF_VMAP: map
 * the attachment DMA_TO_DEVICE (the device only reads), store @marker
 * through the page before dma_buf_begin_cpu_access(DMA_FROM_DEVICE),
 * and read the word again after it into @after.  An exporter that syncs
 * the mapping for the CPU in the caller's direction instead of the
 * mapping's copies a bounce buffer's stale bytes over the store.
 */
#define AGILE_PIN_TEST_DMABUF_TO_DEVICE 0x2U

/**
 * struct agile_pin_test_dmabuf - AGILE_PIN_TEST_IOC_DMABUF
 * @fd: to kernel: the dma-buf to import.
 * @flags: to kernel: AGILE_PIN_TEST_DMABUF_VMAP or zero.
 * @offset: to kernel: byte offset of a __u32 in the buffer, a multiple
 *	of four, the whole word inside the buffer.
 * @marker: to kernel: stored into that word once it has been read.
 * @seen: from kernel: what the word held before @marker was stored.
 * @after: from kernel: with AGILE_PIN_TEST_DMABUF_TO_DEVICE, the word
 *	after dma_buf_begin_cpu_access(); zero otherwise.
 * @bounced: from kernel: 1 when the attachment's DMA mapping needs syncs
 *	(dma_need_sync(): bounce buffers, as with swiotlb=force), so that
 *	the direction of a sync matters; 0 otherwise.
 * @reserved: must be zero.
 *
 * Imports the dma-buf as a device driver does: dma_buf_get(),
 * dma_buf_attach() with the misc device, dma_buf_map_attachment(); then,
 * between dma_buf_begin_cpu_access() and dma_buf_end_cpu_access(), reads
 * the word at @offset into @seen and stores @marker there, through a
 * kernel mapping of the scatterlist's page that holds it, or with
 * AGILE_PIN_TEST_DMABUF_VMAP through dma_buf_vmap(); then unmaps,
 * detaches and drops the dma-buf.
 *
 * Returns 0, or -1 with errno: EINVAL for bad flags, reserved or offset,
 * or an fd that is not a dma-buf; EBADF for an fd that is not open; what
 * the import steps returned otherwise.
 */
struct agile_pin_test_dmabuf {
	__s32 fd;
	__u32 flags;
	__u64 offset;
	__u32 marker;
	__u32 seen;
	__u32 after;
	__u32 bounced;
	__u64 reserved[1];
};

#define AGILE_PIN_TEST_IOC_DMABUF \
	_IOWR(0xA9, 0x41, struct agile_pin_test_dmabuf)

#endif /* AGILE_PIN_TEST_H */
