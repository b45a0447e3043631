#!/usr/bin/env bats
# vm-as: root
# vm-cmdline: audit=1
# What the kernel series (kernel/patches/) changes, on the patched kernel.
# kernel-stock.bats runs the same procedures (kernel-helpers.bash) on the
# stock kernel and finds the old behaviour.  Root runs the suite; the
# rootless cases run as the test user.  audit=1: audit is on, and with no
# audit daemon its records reach the kernel log.

load helpers
load kernel-helpers

setup() {
	requires root vm kernel-patched
	kernel_setup
}

teardown() {
	kernel_teardown
}

@test "patched map_files: CAP_CHECKPOINT_RESTORE in the user's own namespace opens its mapping" {
	map_files_in_userns -all,+checkpoint_restore
	assert_success
	assert_line --index 1 "link $KTMP/mapped"
	assert_line --index 2 "open ok"
}

@test "patched map_files: without CAP_CHECKPOINT_RESTORE and CAP_SYS_ADMIN it stays EPERM" {
	map_files_in_userns +all,-checkpoint_restore,-sys_admin
	assert_failure 1
	assert_line --index 1 "link $KTMP/mapped"
	assert_line --index 2 EPERM
}

@test "patched audit: an exe link change leaves an AUDIT_EXE_CHANGE record with both paths, pid, uid and capability" {
	grep -qw audit=1 /proc/cmdline || fail "the suite expects audit=1 on the command line"
	exe_link_change all "$KTMP/new-exe"
	assert_success
	run exe_change_record "$KTMP/new-exe"
	assert_success
	echo "# $output" >&3
	assert_output --partial "op=set_exe old=\"$PROGS/exe-link\" new=\"$KTMP/new-exe\""
	assert_output --partial " capability=$CAP_CHECKPOINT_RESTORE "
	assert_output --regexp " pid=[0-9]+ "
	assert_output --partial " uid=0 "
	assert_output --partial " res=1"
}

@test "patched audit: a refused exe link change (EPERM) leaves no record" {
	exe_link_change nocap "$KTMP/refused-exe"
	assert_failure 1
	assert_output EPERM
	no_exe_change_record "$KTMP/refused-exe"
}

@test "patched MSR: the VM kernel is built with CONFIG_X86_MSR_WRITES_OFF=y" {
	kernel_config_has CONFIG_X86_MSR_WRITES_OFF \
		|| fail "CONFIG_X86_MSR_WRITES_OFF=y is missing from kernel/config/crest.config: $(zcat /proc/config.gz | grep X86_MSR_WRITES)"
}

@test "patched MSR: with no msr.allow_writes argument the parameter says off and a write fails with EPERM" {
	requires file:/dev/cpu/0/msr
	! grep -q msr.allow_writes /proc/cmdline || fail "msr.allow_writes is on the command line: $(cat /proc/cmdline)"
	kernel_config_has CONFIG_X86_MSR_WRITES_OFF || fail "kernel built without CONFIG_X86_MSR_WRITES_OFF=y"
	run cat /sys/module/msr/parameters/allow_writes
	assert_output off
	msr_write_back
	assert_failure 1
	assert_output EPERM
}

@test "patched TCP_REPAIR: only CAP_CHECKPOINT_RESTORE in a user and network namespace is enough" {
	tcp_repair "$(cap_bit $CAP_CHECKPOINT_RESTORE)"
	assert_success
	assert_line --index 0 --regexp "^CapEff:[[:space:]]+$(cap_bit $CAP_CHECKPOINT_RESTORE)\$"
	assert_line --index 1 "TCP_REPAIR ok"
}

@test "patched TCP_REPAIR: without CAP_CHECKPOINT_RESTORE and CAP_NET_ADMIN it is EPERM" {
	tcp_repair "$(caps_all_but $CAP_CHECKPOINT_RESTORE $CAP_NET_ADMIN)"
	assert_success
	assert_line --index 1 "TCP_REPAIR EPERM"
}

@test "patched PR_CAPBSET_DROP: only CAP_CHECKPOINT_RESTORE in the user's own namespace drops it; execve no longer gives it back" {
	bset_drop userns "$(cap_bit $CAP_CHECKPOINT_RESTORE)" $CAP_CHECKPOINT_RESTORE
	assert_success
	assert_line --index 0 --regexp "^CapEff:[[:space:]]+$(cap_bit $CAP_CHECKPOINT_RESTORE)\$"
	assert_line --index 1 "drop $CAP_CHECKPOINT_RESTORE ok"
	assert_line --index 2 --regexp "^CapBnd:[[:space:]]+$(caps_all_but $CAP_CHECKPOINT_RESTORE)\$"
	assert_line --index 3 --regexp "^exec CapPrm:[[:space:]]+$(caps_all_but $CAP_CHECKPOINT_RESTORE)\$"
}

@test "patched PR_CAPBSET_DROP: only CAP_CHECKPOINT_RESTORE does not drop CAP_SYS_ADMIN, CAP_KILL or CAP_SETPCAP (EPERM)" {
	bset_drop userns "$(cap_bit $CAP_CHECKPOINT_RESTORE)" $CAP_SYS_ADMIN $CAP_KILL $CAP_SETPCAP
	assert_success
	assert_line --index 1 "drop $CAP_SYS_ADMIN EPERM"
	assert_line --index 2 "drop $CAP_KILL EPERM"
	assert_line --index 3 "drop $CAP_SETPCAP EPERM"
	assert_line --index 4 --regexp "^CapBnd:[[:space:]]+$(caps_all_but)\$"
}

@test "patched PR_CAPBSET_DROP: without CAP_CHECKPOINT_RESTORE and CAP_SETPCAP dropping 40 stays EPERM" {
	bset_drop userns "$(caps_all_but $CAP_CHECKPOINT_RESTORE $CAP_SETPCAP)" $CAP_CHECKPOINT_RESTORE
	assert_success
	assert_line --index 1 "drop $CAP_CHECKPOINT_RESTORE EPERM"
	assert_line --index 2 --regexp "^CapBnd:[[:space:]]+$(caps_all_but)\$"
	assert_line --index 3 --regexp "^exec CapPrm:[[:space:]]+$(caps_all_but)\$"
}

@test "patched PR_CAPBSET_DROP: root with only CAP_CHECKPOINT_RESTORE in the initial namespace drops it, and only it" {
	bset_drop root "$(cap_bit $CAP_CHECKPOINT_RESTORE)" $CAP_KILL $CAP_CHECKPOINT_RESTORE
	assert_success
	assert_line --index 1 "drop $CAP_KILL EPERM"
	assert_line --index 2 "drop $CAP_CHECKPOINT_RESTORE ok"
	assert_line --index 3 --regexp "^CapBnd:[[:space:]]+$(caps_all_but $CAP_CHECKPOINT_RESTORE)\$"
	assert_line --index 4 --regexp "^exec CapPrm:[[:space:]]+$(caps_all_but $CAP_CHECKPOINT_RESTORE)\$"
}

@test "patched map_files in the engine: the test user, no file capability on crest, checkpoints memfd, shared anonymous and deleted-file mappings, and the restore passes" {
	run memfile_checkpoint
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = restored ]
	[[ "$output" == *"verdict: PASS"* ]]
}
