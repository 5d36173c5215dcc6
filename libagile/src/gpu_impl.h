/* SPDX-License-Identifier: MIT */
/*
 * gpu_impl.h - what the EU pool asks gpu.c (not exported).
 */
#ifndef AGILE_GPU_IMPL_H
#define AGILE_GPU_IMPL_H

#include <stddef.h>

/*
 * agile__gpu_status - 1 if a usable GPU is found, else 0; either way a
 * one-line account of what the probe saw into @reason (@len bytes, always
 * terminated).  Thread safe.
 */
int agile__gpu_status(char *reason, size_t len);

#endif /* AGILE_GPU_IMPL_H */
