#!/usr/bin/env bats
# Failure semantics: a checkpoint that cannot be made leaves the container
# running as it was and no image; a restore that cannot be made leaves no
# process, no crun container, no crest state, and the image untouched. Each
# failure is one line that names the container and the reason.

load helpers
load checkpoint-helpers

setup() {
	requires non-root vm cmd:crest
	cr_setup
}

teardown() {
	teardown_bundle
}

@test "checkpoint of a container with sockets is refused; the container runs on untouched" {
	zdtm_run "sock-$$" socket
	local init before
	init=$(cr_init "sock-$$")
	before=$(cr_ns_pids "sock-$$")
	cr_checkpoint "sock-$$"
	[ "$status" != 0 ] || fail "checkpoint of a container holding sockets succeeded"
	[ "${#lines[@]}" -ge 1 ] || fail "no error message"
	echo "$output" | grep -q "sock-$$\|$init\|PID" || fail "the error names neither the container nor a PID: $output"
	echo "$output" | grep -qi "socket" || fail "the error does not say the descriptor is a socket: $output"
	[ ! -e "$IMAGE" ] || fail "a failed checkpoint left $IMAGE behind"
	ls "$BATS_TEST_TMPDIR" | grep -q '^image\.' && fail "a failed checkpoint left a temporary image: $(ls "$BATS_TEST_TMPDIR")"
	run "$CREST" state "sock-$$"
	assert_success
	[ "$(echo "$output" | jq -r .status)" = running ] || fail "container status after the refusal: $output"
	[ "$(cr_init "sock-$$")" = "$init" ] || fail "the init changed"
	task_untouched "$init" >/dev/null || fail "init left stopped or traced: $(task_untouched "$init")"
	[ "$(cr_ns_pids "sock-$$")" = "$before" ] || fail "tasks changed"
	zdtm_verdict "sock-$$"
}

@test "restore of a corrupted image fails and leaves nothing behind, the image untouched" {
	zdtm_run "cor-$$" heap
	cr_checkpoint "cor-$$"
	[ "$status" = 0 ] || fail "checkpoint failed: $output"
	cr_gone "cor-$$"
	# Flip one byte in the middle of the largest file (the memory pages).
	local f size
	f=$(find "$IMAGE" -type f -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2-)
	size=$(stat -c %s "$f")
	printf '\xa5' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc status=none
	local sum
	sum=$(image_sum "$IMAGE")
	cr_restore "cor-$$"
	[ "$status" != 0 ] || fail "restore of a corrupted image succeeded"
	echo "$output" | grep -q "$(basename "$f")" || fail "the error does not name the corrupted file $(basename "$f"): $output"
	cr_gone "cor-$$"
	local p
	for p in $(pgrep -u "$(id -u)" -x zdtm-heap); do
		grep -q '^State:[[:space:]]*Z' "/proc/$p/status" 2>/dev/null || fail "a task of the image runs: PID $p"
	done
	[ "$(image_sum "$IMAGE")" = "$sum" ] || fail "the failed restore changed the image"
}

@test "restore of a truncated manifest fails with one line naming it" {
	zdtm_run "tr-$$" heap
	cr_checkpoint "tr-$$"
	[ "$status" = 0 ] || fail "checkpoint failed: $output"
	truncate -s 10 "$IMAGE/manifest.json"
	cr_restore "tr-$$"
	[ "$status" != 0 ] || fail "restore of a truncated manifest succeeded"
	echo "$output" | grep -q manifest || fail "the error does not name the manifest: $output"
	cr_gone "tr-$$"
}

@test "restore under the ID of a running container is refused; that container is untouched" {
	zdtm_run "dup-$$" heap
	cr_checkpoint "dup-$$" --leave-running
	[ "$status" = 0 ] || fail "checkpoint failed: $output"
	local init
	init=$(cr_init "dup-$$")
	cr_restore "dup-$$"
	[ "$status" != 0 ] || fail "restore over a running container succeeded"
	echo "$output" | grep -q "dup-$$" || fail "the error does not name the container: $output"
	[ "$(cr_init "dup-$$")" = "$init" ] || fail "the running container changed"
}

@test "checkpoint of a container crest does not know: one line, non-zero" {
	cr_checkpoint "nosuch-$$"
	[ "$status" != 0 ] || fail "checkpoint of an unknown container succeeded"
	[ "${#lines[@]}" = 1 ] || fail "expected one line, got: $output"
	echo "$output" | grep -q "nosuch-$$" || fail "the error does not name the container: $output"
	[ ! -e "$IMAGE" ] || fail "an image was written"
}
