#!/usr/bin/env bats
# vm-kernel: stock patched
# vm-only: patched counting busybox container, then twice more
# Checkpoint and restore of a rootless busybox container through crest, as
# the test user: the container is gone after a checkpoint, comes back with
# the same PIDs, and goes on counting from where it was; twice more from the
# restored container; with --leave-running; under a new ID. runc's
# tests/integration/checkpoint.bats is the model.

load helpers
load checkpoint-helpers

setup() {
	requires non-root vm cmd:crest
	cr_setup
}

teardown() {
	teardown_bundle
}

# A shell that counts in a loop, forking `sleep` each time, with a long
# sleep in the background: two processes with stable PIDs, and a third
# that comes and goes. Every value is appended to /tmp/counts (one write,
# the file opened and closed each time), so a test sees every step however
# slowly it polls.
COUNTER='sleep 100000 & i=0; while :; do i=$((i+1)); echo $i >> /tmp/counts; sleep 0.1; done'

count() {
	tail -n 1 "$(in_rootfs /tmp/counts)" 2>/dev/null || echo 0
}

lines() {
	wc -l <"$(in_rootfs /tmp/counts)" 2>/dev/null || echo 0
}

# Stable tasks only: the shell and its background sleep.
stable_pids() {
	cr_ns_pids "$1" | grep -v ' sleep$' || true
	local p ns _ argv
	while IFS=$'\t' read -r p ns _; do
		# One of the shell's short sleeps may have ended since it was listed.
		{ mapfile -d '' -t argv <"/proc/$p/cmdline"; } 2>/dev/null || continue
		[ "${argv[0]:-}" = sleep ] && [ "${argv[1]:-}" = 100000 ] || continue
		echo "$ns sleep 100000"
	done < <(_task_table "$1")
	return 0
}

# Wait until the count moves past $1; print the first new value seen.
next_count() {
	local before=$1 c i
	for ((i = 0; i < 1500; i++)); do
		c=$(count)
		[ "$c" != "$before" ] && { echo "$c"; return 0; }
		sleep 0.02
	done
	echo "stuck-at-$before"
}

# The value written right after line $1 of the log (waiting for it).
value_after_line() {
	local n=$1 i
	for ((i = 0; i < 1500; i++)); do
		[ "$(lines)" -gt "$n" ] && { sed -n "$((n + 1))p" "$(in_rootfs /tmp/counts)"; return 0; }
		sleep 0.02
	done
	echo "nothing-after-line-$n"
}

# checkpoint ID, check it is gone and frozen in time, restore as NEW_ID,
# check PIDs and that counting resumes where it stopped.
cycle() {
	local id=$1 new_id=$2 pids_before c_ckpt n_ckpt first

	pids_before=$(stable_pids "$id")
	[ "$(echo "$pids_before" | awk '$1 == 1' | wc -l)" = 1 ] || fail "no init with PID 1 in: $pids_before"
	rm -rf "$IMAGE"
	cr_checkpoint "$id"
	[ "$status" = 0 ] || fail "checkpoint of $id failed: $output"
	cr_gone "$id"
	c_ckpt=$(count)
	n_ckpt=$(lines)
	sleep 1
	[ "$(count)" = "$c_ckpt" ] || fail "the count moved from $c_ckpt to $(count) after the checkpoint: something still runs"

	cr_restore "$new_id"
	[ "$status" = 0 ] || fail "restore of $new_id failed: $output"
	# Whether the loop was stopped before or after its write, the next value
	# it appends is the one after the last in the log.
	first=$(value_after_line "$n_ckpt")
	[ "$first" = $((c_ckpt + 1)) ] || fail "after restore the count went from $c_ckpt to $first (expected $((c_ckpt + 1)))"
	local pids_after
	pids_after=$(stable_pids "$new_id")
	[ "$pids_after" = "$pids_before" ] || fail "PIDs inside the container differ: before [$pids_before] after [$pids_after]"
}

@test "checkpoint and restore a counting busybox container, then twice more from the restored one" {
	cr_run "cnt-$$" /bin/sh -c "$COUNTER"
	next_count 0 >/dev/null
	next_count "$(count)" >/dev/null
	cycle "cnt-$$" "cnt-$$"
	cycle "cnt-$$" "cnt-$$"
	cycle "cnt-$$" "cnt-$$"
}

@test "restore under a new ID: the old one stays gone" {
	cr_run "old-$$" /bin/sh -c "$COUNTER"
	next_count 0 >/dev/null
	cycle "old-$$" "new-$$"
	cr_gone "old-$$"
	run "$CREST" state "new-$$"
	assert_success
}

@test "checkpoint --leave-running: the container runs on; the image restores the moment of the checkpoint" {
	cr_run "lr-$$" /bin/sh -c "$COUNTER"
	next_count 0 >/dev/null
	local pid_before c_ckpt
	pid_before=$(cr_init "lr-$$")
	local c_pre
	c_pre=$(count)
	cr_checkpoint "lr-$$" --leave-running
	assert_success
	c_ckpt=$(count)
	[ "$(cr_init "lr-$$")" = "$pid_before" ] || fail "the init changed across --leave-running"
	next_count "$c_ckpt" >/dev/null
	next_count "$(count)" >/dev/null
	local c_now
	c_now=$(count)
	[ "$c_now" -gt "$c_ckpt" ] || fail "the container did not run on (count $c_ckpt, then $c_now)"
	task_untouched "$pid_before" >/dev/null || fail "init is not running untraced: $(task_untouched "$pid_before")"

	local c_final
	c_final=$(next_count "$c_now")
	"$CREST" delete --force "lr-$$"
	cr_gone "lr-$$"
	# Counted before the restore: the file grows again only once the
	# restored loop writes, and its first line is the one after these.
	local n_dead first
	n_dead=$(lines)
	cr_restore "lr-$$"
	[ "$status" = 0 ] || fail "restore failed: $output"
	first=$(value_after_line "$n_dead")
	# Back in time: the restored loop counts on from the moment of the dump,
	# which lies between the count read before the checkpoint and the one
	# read after it returned (the loop may have been frozen between its
	# increment and its write), well before where the original got to.
	[ "$first" -gt "$c_pre" ] && [ "$first" -le $((c_ckpt + 2)) ] && [ "$first" -lt "$c_final" ] \
		|| fail "restored count $first is not the checkpoint's moment (before $c_pre, after $c_ckpt, original reached $c_final)"
}

@test "a container whose stdout is a host file: restore reattaches it to the restore's stdout" {
	local out1=$BATS_TEST_TMPDIR/out1 out2=$BATS_TEST_TMPDIR/out2 last first
	update_config '.process.args = ["'"$PROGS"'/zdtm-stdio", "/tmp/ready", "/tmp/result"]'
	CONTAINERS+=("out-$$")
	"$CREST" --log "$CR_LOG" run -d --bundle "$BUNDLE" "out-$$" </dev/null >"$out1" 2>&1 || fail "crest run failed: $(cat "$CR_LOG")"
	wait_file "$(in_rootfs /tmp/ready)" 120 || fail "zdtm-stdio never became ready"
	sleep 0.5
	cr_checkpoint "out-$$"
	[ "$status" = 0 ] || fail "checkpoint failed: $output"
	[ "$(jq -r '. as $t | $t.processes[0].fds[] | select(.fd == 1) | $t.files[.file].type' "$IMAGE/tree.json")" = inherited ] \
		|| fail "fd 1 is not inherited in the image"
	last=$(sed -n 's/^tick //p' "$out1" | tail -1)
	CONTAINERS+=("out-$$")
	"$CREST" --log "$CR_LOG" restore -d --image-path "$IMAGE" --bundle "$BUNDLE" "out-$$" </dev/null >"$out2" 2>&1 \
		|| fail "restore failed: $(cat "$CR_LOG")"
	local i
	for ((i = 0; i < 300; i++)); do
		grep -q '^tick ' "$out2" && break
		sleep 0.1
	done
	first=$(sed -n 's/^tick //p' "$out2" | head -1)
	[ -n "$last" ] && [ "$first" = $((last + 1)) ] || fail "last tick before checkpoint [$last], first in the restore's stdout [$first]"
	[ "$(sed -n 's/^tick //p' "$out1" | tail -1)" = "$last" ] || fail "the first file grew after the checkpoint"
	zdtm_verdict "out-$$"
}

# The counter forking a `sleep` every 10 ms: a checkpoint nearly always meets
# a child running, exiting, or a zombie whose SIGCHLD is pending in the shell.
FAST_COUNTER='sleep 100000 & i=0; while :; do i=$((i+1)); echo $i >> /tmp/counts; sleep 0.01; done'

@test "checkpoint --leave-running ten times in a row while the shell forks a sleep every 10 ms; the last image restores" {
	cr_run "busy-$$" /bin/sh -c "$FAST_COUNTER"
	next_count 0 >/dev/null
	local pid_before k c_pre c_ckpt c_final n_now first
	pid_before=$(cr_init "busy-$$")
	for ((k = 1; k <= 10; k++)); do
		rm -rf "$IMAGE"
		c_pre=$(count)
		cr_checkpoint "busy-$$" --leave-running
		[ "$status" = 0 ] || fail "checkpoint $k of 10 failed: $output"
		[ "$(cr_init "busy-$$")" = "$pid_before" ] || fail "the init changed at checkpoint $k"
		task_untouched "$pid_before" >/dev/null \
			|| fail "init is not running untraced after checkpoint $k: $(task_untouched "$pid_before")"
	done
	c_ckpt=$(count)
	sleep 1
	c_final=$(next_count "$(count)")
	[ "$c_final" -gt "$c_ckpt" ] || fail "the container did not run on (count $c_ckpt, then $c_final)"
	"$CREST" delete --force "busy-$$"
	cr_gone "busy-$$"
	n_now=$(lines)
	cr_restore "busy-$$"
	[ "$status" = 0 ] || fail "restore failed: $output"
	first=$(value_after_line "$n_now")
	# Back to the moment of the last checkpoint: after the count read
	# before it, before where the original got to a second later.
	[ "$first" -gt "$c_pre" ] && [ "$first" -lt "$c_final" ] \
		|| fail "restored count $first is not the last checkpoint's moment (before $c_pre, after $c_ckpt, original reached $c_final)"
	c_final=$(next_count "$first")
	[ "$c_final" -gt "$first" ] || fail "the restored container does not count on ($first, then $c_final)"
}
