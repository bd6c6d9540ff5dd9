// SPDX-License-Identifier: GPL-2.0
/*
 * The module's tracepoints, read back from the kernel's trace buffer: with
 * tracefs's events/radiance/ on, a queue runs a fill, a copy, a launch and a
 * semaphore signal, a second queue waits on that semaphore, and a third
 * launches at an empty PC and faults. Every packet must appear as taken and
 * completed, in ring order, with its kind; each device command issued must
 * be answered under the same id; the fault must carry its PC and EIO; the
 * wait must name the signalled semaphore's id and come after the signal.
 * Skips where the kernel has no tracefs.
 */
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "radiance_test.h"
#include "radiance_queue.h"

#define TRACEFS "/sys/kernel/tracing"
/* The trace buffer, read whole. */
#define TRACE_MAX (4 << 20)
#define EMPTY_PC 0x10000000u

/* Writes `value` into tracefs file `name`; 0 or -errno. */
static int tracefs_write(const char *name, const char *value)
{
	char path[256];
	int fd, ret = 0;

	snprintf(path, sizeof(path), TRACEFS "/%s", name);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, value, strlen(value)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Mounts tracefs if it is not: 0, or -errno if the kernel has none. */
static int tracefs_mount(void)
{
	struct stat st;

	if (stat(TRACEFS "/trace", &st) == 0)
		return 0;
	if (mount("nodev", TRACEFS, "tracefs", 0, NULL))
		return -errno;
	return 0;
}

/* The trace buffer's text, NUL-terminated, into a new buffer. */
static char *trace_read(void)
{
	char *buf = malloc(TRACE_MAX + 1);
	size_t len = 0;
	ssize_t n;
	int fd = open(TRACEFS "/trace", O_RDONLY | O_CLOEXEC);

	if (!buf || fd < 0) {
		free(buf);
		return NULL;
	}
	while (len < TRACE_MAX && (n = read(fd, buf + len, TRACE_MAX - len)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	return buf;
}

/* The number after "key=" in `line`, up to its end of line; -1 if none. */
static int64_t field(const char *line, const char *key)
{
	char k[32];
	const char *at, *eol = strchr(line, '\n');

	snprintf(k, sizeof(k), " %s=", key);
	at = strstr(line, k);
	if (!at || (eol && at > eol))
		return -1;
	return strtoll(at + strlen(k), NULL, 0);
}

/* Whether `line` holds the text `text` before its end of line. */
static int has(const char *line, const char *text)
{
	const char *at = strstr(line, text), *eol = strchr(line, '\n');

	return at && (!eol || at < eol);
}

/* The first line from `from` of `event` for queue `queue` of this process
 * at ring index `index` (any, if -1); NULL if none. */
static const char *find(const char *from, const char *event, uint32_t queue, int64_t index)
{
	char tag[48];
	const char *line;

	snprintf(tag, sizeof(tag), " %s: ", event);
	for (line = from; (line = strstr(line, tag)); line++) {
		if (field(line, "pid") == getpid() && field(line, "queue") == queue &&
		    (index < 0 || field(line, "index") == index))
			return line;
	}
	return NULL;
}

FIXTURE(trace)
{
	int fd;
	char *text;
};

FIXTURE_SETUP(trace)
{
	int ret = tracefs_mount();

	self->text = NULL;
	if (ret)
		SKIP(return, "no tracefs on this kernel (%s)", strerror(-ret));
	ASSERT_EQ(0, access(TRACEFS "/events/radiance/enable", W_OK))
		TH_LOG("radiance.ko's events are not in tracefs");
	ASSERT_EQ(0, tracefs_write("tracing_on", "0"));
	ASSERT_EQ(0, tracefs_write("buffer_size_kb", "4096"));
	ASSERT_EQ(0, tracefs_write("trace", ""));
	ASSERT_EQ(0, tracefs_write("events/radiance/enable", "1"));
	ASSERT_EQ(0, tracefs_write("tracing_on", "1"));
	self->fd = radiance_open(0);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(trace)
{
	tracefs_write("tracing_on", "0");
	tracefs_write("events/radiance/enable", "0");
	free(self->text);
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(trace, every_packet_command_fault_and_semaphore_is_recorded)
{
	enum { WORDS = 1024 };
	const uint32_t kinds[] = { RADIANCE_PACKET_FILL, RADIANCE_PACKET_COPY, RADIANCE_PACKET_LAUNCH,
				   RADIANCE_PACKET_SIGNAL_SEMAPHORE };
	const char *const names[] = { "kind=fill", "kind=copy", "kind=launch", "kind=signal" };
	struct radiance_bo_create vc, kc;
	int vram = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 2 * WORDS * 4, 0, &vc);
	int blk_bo = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &kc);
	int sem = radiance_sem_create(self->fd, 0);
	struct radiance_fill_packet fill = {
		.header = { .kind = RADIANCE_PACKET_FILL }, .pattern_size = 4, .size = WORDS * 4,
		.pattern = 0x5eed,
	};
	struct radiance_copy_packet copy = {
		.header = { .kind = RADIANCE_PACKET_COPY }, .dst_offset = WORDS * 4, .size = WORDS * 4,
	};
	const char *line, *signal, *wait, *issue, *done;
	uint32_t params[3];
	struct queue a, b, f;
	uint8_t *blk;
	int64_t id;

	RADIANCE_SKIP_ON_SOC();
	ASSERT_LT(0, vram);
	ASSERT_LT(0, blk_bo);
	ASSERT_LT(0, sem);
	blk = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, kc.mmap_offset);
	ASSERT_NE(MAP_FAILED, blk);
	ASSERT_EQ(0, queue_open(self->fd, 16, &a));
	ASSERT_EQ(0, queue_open(self->fd, 16, &b));
	ASSERT_EQ(0, queue_open(self->fd, 16, &f));

	/* b waits for a's signal, which comes after a's work. */
	queue_sem(&b, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, sem, 1, 0);
	queue_nop(&b, 0);
	queue_publish(&b);
	fill.dst = vram;
	queue_put(&a, &fill);
	copy.src = vram;
	copy.dst = vram;
	queue_put(&a, &copy);
	params[0] = vc.device_address;
	params[1] = 7;
	params[2] = WORDS;
	queue_launch(&a, blk_bo, blk, RADIANCE_BUILTIN_FILL_U32, params, 3, WORDS / 256, 256);
	queue_sem(&a, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, sem, 1, 0);
	queue_publish(&a);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&a));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&b));
	/* A launch at a PC with no code: an execution fault there. a is done
	 * with the launch block. */
	queue_launch(&f, blk_bo, blk, EMPTY_PC, NULL, 0, 1, 1);
	queue_publish(&f);
	ASSERT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&f));
	ASSERT_EQ(0, tracefs_write("tracing_on", "0"));
	self->text = trace_read();
	ASSERT_NE(NULL, self->text);

	/* a's packets: each taken, in order, with its kind, and completed. */
	line = self->text;
	for (int i = 0; i < 4; i++) {
		line = find(line, "radiance_packet", a.id, i);
		ASSERT_NE(NULL, line) TH_LOG("packet %d of queue %u not taken in order", i, a.id);
		EXPECT_TRUE(has(line, names[i])) TH_LOG("packet %d: want kind %u", i, kinds[i]);
		EXPECT_EQ(0, field(line, "dev"));
		done = find(line, "radiance_packet_done", a.id, i);
		ASSERT_NE(NULL, done) TH_LOG("packet %d of queue %u never completed", i, a.id);
		EXPECT_EQ(0, field(done, "error"));
	}
	/* The fill's command: 4096 bytes, answered under its id with status 0.
	 * A device without SET (gluon-sim) fills by a copy from a pattern. */
	issue = find(self->text, "radiance_cmd_issue", a.id, 0);
	ASSERT_NE(NULL, issue);
	EXPECT_TRUE(has(issue, radiance_gluon_sim_mode() ? "op=copy" : "op=fill"));
	EXPECT_EQ(WORDS * 4, field(issue, "units"));
	id = field(issue, "id");
	for (done = issue; (done = find(done + 1, "radiance_cmd_done", a.id, 0));)
		if (field(done, "id") == id)
			break;
	ASSERT_NE(NULL, done) TH_LOG("command %lld never answered", (long long)id);
	EXPECT_EQ(field(issue, "stream"), field(done, "stream"));
	EXPECT_EQ(0, field(done, "status"));
	/* The launch's command counts its threads. */
	issue = find(self->text, "radiance_cmd_issue", a.id, 2);
	ASSERT_NE(NULL, issue);
	EXPECT_TRUE(has(issue, "op=launch"));
	EXPECT_EQ(WORDS, field(issue, "units"));

	/* The signal raised the semaphore to 1; b's wait found that same
	 * semaphore, by its id, and came after it. */
	signal = find(self->text, "radiance_sem_signal", a.id, 3);
	ASSERT_NE(NULL, signal);
	EXPECT_EQ(sem, field(signal, "handle"));
	EXPECT_EQ(1, field(signal, "value"));
	EXPECT_EQ(0, field(signal, "error"));
	EXPECT_LT(0, field(signal, "sem"));
	wait = find(self->text, "radiance_wait_done", b.id, 0);
	ASSERT_NE(NULL, wait);
	EXPECT_EQ(field(signal, "sem"), field(wait, "sem"));
	EXPECT_EQ(1, field(wait, "value"));
	EXPECT_LT(signal, wait) TH_LOG("the wait was satisfied before the signal");
	line = find(self->text, "radiance_packet", b.id, 0);
	ASSERT_NE(NULL, line);
	EXPECT_TRUE(has(line, "kind=wait"));

	/* The faulting launch: its command's answer carries the PC, its packet
	 * completes with EIO. */
	issue = find(self->text, "radiance_cmd_issue", f.id, 0);
	ASSERT_NE(NULL, issue);
	done = find(issue, "radiance_cmd_done", f.id, 0);
	ASSERT_NE(NULL, done);
	EXPECT_EQ(field(issue, "id"), field(done, "id"));
	EXPECT_NE(0, field(done, "status"));
	EXPECT_EQ(EMPTY_PC, field(done, "pc"));
	done = find(self->text, "radiance_packet_done", f.id, 0);
	ASSERT_NE(NULL, done);
	EXPECT_EQ(EIO, field(done, "error"));

	queue_close(&a);
	queue_close(&b);
	queue_close(&f);
	munmap(blk, 4096);
}

TEST_F(trace, events_off_record_nothing)
{
	struct queue q;

	ASSERT_EQ(0, tracefs_write("events/radiance/enable", "0"));
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	queue_nop(&q, 0);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	self->text = trace_read();
	ASSERT_NE(NULL, self->text);
	EXPECT_EQ(NULL, strstr(self->text, " radiance_")) TH_LOG("an event recorded while off");
	queue_close(&q);
}

TEST_HARNESS_MAIN
