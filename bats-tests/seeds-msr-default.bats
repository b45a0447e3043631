#!/usr/bin/env bats
# vm-as: root
# vm-cmdline: msr.allow_writes=default
# Seed 008, MSR write filter: in the default mode (asked for explicitly: the
# project's kernel patch may make "off" the built-in default) writes go
# through and the kernel logs its warning, naming the writer.

load helpers

@test "msr.allow_writes=default: the module parameter says default" {
	requires root
	run cat /sys/module/msr/parameters/allow_writes
	assert_output default
}

@test "msr.allow_writes=default: writing the same value back works and the kernel warns about it" {
	requires root file:/dev/cpu/0/msr
	local value pid
	value=$("$PROGS/msr" read "$MSR")
	run "$PROGS/msr" write "$MSR" "$value"
	assert_success
	pid=${output#pid }
	[ "$("$PROGS/msr" read "$MSR")" = "$value" ]
	assert_taint_cpu_out_of_spec
	run dmesg
	assert_output --partial "$(printf 'Write to unrecognized MSR 0x%x by msr (pid: %d)' "$MSR" "$pid")"
}
