# Build fragment for bats-tests/, included by the top Makefile.am (see docs/hacking.md).
#
# Test programs that run inside the VM, often inside a busybox container: all
# are check_PROGRAMS, linked -static (the container has no libc).  The image
# build installs them under /usr/lib/crest-tests/progs/.

# --- seed proofs (issue 3) ---------------------------------------------------
check_PROGRAMS += \
	bats-tests/progs/set-tid \
	bats-tests/progs/exe-link \
	bats-tests/progs/caps \
	bats-tests/progs/ns-last-pid \
	bats-tests/progs/map-files \
	bats-tests/progs/msr \
	bats-tests/progs/write-file \
	bats-tests/progs/set-tid-fcap \
	bats-tests/progs/map-files-fcap

bats_tests_progs_set_tid_SOURCES = bats-tests/progs/set-tid.c
bats_tests_progs_set_tid_LDFLAGS = -static
bats_tests_progs_exe_link_SOURCES = bats-tests/progs/exe-link.c
bats_tests_progs_exe_link_LDFLAGS = -static
bats_tests_progs_caps_SOURCES = bats-tests/progs/caps.c
bats_tests_progs_caps_LDFLAGS = -static
bats_tests_progs_ns_last_pid_SOURCES = bats-tests/progs/ns-last-pid.c
bats_tests_progs_ns_last_pid_LDFLAGS = -static
bats_tests_progs_map_files_SOURCES = bats-tests/progs/map-files.c
bats_tests_progs_map_files_LDFLAGS = -static
bats_tests_progs_msr_SOURCES = bats-tests/progs/msr.c
bats_tests_progs_msr_LDFLAGS = -static
bats_tests_progs_write_file_SOURCES = bats-tests/progs/write-file.c
bats_tests_progs_write_file_LDFLAGS = -static

# *-fcap: the same programs again, for the copies that file-caps.txt gives
# cap_checkpoint_restore+ep in the image (the plain copies stay without).
bats_tests_progs_set_tid_fcap_SOURCES = bats-tests/progs/set-tid.c
bats_tests_progs_set_tid_fcap_LDFLAGS = -static
bats_tests_progs_map_files_fcap_SOURCES = bats-tests/progs/map-files.c
bats_tests_progs_map_files_fcap_LDFLAGS = -static

# --- suites and their shared vocabulary ---------------------------------------
EXTRA_DIST += \
	bats-tests/file-caps.txt \
	$(wildcard $(srcdir)/bats-tests/*.bash) \
	$(wildcard $(srcdir)/bats-tests/*.bats)

# --- zdtm-style checkpoint/restore test programs (issue 4) -----------------
# One program per feature a checkpoint must keep; the protocol is in
# bats-tests/zdtm/README.md. Static, like every program run in a container.
ZDTM_PROGS =
ZDTM_PROGS += bats-tests/progs/zdtm-anon-mem
ZDTM_PROGS += bats-tests/progs/zdtm-heap
ZDTM_PROGS += bats-tests/progs/zdtm-file-private
ZDTM_PROGS += bats-tests/progs/zdtm-threads
ZDTM_PROGS += bats-tests/progs/zdtm-ptree
ZDTM_PROGS += bats-tests/progs/zdtm-fds
ZDTM_PROGS += bats-tests/progs/zdtm-unlinked
ZDTM_PROGS += bats-tests/progs/zdtm-pipe
ZDTM_PROGS += bats-tests/progs/zdtm-signals
ZDTM_PROGS += bats-tests/progs/zdtm-itimer
ZDTM_PROGS += bats-tests/progs/zdtm-rlimits
ZDTM_PROGS += bats-tests/progs/zdtm-task-misc
ZDTM_PROGS += bats-tests/progs/zdtm-sched
ZDTM_PROGS += bats-tests/progs/zdtm-caps
ZDTM_PROGS += bats-tests/progs/zdtm-exe-mm
ZDTM_PROGS += bats-tests/progs/zdtm-regs
ZDTM_PROGS += bats-tests/progs/zdtm-stdio
ZDTM_PROGS += bats-tests/progs/zdtm-zombie
ZDTM_PROGS += bats-tests/progs/zdtm-sigstorm
ZDTM_PROGS += bats-tests/progs/zdtm-stopped
ZDTM_PROGS += bats-tests/progs/zdtm-chroot
ZDTM_PROGS += bats-tests/progs/zdtm-shm-anon
ZDTM_PROGS += bats-tests/progs/zdtm-shm-tree
ZDTM_PROGS += bats-tests/progs/zdtm-memfd
ZDTM_PROGS += bats-tests/progs/zdtm-memfd-closed
ZDTM_PROGS += bats-tests/progs/zdtm-deleted-map
ZDTM_PROGS += bats-tests/progs/zdtm-shared-file
# Not restorable on purpose: checkpoint must refuse it (sockets are not v1).
ZDTM_PROGS += bats-tests/progs/zdtm-socket
ZDTM_PROGS += bats-tests/progs/zdtm-thread-creds
ZDTM_PROGS += bats-tests/progs/zdtm-nested-ns
ZDTM_PROGS += bats-tests/progs/zdtm-trap-ignored
check_PROGRAMS += $(ZDTM_PROGS)
ZDTM_COMMON = bats-tests/zdtm/zdtm.c bats-tests/zdtm/zdtm.h
EXTRA_DIST += bats-tests/zdtm/README.md bats-tests/checkpoint-helpers.bash
bats_tests_progs_zdtm_anon_mem_SOURCES = bats-tests/zdtm/anon-mem.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_anon_mem_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_heap_SOURCES = bats-tests/zdtm/heap.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_heap_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_file_private_SOURCES = bats-tests/zdtm/file-private.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_file_private_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_threads_SOURCES = bats-tests/zdtm/threads.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_threads_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_ptree_SOURCES = bats-tests/zdtm/ptree.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_ptree_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_fds_SOURCES = bats-tests/zdtm/fds.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_fds_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_unlinked_SOURCES = bats-tests/zdtm/unlinked.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_unlinked_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_pipe_SOURCES = bats-tests/zdtm/pipe.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_pipe_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_signals_SOURCES = bats-tests/zdtm/signals.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_signals_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_itimer_SOURCES = bats-tests/zdtm/itimer.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_itimer_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_rlimits_SOURCES = bats-tests/zdtm/rlimits.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_rlimits_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_task_misc_SOURCES = bats-tests/zdtm/task-misc.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_task_misc_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_sched_SOURCES = bats-tests/zdtm/sched.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_sched_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_caps_SOURCES = bats-tests/zdtm/caps.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_caps_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_exe_mm_SOURCES = bats-tests/zdtm/exe-mm.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_exe_mm_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_regs_SOURCES = bats-tests/zdtm/regs.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_regs_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_stdio_SOURCES = bats-tests/zdtm/stdio.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_stdio_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_zombie_SOURCES = bats-tests/zdtm/zombie.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_zombie_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_sigstorm_SOURCES = bats-tests/zdtm/sigstorm.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_sigstorm_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_stopped_SOURCES = bats-tests/zdtm/stopped.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_stopped_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_chroot_SOURCES = bats-tests/zdtm/chroot.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_chroot_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_socket_SOURCES = bats-tests/zdtm/socket.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_socket_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_thread_creds_SOURCES = bats-tests/zdtm/thread-creds.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_thread_creds_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_nested_ns_SOURCES = bats-tests/zdtm/nested-ns.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_nested_ns_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_trap_ignored_SOURCES = bats-tests/zdtm/trap-ignored.c $(ZDTM_COMMON)
bats_tests_progs_zdtm_trap_ignored_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_shm_anon_SOURCES = bats-tests/zdtm/shm-anon.c $(ZDTM_COMMON) bats-tests/zdtm/maps.h
bats_tests_progs_zdtm_shm_anon_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_shm_tree_SOURCES = bats-tests/zdtm/shm-tree.c $(ZDTM_COMMON) bats-tests/zdtm/maps.h
bats_tests_progs_zdtm_shm_tree_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_memfd_SOURCES = bats-tests/zdtm/memfd.c $(ZDTM_COMMON) bats-tests/zdtm/maps.h
bats_tests_progs_zdtm_memfd_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_memfd_closed_SOURCES = bats-tests/zdtm/memfd-closed.c $(ZDTM_COMMON) bats-tests/zdtm/maps.h
bats_tests_progs_zdtm_memfd_closed_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_deleted_map_SOURCES = bats-tests/zdtm/deleted-map.c $(ZDTM_COMMON) bats-tests/zdtm/maps.h
bats_tests_progs_zdtm_deleted_map_LDFLAGS = -static -pthread
bats_tests_progs_zdtm_shared_file_SOURCES = bats-tests/zdtm/shared-file.c $(ZDTM_COMMON) bats-tests/zdtm/maps.h
bats_tests_progs_zdtm_shared_file_LDFLAGS = -static -pthread
# --- end of the zdtm block ---------------------------------------------------

# The other end of --console-socket: receives the pty master, records what
# the container writes, types what a test writes into a FIFO. Used by
# tests/host/checkpoint-console.test and bats-tests/checkpoint-console.bats.
check_PROGRAMS += bats-tests/progs/console-recv
bats_tests_progs_console_recv_SOURCES = bats-tests/progs/console-recv.c
bats_tests_progs_console_recv_LDFLAGS = -static
# A command on a pty of its own inside a container: a terminal that is not
# the container's console, which checkpoint must refuse.
check_PROGRAMS += bats-tests/progs/pty-child
bats_tests_progs_pty_child_SOURCES = bats-tests/progs/pty-child.c
bats_tests_progs_pty_child_LDFLAGS = -static

# runtime/tests/engine-memfile-prog again, for the VM: kernel-patched.bats and
# kernel-stock.bats check the engine's use of map_files (patch 1) with it.
check_PROGRAMS += bats-tests/progs/memfile
bats_tests_progs_memfile_SOURCES = runtime/tests/engine-memfile-prog.c
bats_tests_progs_memfile_LDFLAGS = -static
