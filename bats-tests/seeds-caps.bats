#!/usr/bin/env bats
# Seed 001: the kernel knows CAP_CHECKPOINT_RESTORE, capability 40.

load helpers

@test "cap_last_cap is at least 40: the kernel knows CAP_CHECKPOINT_RESTORE" {
	local last
	last=$(cat /proc/sys/kernel/cap_last_cap)
	[[ "$last" =~ ^[0-9]+$ ]] || fail "cap_last_cap is not a number: '$last'"
	[ "$last" -ge "$CAP_CHECKPOINT_RESTORE" ] || fail "cap_last_cap is $last, below 40"
}

@test "capsh --decode names capability 40 cap_checkpoint_restore, and 40 alone" {
	run capsh --decode="$(cap_bit "$CAP_CHECKPOINT_RESTORE")"
	assert_success
	assert_output "0x$(cap_bit "$CAP_CHECKPOINT_RESTORE")=cap_checkpoint_restore"
}

@test "capget and prctl agree with /proc on all five sets, and no bit lies above cap_last_cap" {
	local last set
	last=$(cat /proc/sys/kernel/cap_last_cap)
	run "$PROGS/caps"
	assert_success
	for set in Inh Prm Eff Bnd Amb; do
		# The program and this awk are both plain children of this shell.
		[ "$(cap_line $set)" = "$(awk -v s="Cap$set:" '$1 == s { print $2 }' /proc/self/status)" ] \
			|| fail "Cap$set: the syscalls say $(cap_line $set), /proc says otherwise"
		[ $((0x$(cap_line $set) >> (last + 1))) = 0 ] || fail "Cap$set has a bit above $last"
	done
	# The test user's bounding set still holds capability 40 (the file capability tests need it).
	[ $((0x$(cap_line Bnd) >> CAP_CHECKPOINT_RESTORE & 1)) = 1 ] || fail "capability 40 not in the bounding set"
}

@test "a user namespace can hold CAP_CHECKPOINT_RESTORE as its only capability" {
	requires userns
	run in_userns only_cap_cr sh -c "\"$PROGS/caps\"; grep '^Cap' /proc/self/status"
	assert_success
	local set bit
	bit=$(cap_bit "$CAP_CHECKPOINT_RESTORE")
	for set in Prm Eff Bnd; do
		[ "$(cap_line "$set")" = "$bit" ] || fail "Cap$set is $(cap_line "$set"), expected $bit"
	done
	# The same five lines from capget/prctl and from /proc.
	[ "$(grep -c "^Cap.*$bit" <<<"$output")" = 6 ] || fail "capget and /proc disagree: $output"
}
