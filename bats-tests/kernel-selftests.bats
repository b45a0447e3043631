#!/usr/bin/env bats
# vm-as: root
# The selftests of the kernel series (tools/testing/selftests/
# checkpoint_restore/, listed in kernel/selftests/list), built with the
# patched kernel.  The rootless cases are the point, so the tests that do
# not need root run as the test user; exe_link_cap, ns_last_pid and
# capbset_drop run as root too, for their cases in the initial user
# namespace (as the test user those, and only those, skip); exe_link_audit
# needs root (it turns audit on through netlink and reads /dev/kmsg).

load helpers
load kernel-helpers

setup() {
	requires vm kernel-patched
}

@test "kselftest checkpoint_restore/map_files_userns as the test user" {
	run_kselftest test checkpoint_restore/map_files_userns
}

@test "kselftest checkpoint_restore/tcp_repair_cap as the test user" {
	run_kselftest test checkpoint_restore/tcp_repair_cap
}

@test "kselftest checkpoint_restore/exe_link_cap as the test user (1 case needs root)" {
	run_kselftest test checkpoint_restore/exe_link_cap 1
}

@test "kselftest checkpoint_restore/exe_link_cap as root" {
	requires root
	run_kselftest root checkpoint_restore/exe_link_cap
}

@test "kselftest checkpoint_restore/ns_last_pid as the test user (1 case needs root)" {
	run_kselftest test checkpoint_restore/ns_last_pid 1
}

@test "kselftest checkpoint_restore/ns_last_pid as root" {
	requires root
	run_kselftest root checkpoint_restore/ns_last_pid
}

# It turns printk's rate limit off for its run (audit's fallback to the
# kernel log is rate limited) and must put it back.
@test "kselftest checkpoint_restore/exe_link_audit as root (printk_ratelimit put back)" {
	requires root
	local orig before after
	orig=$(</proc/sys/kernel/printk_ratelimit)
	echo 7 >/proc/sys/kernel/printk_ratelimit
	before=$(</proc/sys/kernel/printk_ratelimit)
	run_kselftest root checkpoint_restore/exe_link_audit
	after=$(</proc/sys/kernel/printk_ratelimit)
	echo "$orig" >/proc/sys/kernel/printk_ratelimit
	[ "$before" = 7 ] || fail "kernel.printk_ratelimit could not be set to 7 (reads $before)"
	[ "$after" = "$before" ] || fail "exe_link_audit left kernel.printk_ratelimit at $after (was $before)"
}

@test "kselftest checkpoint_restore/capbset_drop as the test user (1 case needs root)" {
	run_kselftest test checkpoint_restore/capbset_drop 1
}

@test "kselftest checkpoint_restore/capbset_drop as root" {
	requires root
	run_kselftest root checkpoint_restore/capbset_drop
}
