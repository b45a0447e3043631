#!/usr/bin/env bats
# Checkpoint and restore of a rootless busybox container with a terminal
# (process.terminal): `crest run -d --console-socket S1`, `crest checkpoint`,
# `crest restore -d --console-socket S2`. console-recv holds each pty master:
# it records what the container writes and types what a test writes into
# its FIFO. A container whose task holds a pty of its own beside the
# console is restored on the same pty. tests/host/checkpoint-console.test
# does the same on the host.

load helpers
load checkpoint-helpers

setup() {
	requires non-root vm cmd:crest file:"$PROGS/console-recv" file:"$PROGS/pty-child"
	cr_setup
	RECVS=()
}

teardown() {
	teardown_bundle
	local p
	for p in ${RECVS[@]+"${RECVS[@]}"}; do kill "$p" 2>/dev/null || true; done
}

# `sh -m` keeps /dev/tty open as fd 10 and runs the script as a job in a
# foreground process group of its own; the script turns echo off, counts
# "tick N" in a background loop and answers each line it reads with
# "got: LINE" ("size" also prints the window size).
SCRIPT='stty -echo
( i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.2; done ) &
while read line; do echo "got: $line"; [ "$line" = size ] && stty size; done'

# recv NAME [-s RxC]: a console-recv listening on $BATS_TEST_TMPDIR/NAME.sock,
# recording into NAME.out, typing what is written into NAME.in; its own
# lines in NAME.log.
recv() {
	local name=$1 d=$BATS_TEST_TMPDIR
	shift
	"$PROGS/console-recv" "$@" "$d/$name.sock" "$d/$name.out" "$d/$name.in" >"$d/$name.log" 2>&1 </dev/null 3>&- &
	RECVS+=($!)
	wait_line "listening $d/$name.sock" "$d/$name.log" 10 || fail "console-recv $name did not listen: $(cat "$d/$name.log")"
}

type_line() {
	printf '%s\n' "$2" >"$BATS_TEST_TMPDIR/$1.in"
}

# wait_line LINE FILE SECS: until FILE has LINE (carriage returns dropped).
wait_line() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		tr -d '\r' 2>/dev/null <"$2" | grep -qx -- "$1" && return 0
		sleep 0.1
	done
	return 1
}

ticks() {
	tr -d '\r' 2>/dev/null <"$1" | sed -n 's/^tick \([0-9]*\)$/\1/p'
}

init_of() {
	cr_init "$1"
}

# field N after the name in /proc/PID/stat (3 pgrp, 6 tpgid).
stat_field() {
	sed 's/.*) //' "/proc/$1/stat" | awk -v n="$2" '{ print $n }'
}

nspid() {
	awk '$1 == "NSpid:" { print $NF }' "/proc/$1/status"
}

# The host PID of the script's shell in container ID: the leader of the job
# `sh -m` started (the counting subshell is in its group).
script_pid() {
	local p
	for p in $(cr_tasks "$1"); do
		[ "$(tr '\0' ' ' <"/proc/$p/cmdline")" = "/bin/sh /t.sh " ] || continue
		[ "$(stat_field "$p" 3)" = "$p" ] && { echo "$p"; return 0; }
	done
	return 1
}

# "NSPID CMDLINE" of every task but the sleeps that come and go (a task
# that exits while we look is left out).
stable_tasks() {
	local p ns name cmd
	_task_table "$1" | while IFS=$'\t' read -r p ns _ name; do
		[ "$name" = sleep ] && continue
		cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline") && [ -n "$cmd" ] || continue
		echo "$ns $cmd"
	done | sort -n
}

terminal_bundle() { # ARGS-JSON
	printf '%s\n' "$SCRIPT" >"$BUNDLE/rootfs/t.sh"
	update_config --argjson a "$1" '.process.terminal = true | .process.args = $a'
}

@test "a terminal container restored with a new console socket: output goes on on the new pty, typed input reaches the restored shell" {
	local d=$BATS_TEST_TMPDIR id="tty-$$" init script fg_ns before after last first fds term i
	terminal_bundle '["/bin/sh", "-m", "-c", "/bin/sh /t.sh; echo end"]'
	recv one -s 33x101
	CONTAINERS+=("$id")
	"$CREST" --log "$CR_LOG" run -d --console-socket "$d/one.sock" --bundle "$BUNDLE" "$id" </dev/null >/dev/null 2>&1 \
		|| fail "crest run --console-socket failed: $(tail -3 "$CR_LOG")"
	wait_line "tick 3" "$d/one.out" 60 || fail "no ticks on the first pty: [$(head -c 300 "$d/one.out")]"
	type_line one hello
	wait_line "got: hello" "$d/one.out" 20 || fail "the shell did not read a line typed on the first pty"
	init=$(init_of "$id")
	script=$(script_pid "$id") || fail "no task runs the script"
	[ "$(stat_field "$init" 6)" = "$script" ] || fail "before the checkpoint the foreground group is $(stat_field "$init" 6), not the script's ($script)"
	fg_ns=$(nspid "$script")
	before=$(stable_tasks "$id")

	cr_checkpoint "$id"
	[ "$status" = 0 ] || fail "checkpoint of a terminal container failed: $output"
	cr_gone "$id"
	wait_line closed "$d/one.log" 20 || fail "the first pty is still open after the checkpoint"
	fds=$(jq -r '. as $t | $t.processes[0].fds[] | select(.fd <= 2 or .fd == 10) | "\(.fd) \($t.files[.file] | "\(.type) \(.path)")"' "$IMAGE/tree.json" | tr '\n' ',')
	[ "$fds" = "0 tty /dev/pts/0,1 tty /dev/pts/0,2 tty /dev/pts/0,10 tty /dev/tty," ] || fail "init's descriptors in the image: [$fds]"
	term=$(jq -r '.terminal | "\(.rows) \(.cols) \(.fg_pgid) \(.lflag)"' "$IMAGE/tree.json")
	read -r rows cols fg lflag <<<"$term"
	[ "$rows $cols $fg" = "33 101 $fg_ns" ] && [ $((lflag & 8)) = 0 ] \
		|| fail "terminal in the image: [$term], want 33 101 $fg_ns and ECHO (8) clear in lflag"
	last=$(ticks "$d/one.out" | tail -1)

	recv two
	cr_restore "$id" --console-socket "$d/two.sock"
	[ "$status" = 0 ] || fail "restore --console-socket failed: $output"
	wait_line "tick $((last + 2))" "$d/two.out" 60 || fail "no ticks on the new pty: [$(head -c 300 "$d/two.out")]"
	first=$(ticks "$d/two.out" | head -1)
	[ -n "$last" ] && [ "$first" = $((last + 1)) ] || fail "last tick before the checkpoint [$last], first on the new pty [$first]"
	[ "$(ticks "$d/one.out" | tail -1)" = "$last" ] || fail "the old pty's record grew after the checkpoint"

	type_line two again
	wait_line "got: again" "$d/two.out" 20 || fail "the restored shell did not read a line typed on the new pty: [$(tail -c 300 "$d/two.out")]"
	! tr -d '\r' <"$d/two.out" | grep -qx again || fail "the new pty echoed the typed line: stty -echo was lost"
	type_line two size
	wait_line "33 101" "$d/two.out" 20 || fail "the window size after restore is not 33 101: [$(tail -c 200 "$d/two.out")]"
	init=$(init_of "$id")
	script=$(script_pid "$id") || fail "no task runs the script after restore"
	[ "$(stat_field "$init" 6)" = "$script" ] && [ "$(nspid "$script")" = "$fg_ns" ] \
		|| fail "after restore the foreground group is $(stat_field "$init" 6), not the script's ($script)"
	# The counting loop's child is a copy of the script's shell for the
	# moment between its fork and its exec of sleep: look again then.
	for i in 1 2 3 4 5; do
		after=$(stable_tasks "$id")
		[ "$after" = "$before" ] && break
		sleep 0.1
	done
	[ "$after" = "$before" ] || fail "tasks differ: before [$before] after [$after]"

	"$CREST" delete --force "$id"
	wait_line closed "$d/two.log" 20 || fail "the new pty is still open after crest delete"
}

@test "a container whose task holds a pty of its own beside its console: checkpointed and restored on the same pty" {
	local d=$BATS_TEST_TMPDIR id="pty-$$" init holder= p i before
	terminal_bundle '["/bin/sh", "-c", "'"$CREST_TESTS"'/progs/pty-child sleep 100000; echo end"]'
	recv three
	CONTAINERS+=("$id")
	"$CREST" --log "$CR_LOG" run -d --console-socket "$d/three.sock" --bundle "$BUNDLE" "$id" </dev/null >/dev/null 2>&1 \
		|| fail "crest run --console-socket failed: $(tail -3 "$CR_LOG")"
	init=$(init_of "$id")
	for ((i = 0; i < 300; i++)); do
		for p in $(cat "/proc/$init/task/$init/children" 2>/dev/null); do
			[ "$(readlink "/proc/$p/fd/0")" = /dev/pts/1 ] && holder=$p
		done
		[ -n "$holder" ] && break
		sleep 0.1
	done
	[ -n "$holder" ] || fail "no task of the container got /dev/pts/1 on fd 0"
	before=$(cr_ns_pids "$id")
	cr_checkpoint "$id"
	[ "$status" = 0 ] || fail "checkpoint failed: $output"
	recv five
	"$CREST" --log "$CR_LOG" restore -d --console-socket "$d/five.sock" --image-path "$IMAGE" --bundle "$BUNDLE" "$id" </dev/null >/dev/null 2>&1 \
		|| fail "restore failed: $(tail -3 "$CR_LOG")"
	[ "$(cr_ns_pids "$id")" = "$before" ] || fail "tasks changed: before [$before] after [$(cr_ns_pids "$id")]"
	init=$(init_of "$id") holder=
	for p in $(cat "/proc/$init/task/$init/children" 2>/dev/null); do
		[ "$(readlink "/proc/$p/fd/0")" = /dev/pts/1 ] && holder=$p
	done
	[ -n "$holder" ] || fail "after restore no task has /dev/pts/1 on fd 0"
	[ "$(readlink "/proc/$holder/fd/2")" = /dev/pts/1 ] || fail "fd 2 is $(readlink "/proc/$holder/fd/2")"
}
