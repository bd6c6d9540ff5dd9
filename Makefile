# SPDX-License-Identifier: GPL-2.0
# Building and installing on your own machine (the kernel's build reads
# Kbuild, not this file):
#
#	make                        radiance.ko for the running kernel
#	sudo make install           the module (modules_install), the udev
#	                            rule, libradiance, radctl and gluon-bridge
#	sudo make dkms-source       this tree as /usr/src/radiance-VERSION, for
#	                            `dkms install radiance/VERSION`
#
# KDIR: the kernel build tree (default: the running kernel's headers);
# PREFIX: where the userspace goes (/usr/local); DESTDIR: staged installs.
# On a distribution kernel whose headers lack the rust/ metadata (Debian's),
# run tools/distro/rust-metadata.sh first (Documentation/deploy/debian.md).

KERNELRELEASE ?= $(shell uname -r)
KDIR ?= /lib/modules/$(KERNELRELEASE)/build
PREFIX ?= /usr/local
VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
DKMS_FILES := Kbuild Makefile dkms.conf kmod gluon/src uapi/src tools/lib.sh tools/distro

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

# Into /lib/modules/RELEASE/updates, then depmod (distribution headers
# carry no System.map, so the kernel's Makefile skips it). Unsigned: the
# distribution's signing key is not on this machine (MODULE_SIG_ALL would
# try it); under Secure Boot sign with your MOK key
# (Documentation/deploy/debian.md).
modules_install: modules
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=updates CONFIG_MODULE_SIG_ALL= modules_install
	depmod -a $(KERNELRELEASE)

install: modules_install install-udev install-userspace

install-udev:
	install -D -m 644 tools/distro/70-radiance.rules $(DESTDIR)/etc/udev/rules.d/70-radiance.rules

install-userspace:
	cargo build --release -p radctl -p gluon-bridge
	install -D -m 755 target/release/radctl $(DESTDIR)$(PREFIX)/bin/radctl
	install -D -m 755 target/release/gluon-bridge $(DESTDIR)$(PREFIX)/bin/gluon-bridge
	tools/install-libradiance.sh $(DESTDIR)$(PREFIX)

dkms-source:
	rm -rf $(DESTDIR)/usr/src/radiance-$(VERSION)
	install -d $(DESTDIR)/usr/src/radiance-$(VERSION)
	git ls-files -co --exclude-standard -z $(DKMS_FILES) | \
		tar --null -T - -c | tar -C $(DESTDIR)/usr/src/radiance-$(VERSION) -x

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean

.PHONY: modules modules_install install install-udev install-userspace dkms-source clean
