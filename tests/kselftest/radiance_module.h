/* SPDX-License-Identifier: GPL-2.0 */
/* Unloading radiance.ko and loading it again with other parameters, for the
 * kselftests that need a module set up otherwise than radiance_test.h says.
 * The module's file is at $RADIANCE_KO (default /radiance.ko). */
#ifndef RADIANCE_MODULE_H
#define RADIANCE_MODULE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "radiance_test.h"

static inline int unload(void)
{
	return syscall(SYS_delete_module, "radiance", O_NONBLOCK) ? -errno : 0;
}

/* Loads the module as radiance_test.h says, but with `vram_mib` of VRAM per
 * device and launch timeout `timeout_ms`, plus `extra` parameters (each may
 * be given once). */
static inline int load_module(int vram_mib, int timeout_ms, const char *extra)
{
	const char *path = getenv("RADIANCE_KO") ?: "/radiance.ko";
	/* The run's own parameters (the dialect, gluon-sim mode) stay on. */
	const char *run = getenv("RADIANCE_PARAMS_EXTRA") ?: "";
	char params[256];
	int fd, ret;

	snprintf(params, sizeof(params), "emulated_devices=%d emulated_vram_mib=%d launch_timeout_ms=%d %s %s",
		 RADIANCE_TEST_DEVICES, vram_mib, timeout_ms, run, extra);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

/* As load_module(), with radiance_test.h's VRAM. */
static inline int load_params(int timeout_ms, const char *extra)
{
	return load_module(RADIANCE_TEST_VRAM_MIB, timeout_ms, extra);
}

static inline int load_with(const char *extra)
{
	return load_params(RADIANCE_TEST_TIMEOUT_MS, extra);
}

static inline int load(void)
{
	return load_with("");
}

#endif /* RADIANCE_MODULE_H */
