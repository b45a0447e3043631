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

# On 6.1 as released, CAP_CHECKPOINT_RESTORE counts only in the initial user
# namespace.  The project's patch series may relax that for the target's own
# namespace; the kernel-patch suites test the relaxed rule, this one the
# original rule, on any kernel whose series does not touch map_files.
@test "map_files without a map_files patch: CAP_CHECKPOINT_RESTORE in the user's own namespace is not enough (EPERM)" {
	requires non-root userns
	if [ "${CREST_KERNEL:-}" != stock ] && grep -qiE 'map[_-]files' "$CREST_TESTS/kernel.txt" 2>/dev/null; then
		skip "this kernel's series changes map_files: $(grep -iE 'map[_-]files' "$CREST_TESTS/kernel.txt" | head -n 1)"
	fi
	run in_userns only_cap_cr "$PROGS/map-files" "$MAPPED"
	assert_failure 1
	assert_line --index 1 "link $MAPPED"
	assert_line --index 2 EPERM
}
