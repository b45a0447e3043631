# Build fragment for tests/progs/, included by the top Makefile.am (see
# docs/hacking.md and tests/README.md).
#
# Test programs shared by the host tests (tests/host), the VM suites
# (bats-tests) and the benchmarks (bench): all are check_PROGRAMS, built as
# tests/progs/NAME, linked -static because most run inside a busybox container
# (no libc). The image build installs them under /usr/lib/crest-tests/progs/.

# --- seed proofs: one kernel interface each, used with and without the
# capability ------------------------------------------------------------------
check_PROGRAMS += \
	tests/progs/set-tid \
	tests/progs/exe-link \
	tests/progs/caps \
	tests/progs/ns-last-pid \
	tests/progs/map-files \
	tests/progs/msr \
	tests/progs/write-file \
	tests/progs/set-tid-fcap \
	tests/progs/map-files-fcap

tests_progs_set_tid_SOURCES = tests/progs/set-tid.c
tests_progs_set_tid_LDFLAGS = -static
tests_progs_exe_link_SOURCES = tests/progs/exe-link.c
tests_progs_exe_link_LDFLAGS = -static
tests_progs_caps_SOURCES = tests/progs/caps.c
tests_progs_caps_LDFLAGS = -static
tests_progs_ns_last_pid_SOURCES = tests/progs/ns-last-pid.c
tests_progs_ns_last_pid_LDFLAGS = -static
tests_progs_map_files_SOURCES = tests/progs/map-files.c
tests_progs_map_files_LDFLAGS = -static
tests_progs_msr_SOURCES = tests/progs/msr.c
tests_progs_msr_LDFLAGS = -static
tests_progs_write_file_SOURCES = tests/progs/write-file.c
tests_progs_write_file_LDFLAGS = -static

# *-fcap: the same programs again, for the copies that file-caps.txt gives
# cap_checkpoint_restore+ep in the image (the plain copies stay without).
tests_progs_set_tid_fcap_SOURCES = tests/progs/set-tid.c
tests_progs_set_tid_fcap_LDFLAGS = -static
tests_progs_map_files_fcap_SOURCES = tests/progs/map-files.c
tests_progs_map_files_fcap_LDFLAGS = -static

# --- zdtm-style checkpoint/restore test programs ----------------------------
# One program per feature a checkpoint must keep, built as
# tests/progs/zdtm-NAME from tests/progs/zdtm/NAME.c and the zdtm library
# (zdtm.c); the protocol is in tests/README.md.
ZDTM_PROGS =
ZDTM_PROGS += tests/progs/zdtm-anon-mem
ZDTM_PROGS += tests/progs/zdtm-lazy
ZDTM_PROGS += tests/progs/zdtm-heap
ZDTM_PROGS += tests/progs/zdtm-file-private
ZDTM_PROGS += tests/progs/zdtm-threads
ZDTM_PROGS += tests/progs/zdtm-ptree
ZDTM_PROGS += tests/progs/zdtm-reaper
ZDTM_PROGS += tests/progs/zdtm-fds
ZDTM_PROGS += tests/progs/zdtm-unlinked
ZDTM_PROGS += tests/progs/zdtm-pipe
ZDTM_PROGS += tests/progs/zdtm-signals
ZDTM_PROGS += tests/progs/zdtm-itimer
ZDTM_PROGS += tests/progs/zdtm-posix-timers
ZDTM_PROGS += tests/progs/zdtm-pidfd
ZDTM_PROGS += tests/progs/zdtm-rlimits
ZDTM_PROGS += tests/progs/zdtm-task-misc
ZDTM_PROGS += tests/progs/zdtm-sched
ZDTM_PROGS += tests/progs/zdtm-caps
ZDTM_PROGS += tests/progs/zdtm-nonroot
ZDTM_PROGS += tests/progs/zdtm-exe-mm
ZDTM_PROGS += tests/progs/zdtm-regs
ZDTM_PROGS += tests/progs/zdtm-amx
ZDTM_PROGS += tests/progs/zdtm-stdio
ZDTM_PROGS += tests/progs/zdtm-zombie
ZDTM_PROGS += tests/progs/zdtm-sigstorm
ZDTM_PROGS += tests/progs/zdtm-stopped
ZDTM_PROGS += tests/progs/zdtm-chroot
ZDTM_PROGS += tests/progs/zdtm-busy-tree
ZDTM_PROGS += tests/progs/zdtm-predump
ZDTM_PROGS += tests/progs/zdtm-lost
ZDTM_PROGS += tests/progs/zdtm-batch
ZDTM_PROGS += tests/progs/zdtm-shm-anon
ZDTM_PROGS += tests/progs/zdtm-shm-tree
ZDTM_PROGS += tests/progs/zdtm-shm-sparse
ZDTM_PROGS += tests/progs/zdtm-cow
ZDTM_PROGS += tests/progs/zdtm-vm-account
ZDTM_PROGS += tests/progs/zdtm-vm-apart
ZDTM_PROGS += tests/progs/zdtm-memfd
ZDTM_PROGS += tests/progs/zdtm-memfd-closed
ZDTM_PROGS += tests/progs/zdtm-deleted-map
ZDTM_PROGS += tests/progs/zdtm-shared-file
ZDTM_PROGS += tests/progs/zdtm-eventfd
ZDTM_PROGS += tests/progs/zdtm-timerfd
ZDTM_PROGS += tests/progs/zdtm-signalfd
ZDTM_PROGS += tests/progs/zdtm-epoll
ZDTM_PROGS += tests/progs/zdtm-inotify
ZDTM_PROGS += tests/progs/zdtm-sysv-ipc
ZDTM_PROGS += tests/progs/zdtm-sysv-shm
ZDTM_PROGS += tests/progs/zdtm-unix-sk
ZDTM_PROGS += tests/progs/zdtm-inet-listen
ZDTM_PROGS += tests/progs/zdtm-inet-udp
ZDTM_PROGS += tests/progs/zdtm-inet-v6
ZDTM_PROGS += tests/progs/zdtm-inet-mcast
ZDTM_PROGS += tests/progs/zdtm-netlink
ZDTM_PROGS += tests/progs/zdtm-pty
ZDTM_PROGS += tests/progs/zdtm-inet-tcp-close
ZDTM_PROGS += tests/progs/zdtm-inet-tcp-est
# Not restorable on purpose: checkpoint must refuse it (sockets are not v1).
ZDTM_PROGS += tests/progs/zdtm-socket
ZDTM_PROGS += tests/progs/zdtm-thread-creds
ZDTM_PROGS += tests/progs/zdtm-nested-ns
ZDTM_PROGS += tests/progs/zdtm-trap-ignored
ZDTM_PROGS += tests/progs/zdtm-seccomp
check_PROGRAMS += $(ZDTM_PROGS)
ZDTM_COMMON = tests/progs/zdtm/zdtm.c tests/progs/zdtm/zdtm.h
tests_progs_zdtm_anon_mem_SOURCES = tests/progs/zdtm/anon-mem.c $(ZDTM_COMMON)
tests_progs_zdtm_anon_mem_LDFLAGS = -static -pthread
tests_progs_zdtm_lazy_SOURCES = tests/progs/zdtm/lazy.c $(ZDTM_COMMON)
tests_progs_zdtm_lazy_LDFLAGS = -static -pthread
tests_progs_zdtm_heap_SOURCES = tests/progs/zdtm/heap.c $(ZDTM_COMMON)
tests_progs_zdtm_heap_LDFLAGS = -static -pthread
tests_progs_zdtm_file_private_SOURCES = tests/progs/zdtm/file-private.c $(ZDTM_COMMON)
tests_progs_zdtm_file_private_LDFLAGS = -static -pthread
tests_progs_zdtm_vm_account_SOURCES = tests/progs/zdtm/vm-account.c $(ZDTM_COMMON)
tests_progs_zdtm_vm_account_LDFLAGS = -static -pthread
tests_progs_zdtm_vm_apart_SOURCES = tests/progs/zdtm/vm-apart.c $(ZDTM_COMMON)
tests_progs_zdtm_vm_apart_LDFLAGS = -static -pthread
tests_progs_zdtm_threads_SOURCES = tests/progs/zdtm/threads.c $(ZDTM_COMMON)
tests_progs_zdtm_threads_LDFLAGS = -static -pthread
tests_progs_zdtm_ptree_SOURCES = tests/progs/zdtm/ptree.c $(ZDTM_COMMON)
tests_progs_zdtm_ptree_LDFLAGS = -static -pthread
tests_progs_zdtm_reaper_SOURCES = tests/progs/zdtm/reaper.c $(ZDTM_COMMON)
tests_progs_zdtm_reaper_LDFLAGS = -static -pthread
tests_progs_zdtm_fds_SOURCES = tests/progs/zdtm/fds.c $(ZDTM_COMMON)
tests_progs_zdtm_fds_LDFLAGS = -static -pthread
tests_progs_zdtm_unlinked_SOURCES = tests/progs/zdtm/unlinked.c $(ZDTM_COMMON)
tests_progs_zdtm_unlinked_LDFLAGS = -static -pthread
tests_progs_zdtm_pipe_SOURCES = tests/progs/zdtm/pipe.c $(ZDTM_COMMON)
tests_progs_zdtm_pipe_LDFLAGS = -static -pthread
tests_progs_zdtm_signals_SOURCES = tests/progs/zdtm/signals.c $(ZDTM_COMMON)
tests_progs_zdtm_signals_LDFLAGS = -static -pthread
tests_progs_zdtm_itimer_SOURCES = tests/progs/zdtm/itimer.c $(ZDTM_COMMON)
tests_progs_zdtm_itimer_LDFLAGS = -static -pthread
tests_progs_zdtm_posix_timers_SOURCES = tests/progs/zdtm/posix-timers.c $(ZDTM_COMMON)
tests_progs_zdtm_posix_timers_LDFLAGS = -static -pthread
tests_progs_zdtm_pidfd_SOURCES = tests/progs/zdtm/pidfd.c $(ZDTM_COMMON)
tests_progs_zdtm_pidfd_LDFLAGS = -static
tests_progs_zdtm_seccomp_SOURCES = tests/progs/zdtm/seccomp.c $(ZDTM_COMMON)
tests_progs_zdtm_seccomp_LDFLAGS = -static -pthread
tests_progs_zdtm_rlimits_SOURCES = tests/progs/zdtm/rlimits.c $(ZDTM_COMMON)
tests_progs_zdtm_rlimits_LDFLAGS = -static -pthread
tests_progs_zdtm_task_misc_SOURCES = tests/progs/zdtm/task-misc.c $(ZDTM_COMMON)
tests_progs_zdtm_task_misc_LDFLAGS = -static -pthread
tests_progs_zdtm_sched_SOURCES = tests/progs/zdtm/sched.c $(ZDTM_COMMON)
tests_progs_zdtm_sched_LDFLAGS = -static -pthread
tests_progs_zdtm_caps_SOURCES = tests/progs/zdtm/caps.c $(ZDTM_COMMON)
tests_progs_zdtm_caps_LDFLAGS = -static -pthread
tests_progs_zdtm_nonroot_SOURCES = tests/progs/zdtm/nonroot.c $(ZDTM_COMMON)
tests_progs_zdtm_nonroot_LDFLAGS = -static
tests_progs_zdtm_exe_mm_SOURCES = tests/progs/zdtm/exe-mm.c $(ZDTM_COMMON)
tests_progs_zdtm_exe_mm_LDFLAGS = -static -pthread
tests_progs_zdtm_regs_SOURCES = tests/progs/zdtm/regs.c $(ZDTM_COMMON)
tests_progs_zdtm_regs_LDFLAGS = -static -pthread
tests_progs_zdtm_amx_SOURCES = tests/progs/zdtm/amx.c $(ZDTM_COMMON)
tests_progs_zdtm_amx_LDFLAGS = -static -pthread
tests_progs_zdtm_stdio_SOURCES = tests/progs/zdtm/stdio.c $(ZDTM_COMMON)
tests_progs_zdtm_stdio_LDFLAGS = -static -pthread
tests_progs_zdtm_zombie_SOURCES = tests/progs/zdtm/zombie.c $(ZDTM_COMMON)
tests_progs_zdtm_zombie_LDFLAGS = -static -pthread
tests_progs_zdtm_sigstorm_SOURCES = tests/progs/zdtm/sigstorm.c $(ZDTM_COMMON)
tests_progs_zdtm_sigstorm_LDFLAGS = -static -pthread
tests_progs_zdtm_stopped_SOURCES = tests/progs/zdtm/stopped.c $(ZDTM_COMMON)
tests_progs_zdtm_stopped_LDFLAGS = -static -pthread
tests_progs_zdtm_chroot_SOURCES = tests/progs/zdtm/chroot.c $(ZDTM_COMMON)
tests_progs_zdtm_chroot_LDFLAGS = -static -pthread
tests_progs_zdtm_busy_tree_SOURCES = tests/progs/zdtm/busy-tree.c $(ZDTM_COMMON)
tests_progs_zdtm_busy_tree_LDFLAGS = -static -pthread
tests_progs_zdtm_predump_SOURCES = tests/progs/zdtm/predump.c $(ZDTM_COMMON)
tests_progs_zdtm_predump_LDFLAGS = -static -pthread
tests_progs_zdtm_lost_SOURCES = tests/progs/zdtm/lost.c $(ZDTM_COMMON)
tests_progs_zdtm_lost_LDFLAGS = -static -pthread
tests_progs_zdtm_batch_SOURCES = tests/progs/zdtm/batch.c $(ZDTM_COMMON)
tests_progs_zdtm_batch_LDFLAGS = -static -pthread
tests_progs_zdtm_shm_anon_SOURCES = tests/progs/zdtm/shm-anon.c $(ZDTM_COMMON) tests/progs/zdtm/maps.h
tests_progs_zdtm_shm_anon_LDFLAGS = -static -pthread
tests_progs_zdtm_shm_tree_SOURCES = tests/progs/zdtm/shm-tree.c $(ZDTM_COMMON) tests/progs/zdtm/maps.h
tests_progs_zdtm_shm_tree_LDFLAGS = -static -pthread
tests_progs_zdtm_shm_sparse_SOURCES = tests/progs/zdtm/shm-sparse.c $(ZDTM_COMMON)
tests_progs_zdtm_shm_sparse_LDFLAGS = -static -pthread
tests_progs_zdtm_cow_SOURCES = tests/progs/zdtm/cow.c $(ZDTM_COMMON)
tests_progs_zdtm_cow_LDFLAGS = -static -pthread
tests_progs_zdtm_memfd_SOURCES = tests/progs/zdtm/memfd.c $(ZDTM_COMMON) tests/progs/zdtm/maps.h
tests_progs_zdtm_memfd_LDFLAGS = -static -pthread
tests_progs_zdtm_memfd_closed_SOURCES = tests/progs/zdtm/memfd-closed.c $(ZDTM_COMMON) tests/progs/zdtm/maps.h
tests_progs_zdtm_memfd_closed_LDFLAGS = -static -pthread
tests_progs_zdtm_deleted_map_SOURCES = tests/progs/zdtm/deleted-map.c $(ZDTM_COMMON) tests/progs/zdtm/maps.h
tests_progs_zdtm_deleted_map_LDFLAGS = -static -pthread
tests_progs_zdtm_shared_file_SOURCES = tests/progs/zdtm/shared-file.c $(ZDTM_COMMON) tests/progs/zdtm/maps.h
tests_progs_zdtm_shared_file_LDFLAGS = -static -pthread
tests_progs_zdtm_unix_sk_SOURCES = tests/progs/zdtm/unix-sk.c $(ZDTM_COMMON)
tests_progs_zdtm_unix_sk_LDFLAGS = -static -pthread
tests_progs_zdtm_eventfd_SOURCES = tests/progs/zdtm/eventfd.c $(ZDTM_COMMON)
tests_progs_zdtm_eventfd_LDFLAGS = -static -pthread
tests_progs_zdtm_timerfd_SOURCES = tests/progs/zdtm/timerfd.c $(ZDTM_COMMON)
tests_progs_zdtm_timerfd_LDFLAGS = -static -pthread
tests_progs_zdtm_signalfd_SOURCES = tests/progs/zdtm/signalfd.c $(ZDTM_COMMON)
tests_progs_zdtm_signalfd_LDFLAGS = -static -pthread
tests_progs_zdtm_epoll_SOURCES = tests/progs/zdtm/epoll.c $(ZDTM_COMMON)
tests_progs_zdtm_epoll_LDFLAGS = -static -pthread
tests_progs_zdtm_sysv_ipc_SOURCES = tests/progs/zdtm/sysv-ipc.c $(ZDTM_COMMON)
tests_progs_zdtm_sysv_ipc_LDFLAGS = -static -pthread
tests_progs_zdtm_sysv_shm_SOURCES = tests/progs/zdtm/sysv-shm.c $(ZDTM_COMMON)
tests_progs_zdtm_sysv_shm_LDFLAGS = -static -pthread
tests_progs_zdtm_inotify_SOURCES = tests/progs/zdtm/inotify.c $(ZDTM_COMMON)
tests_progs_zdtm_inotify_LDFLAGS = -static -pthread
tests_progs_zdtm_inet_listen_SOURCES = tests/progs/zdtm/inet-listen.c $(ZDTM_COMMON)
tests_progs_zdtm_inet_listen_LDFLAGS = -static -pthread
tests_progs_zdtm_inet_udp_SOURCES = tests/progs/zdtm/inet-udp.c $(ZDTM_COMMON)
tests_progs_zdtm_inet_udp_LDFLAGS = -static -pthread
tests_progs_zdtm_inet_v6_SOURCES = tests/progs/zdtm/inet-v6.c $(ZDTM_COMMON)
tests_progs_zdtm_inet_v6_LDFLAGS = -static -pthread
tests_progs_zdtm_inet_mcast_SOURCES = tests/progs/zdtm/inet-mcast.c $(ZDTM_COMMON)
tests_progs_zdtm_inet_mcast_LDFLAGS = -static -pthread
tests_progs_zdtm_netlink_SOURCES = tests/progs/zdtm/netlink.c $(ZDTM_COMMON)
tests_progs_zdtm_netlink_LDFLAGS = -static -pthread
tests_progs_zdtm_pty_SOURCES = tests/progs/zdtm/pty.c $(ZDTM_COMMON)
tests_progs_zdtm_pty_LDFLAGS = -static -pthread
tests_progs_zdtm_inet_tcp_close_SOURCES = tests/progs/zdtm/inet-tcp-close.c $(ZDTM_COMMON)
tests_progs_zdtm_inet_tcp_close_LDFLAGS = -static -pthread
tests_progs_zdtm_inet_tcp_est_SOURCES = tests/progs/zdtm/inet-tcp-est.c $(ZDTM_COMMON)
tests_progs_zdtm_inet_tcp_est_LDFLAGS = -static -pthread
tests_progs_zdtm_socket_SOURCES = tests/progs/zdtm/socket.c $(ZDTM_COMMON)
tests_progs_zdtm_socket_LDFLAGS = -static -pthread
tests_progs_zdtm_thread_creds_SOURCES = tests/progs/zdtm/thread-creds.c $(ZDTM_COMMON)
tests_progs_zdtm_thread_creds_LDFLAGS = -static -pthread
tests_progs_zdtm_nested_ns_SOURCES = tests/progs/zdtm/nested-ns.c $(ZDTM_COMMON)
tests_progs_zdtm_nested_ns_LDFLAGS = -static -pthread
tests_progs_zdtm_trap_ignored_SOURCES = tests/progs/zdtm/trap-ignored.c $(ZDTM_COMMON)
tests_progs_zdtm_trap_ignored_LDFLAGS = -static -pthread

# The other end of --console-socket: receives the pty master, records what
# the container writes, types what a test writes into a FIFO. Used by
# tests/host/checkpoint-console.test and bats-tests/checkpoint-console.bats.
check_PROGRAMS += tests/progs/console-recv
tests_progs_console_recv_SOURCES = tests/progs/console-recv.c
tests_progs_console_recv_LDFLAGS = -static
# A command on a pty of its own inside a container: a terminal that is not
# the container's console, which checkpoint must refuse.
check_PROGRAMS += tests/progs/pty-child
tests_progs_pty_child_SOURCES = tests/progs/pty-child.c
tests_progs_pty_child_LDFLAGS = -static

# The client inside a service's container whose connection must survive a
# checkpoint: bytes from a FIFO go out on one connection, the answers are
# appended to a file (bats-tests/svc-*.bats).
check_PROGRAMS += tests/progs/svc-conn
tests_progs_svc_conn_SOURCES = tests/progs/svc-conn.c
tests_progs_svc_conn_LDFLAGS = -static

# tests/progs/engine-memfile-prog again, for the VM: kernel-patched.bats and
# kernel-stock.bats check the engine's use of map_files (patch 1) with it.
check_PROGRAMS += tests/progs/memfile
tests_progs_memfile_SOURCES = tests/progs/engine-memfile-prog.c
tests_progs_memfile_LDFLAGS = -static

# What /proc shows of a tree, normalised, for a comparison before checkpoint
# and after restore (the host tests' and the VM suites' cr_procstate).
check_PROGRAMS += tests/progs/procstate
tests_progs_procstate_SOURCES = tests/progs/procstate.c
tests_progs_procstate_LDFLAGS = -static
