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
# namespace.  The project's series relaxes that (patch "proc: allow map_files
# in the user namespace owning the mm") for plain files mapped by a task whose
# mm belongs to the caller's namespace: a program exec'd inside the new user
# namespace is such a task.  Which rule applies is read from the series the
# kernel was built with ($CREST_TESTS/kernel.txt).
series_relaxes_map_files() {
	[ "${CREST_KERNEL:-}" != stock ] && grep -qiE 'map[_-]files' "$CREST_TESTS/kernel.txt" 2>/dev/null
}

@test "map_files with only CAP_CHECKPOINT_RESTORE in the user's own namespace: EPERM on 6.1, opens with the series' map_files patch" {
	requires non-root userns
	run in_userns only_cap_cr "$PROGS/map-files" "$MAPPED"
	assert_line --index 1 "link $MAPPED"
	if series_relaxes_map_files; then
		assert_success
		assert_line --index 2 "open ok"
	else
		assert_failure 1
		assert_line --index 2 EPERM
	fi
}

@test "map_files in the user's own namespace without CAP_CHECKPOINT_RESTORE (every other capability but CAP_SYS_ADMIN): EPERM on any kernel" {
	requires non-root userns
	run in_userns without_cap_cr "$PROGS/map-files" "$MAPPED"
	assert_failure 1
	assert_line --index 1 "link $MAPPED"
	assert_line --index 2 EPERM
}
