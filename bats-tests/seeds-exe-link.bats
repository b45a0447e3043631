#!/usr/bin/env bats
# Seeds 006-007: prctl(PR_SET_MM, PR_SET_MM_MAP) with exe_fd needs
# CAP_CHECKPOINT_RESTORE in the caller's user namespace, and says EPERM
# (no longer EINVAL) without it.

load helpers

setup() {
	TARGET=$BATS_TEST_TMPDIR/new-exe
	cp "$PROGS/caps" "$TARGET"
	chmod 755 "$TARGET"
}

@test "exe link: EPERM (not EINVAL) without the capability" {
	requires non-root
	run "$PROGS/exe-link" "$TARGET"
	assert_failure 1
	assert_output EPERM
}

@test "exe link: /proc/self/exe points at the new file with only CAP_CHECKPOINT_RESTORE" {
	requires non-root userns
	run in_userns only_cap_cr sh -c "\"$PROGS/caps\" && exec \"$PROGS/exe-link\" \"$TARGET\""
	assert_success
	[ "$(cap_line Eff)" = "$(cap_bit "$CAP_CHECKPOINT_RESTORE")" ] || fail "not only cap 40: $output"
	assert_line --index 5 "$TARGET"
}

@test "exe link: EPERM without CAP_CHECKPOINT_RESTORE (every other capability but CAP_SYS_ADMIN)" {
	requires non-root userns
	run in_userns without_cap_cr "$PROGS/exe-link" "$TARGET"
	assert_failure 1
	assert_output EPERM
}
