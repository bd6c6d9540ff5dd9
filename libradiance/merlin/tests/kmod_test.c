// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * transport/kmod.c, built against transport.h's stand-ins, on a machine
 * with no /dev/radiance*: which RADIANCE_DEVICE values it accepts (they
 * reach radiance.ko: NOT_FOUND here) and refuses (INVALID_ARGUMENT, naming
 * the value), and that a failed call's status names the line in kmod.c that
 * made the call ($KMOD_CREATE_LINE), not the status helper's. Prints one
 * line per check; exits non-zero on any failure.
 */
#define _DEFAULT_SOURCE /* setenv under -std=c11 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport.h"

iree_status_t iree_make_status_with_location(const char *file, uint32_t line, iree_status_code_t code,
					     const char *format, ...)
{
	iree_status_t status = calloc(1, sizeof(*status));
	va_list args;

	status->code = code;
	status->file = file;
	status->line = line;
	va_start(args, format);
	vsnprintf(status->message, sizeof(status->message), format, args);
	va_end(args);
	return status;
}

iree_status_t iree_allocator_malloc(iree_allocator_t allocator, size_t size, void **out_ptr)
{
	(void)allocator;
	*out_ptr = calloc(1, size);
	return iree_ok_status();
}

void iree_allocator_free(iree_allocator_t allocator, void *ptr)
{
	(void)allocator;
	free(ptr);
}

static int failures;

/* Creates the transport with RADIANCE_DEVICE=`device` (NULL: unset); checks
 * the status's code, that its message holds `needle`, and where it was
 * made: kmod.c, line `line` (0: any). */
static void expect(const char *device, iree_status_code_t code, const char *needle, uint32_t line)
{
	iree_hal_radiance_device_options_t options = { 0 };
	iree_allocator_t allocator = { 0 };
	iree_hal_radiance_transport_t *transport = NULL;

	if (device)
		setenv("RADIANCE_DEVICE", device, 1);
	else
		unsetenv("RADIANCE_DEVICE");
	iree_status_t status = iree_hal_radiance_transport_kmod_create(&options, allocator, &transport);
	int ok = status && status->code == code && strstr(status->message, needle) && !transport &&
		 strstr(status->file, "kmod.c") && (!line || status->line == line);
	printf("%s RADIANCE_DEVICE=%s: %s:%u status %d: %s\n", ok ? "ok" : "FAILED", device ? device : "(unset)",
	       status ? status->file : "-", status ? status->line : 0, status ? (int)status->code : 0,
	       status ? status->message : "OK");
	failures += !ok;
	free(status);
}

int main(void)
{
	uint32_t create_line = (uint32_t)atoi(getenv("KMOD_CREATE_LINE") ?: "0");

	/* radiance.ko's devices: accepted, and not there on this machine (no
	 * module loaded); the status is made at the radiance_transport_create
	 * call. */
	expect(NULL, IREE_STATUS_NOT_FOUND, "radiance.ko", create_line);
	expect("", IREE_STATUS_NOT_FOUND, "radiance.ko", create_line);
	expect("3", IREE_STATUS_NOT_FOUND, "radiance.ko", create_line);
	expect("kmod:2", IREE_STATUS_NOT_FOUND, "radiance.ko", create_line);
	expect("/dev/radiance1", IREE_STATUS_NOT_FOUND, "radiance.ko", create_line);
	/* Not radiance.ko's: refused, never run on another backend. */
	expect("host", IREE_STATUS_INVALID_ARGUMENT, "RADIANCE_DEVICE=host is no radiance.ko device", 0);
	expect("cuda:0", IREE_STATUS_INVALID_ARGUMENT, "RADIANCE_DEVICE=cuda:0", 0);
	expect("1x", IREE_STATUS_INVALID_ARGUMENT, "RADIANCE_DEVICE=1x", 0);
	expect("/dev/null", IREE_STATUS_INVALID_ARGUMENT, "RADIANCE_DEVICE=/dev/null", 0);
	printf("%s\n", failures ? "FAILED" : "PASSED");
	return failures != 0;
}
