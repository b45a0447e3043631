#!/usr/bin/env bats
# vm-pair: migrate
# Node A of the two-node migration (tests/README.md, "Two nodes"): a
# rootless counter container checkpointed as the kubelet's checkpoint API
# does it (--leave-running, one archive named
# checkpoint-<pod>_<namespace>-<container>-<timestamp>.tar) into the
# directory the nodes share. While node B (migrate-node-b.bats) restores the
# archive, node A makes a live migration of a second counter: two pre-dumps
# while it runs and the final checkpoint with --parent-path, into the share,
# for node B to restore next. Last, the first counter must still run and
# count, node B's restore done. Then a redis container (10,000 keys, its
# client's TCP connection held open inside it) goes the same way, with
# --tcp-established, its /tmp (the client's files) copied beside the
# archive.

load helpers
load checkpoint-helpers
load migrate-helpers
load svc-helpers
load redis-helpers

# The first counter lives across the tests (its own bundle and output under
# the file's directory, which teardown leaves alone); teardown_file ends it.
COUNTER_B=$BATS_FILE_TMPDIR/counter-bundle
COUNTER_OUT=$BATS_FILE_TMPDIR/counter.out

teardown_file() {
	"$CREST" delete --force counter >/dev/null 2>&1 || true
}

@test "node A: a counter container is checkpointed into one archive with --leave-running, and goes on counting" {
	local arch pre init
	cp -a "$BUNDLE" "$COUNTER_B"
	"$CREST" --log "$CR_LOG" run -d --bundle "$COUNTER_B" counter </dev/null >"$COUNTER_OUT" 2>&1 \
		|| { echo "crest run failed" >"$MIG/archive-failed"; fail "crest run: $(tail -3 "$CR_LOG")"; }
	mig_passes "$COUNTER_OUT" 20 || fail "the counter does not count: $(tail -3 "$COUNTER_OUT")"
	init=$(cr_init counter)
	echo "$init" >"$BATS_FILE_TMPDIR/counter-init"
	# The shell (the count ticks in short-lived children, not compared).
	cr_ns_pids counter | grep " sh$" >"$MIG/a-pids"
	pre=$(mig_count "$COUNTER_OUT")
	echo "$pre" >"$MIG/a-count"
	arch=checkpoint-counter_default-counter-$(date -u +%Y-%m-%dT%H:%M:%SZ).tar
	# Written under another name first: node B waits for the final name.
	run "$CREST" checkpoint --leave-running --export "$BATS_TEST_TMPDIR/$arch" counter
	[ "$status" = 0 ] || fail "checkpoint --export: $output"
	cp "$BATS_TEST_TMPDIR/$arch" "$MIG/.$arch" && mv "$MIG/.$arch" "$MIG/$arch" || fail "copy to the share"
	echo "$arch" >"$MIG/archive"
	[ "$(cr_init counter)" = "$init" ] || fail "the container is not the same one after the checkpoint"
	mig_passes "$COUNTER_OUT" "$(mig_count "$COUNTER_OUT")" || fail "the counter stopped after the checkpoint"
}

@test "node A: live migration: two pre-dumps while the counter runs, then the final checkpoint with --parent-path, into the share" {
	local out=$BATS_TEST_TMPDIR/live.out out0=$BATS_TEST_TMPDIR/live0.out init t0 t1
	CONTAINERS+=(live live0)
	"$CREST" --log "$CR_LOG" run -d --bundle "$BUNDLE" live </dev/null >"$out" 2>&1 \
		|| { echo "crest run failed" >"$MIG/live-done"; fail "crest run: $(tail -3 "$CR_LOG")"; }
	# The same counter migrated without pre-dumps, for the downtime figure.
	cp -a "$BUNDLE" "$BATS_TEST_TMPDIR/bundle0"
	"$CREST" --log "$CR_LOG" run -d --bundle "$BATS_TEST_TMPDIR/bundle0" live0 </dev/null >"$out0" 2>&1 \
		|| { echo "crest run failed" >"$MIG/live-done"; fail "crest run: $(tail -3 "$CR_LOG")"; }
	mig_passes "$out0" 20 || fail "the second counter does not count: $(tail -3 "$out0")"
	mkdir -p "$MIG/live"
	t0=$(date +%s%N)
	run "$CREST" checkpoint --image-path "$MIG/live/nopre" live0
	t1=$(date +%s%N)
	[ "$status" = 0 ] || { echo "checkpoint without pre-dumps: $output" >"$MIG/live-done"; fail "checkpoint without pre-dumps: $output"; }
	echo "$(((t1 - t0) / 1000000))" >"$MIG/live-nopre-ms"
	mig_count "$out0" >"$MIG/live-nopre-count"
	mig_passes "$out" 20 || fail "the counter does not count: $(tail -3 "$out")"
	init=$(cr_init live)
	run "$CREST" checkpoint --pre-dump --image-path "$MIG/live/pre1" live
	[ "$status" = 0 ] || { echo "pre-dump 1: $output" >"$MIG/live-done"; fail "pre-dump 1: $output"; }
	[ "$(cr_init live)" = "$init" ] && mig_passes "$out" "$(mig_count "$out")" || fail "the counter stopped after pre-dump 1"
	run "$CREST" checkpoint --pre-dump --image-path "$MIG/live/pre2" --parent-path ../pre1 live
	[ "$status" = 0 ] || { echo "pre-dump 2: $output" >"$MIG/live-done"; fail "pre-dump 2: $output"; }
	mig_passes "$out" "$(mig_count "$out")" || fail "the counter stopped after pre-dump 2"
	cr_ns_pids live | grep " sh$" >"$MIG/live-pids"
	t0=$(date +%s%N)
	run "$CREST" checkpoint --image-path "$MIG/live/final" --parent-path ../pre2 live
	t1=$(date +%s%N)
	[ "$status" = 0 ] || { echo "final checkpoint: $output" >"$MIG/live-done"; fail "final checkpoint: $output"; }
	echo "$(((t1 - t0) / 1000000))" >"$MIG/live-final-ms"
	mig_count "$out" >"$MIG/live-count"
	grep -q '"from"' "$MIG/live/final/tree.json" || fail "the final image takes no page from the pre-dumps"
	echo "# final checkpoint: $(cat "$MIG/live-nopre-ms") ms without pre-dumps ($(du -sk "$MIG/live/nopre" | cut -f1) KiB), $(cat "$MIG/live-final-ms") ms after two ($(du -sk "$MIG/live/pre1" | cut -f1) + $(du -sk "$MIG/live/pre2" | cut -f1) + $(du -sk "$MIG/live/final" | cut -f1) KiB)" >&3
	echo ok >"$MIG/live-done"
}

# A redis test that fails before its archive is in the share tells node B.
teardown() {
	if [ "${REDIS_A:-}" = 1 ] && [ "${BATS_TEST_COMPLETED:-}" != 1 ] && [ ! -e "$MIG/redis-archive" ]; then
		echo FAILED >"$MIG/redis-archive"
	fi
	teardown_bundle
}

@test "node A: a redis container (10,000 keys, a client connection held open) is checkpointed into an archive with --leave-running --tcp-established, its /tmp beside it in the share; it serves on" {
	requires cmd:redis-server cmd:redis-cli
	ID=redis-a
	REDIS_A=1
	local arch before
	rm -rf "$BATS_TEST_TMPDIR/bundle" # the counter's, from setup
	svc_setup
	svc_fifo redis
	CDIR=$SVC
	: >"$SVC/conn.log"
	MARK=0
	redis_start "$ID"
	load_keys
	before=$(client_id)
	[[ $before =~ ^:[0-9]+$ ]] || fail "CLIENT ID: [$before]"
	# The files the client holds in /tmp are copied right after the
	# checkpoint, nothing sent meanwhile: as the checkpoint saw them (the
	# import checks them on node B). No cgroup in the VM, so no pause.
	arch=checkpoint-redis_default-redis-$(date -u +%Y-%m-%dT%H:%M:%SZ).tar
	run "$CREST" checkpoint --leave-running --tcp-established --export "$BATS_TEST_TMPDIR/$arch" "$ID"
	[ "$status" = 0 ] || fail "checkpoint --leave-running --tcp-established --export: $output"
	tar -C "$SVC" -cf "$MIG/.redis-tmp.tar" . && mv "$MIG/.redis-tmp.tar" "$MIG/redis-tmp.tar" \
		|| fail "copying /tmp to the share"
	cp "$BATS_TEST_TMPDIR/$arch" "$MIG/.$arch" && mv "$MIG/.$arch" "$MIG/$arch" || fail "copy to the share"
	echo "$SEED" >"$MIG/redis-seed"
	jq -c .process.args "$BUNDLE/config.json" >"$MIG/redis-args.json"
	echo "$before" >"$MIG/redis-client"
	echo "$arch" >"$MIG/redis-archive"
	echo "# redis archive: $(du -k "$MIG/$arch" | cut -f1) KiB, /tmp $(du -k "$MIG/redis-tmp.tar" | cut -f1) KiB" >&3
	# The original serves on, on the same connection.
	check_keys
	[ "$(client_id)" = "$before" ] || fail "the original's CLIENT ID changed"
	[ "$(grep -c "^svc-conn ended" "$SVC/conn.log")" = 0 ] || fail "the original's connection ended: $(cat "$SVC/conn.log")"
}

@test "node A: the first counter runs on and counts, node B's restore of its archive done" {
	local init
	init=$(cat "$BATS_FILE_TMPDIR/counter-init" 2>/dev/null) || skip "the first counter did not start (test 1 failed)"
	mig_wait b-done 900 || fail "node B never said it was done"
	[ "$(cat "$MIG/b-done")" = ok ] || fail "node B: $(cat "$MIG/b-done")"
	[ "$(cr_init counter)" = "$init" ] || fail "the original container is gone after node B's restore"
	mig_passes "$COUNTER_OUT" "$(mig_count "$COUNTER_OUT")" || fail "the original stopped counting while node B restored"
}
