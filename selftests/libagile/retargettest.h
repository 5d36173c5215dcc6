/* SPDX-License-Identifier: MIT */
/*
 * retargettest.h - running tools/agile-retarget from a test: the paths
 * come from the Makefile (RETARGET_TOOL, RETARGET_SRC); where the tool or
 * the kernels' sources are not there (a test guest), the test skips.
 */
#ifndef AGILE_RETARGETTEST_H
#define AGILE_RETARGETTEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef RETARGET_TOOL
#define RETARGET_TOOL "agile-retarget"
#endif
#ifndef RETARGET_SRC
#define RETARGET_SRC "retarget"
#endif

static inline int retarget_available(void)
{
	return access(RETARGET_TOOL, X_OK) == 0 &&
	       access(RETARGET_SRC "/matlist.cu", R_OK) == 0;
}

/*
 * Run the tool with @args in RETARGET_SRC; its stdout and stderr into
 * @out (@len bytes, NUL-terminated).  Returns its exit status, or -1.
 */
static inline int retarget_run(const char *args, char *out, size_t len)
{
	char cmd[4096];
	size_t n = 0;
	FILE *p;
	int status;

	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' %s 2>&1", RETARGET_SRC,
		 RETARGET_TOOL, args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n + 1 < len) {
		size_t got = fread(out + n, 1, len - 1 - n, p);

		if (!got)
			break;
		n += got;
	}
	out[n] = '\0';
	while (fgetc(p) != EOF)
		;
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#endif /* AGILE_RETARGETTEST_H */
