#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside the QEMU guest (as /job) on Debian's own kernel booted with
# module.sig_enforce=1, as under Secure Boot: the kernel's own signed
# module loads; radiance.ko unsigned, and signed with a key the kernel does
# not trust (radiance-signed.ko), are refused with EKEYREJECTED ("Key was
# rejected by service") and the kernel's reason in its log.
set -u
. /suite.sh || exit 1

plan signatures_are_enforced the_kernels_own_signed_module_loads an_unsigned_radiance_ko_is_refused \
	a_radiance_ko_signed_by_an_untrusted_key_is_refused radiance_is_not_loaded

# Whether insmod $1 fails with "Key was rejected by service" and the
# kernel logs "Loading of $2 is rejected" (a script: test_one runs
# programs, not functions).
refused='
out=$(insmod "$1" 2>&1) && { echo "$1 loaded"; rmmod radiance; exit 1; }
echo "$out"
dmesg | grep "Loading of $2 is rejected" || { echo "no \"Loading of $2 is rejected\" in dmesg"; exit 1; }
echo "$out" | grep -q "Key was rejected by service"'

test_one signatures_are_enforced grep -qx Y /sys/module/module/parameters/sig_enforce
test_one the_kernels_own_signed_module_loads insmod /reference.ko
test_one an_unsigned_radiance_ko_is_refused sh -c "$refused" refused /radiance.ko "unsigned module"
test_one a_radiance_ko_signed_by_an_untrusted_key_is_refused sh -c "$refused" refused /radiance-signed.ko "module with unavailable key"
test_one radiance_is_not_loaded sh -c '! grep -q "^radiance " /proc/modules'
