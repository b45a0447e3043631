#!/usr/bin/env bats
# vm-pair: migrate
# Node B of the two-node migration (tests/README.md, "Two nodes"): waits for
# node A's archive in the shared directory, restores it with --import under a
# new ID from a new bundle path; the count goes on from where it was, in the
# same PIDs. Then a corrupted copy of the archive is refused, creating
# nothing.

load helpers
load checkpoint-helpers
load migrate-helpers

@test "node B: node A's archive restores under a new ID and bundle, the count goes on, the same PIDs" {
	local out=$BATS_TEST_TMPDIR/counter-b.out arch first status_b=
	mig_wait archive 900 || { echo "no archive from node A" >"$MIG/b-done"; fail "node A wrote no archive in 900 s"; }
	arch=$(cat "$MIG/archive")
	cp "$MIG/$arch" "$BATS_TEST_TMPDIR/" || fail "copy from the share"
	CONTAINERS+=(counter-b)
	: >"$CR_LOG"
	if ! "$CREST" --log "$CR_LOG" restore --import "$BATS_TEST_TMPDIR/$arch" --bundle "$BUNDLE" -d counter-b \
		</dev/null >"$out" 2>"$BATS_TEST_TMPDIR/err"; then
		status_b="restore --import failed: $(cat "$BATS_TEST_TMPDIR/err" "$CR_LOG")"
	elif ! mig_passes "$out" 0; then
		status_b="the restored counter does not count"
	else
		first=$(head -1 "$out")
		# The shell's count is in its memory: a fresh start would print 1.
		[ "$first" -gt "$(cat "$MIG/a-count")" ] || status_b="B's first count $first is not past A's $(cat "$MIG/a-count") before the checkpoint"
		[ "$(cr_ns_pids counter-b | grep " sh$")" = "$(cat "$MIG/a-pids")" ] \
			|| status_b="${status_b:+$status_b; }the shell's PID differs: A [$(cat "$MIG/a-pids")] B [$(cr_ns_pids counter-b)]"
		mig_passes "$out" "$(mig_count "$out")" || status_b="${status_b:+$status_b; }B's counter stopped"
	fi
	echo "${status_b:-ok}" >"$MIG/b-done"
	[ -z "$status_b" ] || fail "$status_b"
}

@test "node B: a corrupted copy of the archive is refused in one line, nothing created" {
	local arch size
	mig_wait archive 900 || fail "node A wrote no archive"
	arch=$(cat "$MIG/archive")
	cp "$MIG/$arch" "$BATS_TEST_TMPDIR/bad.tar" || fail "copy from the share"
	size=$(stat -c %s "$BATS_TEST_TMPDIR/bad.tar")
	# 64 bytes of zeros in the middle of the archive (an image file's bytes).
	dd if=/dev/zero of="$BATS_TEST_TMPDIR/bad.tar" bs=1 seek=$((size / 2)) count=64 conv=notrunc 2>/dev/null
	cmp -s "$MIG/$arch" "$BATS_TEST_TMPDIR/bad.tar" && fail "the corruption changed nothing"
	run "$CREST" restore --import "$BATS_TEST_TMPDIR/bad.tar" --bundle "$BUNDLE" -d counter-bad </dev/null
	[ "$status" != 0 ] || { CONTAINERS+=(counter-bad); fail "a corrupted archive was restored"; }
	[ "${#lines[@]}" = 1 ] || fail "not one line: $output"
	cr_gone counter-bad
}
