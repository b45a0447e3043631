# Build fragment for kernel/, included by the top Makefile.am (see docs/hacking.md).
# The kernel is built outside the tree, in the cache directory
# (${CREST_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/crest}/kernel/<key>/).

EXTRA_DIST += \
	kernel/README.md \
	kernel/build-kernel \
	kernel/config \
	kernel/patches \
	kernel/selftests

# make kernel: build (or find cached) the patched VM kernel and print its
# directory; make kernel-stock: the same kernel without the patch series.
kernel:
	$(abs_top_srcdir)/kernel/build-kernel

kernel-stock:
	$(abs_top_srcdir)/kernel/build-kernel --stock

.PHONY: kernel kernel-stock
