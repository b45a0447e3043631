#!/usr/bin/env bats
# vm-kernel: stock
# Pre-dumps (crest checkpoint --pre-dump, then --parent-path): the memory
# is copied while the tree runs, the final checkpoint copies only the pages
# written since, restore reads the rest through the chain of images.
# zdtm-predump writes its memory all along (tests/README.md) and checks
# every page after restore. Process mode: the scenarios of
# predump-scenario.bash, each as PID 1 of `unshare -Urpf`. Container mode:
# the program as a rootless container's init, two pre-dumps.

load helpers
load checkpoint-helpers

teardown() {
	[ -z "${BUNDLE:-}" ] || teardown_bundle
}

SCEN=$BATS_TEST_DIRNAME/predump-scenario.bash

scenario() {
	requires non-root vm cmd:crest cmd:unshare
	local dir=$BATS_TEST_TMPDIR/s
	mkdir -p "$dir"
	cd "$dir"
	run env CREST="$(command -v "$CREST")" PROG="$PROGS/zdtm-predump" ZDTM_PREDUMP_MIB=8 \
		unshare -Urpf --mount-proc bash "$SCEN" "$@"
	echo "$output"
	[ "$status" = 0 ] || fail "scenario $*: $output"
	[[ "$output" == *PASS* ]] || fail "scenario $*: no PASS: $output"
}

@test "process mode: one pre-dump, the final checkpoint takes the clean pages from it, every page restored" { scenario chain 1; }
@test "process mode: three pre-dumps, each the parent of the next, every page restored through the chain" { scenario chain 3; }
@test "process mode: --pre-dump without soft-dirty tracking is refused in one line, the tree runs on" { scenario nosd; }
@test "process mode: a parent pre-dump of another tree is refused in one line" { scenario other-tree; }
@test "process mode: a parent that is a full checkpoint is refused in one line" { scenario not-predump; }
@test "process mode: a missing parent is refused in one line" { scenario missing; }
@test "process mode: a parent page file changed after the checkpoint: restore refuses, nothing left" { scenario corrupt; }
@test "process mode: a parent replaced by another pre-dump: restore refuses, nothing left" { scenario replaced; }
@test "process mode: a pre-dump is not restored by itself" { scenario restore-pre; }

@test "container mode: two pre-dumps, the final checkpoint with --parent-path, every page restored" {
	requires non-root vm cmd:crest
	cr_setup
	local id=pd-$$ init base=$BATS_TEST_TMPDIR
	update_config '.process.env += ["ZDTM_PREDUMP_MIB=8"]'
	zdtm_run "$id" predump
	init=$(cr_init "$id")
	sleep 0.3
	run "$CREST" checkpoint --pre-dump --image-path "$base/pre1" "$id"
	[ "$status" = 0 ] || fail "pre-dump 1: $output"
	[ "$(cr_init "$id")" = "$init" ] || fail "the container does not run on after pre-dump 1"
	sleep 0.3
	run "$CREST" checkpoint --pre-dump --image-path "$base/pre2" --parent-path ../pre1 "$id"
	[ "$status" = 0 ] || fail "pre-dump 2: $output"
	sleep 0.3
	cr_checkpoint "$id" --parent-path "$base/pre2"
	[ "$status" = 0 ] || fail "final checkpoint: $output"
	grep -q '"from"' "$IMAGE/tree.json" || fail "the final image takes no page from its parents"
	cr_gone "$id"
	cr_restore "$id"
	[ "$status" = 0 ] || fail "restore: $output"
	zdtm_verdict "$id"
	teardown_bundle
}
