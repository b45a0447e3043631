#!/usr/bin/env bats
# vm-kernel: stock
# "Nothing lost silently": each case of tests/progs/zdtm/lost.c (one
# attribute the kernel shows) as the init of a rootless busybox container,
# restored or refused at checkpoint as the attribute tables of
# docs/engine.md say. A suite of its own so that image/vm-suites can run it
# in a second VM beside checkpoint-zdtm.bats. The same cases run in process
# mode on the host (tests/host/zdtm-process.test). On the stock kernel
# only, the one users run: no case takes another path on the patched one
# (map_files, TCP_REPAIR and the bounding set's drop are checkpoint-zdtm's
# and the services suites', on both), and the VM suites' time is the CI's
# critical path. For that time too, of the keyring cases only a thread
# keyring, the session keyring crun made and the user keyring run here (a
# process keyring and an own session keyring take the same paths); they
# and mce-kill and tsc-sigsegv run on the host in both modes.

load helpers
load checkpoint-helpers

setup() {
	requires non-root vm cmd:crest
	cr_setup
}

teardown() {
	# Images are not needed once a test is over; kept, they fill the VM's
	# /tmp (a tmpfs), as the bundles would (teardown_bundle removes those).
	teardown_bundle "$IMAGE"
}

# zdtm-lost CASE (tests/progs/zdtm/lost.c: one attribute per case)
# as the container's init. WANT "restore": checkpoint, restore, /proc
# compared (cr_procstate_same), the program
# checks the value. Otherwise WANT is a word the one-line refusal must hold;
# the container then runs on untouched and its own check passes. A case the
# kernel cannot set up (no THP, no guard regions in 6.1...) is a skip that
# says so.
lost_case() {
	local c=$1 want=$2 id="l-$1-$$" result init before rc=0
	# Asked first, on the VM itself (the same kernel): a case this kernel
	# cannot set up (no THP, no guard regions in 6.1...) would stop the
	# container before crun reports it running.
	(cd "$BATS_TEST_TMPDIR" && ZDTM_CASE=$c "$PROGS/zdtm-lost" --probe >/dev/null 2>&1 3>&-) || rc=$?
	[ "$rc" != 77 ] || skip "zdtm-lost $c: this kernel cannot set the case up (zdtm-lost --probe)"
	result=$(in_rootfs /tmp/result)
	rm_existing "$(in_rootfs /tmp/ready)" "$result"
	cr_run "$id" "$PROGS/zdtm-lost" /tmp/ready /tmp/result "$c"
	if ! wait_file "$(in_rootfs /tmp/ready)" 120; then
		grep -q 'not supported by this kernel' "$result" 2>/dev/null && skip "zdtm-lost $c: $(cat "$result")"
		fail "zdtm-lost $c never became ready: $(cat "$result" 2>/dev/null)"
	fi
	init=$(cr_init "$id")
	before=$(cr_ns_pids "$id")
	cr_procstate "$id" "$BATS_TEST_TMPDIR/proc"
	cr_checkpoint "$id" --file-locks
	if [ "$want" = restore ]; then
		[ "$status" = 0 ] || fail "checkpoint of zdtm-lost $c failed: $output"
		cr_gone "$id"
		cr_restore "$id"
		[ "$status" = 0 ] || fail "restore of zdtm-lost $c failed: $output"
		cr_procstate_same "$id" "$BATS_TEST_TMPDIR/proc"
	else
		[ "$status" != 0 ] || fail "checkpoint of zdtm-lost $c succeeded (expected a refusal naming $want)"
		[ "${#lines[@]}" = 1 ] || fail "the refusal is not one line: $output"
		echo "$output" | grep -qi -- "$want" || fail "the refusal does not name $want: $output"
		[ ! -e "$IMAGE" ] || fail "a refused checkpoint left $IMAGE behind"
		[ "$(cr_init "$id")" = "$init" ] || fail "the init changed"
		task_untouched "$init" >/dev/null || fail "init left stopped or traced: $(task_untouched "$init")"
		[ "$(cr_ns_pids "$id")" = "$before" ] || fail "tasks changed"
	fi
	zdtm_verdict "$id"
}

@test "zdtm-lost posix-lock: restored" { lost_case posix-lock restore; }
@test "zdtm-lost flock: restored" { lost_case flock restore; }
@test "zdtm-lost ofd-lock: restored" { lost_case ofd-lock restore; }
@test "zdtm-lost lease: refused" { lost_case lease "lease"; }
@test "zdtm-lost pipe-nonblock: restored" { lost_case pipe-nonblock restore; }
@test "zdtm-lost pipe-two-opens: restored" { lost_case pipe-two-opens restore; }
@test "zdtm-lost o-async: restored" { lost_case o-async restore; }
@test "zdtm-lost pipe-packet: refused" { lost_case pipe-packet "O_DIRECT"; }
@test "zdtm-lost madv-dontfork: restored" { lost_case madv-dontfork restore; }
@test "zdtm-lost madv-wipeonfork: restored" { lost_case madv-wipeonfork restore; }
@test "zdtm-lost madv-dontdump: restored" { lost_case madv-dontdump restore; }
@test "zdtm-lost madv-hugepage: restored" { lost_case madv-hugepage restore; }
@test "zdtm-lost madv-nohugepage: restored" { lost_case madv-nohugepage restore; }
@test "zdtm-lost guard-region: refused" { lost_case guard-region "guard region"; }
@test "zdtm-lost subreaper: restored" { lost_case subreaper restore; }
@test "zdtm-lost pdeathsig: restored" { lost_case pdeathsig restore; }
@test "zdtm-lost pdeathsig-root: restored (a container's init)" { lost_case pdeathsig-root restore; }
@test "zdtm-lost thp-disable: restored" { lost_case thp-disable restore; }
@test "zdtm-lost dumpable: restored" { lost_case dumpable restore; }
@test "zdtm-lost timerslack: restored" { lost_case timerslack restore; }
@test "zdtm-lost coredump-filter: restored" { lost_case coredump-filter restore; }
@test "zdtm-lost mempolicy: restored" { lost_case mempolicy restore; }
@test "zdtm-lost cpuid-fault: restored" { lost_case cpuid-fault restore; }
@test "zdtm-lost autogroup: restored" { lost_case autogroup restore; }
@test "zdtm-lost spec-store-bypass: restored" { lost_case spec-store-bypass restore; }
@test "zdtm-lost spec-indirect-branch: restored" { lost_case spec-indirect-branch restore; }
@test "zdtm-lost keyring-thread: refused" { lost_case keyring-thread "thread keyring"; }
@test "zdtm-lost keyring-session-given: refused (a key in crun's session keyring)" { lost_case keyring-session-given "session keyring"; }
@test "zdtm-lost keyring-user: refused (the user namespace is made again)" { lost_case keyring-user "user keyring"; }
@test "zdtm-lost membarrier: restored" { lost_case membarrier restore; }
@test "zdtm-lost posix-timer: restored" { lost_case posix-timer restore; }
@test "zdtm-lost mlock: restored" { lost_case mlock restore; }
@test "zdtm-lost mlock-onfault: restored" { lost_case mlock-onfault restore; }
@test "zdtm-lost mlockall: restored" { lost_case mlockall restore; }
@test "zdtm-lost posix-timer-overrun: refused" { lost_case posix-timer-overrun overrun; }
@test "zdtm-lost posix-timer-thread-cpu: refused" { lost_case posix-timer-thread-cpu "CPU-time"; }
@test "zdtm-lost posix-timer-tid-cpu: restored (timers on a thread's and the process's CPU-time clock named by ID)" { lost_case posix-timer-tid-cpu restore; }
@test "zdtm-lost sleep-restart: restored (threads in nanosleep, clock_nanosleep, poll, futex with timeouts stay asleep)" { lost_case sleep-restart restore; }
@test "zdtm-lost mdwe: refused (memory-deny-write-execute, Linux 6.3)" { lost_case mdwe "write-execute"; }
@test "zdtm-lost unlinked-holes: restored" { lost_case unlinked-holes restore; }
@test "zdtm-lost unlinked-mode: restored" { lost_case unlinked-mode restore; }
@test "zdtm-lost unlinked-shared: restored" { lost_case unlinked-shared restore; }
@test "zdtm-lost unlinked-wronly: restored" { lost_case unlinked-wronly restore; }
@test "zdtm-lost unlinked-mapped: restored" { lost_case unlinked-mapped restore; }
@test "zdtm-lost unlinked-big: restored" { lost_case unlinked-big restore; }
@test "zdtm-lost deleted-dir: restored" { lost_case deleted-dir restore; }
@test "zdtm-lost deleted-fifo: refused" { lost_case deleted-fifo "deleted FIFO"; }
@test "zdtm-lost opath: restored" { lost_case opath restore; }
@test "zdtm-lost opath-symlink: restored" { lost_case opath-symlink restore; }
@test "zdtm-lost pidfd: restored" { lost_case pidfd restore; }
@test "zdtm-lost pidfd-reaped: refused" { lost_case pidfd-reaped reaped; }
@test "zdtm-lost pidfd-shared: refused" { lost_case pidfd-shared shares; }
@test "zdtm-lost proc-fd: refused" { lost_case proc-fd "/proc"; }
@test "zdtm-lost deleted-cwd: refused" { lost_case deleted-cwd "deleted"; }
@test "zdtm-lost pipe-no-writer: restored" { lost_case pipe-no-writer restore; }
@test "zdtm-lost pipe-no-reader: restored" { lost_case pipe-no-reader restore; }
# In a container the orphaned writer is reparented to the init: in the tree.
@test "zdtm-lost pipe-outside: restored (the writer is the init's child)" { lost_case pipe-outside restore; }
# The same for the holder of an epoll's only target.
@test "zdtm-lost epoll-outside: restored (the holder is the init's child)" { lost_case epoll-outside restore; }
# And for the holder of a unix socket's peer.
@test "zdtm-lost unix-outside: restored (the peer's holder is the init's child)" { lost_case unix-outside restore; }
@test "zdtm-lost unix-ext: restored (the server is the init's child)" { lost_case unix-ext restore; }
@test "zdtm-lost unix-peercred: restored (SO_PEERCRED of a pair and a connection made by the init)" { lost_case unix-peercred restore; }
@test "zdtm-lost unix-scm-rights: refused" { lost_case unix-scm-rights "SCM_RIGHTS"; }
@test "zdtm-lost unix-backlog-data: refused" { lost_case unix-backlog-data "accepted"; }
@test "zdtm-lost timerfd-cancel: refused" { lost_case timerfd-cancel "CANCEL_ON_SET"; }
@test "zdtm-lost inotify-unread: refused" { lost_case inotify-unread "unread"; }
@test "zdtm-lost inotify-nopath: refused" { lost_case inotify-nopath "no path"; }
@test "zdtm-lost inotify-walk: restored" { lost_case inotify-walk restore; }
@test "zdtm-lost fanotify: refused" { lost_case fanotify "fanotify"; }
# SysV IPC and POSIX message queues of the container's IPC namespace
# (runtime/engine/ipc.c): segments, semaphore sets and message queues are
# restored, POSIX queues not yet.
@test "zdtm-lost sysv-shm: restored" { lost_case sysv-shm restore; }
@test "zdtm-lost sysv-sem: restored" { lost_case sysv-sem restore; }
@test "zdtm-lost sysv-msg: restored" { lost_case sysv-msg restore; }
@test "zdtm-lost posix-mq: refused" { lost_case posix-mq "message queue"; }
@test "zdtm-lost posix-mq-closed: refused" { lost_case posix-mq-closed "message queue"; }
# POSIX shared memory in the tmpfs /dev/shm crun mounts for the container
# (PostgreSQL's dynamic_shared_memory_type=posix): a restore mounts a new one.
@test "zdtm-lost posix-shm: refused (a file of the container's own tmpfs /dev/shm)" { lost_case posix-shm "tmpfs"; }
@test "zdtm-lost tcp-established: refused (no --tcp-close)" { lost_case tcp-established "established"; }
@test "zdtm-lost accept-queue: refused (connections waiting to be accepted)" { lost_case accept-queue "waiting to be accepted"; }
@test "zdtm-lost mcast-source: refused (a multicast membership with a source filter)" { lost_case mcast-source "source filter"; }
@test "zdtm-lost bindtodevice: restored (sockets bound to lo)" { lost_case bindtodevice restore; }
@test "zdtm-lost udp-shutdown: restored (UDP sockets shut for reading, writing, both)" { lost_case udp-shutdown restore; }
@test "zdtm-lost sockopts: restored (IP, IPv6, TCP, UDP and socket options a program sets unprivileged)" { lost_case sockopts restore; }
# Not leader-exit here: crun reports a container whose init's main thread
# exited as stopped (no init PID); tests/host/zdtm-process.test covers it.
@test "zdtm-lost reparented: restored" { lost_case reparented restore; }
@test "zdtm-lost orphan-pgrp: refused" { lost_case orphan-pgrp "process group"; }
@test "zdtm-lost orphan-session: refused" { lost_case orphan-session "session"; }
