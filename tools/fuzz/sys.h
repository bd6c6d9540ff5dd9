/* SPDX-License-Identifier: GPL-2.0 */
/* What radiance-fuzz needs of the kernel beyond radiance.h. */
#ifndef RADIANCE_FUZZ_SYS_H
#define RADIANCE_FUZZ_SYS_H

#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>

/* drivers/dma-buf/sw_sync.c (debugfs sync/sw_sync): not in the uapi
 * headers. */
struct sw_sync_create_fence_data {
	uint32_t value;
	char name[32];
	int32_t fence;
};
#define SW_SYNC_IOC_CREATE_FENCE _IOWR('W', 0, struct sw_sync_create_fence_data)
#define SW_SYNC_IOC_INC _IOW('W', 1, uint32_t)

/* ioctl() returning -errno. */
static inline int xioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

#endif
