// SPDX-License-Identifier: GPL-2.0
/*
 * Module lifetime: an open file pins radiance.ko, rmmod removes every node,
 * and the module loads again. Needs the module loaded as radiance_test.h
 * says, and its file at $RADIANCE_KO (default /radiance.ko) to reload it.
 * Runs last: it leaves the module loaded as it found it.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "radiance_test.h"
#include "radiance_queue.h"
#include "radiance_module.h"

/* Field `key` (key=value) of queue `id`'s line in device 0's debugfs
 * `queues`, or -1. */
static int64_t queue_field(uint32_t id, const char *key)
{
	char match[32];

	snprintf(match, sizeof(match), " queue=%u ", id);
	return radiance_line_field("/sys/kernel/debug/radiance/radiance0/queues", match, key);
}

TEST(open_file_pins_module_then_unload_and_reload)
{
	struct radiance_get_info info = { 0 };
	int fd = radiance_open(0);

	ASSERT_LE(0, fd);
	/* The open file holds a module reference. */
	EXPECT_EQ(-EWOULDBLOCK, unload());
	ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_GET_INFO, &info));
	ASSERT_EQ(0, close(fd));

	ASSERT_EQ(0, unload());
	for (int i = 0; i < RADIANCE_TEST_DEVICES; i++) {
		EXPECT_EQ(-1, radiance_open(i));
		EXPECT_EQ(ENOENT, errno);
	}
	EXPECT_EQ(-ENOENT, unload());

	ASSERT_EQ(0, load());
	fd = radiance_open(RADIANCE_TEST_DEVICES - 1);
	ASSERT_LE(0, fd);
	memset(&info, 0, sizeof(info));
	ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_GET_INFO, &info));
	EXPECT_EQ(RADIANCE_TEST_DEVICES - 1, info.device_index);
	close(fd);
}

TEST(bad_parameters_refuse_to_load)
{
	const char *path = getenv("RADIANCE_KO") ?: "/radiance.ko";
	const char *bad[] = { "emulated_devices=9", "emulated_vram_mib=0",
			      "emulated_vram_mib=4097", "launch_timeout_ms=0",
			      "emulated_dialect=0", "emulated_dialect=3" };
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, unload());
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-1, syscall(SYS_finit_module, fd, bad[i], 0)) TH_LOG("%s", bad[i]);
		EXPECT_EQ(EINVAL, errno);
		EXPECT_EQ(-1, radiance_open(0));
	}
	close(fd);
	ASSERT_EQ(0, load());
}

TEST(exclusive_mode_allows_one_open_file)
{
	int a, b;

	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load_with("exclusive=1"));
	a = radiance_open(0);
	ASSERT_LE(0, a);
	EXPECT_EQ(-1, radiance_open(0));
	EXPECT_EQ(EBUSY, errno);
	/* Per device: the other device is still free. */
	b = radiance_open(1);
	EXPECT_LE(0, b);
	close(b);
	close(a);
	/* Closing hands the device over. */
	b = radiance_open(0);
	EXPECT_LE(0, b);
	close(b);
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load());
	/* Back to shared mode. */
	a = radiance_open(0);
	b = radiance_open(0);
	EXPECT_LE(0, a);
	EXPECT_LE(0, b);
	close(a);
	close(b);
}

TEST(unload_with_a_launch_still_running)
{
	struct radiance_bo_create kc;
	struct queue q;
	uint8_t *blk;
	int fd = radiance_open(0);
	int hk = radiance_bo_create(fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &kc);

	ASSERT_LT(0, hk);
	blk = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, kc.mmap_offset);
	ASSERT_NE(MAP_FAILED, blk);
	ASSERT_EQ(0, queue_open(fd, 16, &q));
	queue_launch(&q, hk, blk, RADIANCE_BUILTIN_SPIN, NULL, 0, 1, 1);
	queue_publish(&q);
	usleep(20000);
	munmap(blk, 4096);
	queue_close(&q);
	close(fd);
	/* Whatever of the closed file the device still had: unloading stops
	 * it and frees all of it, the watchdog included, so that the module
	 * loads again and nothing runs after it is gone (the console is
	 * checked for splats). */
	ASSERT_EQ(0, unload());
	usleep(2 * RADIANCE_TEST_TIMEOUT_MS * 1000);
	ASSERT_EQ(0, load());
	fd = radiance_open(0);
	EXPECT_LE(0, fd);
	close(fd);
}

TEST(destroying_a_queue_stops_its_running_launch)
{
	struct radiance_fill_packet fill = {
		.header = { .kind = RADIANCE_PACKET_FILL }, .pattern_size = 4, .size = 4, .pattern = 0x600d,
	};
	struct radiance_bo_create kc;
	struct queue a, b;
	uint32_t word = 0;
	uint8_t *blk;
	int64_t resets;
	int fd, hk;

	/* A watchdog far beyond the test's patience: only the destruction
	 * can stop the launch in time. */
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load_params(600000, ""));
	resets = radiance_mem_stat("device_resets");
	fd = radiance_open(0);
	hk = radiance_bo_create(fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &kc);
	fill.dst = radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, NULL);
	ASSERT_LT(0, hk);
	ASSERT_LT(0, (int)fill.dst);
	blk = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, kc.mmap_offset);
	ASSERT_NE(MAP_FAILED, blk);
	ASSERT_EQ(0, queue_open(fd, 16, &a));
	ASSERT_EQ(0, queue_open(fd, 16, &b));
	queue_launch(&a, hk, blk, RADIANCE_BUILTIN_SPIN, NULL, 0, 1, 1);
	queue_publish(&a);
	/* The launch is taken from the ring (a loaded machine may take a
	 * while): b's packet must come after it, not before. */
	for (int i = 0; i < 500 && queue_field(a.id, "submitted") < 1; i++)
		usleep(10000);
	ASSERT_EQ(1, queue_field(a.id, "submitted"));
	usleep(20000);
	/* Behind the spinning launch on the one device, which runs one
	 * command at a time (a NOP, which needs no device, would not be). */
	queue_put(&b, &fill);
	queue_publish(&b);
	usleep(20000);
	EXPECT_EQ(0, b.ctl->read_index) TH_LOG("streams: the launch's %lld, the NOP's %lld",
					       (long long)queue_field(a.id, "stream"),
					       (long long)queue_field(b.id, "stream"));
	queue_close(&a);
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&b));
	EXPECT_EQ(1, b.ctl->read_index) TH_LOG("the other queue still waits behind the destroyed queue's launch");
	ASSERT_EQ(0, queue_read_vram(&b, fill.dst, 0, &word, 4));
	EXPECT_EQ(0x600du, word) TH_LOG("the FILL was issued again after the reset");
	EXPECT_EQ(resets + 1, radiance_mem_stat("device_resets"));
	queue_close(&b);
	munmap(blk, 4096);
	close(fd);
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load());
}

TEST_HARNESS_MAIN
