// SPDX-License-Identifier: MIT
/*
 * dev-backend-choose - agile_dev_backend_choose names the backend
 * agile_dev_open would take, and why: the caller's agile_dev_opts.backend,
 * else $AGILE_BACKEND, else kmod where the node exists and user where it
 * does not; -EINVAL for bad options or a bad $AGILE_BACKEND.  Where the
 * user backend is chosen, agile_dev_open takes it too.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

/* The choice for @backend, @path and $AGILE_BACKEND=@env (NULL: unset). */
static int choose(const char *env, uint32_t backend, const char *path,
		  const char **why)
{
	struct agile_dev_opts o;

	if (env)
		setenv("AGILE_BACKEND", env, 1);
	else
		unsetenv("AGILE_BACKEND");
	agile_dev_opts_init(&o);
	o.backend = backend;
	o.path = path;
	*why = "(unset)";
	return agile_dev_backend_choose(&o, why);
}

static int said(const char *why, const char *want)
{
	if (why && !strcmp(why, want))
		return 1;
	tap_diag("why: \"%s\", want \"%s\"", why ? why : "(null)", want);
	return 0;
}

int main(void)
{
	struct agile_dev_opts o;
	struct agile_dev *dev;
	const char *why;
	int b;

	b = choose("user", AGILE_BACKEND_AUTO, NULL, &why);
	tap_ok(b == AGILE_BACKEND_USER && said(why, "AGILE_BACKEND"),
	       "AGILE_BACKEND=user: user, because of AGILE_BACKEND (%d)", b);
	b = choose("kmod", AGILE_BACKEND_AUTO, "/nonexistent/agile", &why);
	tap_ok(b == AGILE_BACKEND_KMOD && said(why, "AGILE_BACKEND"),
	       "AGILE_BACKEND=kmod: kmod even without the node (%d)", b);
	b = choose(NULL, AGILE_BACKEND_AUTO, "/nonexistent/agile", &why);
	tap_ok(b == AGILE_BACKEND_USER && said(why, "no device node"),
	       "no node, no AGILE_BACKEND: user, because of the node (%d)", b);
	b = choose(NULL, AGILE_BACKEND_AUTO, "/dev/null", &why);
	tap_ok(b == AGILE_BACKEND_KMOD && said(why, "the device node exists"),
	       "a node at opts.path: kmod (%d)", b);
	b = choose("kmod", AGILE_BACKEND_USER, NULL, &why);
	tap_ok(b == AGILE_BACKEND_USER && said(why, "agile_dev_opts.backend"),
	       "the caller's choice wins over AGILE_BACKEND (%d)", b);
	b = choose("bogus", AGILE_BACKEND_AUTO, NULL, &why);
	tap_ok(b == -EINVAL, "AGILE_BACKEND=bogus: -EINVAL (%d)", b);

	unsetenv("AGILE_BACKEND");
	agile_dev_opts_init(&o);
	o.path = "/nonexistent/agile";
	o.flags = 1;
	b = agile_dev_backend_choose(&o, &why);
	tap_ok(b == -EINVAL, "flags set: -EINVAL, as agile_dev_open (%d)", b);
	o.flags = 0;
	b = agile_dev_backend_choose(&o, NULL);
	tap_ok(b == AGILE_BACKEND_USER, "why may be NULL (%d)", b);

	setenv("AGILE_BACKEND", "user", 1);
	b = agile_dev_backend_choose(NULL, &why);
	tap_ok(b == AGILE_BACKEND_USER && said(why, "AGILE_BACKEND"),
	       "NULL opts: the defaults, and the environment (%d)", b);
	if (agile_dev_open(NULL, &dev) == 0) {
		tap_ok(agile_dev_backend(dev) == b,
		       "agile_dev_open took the backend chosen (%d)",
		       agile_dev_backend(dev));
		agile_dev_close(dev);
	} else {
		tap_ok(0, "agile_dev_open on the user backend");
	}
	unsetenv("AGILE_BACKEND");
	b = agile_dev_backend_choose(&o, &why);
	if (agile_dev_open(&o, &dev) == 0) {
		tap_ok(agile_dev_backend(dev) == b,
		       "no node: agile_dev_open took the backend chosen (%d)",
		       agile_dev_backend(dev));
		agile_dev_close(dev);
	} else {
		tap_ok(0, "agile_dev_open without the node");
	}
	return tap_done();
}
