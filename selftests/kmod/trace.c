// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tracepoints (TRACE_SYSTEM agile): agile_signal, agile_wait_start and
 * agile_wait_end exist and fire, and their formats decode every enum.
 * Needs root and tracefs; skipped otherwise.  The events' enable files
 * are restored and the trace buffer cleared before the test ends.
 */
#include "agile_test.h"

static const char *const tracefs_dirs[] = {
	"/sys/kernel/tracing",
	"/sys/kernel/debug/tracing",
};

static const char *const events[] = {
	"agile_signal",
	"agile_wait_start",
	"agile_wait_end",
};

FIXTURE(trace)
{
	const char *tracefs;
	char saved[ARRAY_SIZE(events)];
	bool saved_valid;
};

static void event_path(char *buf, size_t len, const char *tracefs,
		       const char *event, const char *file)
{
	snprintf(buf, len, "%s/events/agile/%s/%s", tracefs, event, file);
}

static int write_file(const char *path, const char *str, int flags)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | flags);
	ssize_t len;

	if (fd < 0)
		return -errno;
	len = write(fd, str, strlen(str));
	close(fd);
	return len < 0 ? -errno : 0;
}

static char read_char(const char *path)
{
	char c = '?';
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return '?';
	if (read(fd, &c, 1) != 1)
		c = '?';
	close(fd);
	return c;
}

FIXTURE_SETUP(trace)
{
	char path[256];
	unsigned int i;
	int fd;

	AGILE_OPEN(fd);
	close(fd);
	if (geteuid())
		SKIP(_exit(AGILE_SKIP_EXIT), "needs root");
	for (i = 0; i < ARRAY_SIZE(tracefs_dirs); i++) {
		snprintf(path, sizeof(path), "%s/trace", tracefs_dirs[i]);
		if (!access(path, W_OK)) {
			self->tracefs = tracefs_dirs[i];
			break;
		}
	}
	if (!self->tracefs)
		SKIP(_exit(AGILE_SKIP_EXIT), "tracefs not mounted");
	for (i = 0; i < ARRAY_SIZE(events); i++) {
		event_path(path, sizeof(path), self->tracefs, events[i],
			   "enable");
		self->saved[i] = read_char(path);
	}
	self->saved_valid = true;
}

FIXTURE_TEARDOWN(trace)
{
	char path[256], value[2] = { 0 };
	unsigned int i;

	if (!self->saved_valid)
		return;
	for (i = 0; i < ARRAY_SIZE(events); i++) {
		if (self->saved[i] != '0' && self->saved[i] != '1')
			continue;
		value[0] = self->saved[i];
		event_path(path, sizeof(path), self->tracefs, events[i],
			   "enable");
		EXPECT_EQ(0, write_file(path, value, 0));
	}
	snprintf(path, sizeof(path), "%s/trace", self->tracefs);
	write_file(path, "", O_TRUNC);
}

TEST_F(trace, events_exist)
{
	char path[256];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(events); i++) {
		event_path(path, sizeof(path), self->tracefs, events[i],
			   "format");
		ASSERT_EQ(0, access(path, R_OK)) TH_LOG("%s", path);
		ASSERT_NE('?', self->saved[i]) TH_LOG("%s enable", events[i]);
	}
}

/*
 * The enum values in agile_wait_end's print format are numbers: every
 * AGILE_WOKEN_* has a TRACE_DEFINE_ENUM(), without which the format keeps
 * the bare name and perf and trace-cmd cannot decode the field.
 */
TEST_F(trace, wait_end_enums_decoded)
{
	char path[256], buf[4096];
	ssize_t len;
	int fd;

	event_path(path, sizeof(path), self->tracefs, "agile_wait_end",
		   "format");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("%s: %s", path, strerror(errno));
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ASSERT_LT(0, len);
	buf[len] = '\0';
	ASSERT_NE(NULL, strstr(buf, "\"ended\""));
	ASSERT_EQ(NULL, strstr(buf, "AGILE_WOKEN_")) TH_LOG("%s", buf);
}

/* Count lines of the trace buffer that name @event. */
static int count_event(const char *tracefs, const char *event)
{
	char path[256], line[1024], needle[64];
	int count = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/trace", tracefs);
	snprintf(needle, sizeof(needle), " %s:", event);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			count++;
	fclose(f);
	return count;
}

TEST_F(trace, events_fire)
{
	char path[256];
	unsigned int i;
	int fd;

	snprintf(path, sizeof(path), "%s/trace", self->tracefs);
	ASSERT_EQ(0, write_file(path, "", O_TRUNC));
	for (i = 0; i < ARRAY_SIZE(events); i++) {
		event_path(path, sizeof(path), self->tracefs, events[i],
			   "enable");
		ASSERT_EQ(0, write_file(path, "1", 0));
	}

	AGILE_OPEN(fd);
	ASSERT_EQ(0, agile_ctx_init(fd, 4, 64, NULL));
	ASSERT_EQ(0, agile_signal(fd, 2, 5));
	ASSERT_EQ(0, agile_signal(fd, 3, 6));
	ASSERT_EQ(0, agile_wait(fd, 2, AGILE_CMP_EQ, 5, 0, NULL));
	ASSERT_EQ(-ETIMEDOUT,
		  agile_wait(fd, 1, AGILE_CMP_EQ, 1, 10 * NSEC_PER_MSEC, NULL));
	close(fd);

	for (i = 0; i < ARRAY_SIZE(events); i++) {
		event_path(path, sizeof(path), self->tracefs, events[i],
			   "enable");
		ASSERT_EQ(0, write_file(path, "0", 0));
	}
	/* At least ours: other tasks may trace too. */
	ASSERT_LE(2, count_event(self->tracefs, "agile_signal"));
	ASSERT_LE(2, count_event(self->tracefs, "agile_wait_start"));
	ASSERT_LE(2, count_event(self->tracefs, "agile_wait_end"));
}

TEST_HARNESS_MAIN
