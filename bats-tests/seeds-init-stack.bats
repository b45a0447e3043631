#!/usr/bin/env bats
# vm-as: root
# Seed 011: the VM kernel is built with INIT_STACK_ALL_ZERO and says so at
# boot.  Root, because reading the kernel log may be restricted.

load helpers

@test "the kernel log reports zero-initialised stacks: stack:all(zero)" {
	requires root
	run dmesg
	assert_success
	assert_output --regexp 'mem auto-init: stack:all\(zero\)'
}
