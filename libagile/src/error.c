// SPDX-License-Identifier: MIT
/*
 * error.c - agile_strerror: errnos through the C library, the library's own
 * codes (agile/error.h) from a table.
 */
#define _GNU_SOURCE
#include <agile/error.h>

#include <string.h>

static const char *const agile_messages[] = {
	[AGILE_E_ABI - AGILE_ERRNO_BASE] =
		"/dev/agile speaks another ABI version than libagile",
	[AGILE_E_OPCODE - AGILE_ERRNO_BASE] =
		"No kernel registered for the task's opcode",
	[AGILE_E_STATUS - AGILE_ERRNO_BASE] =
		"Task incomplete: a lane reported neither success nor an error",
	[AGILE_E_SYNC - AGILE_ERRNO_BASE] =
		"Spawn and sync do not match: a sync of another task, a sync "
		"with no spawn left, or a task returned with spawns unsynced",
	[AGILE_E_GPU - AGILE_ERRNO_BASE] =
		"The GPU execution units' kernel died or ended (the pool's "
		"info has the device's error)",
	[AGILE_E_INVALID_CONTEXT - AGILE_ERRNO_BASE] =
		"Invalid runtime context: released, never created, or garbage",
	[AGILE_E_DEPENDENCY - AGILE_ERRNO_BASE] =
		"Not run: an event the entry depended on failed",
};

const char *agile_strerror(int err)
{
	const char *msg;

	if (err < 0)
		err = -err;
	if (err < 0) /* INT_MIN */
		return "Unknown error";
	if (err >= AGILE_ERRNO_BASE && err <= AGILE_E_LAST)
		return agile_messages[err - AGILE_ERRNO_BASE];
	if (!err)
		return "Success";
	/* strerrordesc_np: a constant string, unlike strerror's buffer. */
	msg = strerrordesc_np(err);
	return msg ? msg : "Unknown error";
}
