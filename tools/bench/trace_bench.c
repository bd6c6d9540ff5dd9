// SPDX-License-Identifier: GPL-2.0
/*
 * What a tracepoint that is off costs: a NOP's round trip, published to its
 * read index moving, with the scheduler busy and from idle (where the
 * process rings the doorbell), and a NOP taken in a pass (1024 published at
 * once: the scheduler's own work per packet, which a tracepoint adds to),
 * on radiance.ko with its tracepoints compiled in but off, against the same
 * module built without them (RADIANCE_NO_TRACE=y); and with the events on,
 * for scale. Each module is loaded in turn, in interleaved rounds whose
 * order rotates; each figure is the median of its samples in a round, and
 * each ratio the median of the rounds' own.
 *
 *	trace_bench TRACED.ko UNTRACED.ko
 *
 * It leaves the module unloaded.
 */
#define _GNU_SOURCE
#include <sys/mount.h>

#include "bench_queue.h"
#include "radiance_module.h"

enum { ROUNDS = 11, WARMUP = 200, TRIPS = 1001, IDLE_TRIPS = 101, BURSTS = 15, BURST = 1024 };
/* The module built without tracepoints, the one with them and off, and
 * the one with them and on. */
enum { OUT, OFF, ON, VARIANTS };
static const char *const names[VARIANTS] = { "compiled out", "compiled in, off", "on" };

static void events(const char *on)
{
	FILE *f = fopen("/sys/kernel/tracing/events/radiance/enable", "w");

	if (!f || fputs(on, f) < 0 || fclose(f))
		die("tracefs events/radiance/enable");
}

/* The figures of one module in one round. */
struct figures {
	double busy, from_idle, in_pass;
};

/* Loads `ko`, measures on device 0, unloads it. */
static struct figures measure(const char *ko, int on)
{
	struct radiance_packet nop_packet = { .header = { .kind = RADIANCE_PACKET_NOP } };
	static double busy[TRIPS], from_idle[IDLE_TRIPS], in_pass[BURSTS];
	struct figures f;
	struct queue q;

	setenv("RADIANCE_KO", ko, 1);
	unload();
	if (load_module(64, 1000, ""))
		die(ko);
	if (on)
		events("1");
	fd = radiance_open(0);
	if (fd < 0)
		die("/dev/radiance0");
	queue_open(&q, BURST);
	for (int i = 0; i < WARMUP; i++)
		round_trip(&q, &nop_packet);
	for (int i = 0; i < TRIPS; i++)
		busy[i] = round_trip(&q, &nop_packet);
	for (int i = 0; i < IDLE_TRIPS; i++) {
		idle(&q);
		from_idle[i] = round_trip(&q, &nop_packet);
	}
	for (int i = 0; i < BURSTS; i++)
		in_pass[i] = burst(&q, &nop_packet, BURST);
	f.busy = median(busy, TRIPS);
	f.from_idle = median(from_idle, IDLE_TRIPS);
	f.in_pass = median(in_pass, BURSTS);
	munmap(q.ring, q.packets * RADIANCE_PACKET_SIZE);
	munmap(q.ctl, getpagesize());
	close(fd);
	if (on)
		events("0");
	/* The file's last reference may go in a moment (deferred work). */
	for (int i = 0; unload(); i++) {
		if (i == 500)
			die("unloading radiance");
		usleep(10000);
	}
	return f;
}

int main(int argc, char **argv)
{
	static const char *const kinds[3] = { "busy", "from idle", "in a pass" };
	struct figures f[VARIANTS][ROUNDS];
	double v[3][VARIANTS][ROUNDS], ratio[3][VARIANTS][ROUNDS];

	if (argc != 3) {
		fprintf(stderr, "usage: %s TRACED.ko UNTRACED.ko\n", argv[0]);
		return 2;
	}
	if (access("/sys/kernel/tracing/events", F_OK))
		mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL);
	for (int r = 0; r < ROUNDS; r++) {
		for (int k = 0; k < VARIANTS; k++) {
			int m = (r + k) % VARIANTS;

			f[m][r] = measure(m == OUT ? argv[2] : argv[1], m == ON);
		}
		for (int m = 0; m < VARIANTS; m++) {
			double got[3] = { f[m][r].busy, f[m][r].from_idle, f[m][r].in_pass };
			double out[3] = { f[OUT][r].busy, f[OUT][r].from_idle, f[OUT][r].in_pass };

			for (int i = 0; i < 3; i++) {
				v[i][m][r] = got[i];
				ratio[i][m][r] = got[i] / out[i];
			}
		}
	}
	printf("tracepoints, medians of %d interleaved rounds (ns of a NOP: round trip busy, from idle; in a pass):\n",
	       ROUNDS);
	for (int m = 0; m < VARIANTS; m++)
		printf("  %-17s %7.0f %7.0f %7.0f\n", names[m], median(v[0][m], ROUNDS), median(v[1][m], ROUNDS),
		       median(v[2][m], ROUNDS));
	for (int i = 0; i < 3; i++)
		printf("  (compiled in, off / compiled out, %s = %.3f)\n", kinds[i], median(ratio[i][OFF], ROUNDS));
	for (int i = 0; i < 3; i++)
		printf("  (on / compiled out, %s = %.3f)\n", kinds[i], median(ratio[i][ON], ROUNDS));
	return 0;
}
