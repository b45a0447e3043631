#!/usr/bin/env bats
# vm-pair: migrate
# Node B of the two-node migration (tests/README.md, "Two nodes"): waits for
# node A's archive in the shared directory, restores it with --import under a
# new ID from a new bundle path; the count goes on from where it was, in the
# same PIDs. Then a corrupted copy of the archive is refused, creating
# nothing. Then node A's live migration (two pre-dumps, the final
# checkpoint with --parent-path, all in the share) restores from the share.
# Last, node A's redis archive, with its /tmp, restores under a new ID: the
# keys, and the client's TCP connection (the same CLIENT ID).

load helpers
load checkpoint-helpers
load migrate-helpers
load svc-helpers
load redis-helpers

@test "node B: node A's archive restores under a new ID and bundle, the count goes on, the same PIDs" {
	local out=$BATS_TEST_TMPDIR/counter-b.out arch first status_b=
	mig_wait archive 900 || { echo "no archive from node A" >"$MIG/b-done"; fail "node A wrote no archive"; }
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

@test "node B: node A's live migration (two pre-dumps and a final checkpoint in the share) restores under a new ID, the count goes on, the same PIDs" {
	local out=$BATS_TEST_TMPDIR/live-b.out out0=$BATS_TEST_TMPDIR/live0-b.out first t0 t1 t2
	mig_wait live-done 900 || fail "node A's live migration never finished"
	[ "$(cat "$MIG/live-done")" = ok ] || fail "node A: $(cat "$MIG/live-done")"
	CONTAINERS+=(live-b live0-b)
	: >"$CR_LOG"
	cp -a "$BUNDLE" "$BATS_TEST_TMPDIR/bundle0"
	t0=$(date +%s%N)
	"$CREST" --log "$CR_LOG" restore --image-path "$MIG/live/nopre" --bundle "$BATS_TEST_TMPDIR/bundle0" -d live0-b \
		</dev/null >"$out0" 2>"$BATS_TEST_TMPDIR/err" \
		|| fail "restore without pre-dumps: $(cat "$BATS_TEST_TMPDIR/err" "$CR_LOG")"
	t1=$(date +%s%N)
	"$CREST" --log "$CR_LOG" restore --image-path "$MIG/live/final" --bundle "$BUNDLE" -d live-b \
		</dev/null >"$out" 2>"$BATS_TEST_TMPDIR/err" \
		|| fail "restore through the pre-dumps: $(cat "$BATS_TEST_TMPDIR/err" "$CR_LOG")"
	t2=$(date +%s%N)
	# Downtime without the wait between the nodes: A's final checkpoint and
	# B's restore (each node's own clock).
	echo "# downtime (A's final checkpoint + B's restore): 0 pre-dumps $(cat "$MIG/live-nopre-ms") + $(((t1 - t0) / 1000000)) ms, 2 pre-dumps $(cat "$MIG/live-final-ms") + $(((t2 - t1) / 1000000)) ms" >&3
	mig_passes "$out0" 0 || fail "the counter restored without pre-dumps does not count"
	[ "$(head -1 "$out0")" -gt "$(cat "$MIG/live-nopre-count")" ] || fail "B's first count $(head -1 "$out0") (no pre-dumps) is not past A's $(cat "$MIG/live-nopre-count")"
	mig_passes "$out" 0 || fail "the restored counter does not count"
	first=$(head -1 "$out")
	[ "$first" -gt "$(cat "$MIG/live-count")" ] || fail "B's first count $first is not past A's $(cat "$MIG/live-count") at the final checkpoint"
	[ "$(cr_ns_pids live-b | grep " sh$")" = "$(cat "$MIG/live-pids")" ] \
		|| fail "the shell's PID differs: A [$(cat "$MIG/live-pids")] B [$(cr_ns_pids live-b)]"
}

@test "node B: node A's redis archive restores under a new ID with its /tmp: the 10,000 keys, the client's connection goes on (the same CLIENT ID)" {
	requires cmd:redis-server cmd:redis-cli
	local arch t0 t1
	mig_wait redis-archive 900 || fail "node A wrote no redis archive"
	arch=$(cat "$MIG/redis-archive")
	[ "$arch" != FAILED ] || fail "node A's redis checkpoint failed (see node A)"
	rm -rf "$BATS_TEST_TMPDIR/bundle" # the counter's, from setup
	svc_setup
	tar -C "$SVC" -xf "$MIG/redis-tmp.tar" || fail "unpacking node A's /tmp"
	# The same init as node A's (its bundle is made the same way but for the
	# /tmp it binds): the kubelet gives node B the pod's spec.
	update_config ".process.args = $(cat "$MIG/redis-args.json")"
	CDIR=$SVC
	SEED=$(cat "$MIG/redis-seed")
	MARK=0
	cp "$MIG/$arch" "$BATS_TEST_TMPDIR/" || fail "copy from the share"
	CONTAINERS+=(redis-b)
	: >"$CR_LOG"
	t0=$(date +%s.%N)
	"$CREST" --log "$CR_LOG" restore --import "$BATS_TEST_TMPDIR/$arch" --bundle "$BUNDLE" -d redis-b \
		</dev/null >/dev/null 2>"$BATS_TEST_TMPDIR/err" \
		|| fail "restore --import: $(cat "$BATS_TEST_TMPDIR/err" "$CR_LOG")"
	t1=$(date +%s.%N)
	rcmd PING
	[ "$REPLY" = "+PONG" ] || fail "no PONG on the held connection: [$REPLY]"
	echo "# redis restore --import on node B: $(secs "$t0" "$t1") s" >&3
	[ "$(client_id)" = "$(cat "$MIG/redis-client")" ] || fail "CLIENT ID [$(client_id)], node A's [$(cat "$MIG/redis-client")]"
	check_keys
	[ "$(grep -c "^svc-conn ended" "$SVC/conn.log")" = 0 ] || fail "the client's connection ended: $(cat "$SVC/conn.log")"
}
