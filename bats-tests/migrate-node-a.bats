#!/usr/bin/env bats
# vm-pair: migrate
# Node A of the two-node migration (tests/README.md, "Two nodes"): a
# rootless counter container checkpointed as the kubelet's checkpoint API
# does it (--leave-running, one archive named
# checkpoint-<pod>_<namespace>-<container>-<timestamp>.tar) into the
# directory the nodes share; the original goes on counting while node B
# (migrate-node-b.bats) restores the archive, and after.

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
