# Build fragment for runtime/engine/, included by the top Makefile.am (see docs/hacking.md).
#
# The engine is a static library linked into crest and the restorer; it
# depends on runtime/lib/ only (its include path has no runtime/src). The
# restorer blob is a freestanding, position-independent piece of code built
# with its own flags, turned into a flat binary and embedded as a byte array.

noinst_LIBRARIES += runtime/engine/libcrest-engine.a
CREST_ENGINE_LIB = runtime/engine/libcrest-engine.a

runtime_engine_libcrest_engine_a_SOURCES = \
	runtime/engine/engine.h \
	runtime/engine/engine-int.h \
	runtime/engine/image.c runtime/engine/image.h runtime/engine/jtree.c \
	runtime/engine/arena.c runtime/engine/arena.h \
	runtime/engine/image-check.c runtime/engine/image-check.h \
	runtime/engine/ptrace.c \
	runtime/engine/restart-scan.c \
	runtime/engine/inject-home.c \
	runtime/engine/xsave.c \
	runtime/engine/shmem.c runtime/engine/shmem.h \
	runtime/engine/dump.c runtime/engine/dump-int.h \
	runtime/engine/dump-inject.c runtime/engine/dump-par.c runtime/engine/dump-release.c runtime/engine/dump-proc.c \
	runtime/engine/dump-util.c \
	runtime/engine/broker.c \
	runtime/engine/mem.c \
	runtime/engine/mem-cow.c \
	runtime/engine/lazy.c runtime/engine/lazy-sys.c \
	runtime/engine/chain.c \
	runtime/engine/seccomp.c \
	runtime/engine/keyrings.c \
	runtime/engine/affinity.c runtime/engine/affinity.h \
	runtime/engine/mempolicy.c \
	runtime/engine/sig.c \
	runtime/engine/creds.c \
	runtime/engine/pstree.c \
	runtime/engine/dump-guard.c \
	runtime/engine/restore.c runtime/engine/restore-int.h \
	runtime/engine/restore-parse.c runtime/engine/restore-svc.c runtime/engine/restore-seize.c \
	runtime/engine/restore-finish.c \
	runtime/engine/restore-task.c \
	runtime/engine/files-check.c \
	runtime/engine/fown.c \
	runtime/engine/sockets.c runtime/engine/sockets.h \
	runtime/engine/sk-unix.c \
	runtime/engine/pstree-check.c \
	runtime/engine/timers.c \
	runtime/engine/pidfd.c \
	runtime/engine/vmflags.c \
	runtime/engine/files.c runtime/engine/files.h \
	runtime/engine/files-reg.c \
	runtime/engine/files-memfd.c \
	runtime/engine/tty.c \
	runtime/engine/pipes.c \
	runtime/engine/prctl.c \
	runtime/engine/files-unlinked.c \
	runtime/engine/locks.c \
	runtime/engine/eventfd.c \
	runtime/engine/timerfd.c \
	runtime/engine/signalfd.c \
	runtime/engine/eventpoll.c \
	runtime/engine/inotify.c \
	runtime/engine/ipc.c \
	runtime/engine/sk-inet.c \
	runtime/engine/sk-mcast.c runtime/engine/sk-mcast.h \
	runtime/engine/sk-netlink.c \
	runtime/engine/pty.c \
	runtime/engine/sk-tcp.c runtime/engine/sk-tcp.h \
	runtime/engine/blob/blob-abi.h
nodist_runtime_engine_libcrest_engine_a_SOURCES = runtime/engine/restorer-blob.c
runtime_engine_libcrest_engine_a_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime/engine
runtime_engine_libcrest_engine_a_CFLAGS = $(AM_CFLAGS) $(YAJL_CFLAGS)

EXTRA_DIST += \
	runtime/engine/blob/blob.c \
	runtime/engine/blob/blob-entry.S \
	runtime/engine/blob/blob.lds

# The blob: no libc, no stack protector, no SSE (it runs before the task's
# FPU state is put back), no relocations (checked below).
BLOB_CFLAGS = -O2 -fPIE -fno-stack-protector -nostdlib -ffreestanding -fno-builtin \
	-fno-asynchronous-unwind-tables -fno-unwind-tables -fcf-protection=none \
	-fno-jump-tables -mgeneral-regs-only -fvisibility=hidden -Wall -Wextra

runtime/engine/restorer-blob.elf: $(srcdir)/runtime/engine/blob/blob.c $(srcdir)/runtime/engine/blob/blob-entry.S \
		$(srcdir)/runtime/engine/blob/blob.lds $(srcdir)/runtime/engine/blob/blob-abi.h
	$(AM_V_CC)$(MKDIR_P) runtime/engine && \
	$(CC) $(BLOB_CFLAGS) -c $(srcdir)/runtime/engine/blob/blob.c -o runtime/engine/restorer-blob-c.o && \
	$(CC) $(BLOB_CFLAGS) -c $(srcdir)/runtime/engine/blob/blob-entry.S -o runtime/engine/restorer-blob-s.o && \
	$(LD) -static -nostdlib -T $(srcdir)/runtime/engine/blob/blob.lds \
		runtime/engine/restorer-blob-s.o runtime/engine/restorer-blob-c.o -o $@
	@if LC_ALL=C readelf -r $@ | grep -q 'Relocation section'; then \
		echo "restorer blob has relocations: it must be position independent" >&2; rm -f $@; exit 1; fi

runtime/engine/restorer-blob.c: runtime/engine/restorer-blob.elf
	$(AM_V_GEN)$(OBJCOPY) -O binary runtime/engine/restorer-blob.elf runtime/engine/restorer-blob.bin && \
	{ echo '/* Generated from runtime/engine/blob/ by the build: do not edit. */'; \
	  echo '#include <stddef.h>'; \
	  echo 'const unsigned char crest_restorer_blob[] __attribute__ ((aligned (4096))) = {'; \
	  od -An -v -tx1 runtime/engine/restorer-blob.bin | $(SED) -e 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '};'; \
	  echo 'const size_t crest_restorer_blob_size = sizeof crest_restorer_blob;'; } > $@.tmp && mv $@.tmp $@

CLEANFILES += runtime/engine/restorer-blob.c runtime/engine/restorer-blob.bin runtime/engine/restorer-blob.elf \
	runtime/engine/restorer-blob-c.o runtime/engine/restorer-blob-s.o

LD ?= ld
OBJCOPY ?= objcopy

# Host tests of the engine in process mode (TAP, rootless user in unshare -Urpf).
TESTS += tests/host/engine-privilege.test
EXTRA_DIST += tests/host/engine-privilege.test
TESTS += tests/host/engine-failures.test
EXTRA_DIST += tests/host/engine-failures.test

# The unit tests of the image layer: tests/unit/local.mk.
TESTS += tests/host/engine-nsinit.test
EXTRA_DIST += tests/host/engine-nsinit.test
TESTS += tests/host/engine-mountns.test
EXTRA_DIST += tests/host/engine-mountns.test
# Mappings read through map_files (memfd, shared anonymous, deleted files).
check_PROGRAMS += tests/progs/engine-memfile-prog
tests_progs_engine_memfile_prog_SOURCES = tests/progs/engine-memfile-prog.c
TESTS += tests/host/engine-memfile.test
EXTRA_DIST += tests/host/engine-memfile.test
# A hostile image or world at restore: FIFOs for files, pid files, SIGKILL
# at each phase, concurrent restores, edited capabilities.
TESTS += tests/host/restore-hostile.test
EXTRA_DIST += tests/host/restore-hostile.test

