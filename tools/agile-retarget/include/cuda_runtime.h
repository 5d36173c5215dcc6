/* SPDX-License-Identifier: MIT */
/* agile-retarget: CUDA's runtime header is the prelude (-include) */
