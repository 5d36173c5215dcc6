/* SPDX-License-Identifier: MIT */
/* Empty: cuda_prelude.h declares the cooperative groups agile-retarget maps. */
