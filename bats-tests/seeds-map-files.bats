#!/usr/bin/env bats
# Seed 005: the links of /proc/PID/map_files open only with
# CAP_CHECKPOINT_RESTORE in the initial user namespace; listing needs none.

load helpers

setup() {
	MAPPED=$BATS_TEST_TMPDIR/mapped
	head -c 10000 /dev/urandom >"$MAPPED"
}

@test "map_files: listing and readlink work without the capability, opening fails with EPERM" {
	requires non-root
	run "$PROGS/map-files" "$MAPPED"
	assert_failure 1
	assert_line --index 0 --regexp '^listed [0-9a-f]+-[0-9a-f]+$'
	assert_line --index 1 "link $MAPPED"
	assert_line --index 2 EPERM
}

@test "map_files: opening works with the file capability cap_checkpoint_restore+ep" {
	requires non-root
	run getcap "$PROGS/map-files-fcap"
	assert_output --regexp 'cap_checkpoint_restore[=+]ep$'
	run "$PROGS/map-files-fcap" "$MAPPED"
	assert_success
	assert_line --index 1 "link $MAPPED"
	assert_line --index 2 "open ok"
}

@test "map_files on a stock kernel: CAP_CHECKPOINT_RESTORE in the user's own namespace is not enough (EPERM)" {
	requires non-root userns kernel-stock
	run in_userns only_cap_cr "$PROGS/map-files" "$MAPPED"
	assert_failure 1
	assert_line --index 2 EPERM
}
