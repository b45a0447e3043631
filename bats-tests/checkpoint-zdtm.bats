#!/usr/bin/env bats
# vm-kernel: stock patched
# vm-only: patched zdtm-(shm-anon|shm-tree|shm-sparse|memfd|deleted-map|shared-file|caps|zombie|nonroot|inet-tcp-est)
# Every zdtm program (tests/README.md) as the init of a rootless
# busybox container: checkpoint, restore, what /proc shows of its tasks
# compared (cr_procstate_same), then the program checks its own state.
# The same programs run in process mode on the host
# (tests/host/zdtm-process.test). On the stock kernel, the one users run,
# all of them; on the patched kernel those whose path it changes: memory
# objects read through map_files (shm-*, memfd*, deleted-map,
# shared-file), the bounding set's exact drop of capability 40 (caps,
# zombie, nonroot) and TCP_REPAIR in a container (inet-tcp-est).

load helpers
load checkpoint-helpers

setup() {
	requires non-root vm cmd:crest
	cr_setup
}

teardown() {
	# Images are not needed once a test is over; kept, they fill the VM's
	# /tmp (a tmpfs) with the bundles (teardown_bundle removes those).
	teardown_bundle "$IMAGE"
}

zdtm_cycle() {
	local prog=$1 id="z-$1-$$" before after
	zdtm_run "$id" "$prog"
	before=$(cr_ns_pids "$id")
	cr_procstate "$id" "$BATS_TEST_TMPDIR/proc"
	# shellcheck disable=SC2086 # ZDTM_CKPT_FLAGS: zero or more flags
	cr_checkpoint "$id" ${ZDTM_CKPT_FLAGS:-}
	[ "$status" = 0 ] || fail "checkpoint of zdtm-$prog failed: $output"
	cr_gone "$id"
	local sum
	sum=$(image_stamp "$IMAGE")
	cr_restore "$id"
	[ "$status" = 0 ] || fail "restore of zdtm-$prog failed: $output"
	[ "$(image_stamp "$IMAGE")" = "$sum" ] || fail "restore changed the image"
	after=$(cr_ns_pids "$id")
	[ "$after" = "$before" ] || fail "PIDs and names differ: before [$before] after [$after]"
	cr_procstate_same "$id" "$BATS_TEST_TMPDIR/proc"
	zdtm_verdict "$id"
}

# On the stock kernel the programs of the plain cycle run together, for
# time (a container costs about 2 s under TCG, a program's state a fraction
# of it): one container whose init, zdtm-batch, starts each program in a
# child of its own (its own directory of /tmp, its own ready and result
# files), one checkpoint, one restore, /proc compared for the whole tree,
# then each program's own check, a point each (batch_run). On the patched
# kernel only the programs whose path it changes run (vm-only above), each
# alone; the others run alone there too when asked for. Alone on both:
# those the patched kernel runs, and those of a config or flags of their
# own (chroot, nonroot, stopped as UID 1000, shm-tree's image, inet-tcp-*).
# The batch's test reports each program's own verdict as a point of its
# own, "zdtm-PROG in a container (BATCH_NOTE[PROG])" (batch_points).
ZDTM_BATCH="anon-mem heap file-private vm-account vm-apart threads ptree fds unlinked pipe signals itimer posix-timers pidfd rlimits task-misc sched exe-mm regs stopped cow eventfd timerfd signalfd epoll inotify sysv-ipc sysv-shm unix-sk inet-listen inet-udp inet-v6 inet-mcast netlink pty"

BATCH_NOTE=(
	[stopped]="children in a group stop stay stopped"
	# runtime/engine/mem-cow.c: still shared after restore, as smaps shows
	[cow]="private memory shared copy-on-write, shared again"
	[eventfd]="count, semaphore mode, flags, shared"
	[timerfd]="clocks, time left, intervals, absolute, unread expirations"
	[signalfd]="masks, flags, pending signals read through it"
	[epoll]="targets: numbers, events, data; nested, shared"
	[inotify]="watches: numbers, masks, paths"
	[sysv-ipc]="semaphore sets, message queues, same IDs"
	[sysv-shm]="segments: contents, attachments at the same addresses, same IDs"
	[unix-sk]="unix socket pairs, listener with backlog, names, queues, shutdown, options"
	[inet-listen]="TCP: listening with its backlog, bound, unbound; options"
	[inet-udp]="UDP: bound, connected, queued datagrams with their sources"
	[inet-v6]="IPv6 TCP and UDP, IPV6_V6ONLY, a dual-stack listener"
	[inet-mcast]="UDP multicast groups, IPv4 and IPv6, multicast interfaces"
	[netlink]="rtnetlink with groups and flags, generic netlink at its own port"
	[pty]="a pty both ends of which the tree holds: controlling terminal, foreground group, raw mode"
)

@test "zdtm programs in one container (zdtm-batch, stock kernel): checkpoint, gone, restore, /proc the same for every task; each program a point of its own" {
	[ "${CREST_KERNEL:-}" = stock ] || skip "the batch runs on the stock kernel (the patched one runs its programs alone)"
	local p progs=()
	# shellcheck disable=SC2086 # a list of names
	batch_announce $ZDTM_BATCH
	for p in $ZDTM_BATCH; do progs+=("$PROGS/zdtm-$p"); done
	# shellcheck disable=SC2086
	batch_run $ZDTM_BATCH -- "$PROGS/zdtm-batch" /tmp/ready /tmp/result "${progs[@]}"
	# shellcheck disable=SC2086
	batch_points "zdtm-%s in a container" $ZDTM_BATCH
	batch_point
}

@test "zdtm-caps in a container" { zdtm_cycle caps; }
@test "zdtm-zombie in a container" { zdtm_cycle zombie; }
# A supervisor init, blocked in wait4(-1): it reaps no PID it never made
# (the restore's finishing helper is reaped before its own code runs).
@test "zdtm-reaper in a container (an init that waits for any child)" { zdtm_cycle reaper; }
@test "zdtm-chroot in a container (its config gives CAP_SYS_CHROOT)" {
	update_config '.process.capabilities |= with_entries(if .key == "bounding" or .key == "permitted" or .key == "effective" then .value += ["CAP_SYS_CHROOT"] else . end)'
	zdtm_cycle chroot
}

# other_uids: the config gives CAP_SETUID and CAP_SETGID and maps
# subordinate IDs (1..65535 of the container), and /tmp takes their files.
other_uids() {
	local sub
	sub=$(awk -F: -v u="$(id -un)" '$1 == u { print $2; exit }' /etc/subuid)
	[ -n "$sub" ] || fail "no subordinate UIDs for $(id -un) in /etc/subuid"
	update_config '.process.capabilities |= with_entries(if .key == "bounding" or .key == "permitted" or .key == "effective" then .value += ["CAP_SETUID", "CAP_SETGID"] else . end)
		| .linux.uidMappings = [{containerID: 0, hostID: '"$(id -u)"', size: 1}, {containerID: 1, hostID: '"$sub"', size: 65535}]
		| .linux.gidMappings = [{containerID: 0, hostID: '"$(id -g)"', size: 1}, {containerID: 1, hostID: '"$sub"', size: 65535}]'
	chmod 1777 "$BUNDLE/rootfs/tmp"
}

@test "zdtm-nonroot in a container (tasks under UID 1000 of the container: its config gives CAP_SETUID and CAP_SETGID and maps subordinate IDs)" {
	other_uids
	zdtm_cycle nonroot
}

@test "zdtm-stopped as UID 1000 in a container (a parent of another UID than the restorer's has its children's stops reported once)" {
	other_uids
	zdtm_cycle stopped
}

# Memory with no path to open again (runtime/engine/shmem.c): on the stock
# kernel crest reads it without map_files, on the patched one through it;
# the result must be the same.
@test "zdtm-shm-anon in a container (shared anonymous memory)" { zdtm_cycle shm-anon; }
@test "zdtm-shm-sparse in a container (large shared objects holding little: saved and restored without their holes)" { zdtm_cycle shm-sparse; }

@test "zdtm-shm-tree in a container (one shared object, three processes, saved once)" {
	local id="z-shm-tree-$$" before after files
	zdtm_run "$id" shm-tree
	before=$(cr_ns_pids "$id")
	cr_procstate "$id" "$BATS_TEST_TMPDIR/proc"
	cr_checkpoint "$id"
	[ "$status" = 0 ] || fail "checkpoint of zdtm-shm-tree failed: $output"
	cr_gone "$id"
	files=("$IMAGE"/memfile-*.img)
	[ "${#files[@]}" = 1 ] || fail "expected one memory file for the one object, got: ${files[*]}"
	[ "$(stat -c %s "${files[0]}")" = $((64 * 4096)) ] \
		|| fail "memory file ${files[0]}: $(stat -c %s "${files[0]}") bytes, expected the object's $((64 * 4096))"
	cr_restore "$id"
	[ "$status" = 0 ] || fail "restore of zdtm-shm-tree failed: $output"
	after=$(cr_ns_pids "$id")
	[ "$after" = "$before" ] || fail "PIDs and names differ: before [$before] after [$after]"
	cr_procstate_same "$id" "$BATS_TEST_TMPDIR/proc"
	zdtm_verdict "$id"
}
@test "zdtm-memfd in a container (descriptors: name, size, seals, contents, offset; shared with a mapping)" { zdtm_cycle memfd; }
@test "zdtm-memfd-closed in a container (a memfd mapped, its descriptor closed)" { zdtm_cycle memfd-closed; }
@test "zdtm-deleted-map in a container (mappings of a deleted file)" { zdtm_cycle deleted-map; }
@test "zdtm-shared-file in a container (a shared file mapping with mixed protections)" { zdtm_cycle shared-file; }
@test "zdtm-inet-tcp-close in a container (checkpoint --tcp-close: the connection comes back closed)" {
	update_config '.process.env += ["ZDTM_TCP_CLOSE=1"]'
	ZDTM_CKPT_FLAGS=--tcp-close zdtm_cycle inet-tcp-close
}
# The restorer holds CAP_CHECKPOINT_RESTORE, not CAP_NET_ADMIN: TCP_REPAIR
# is open to it on the patched kernel; on a stock one crest outside, the
# owner of the container's user namespace, puts its sockets in repair mode
# for it (docs/engine.md, "--tcp-established").
@test "zdtm-inet-tcp-est in a container (--tcp-established: sequence numbers, queues, window through TCP_REPAIR; on a stock kernel repair mode set by crest outside)" {
	ZDTM_CKPT_FLAGS=--tcp-established zdtm_cycle inet-tcp-est
}
