# Build fragment for runtime/lib/, included by the top Makefile.am (see docs/hacking.md).
#
# libcrest.a: what the command, the engine, the restorer, the OCI hook and
# the unit tests all use (errors, logging, small helpers, the image
# checksums: SHA-256, and XXH3-128 compiled in from Debian's xxhash.h, with
# no library to link; the default state root, the test knobs, kernel
# structures glibc lacks). It depends on nothing else of the tree: nothing
# here includes runtime/src or runtime/engine, and its include path has
# neither.

noinst_LIBRARIES += runtime/lib/libcrest.a
runtime_lib_libcrest_a_SOURCES = \
	runtime/lib/error.c runtime/lib/error.h \
	runtime/lib/log.c runtime/lib/log.h \
	runtime/lib/util.c runtime/lib/util.h \
	runtime/lib/elfid.c runtime/lib/elfid.h \
	runtime/lib/sha256.c runtime/lib/sha256.h \
	runtime/lib/digest.c runtime/lib/digest-scalar.c runtime/lib/digest.h \
	runtime/lib/state-root.c runtime/lib/state-root.h \
	runtime/lib/testhook.c runtime/lib/testhook.h \
	runtime/lib/kernel-abi.h
runtime_lib_libcrest_a_CFLAGS = $(AM_CFLAGS) $(SANITIZER_CFLAGS)
# Link it after the engine, which uses it.
CREST_LIB = runtime/lib/libcrest.a
