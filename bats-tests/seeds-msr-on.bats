#!/usr/bin/env bats
# vm-as: root
# vm-cmdline: msr.allow_writes=on
# Seed 008, MSR write filter: with msr.allow_writes=on writes go through, and
# without the warning of the default mode.

load helpers

@test "msr.allow_writes=on: the module parameter says on" {
	requires root
	run cat /sys/module/msr/parameters/allow_writes
	assert_output on
}

@test "msr.allow_writes=on: writing the same value back works, the kernel is tainted, and nothing is logged" {
	requires root file:/dev/cpu/0/msr
	local value
	value=$("$PROGS/msr" read "$MSR")
	run "$PROGS/msr" write "$MSR" "$value"
	assert_success
	assert_output --regexp '^pid [0-9]+$'
	[ "$("$PROGS/msr" read "$MSR")" = "$value" ]
	assert_taint_cpu_out_of_spec
	run dmesg
	refute_output --partial "Write to unrecognized MSR"
}
