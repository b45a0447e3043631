# Build fragment for image/, included by the top Makefile.am (see docs/hacking.md).
# The root file system is cached outside the tree
# (${CREST_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/crest}/rootfs/<key>/).

EXTRA_DIST += \
	image/README.md \
	image/packages.txt \
	image/packages-apt.txt \
	image/build-rootfs \
	image/build-image \
	image/crest-init \
	image/run-vm \
	image/vm-suites

# Every bats suite of bats-tests/, booted in QEMU (one TAP stream); first in
# TESTS, so that it starts at once beside the host tests (Makefile.am).
VM_TESTS += image/vm-suites

# make image: the patched kernel, the root file system and a disk with this
# build's crest and test programs, at image/crest-vm.img in the build tree
# (image/run-vm makes a fresh one for each run unless given --image). The
# test programs are check programs, which `all` does not build.
image: all $(check_PROGRAMS)
	$(MKDIR_P) image
	$(abs_top_srcdir)/image/build-image --builddir $(abs_top_builddir) -o $(abs_top_builddir)/image/crest-vm.img

CLEANFILES += image/crest-vm.img

.PHONY: image
