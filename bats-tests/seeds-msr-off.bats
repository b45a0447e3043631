#!/usr/bin/env bats
# vm-as: root
# vm-cmdline: msr.allow_writes=off
# Seed 008, MSR write filter: with msr.allow_writes=off a write to
# /dev/cpu/0/msr fails with EPERM while reads keep working.

load helpers

@test "msr.allow_writes=off: the module parameter says off" {
	requires root
	run cat /sys/module/msr/parameters/allow_writes
	assert_output off
}

@test "msr.allow_writes=off: reading an MSR works" {
	requires root file:/dev/cpu/0/msr
	run "$PROGS/msr" read "$MSR"
	assert_success
	assert_output --regexp '^0x[0-9a-f]{16}$'
}

@test "msr.allow_writes=off: writing the same value back fails with EPERM, and taints nothing" {
	requires root file:/dev/cpu/0/msr
	local value taint_before
	value=$("$PROGS/msr" read "$MSR")
	taint_before=$(cat /proc/sys/kernel/tainted)
	run "$PROGS/msr" write "$MSR" "$value"
	assert_failure 1
	assert_output EPERM
	[ "$("$PROGS/msr" read "$MSR")" = "$value" ]
	[ "$(cat /proc/sys/kernel/tainted)" = "$taint_before" ] || fail "tainted: $taint_before -> $(cat /proc/sys/kernel/tainted)"
}
