/* SPDX-License-Identifier: MIT */
/*
 * kernels_impl.h - what the layers above ask of the kernels layer beyond
 * agile/kernels.h (not exported).
 */
#ifndef AGILE_KERNELS_IMPL_H
#define AGILE_KERNELS_IMPL_H

#include <stdint.h>

#include "kernels/kernels_body.h"

/*
 * agile__kernels_builtin_opcodes - the opcode each built-in kernel
 * (AGILE_COMMON_*) has in @reg, 0 where it is not registered (or a
 * kernel of the same name is not the library's).  Thread safe: reads the
 * registry as execution units do.
 */
struct agile_kernels;
void agile__kernels_builtin_opcodes(const struct agile_kernels *reg,
				    uint32_t opcodes[AGILE_COMMON_NR]);

#endif /* AGILE_KERNELS_IMPL_H */
