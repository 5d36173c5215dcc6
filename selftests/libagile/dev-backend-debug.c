// SPDX-License-Identifier: MIT
/*
 * dev-backend-debug - AGILE_DEBUG=1 makes the dev layer say on stderr which
 * backend it chose and why, once per process: AGILE_BACKEND, a device node
 * that is missing, or one with no agile module behind it (then user), or
 * the caller's agile_dev_opts.backend; without it, nothing.  Each case runs in a child of its own (the line is once a
 * process).
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

static char log_path[] = "/tmp/dev-backend-debug-XXXXXX";

/*
 * In a child with stderr into the log and $AGILE_DEBUG=@debug (NULL:
 * unset), $AGILE_BACKEND=@env (NULL: unset): two contexts opened with
 * @backend and @path.  The number of log lines that start "agile: backend"
 * and hold @want; -1 when a context failed to open.
 */
static int lines_of(const char *debug, const char *env, uint32_t backend,
		    const char *path, const char *want)
{
	char line[512];
	int status = 0, lines = 0;
	pid_t pid;
	FILE *f;
	int fd = open(log_path, O_WRONLY | O_TRUNC);

	if (fd < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		struct agile_dev_opts o;
		struct agile_dev *dev;

		dup2(fd, 2);
		if (debug)
			setenv("AGILE_DEBUG", debug, 1);
		else
			unsetenv("AGILE_DEBUG");
		if (env)
			setenv("AGILE_BACKEND", env, 1);
		else
			unsetenv("AGILE_BACKEND");
		agile_dev_opts_init(&o);
		o.backend = backend;
		o.path = path;
		for (int i = 0; i < 2; i++) {
			if (agile_dev_open(&o, &dev))
				_exit(1);
			agile_dev_close(dev);
		}
		_exit(0);
	}
	close(fd);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	f = fopen(log_path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "agile: backend", 14))
			continue;
		if (strstr(line, want))
			lines++;
		else
			tap_diag("unexpected: %s", line);
	}
	if (f)
		fclose(f);
	return lines;
}

int main(void)
{
	int fd = mkstemp(log_path), n;

	if (fd < 0) {
		tap_ok(0, "a log file");
		return tap_done();
	}
	close(fd);

	n = lines_of("1", "user", AGILE_BACKEND_AUTO, NULL,
		     "agile: backend user (AGILE_BACKEND; /dev/agile)\n");
	tap_ok(n == 1, "AGILE_BACKEND=user: said once for two contexts (%d)",
	       n);
	n = lines_of("1", NULL, AGILE_BACKEND_AUTO, "/nonexistent/agile",
		     "agile: backend user (no device node; "
		     "/nonexistent/agile)\n");
	tap_ok(n == 1, "no device node: user, and why (%d)", n);
	n = lines_of("1", "kmod", AGILE_BACKEND_USER, "/nonexistent/agile",
		     "agile: backend user (agile_dev_opts.backend; ");
	tap_ok(n == 1, "the caller's choice wins over AGILE_BACKEND (%d)", n);
	/*
	 * A node no agile module answers (the log file: it opens, its INFO
	 * ioctl says ENOTTY), as one made at boot from modules.devname
	 * whose module did not load: the automatic choice falls back to
	 * user, and says so; kmod asked for fails.
	 */
	n = lines_of("1", NULL, AGILE_BACKEND_AUTO, log_path,
		     "agile: backend user (the device node exists, but no "
		     "agile module answers it; /tmp/dev-backend-debug-");
	tap_ok(n == 1, "a node with no module behind it: user, and why (%d)",
	       n);
	n = lines_of("1", NULL, AGILE_BACKEND_KMOD, log_path, "");
	tap_ok(n == -1,
	       "kmod asked for on that node: agile_dev_open fails (%d)", n);
	n = lines_of(NULL, "user", AGILE_BACKEND_AUTO, NULL, "");
	tap_ok(n == 0, "without AGILE_DEBUG: nothing said (%d)", n);
	n = lines_of("0", "user", AGILE_BACKEND_AUTO, NULL, "");
	tap_ok(n == 0, "AGILE_DEBUG=0: nothing said (%d)", n);
	unlink(log_path);
	return tap_done();
}
