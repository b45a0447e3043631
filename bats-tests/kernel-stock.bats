#!/usr/bin/env bats
# vm-as: root
# vm-kernel: stock
# vm-cmdline: audit=1
# The stock kernel (no series) with the procedures of kernel-patched.bats
# (kernel-helpers.bash): each finds the old behaviour, which shows that the
# series is what changes it.  Controls (a capability the stock kernel does
# accept) show that each procedure can succeed here.

load helpers
load kernel-helpers

setup() {
	requires root vm kernel-stock
	kernel_setup
}

teardown() {
	kernel_teardown
}

@test "stock map_files: CAP_CHECKPOINT_RESTORE in the user's own namespace is not enough (EPERM)" {
	map_files_in_userns -all,+checkpoint_restore
	assert_failure 1
	assert_line --index 1 "link $KTMP/mapped"
	assert_line --index 2 EPERM
}

@test "stock map_files control: root in the initial namespace opens the same link" {
	local file=$KTMP/mapped
	head -c 8192 /dev/urandom >"$file"
	run "$PROGS/map-files" "$file"
	assert_success
	assert_line --index 2 "open ok"
}

@test "stock audit: an exe link change succeeds and leaves no AUDIT_EXE_CHANGE record" {
	grep -qw audit=1 /proc/cmdline || fail "the suite expects audit=1 on the command line"
	exe_link_change all "$KTMP/new-exe"
	assert_success
	no_exe_change_record "$KTMP/new-exe"
}

@test "stock MSR: no build-time choice, the parameter says default and a write with no argument works" {
	requires file:/dev/cpu/0/msr
	! grep -q msr.allow_writes /proc/cmdline || fail "msr.allow_writes is on the command line: $(cat /proc/cmdline)"
	! zcat /proc/config.gz | grep -q X86_MSR_WRITES || fail "the stock kernel has an X86_MSR_WRITES option"
	run cat /sys/module/msr/parameters/allow_writes
	assert_output default
	msr_write_back
	assert_success
	assert_output --regexp '^pid [0-9]+$'
	assert_taint_cpu_out_of_spec
}

@test "stock TCP_REPAIR: only CAP_CHECKPOINT_RESTORE in a user and network namespace is EPERM" {
	tcp_repair "$(cap_bit $CAP_CHECKPOINT_RESTORE)"
	assert_success
	assert_line --index 0 --regexp "^CapEff:[[:space:]]+$(cap_bit $CAP_CHECKPOINT_RESTORE)\$"
	assert_line --index 1 "TCP_REPAIR EPERM"
}

@test "stock TCP_REPAIR control: only CAP_NET_ADMIN there works" {
	tcp_repair "$(cap_bit $CAP_NET_ADMIN)"
	assert_success
	assert_line --index 1 "TCP_REPAIR ok"
}

@test "stock PR_CAPBSET_DROP: only CAP_CHECKPOINT_RESTORE in the user's own namespace is EPERM; execve gives it back" {
	bset_drop userns "$(cap_bit $CAP_CHECKPOINT_RESTORE)" $CAP_CHECKPOINT_RESTORE
	assert_success
	assert_line --index 0 --regexp "^CapEff:[[:space:]]+$(cap_bit $CAP_CHECKPOINT_RESTORE)\$"
	assert_line --index 1 "drop $CAP_CHECKPOINT_RESTORE EPERM"
	assert_line --index 2 --regexp "^CapBnd:[[:space:]]+$(caps_all_but)\$"
	assert_line --index 3 --regexp "^exec CapPrm:[[:space:]]+$(caps_all_but)\$"
}

@test "stock PR_CAPBSET_DROP: root with only CAP_CHECKPOINT_RESTORE in the initial namespace is EPERM" {
	bset_drop root "$(cap_bit $CAP_CHECKPOINT_RESTORE)" $CAP_CHECKPOINT_RESTORE
	assert_success
	assert_line --index 1 "drop $CAP_CHECKPOINT_RESTORE EPERM"
	assert_line --index 2 --regexp "^CapBnd:[[:space:]]+$(caps_all_but)\$"
}

@test "stock PR_CAPBSET_DROP control: only CAP_SETPCAP there drops it" {
	bset_drop userns "$(cap_bit $CAP_SETPCAP)" $CAP_CHECKPOINT_RESTORE
	assert_success
	assert_line --index 1 "drop $CAP_CHECKPOINT_RESTORE ok"
	assert_line --index 2 --regexp "^CapBnd:[[:space:]]+$(caps_all_but $CAP_CHECKPOINT_RESTORE)\$"
	assert_line --index 3 --regexp "^exec CapPrm:[[:space:]]+$(caps_all_but $CAP_CHECKPOINT_RESTORE)\$"
}

@test "stock kernel, map_files closed: the engine checkpoints the same memfd, shared anonymous and deleted-file mappings without it (runtime/engine/shmem.c), and the restore passes" {
	run memfile_checkpoint
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = restored ]
	[[ "$output" == *"verdict: PASS"* ]]
}
