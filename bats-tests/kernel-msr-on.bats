#!/usr/bin/env bats
# vm-as: root
# vm-cmdline: msr.allow_writes=on
# The patched kernel refuses MSR writes by default (CONFIG_X86_MSR_WRITES_OFF,
# see kernel-patched.bats); msr.allow_writes=on on the command line still
# allows them.

load helpers
load kernel-helpers

setup() {
	requires root vm kernel-patched file:/dev/cpu/0/msr
	kernel_setup
}

teardown() {
	kernel_teardown
}

@test "patched MSR: msr.allow_writes=on overrides the built-in off, and a write works" {
	kernel_config_has CONFIG_X86_MSR_WRITES_OFF || fail "kernel built without CONFIG_X86_MSR_WRITES_OFF=y"
	run cat /sys/module/msr/parameters/allow_writes
	assert_output on
	msr_write_back
	assert_success
	assert_output --regexp '^pid [0-9]+$'
}
