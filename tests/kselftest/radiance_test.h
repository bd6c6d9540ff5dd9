/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the Radiance kselftests. */
#ifndef RADIANCE_TEST_H
#define RADIANCE_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>

#include "radiance.h"

/* The device nodes the guest job creates, by loading the module with
 * emulated_devices=RADIANCE_TEST_DEVICES. */
#define RADIANCE_TEST_DEVICES 2
/* ... and emulated_vram_mib=RADIANCE_TEST_VRAM_MIB. */
#define RADIANCE_TEST_VRAM_MIB 64

static inline int radiance_open(int index)
{
	char path[32];

	snprintf(path, sizeof(path), "/dev/radiance%d", index);
	return open(path, O_RDWR | O_CLOEXEC);
}

/* ioctl() returning -errno, so a test can compare with one value. */
static inline int radiance_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

#endif
