#!/usr/bin/env bats
# vm-pair: migrate
# Node A of the two-node migration (tests/README.md, "Two nodes"): a
# rootless counter container checkpointed as the kubelet's checkpoint API
# does it (--leave-running, one archive named
# checkpoint-<pod>_<namespace>-<container>-<timestamp>.tar) into the
# directory the nodes share; the original goes on counting while node B
# (migrate-node-b.bats) restores the archive, and after. Then a live
# migration: two pre-dumps of a second counter while it runs and the final
# checkpoint with --parent-path, into the share, for node B to restore.

load helpers
load checkpoint-helpers
load migrate-helpers

@test "node A: a counter container is checkpointed into one archive with --leave-running, and goes on counting while node B restores it" {
	local out=$BATS_TEST_TMPDIR/counter.out arch pre init
	CONTAINERS+=(counter)
	"$CREST" --log "$CR_LOG" run -d --bundle "$BUNDLE" counter </dev/null >"$out" 2>&1 \
		|| fail "crest run: $(tail -3 "$CR_LOG")"
	mig_passes "$out" 20 || fail "the counter does not count: $(tail -3 "$out")"
	init=$(cr_init counter)
	# The shell (the count ticks in short-lived children, not compared).
	cr_ns_pids counter | grep " sh$" >"$MIG/a-pids"
	pre=$(mig_count "$out")
	echo "$pre" >"$MIG/a-count"
	arch=checkpoint-counter_default-counter-$(date -u +%Y-%m-%dT%H:%M:%SZ).tar
	# Written under another name first: node B waits for the final name.
	run "$CREST" checkpoint --leave-running --export "$BATS_TEST_TMPDIR/$arch" counter
	[ "$status" = 0 ] || fail "checkpoint --export: $output"
	cp "$BATS_TEST_TMPDIR/$arch" "$MIG/.$arch" && mv "$MIG/.$arch" "$MIG/$arch" || fail "copy to the share"
	echo "$arch" >"$MIG/archive"
	[ "$(cr_init counter)" = "$init" ] || fail "the container is not the same one after the checkpoint"
	mig_passes "$out" "$(mig_count "$out")" || fail "the counter stopped after the checkpoint"
	mig_wait b-done 900 || fail "node B never said it was done"
	[ "$(cat "$MIG/b-done")" = ok ] || fail "node B: $(cat "$MIG/b-done")"
	[ "$(cr_init counter)" = "$init" ] || fail "the original container is gone after node B's restore"
	mig_passes "$out" "$(mig_count "$out")" || fail "the original stopped counting while node B restored"
}

@test "node A: live migration: two pre-dumps while the counter runs, then the final checkpoint with --parent-path, into the share" {
	local out=$BATS_TEST_TMPDIR/live.out init
	CONTAINERS+=(live)
	"$CREST" --log "$CR_LOG" run -d --bundle "$BUNDLE" live </dev/null >"$out" 2>&1 \
		|| { echo "crest run failed" >"$MIG/live-done"; fail "crest run: $(tail -3 "$CR_LOG")"; }
	mig_passes "$out" 20 || fail "the counter does not count: $(tail -3 "$out")"
	init=$(cr_init live)
	mkdir -p "$MIG/live"
	run "$CREST" checkpoint --pre-dump --image-path "$MIG/live/pre1" live
	[ "$status" = 0 ] || { echo "pre-dump 1: $output" >"$MIG/live-done"; fail "pre-dump 1: $output"; }
	[ "$(cr_init live)" = "$init" ] && mig_passes "$out" "$(mig_count "$out")" || fail "the counter stopped after pre-dump 1"
	run "$CREST" checkpoint --pre-dump --image-path "$MIG/live/pre2" --parent-path ../pre1 live
	[ "$status" = 0 ] || { echo "pre-dump 2: $output" >"$MIG/live-done"; fail "pre-dump 2: $output"; }
	mig_passes "$out" "$(mig_count "$out")" || fail "the counter stopped after pre-dump 2"
	cr_ns_pids live | grep " sh$" >"$MIG/live-pids"
	run "$CREST" checkpoint --image-path "$MIG/live/final" --parent-path ../pre2 live
	[ "$status" = 0 ] || { echo "final checkpoint: $output" >"$MIG/live-done"; fail "final checkpoint: $output"; }
	mig_count "$out" >"$MIG/live-count"
	grep -q '"from"' "$MIG/live/final/tree.json" || fail "the final image takes no page from the pre-dumps"
	echo ok >"$MIG/live-done"
}
