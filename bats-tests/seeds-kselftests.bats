#!/usr/bin/env bats
# vm-as: root
# Seeds 002-004: the kernel tree's own clone3 selftests, built from the tree
# the VM kernel was built from.  Both need root: clone3_set_tid skips most of
# its cases otherwise, clone3_cap_checkpoint_restore changes its UID and its
# capabilities itself.

load helpers

KSELFTESTS=$CREST_TESTS/kselftests

# Run one kselftest binary (TAP) and check its results: a plan, as many
# results as planned, at least one ok, no "not ok", no skip (as root none of
# these cases has a reason to skip), and exit status 0.
run_kselftest() {
	local bin=$KSELFTESTS/$1 plan oks notoks skips
	[ -x "$bin" ] || fail "$bin is missing from the image (kernel/selftests/list?)"
	run "$bin"
	plan=$(grep -m1 -oE '^1\.\.[0-9]+' <<<"$output" | cut -d. -f3)
	oks=$(grep -cE '^ok [0-9]+' <<<"$output" || true)
	notoks=$(grep -cE '^not ok [0-9]+' <<<"$output" || true)
	skips=$(grep -ciE '^ok [0-9]+.*# *skip' <<<"$output" || true)
	echo "# $1: plan ${plan:-none}, $oks ok ($skips skipped), $notoks not ok, exit $status" >&3
	[ -n "$plan" ] || fail "$1 printed no TAP plan: $output"
	[ "$notoks" = 0 ] || fail "$1: $notoks failed: $(grep -E '^not ok' <<<"$output")"
	[ "$skips" = 0 ] || fail "$1: $skips skipped as root: $(grep -iE '^ok.*# *skip' <<<"$output")"
	[ "$oks" -ge 1 ] || fail "$1: no passing result"
	[ "$oks" = "$plan" ] || fail "$1: $oks results for a plan of $plan"
	[ "$status" = 0 ] || fail "$1 exited with status $status"
}

@test "kselftest clone3/clone3_set_tid passes (as root)" {
	requires root
	run_kselftest clone3/clone3_set_tid
}

@test "kselftest clone3/clone3_cap_checkpoint_restore passes (as root; it drops to UID 65534 itself)" {
	requires root
	run_kselftest clone3/clone3_cap_checkpoint_restore
}
