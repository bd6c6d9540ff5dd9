// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Built against an installed libradiance only (pkg-config), by
 * tests/install/check.sh: the transport seam's round trip on a device
 * (argv[1], default "host"). Prints PASSED and exits 0 when the bytes come
 * back as they went.
 */
#include <stdio.h>
#include <string.h>

#include <libradiance.h>
#include <radiance.h>

static int ok(radiance_status_t status, const char *what)
{
	if (!status)
		return 1;
	printf("FAIL %s: %s\n", what, radiance_status_message(status));
	radiance_status_free(status);
	return 0;
}

int main(int argc, char **argv)
{
	uint32_t in[64], out[64] = { 0 };
	uint64_t dev = 0;
	radiance_transport_t *t = NULL;

	for (int i = 0; i < 64; i++)
		in[i] = 0x01010101u * i;
	if (!ok(radiance_transport_create(argc > 1 ? argv[1] : "host", &t), "create") ||
	    !ok(radiance_transport_alloc_device(t, sizeof(in), &dev), "alloc") ||
	    !ok(radiance_transport_submit_copy(t, 0, (uintptr_t)in, dev, sizeof(in), RADIANCE_COPY_H2D), "h2d") ||
	    !ok(radiance_transport_submit_copy(t, 0, dev, (uintptr_t)out, sizeof(out), RADIANCE_COPY_D2H), "d2h") ||
	    !ok(radiance_transport_synchronize(t, 0), "synchronize"))
		return 1;
	radiance_transport_destroy(t);
	if (memcmp(in, out, sizeof(in))) {
		printf("FAIL the bytes came back changed\n");
		return 1;
	}
	/* The uapi header came with the install too. */
	printf("PASSED (built-in START at %#x)\n", RADIANCE_BUILTIN_START);
	return 0;
}
