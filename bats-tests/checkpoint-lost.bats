#!/usr/bin/env bats
# vm-kernel: stock
# "Nothing lost silently": each case of tests/progs/zdtm/lost.c (one
# attribute the kernel shows) in a rootless busybox container (a refusal or
# a case that must be the init: as the init, alone; the cases restored: all
# in one container, see LOST_BATCH below), restored or refused at
# checkpoint as the attribute tables of
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

# The restore cases run together, for time (a container costs about 4 s
# under TCG, its case a fraction of it): one container whose init starts
# each case in a child of its own, one after the other (zdtm-lost --batch:
# each in its own directory of /tmp with its own ready and result files),
# one checkpoint, one restore, /proc compared for the whole tree, then
# SIGTERM and each case's own check. The first test below runs that cycle
# and reports each case's own verdict (PASS, FAIL, a KNOWN gap) as a test
# point of its own, "zdtm-lost CASE: restored (BATCH_NOTE[CASE])"
# (batch_points). In a container the other end of pipe-outside,
# epoll-outside, unix-outside and unix-ext (an orphaned writer, an epoll's
# only target's holder, a socket peer's holder, a server) is reparented to
# the init: in the tree.
# Alone: pdeathsig-root (the init's own parent-death signal) and
# unix-peercred (the init's sockets, which the restorer, PID 1 itself,
# makes), and the refusals, each of
# which must stop a checkpoint of its own.
LOST_BATCH="posix-lock flock ofd-lock pipe-nonblock pipe-two-opens o-async madv-dontfork madv-wipeonfork madv-dontdump madv-hugepage madv-nohugepage madv-sequential madv-random madv-mergeable map-noreserve reserve-sparse zero-read subreaper pdeathsig thp-disable dumpable timerslack coredump-filter mempolicy cpuid-fault autogroup spec-store-bypass spec-indirect-branch membarrier posix-timer mlock mlock-onfault mlockall posix-timer-tid-cpu sleep-restart sleep-restarted unlinked-holes unlinked-mode unlinked-shared unlinked-wronly unlinked-mapped unlinked-mapped-lock unlinked-big deleted-dir opath opath-symlink pidfd pipe-no-writer pipe-no-reader stdin-no-writer stdout-no-reader pipe-outside epoll-outside unix-outside unix-backlog-outside unix-dev-tmpfs unix-ext unix-renamed unix-relative unix-stream-full unix-creds inotify-walk inotify-tree sysv-shm sysv-sem sysv-msg bindtodevice udp-shutdown udp-pktinfo epoll-exclusive unix-peer-closed unix-listener-gone unix-accepted-peer-closed unix-anon-dgram unix-unconnected unix-seqpacket-peer-closed udp-source-outside memfd-sealed sockopts ksm-merge-any fown-no-async exit-signal exit-signal-zombie reparented shm-outside"

BATCH_NOTE=(
	[posix-timer-tid-cpu]="timers on a thread's and the process's CPU-time clock named by ID"
	[sleep-restart]="threads in nanosleep, clock_nanosleep, poll, futex with timeouts stay asleep"
	[sleep-restarted]="the same, stopped and continued before: in restart_syscall"
	[pipe-outside]="the writer is the init's child"
	[epoll-outside]="the holder is the init's child"
	[unix-outside]="the peer's holder is the init's child"
	[unix-dev-tmpfs]="a datagram socket bound in the config's /dev tmpfs (syslog's /dev/log)"
	[unix-backlog-outside]="a connection waiting in a listener's backlog, from a process that is the init's child"
	[unix-ext]="the server is the init's child"
	[unix-renamed]="a listener whose socket file was renamed (HotSpot's attach listener)"
	[unix-relative]="sockets bound to names relative to the working directory (Postfix's services)"
	[unix-stream-full]="a stream socketpair whose writer filled the reader's queue"
	[unix-creds]="messages queued on sockets that read their senders' credentials (SO_PASSCRED), from the process and its child: the same PIDs"
	[bindtodevice]="sockets bound to lo"
	[udp-shutdown]="UDP sockets shut for reading, writing, both"
	[epoll-exclusive]="an eventfd in an epoll with EPOLLEXCLUSIVE"
	[inotify-tree]="70 watches on a tree ten levels deep below the cwd, as inotifywait -r sets them"
	[unix-listener-gone]="connections accepted from listeners closed since (an abstract name, a path whose socket file stays)"
	[unix-accepted-peer-closed]="accepted connections whose client wrote and closed (its listener open, and closed)"
	[unix-anon-dgram]="a datagram from an unbound socket not connected to its receiver"
	[unix-unconnected]="stream and seqpacket sockets not connected yet, one bound"
	[unix-seqpacket-peer-closed]="a seqpacket socket whose peer sent two messages and closed"
	[udp-source-outside]="a datagram whose sender still holds its port (the init's child in a container)"
	[memfd-sealed]="a memfd sealed against writes, mapped shared through a read-only descriptor"
	[unix-peer-closed]="a stream socket whose peer wrote and closed: the bytes, then end of file"
	[udp-pktinfo]="datagrams queued to 127.0.0.2 and 127.0.0.3 on sockets bound to any address that read their destination (IP_PKTINFO; a dual-stack IPv6 one)"
	[sockopts]="IP, IPv6, TCP, UDP and socket options a program sets unprivileged"
	[stdin-no-writer]="stdin a pipe whose writer is gone, bytes in it"
	[stdout-no-reader]="stdout a pipe whose reader is gone"
	[exit-signal]="a child whose exit signal is SIGUSR1"
	[exit-signal-zombie]="a zombie whose exit signal is SIGUSR1"
)

# lost_batch: the batch's cycle (batch_run), once per suite file; a case
# this kernel cannot set up is left out of it, marked skip.CASE.
lost_batch() {
	[ ! -e "$BATCH_DIR/done" ] || return 0
	mkdir -p "$BATCH_DIR"
	local c run=()
	for c in $LOST_BATCH; do
		# Asked first, on the VM itself (as lost_case does); a failed
		# probe other than 77 leaves the case in the batch, whose setup
		# then says what failed.
		(cd "$BATS_TEST_TMPDIR" && ZDTM_CASE=$c "$PROGS/zdtm-lost" --probe >/dev/null 2>&1 3>&-) && run+=("$c") && continue
		[ $? = 77 ] && echo "zdtm-lost $c: this kernel cannot set the case up (zdtm-lost --probe)" >"$BATCH_DIR/skip.$c" || run+=("$c")
	done
	batch_run "${run[@]}" -- "$PROGS/zdtm-lost" /tmp/ready /tmp/result --batch "${run[@]}"
}

@test "zdtm-lost: the restore cases in one container (zdtm-lost --batch): checkpoint, gone, restore, /proc the same for every task; each case a point of its own" {
	local c n=0
	# shellcheck disable=SC2086 # a list of names
	batch_announce $LOST_BATCH
	lost_batch
	# shellcheck disable=SC2086
	batch_points "zdtm-lost %s: restored" $LOST_BATCH
	batch_point
	for c in $LOST_BATCH; do [ -e "$BATCH_DIR/skip.$c" ] || n=$((n + 1)); done
	[ "$n" -gt 40 ] || fail "only $n of the batch's cases ran"
}

@test "zdtm-lost lease: refused" { lost_case lease "lease"; }
@test "zdtm-lost pipe-packet: refused" { lost_case pipe-packet "O_DIRECT"; }
@test "zdtm-lost guard-region: refused" { lost_case guard-region "guard region"; }
@test "zdtm-lost sysv-shm-removed: refused" { lost_case sysv-shm-removed "IPC_RMID"; }
@test "zdtm-lost sysv-shm-partial: refused (a segment attached in part)" { lost_case sysv-shm-partial "only part"; }
@test "zdtm-lost sysv-sem-unreadable: refused (a semaphore set of mode 0200, a root without CAP_IPC_OWNER)" { lost_case sysv-sem-unreadable "may not read"; }
@test "zdtm-lost ptrace-outside: refused (the traced orphan is the init's child: a task of the tree another traces)" { lost_case ptrace-outside "traced by another"; }
@test "zdtm-lost pdeathsig-root: restored (a container's init)" { lost_case pdeathsig-root restore; }
@test "zdtm-lost keyring-thread: refused" { lost_case keyring-thread "thread keyring"; }
@test "zdtm-lost keyring-session-given: refused (a key in crun's session keyring)" { lost_case keyring-session-given "session keyring"; }
@test "zdtm-lost keyring-user: refused (the user namespace is made again)" { lost_case keyring-user "user keyring"; }
@test "zdtm-lost posix-timer-overrun: refused" { lost_case posix-timer-overrun overrun; }
@test "zdtm-lost posix-timer-held: refused (a periodic timer's signal held pending, blocked)" { lost_case posix-timer-held "pending and blocked"; }
@test "zdtm-lost posix-timer-thread-cpu: refused" { lost_case posix-timer-thread-cpu "CPU-time"; }
@test "zdtm-lost mdwe: refused (memory-deny-write-execute, Linux 6.3)" { lost_case mdwe "write-execute"; }
@test "zdtm-lost pkey: refused (a memory protection key, a CPU with PKU)" { lost_case pkey "protection.key"; }
@test "zdtm-lost syscall-user-dispatch: refused (PR_SET_SYSCALL_USER_DISPATCH; seen from Linux 6.4)" { lost_case syscall-user-dispatch "dispatches"; }
@test "zdtm-lost memfd-secret: refused (memfd_secret, open)" { lost_case memfd-secret "memfd_secret"; }
@test "zdtm-lost memfd-secret-mapped: refused (memfd_secret, mapped only)" { lost_case memfd-secret-mapped "memfd_secret"; }
@test "zdtm-lost clone-vm: refused (two processes sharing one memory)" { lost_case clone-vm "one memory"; }
@test "zdtm-lost vfork-wait: refused at once (a task held in vfork)" { lost_case vfork-wait "vfork"; }
@test "zdtm-lost clone-files: refused (two processes sharing one table of descriptors)" { lost_case clone-files "CLONE_FILES"; }
@test "zdtm-lost clone-fs: refused (two processes sharing one root, cwd and umask)" { lost_case clone-fs "CLONE_FS"; }
@test "zdtm-lost thread-unshare-fs: refused (a thread with its own cwd)" { lost_case thread-unshare-fs "CLONE_FS"; }
@test "zdtm-lost thread-unshare-files: refused (a thread with its own descriptors)" { lost_case thread-unshare-files "CLONE_FILES"; }
@test "zdtm-lost deleted-fifo: refused" { lost_case deleted-fifo "deleted FIFO"; }
@test "zdtm-lost pidfd-reaped: refused" { lost_case pidfd-reaped reaped; }
@test "zdtm-lost pidfd-shared: refused" { lost_case pidfd-shared shares; }
@test "zdtm-lost proc-fd: refused" { lost_case proc-fd "/proc"; }
@test "zdtm-lost deleted-cwd: refused" { lost_case deleted-cwd "deleted"; }
@test "zdtm-lost unix-peercred: restored (SO_PEERCRED of a pair, a connection, one to a child's listener: the same PIDs)" { lost_case unix-peercred restore; }
@test "zdtm-lost unix-scm-rights: refused" { lost_case unix-scm-rights "SCM_RIGHTS"; }
@test "zdtm-lost memfd-sealed-future: refused (a memfd sealed against future writes, mapped shared and writable)" { lost_case memfd-sealed-future "future writes"; }
@test "zdtm-lost memfd-big: refused (a memfd over 1 GiB)" { lost_case memfd-big "1 GiB"; }
@test "zdtm-lost aio-context: refused (an AIO context, io_setup)" { lost_case aio-context "AIO context"; }
@test "zdtm-lost userfaultfd: refused (a user-mode userfaultfd)" { lost_case userfaultfd "userfaultfd"; }
@test "zdtm-lost io-uring: refused (an io_uring instance)" { lost_case io-uring "io_uring"; }
@test "zdtm-lost io-uring-mapped: refused (an io_uring ring mapped, its descriptor closed)" { lost_case io-uring-mapped "io_uring instance"; }
@test "zdtm-lost code32: refused (a thread running 32-bit code)" { lost_case code32 "32-bit code"; }
@test "zdtm-lost sock-filter-unix: refused (a classic filter on a unix socket)" { lost_case sock-filter-unix "socket filter"; }
@test "zdtm-lost sock-filter-udp: refused (a classic filter on a UDP socket)" { lost_case sock-filter-udp "socket filter"; }
@test "zdtm-lost unix-oob: refused (out-of-band data on a unix stream)" { lost_case unix-oob "out-of-band"; }
@test "zdtm-lost perf-event: refused (a perf event counting the task's clock)" { lost_case perf-event "perf_event"; }
@test "zdtm-lost sock-alg: refused (an AF_ALG socket, the kernel's crypto API)" { lost_case sock-alg "AF_ALG"; }
@test "zdtm-lost sock-packet: refused (a packet socket, the container's CAP_NET_RAW)" { lost_case sock-packet "AF_PACKET"; }
@test "zdtm-lost opath-fifo: refused (an O_PATH descriptor of a FIFO)" { lost_case opath-fifo "O_PATH"; }
@test "zdtm-lost pty-unread: refused (bytes waiting on a pty's master)" { lost_case pty-unread "master"; }
@test "zdtm-lost unix-empty-dgram: refused (a zero-length unix datagram)" { lost_case unix-empty-dgram "zero-length"; }
@test "zdtm-lost udp-empty: refused (an empty UDP datagram)" { lost_case udp-empty "empty datagram"; }
@test "zdtm-lost unlinked-dir-gone: refused (an unlinked file whose directory is gone)" { lost_case unlinked-dir-gone "directory is gone"; }
@test "zdtm-lost maps-limit: refused (nearly vm.max_map_count mappings)" { lost_case maps-limit "max_map_count"; }
@test "zdtm-lost tcp-close-wait: refused, naming the state" { lost_case tcp-close-wait "CLOSE_WAIT"; }
@test "zdtm-lost udp-cork: refused (a corked datagram)" { lost_case udp-cork "UDP_CORK"; }
@test "zdtm-lost udp-more: refused (a datagram sent with MSG_MORE, after the wait)" { lost_case udp-more "MSG_MORE"; }
@test "zdtm-lost unix-backlog-data: refused" { lost_case unix-backlog-data "accepted"; }
@test "zdtm-lost timerfd-cancel: refused" { lost_case timerfd-cancel "CANCEL_ON_SET"; }
@test "zdtm-lost inotify-unread: refused" { lost_case inotify-unread "unread"; }
@test "zdtm-lost inotify-nopath: refused" { lost_case inotify-nopath "no path"; }
@test "zdtm-lost fanotify: refused" { lost_case fanotify "fanotify"; }
# SysV IPC and POSIX message queues of the container's IPC namespace
# (runtime/engine/ipc.c): segments, semaphore sets and message queues are
# restored, POSIX queues not yet.
@test "zdtm-lost posix-mq: refused" { lost_case posix-mq "message queue"; }
@test "zdtm-lost posix-mq-closed: refused" { lost_case posix-mq-closed "message queue"; }
# POSIX shared memory in the tmpfs /dev/shm crun mounts for the container
# (PostgreSQL's dynamic_shared_memory_type=posix): a restore mounts a new one.
@test "zdtm-lost posix-shm: refused (a file of the container's own tmpfs /dev/shm)" { lost_case posix-shm "tmpfs"; }
@test "zdtm-lost sem-named: refused (a named POSIX semaphore, a file of the container's own tmpfs /dev/shm)" { lost_case sem-named "tmpfs"; }
@test "zdtm-lost file-relinked: refused (a file open by a removed name, linked under another)" { lost_case file-relinked "lives on under another"; }
@test "zdtm-lost tcp-established: refused (no --tcp-close)" { lost_case tcp-established "established"; }
@test "zdtm-lost tcp-ended: refused (a reset connection's end, its descriptor open; no --tcp-close)" { lost_case tcp-ended "has ended"; }
@test "zdtm-lost tcp-orphan: refused (a connection the container closed still sending, FIN_WAIT1)" { lost_case tcp-orphan "FIN_WAIT1"; }
@test "zdtm-lost accept-queue: refused (connections waiting to be accepted)" { lost_case accept-queue "waiting to be accepted"; }
@test "zdtm-lost accept-queue-outside: refused after its tries, naming --skip-in-flight (a connection waiting from the init's child)" { lost_case accept-queue-outside "skip-in-flight"; }
@test "zdtm-lost mcast-source: refused (a multicast membership with a source filter)" { lost_case mcast-source "source filter"; }
# Not leader-exit here: crun reports a container whose init's main thread
# exited as stopped (no init PID); tests/host/zdtm-process.test covers it.
@test "zdtm-lost orphan-pgrp: refused" { lost_case orphan-pgrp "process group"; }
@test "zdtm-lost orphan-session: refused" { lost_case orphan-session "session"; }
@test "zdtm-lost orphan-session-live: refused (in a live session neither its own nor its parent's)" { lost_case orphan-session-live "neither its own"; }
