/* SPDX-License-Identifier: MIT */
/* agile-retarget: HIP's runtime header is the prelude (-include) */
