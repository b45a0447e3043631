#!/usr/bin/env bats
# Seeds 001-003: clone3() with set_tid needs CAP_CHECKPOINT_RESTORE in the
# user namespace that owns each PID namespace the PID is chosen in.

load helpers

# A PID well inside a fresh PID namespace, where only PID 1 exists.
pick_ns_pid() {
	echo $((100 + RANDOM % 800))
}

@test "set_tid in the user's own PID namespace: the asked-for PID with only CAP_CHECKPOINT_RESTORE" {
	requires non-root userns
	local want
	want=$(pick_ns_pid)
	run in_userns_pidns only_cap_cr sh -c "\"$PROGS/caps\" && exec \"$PROGS/set-tid\" $want"
	assert_success
	[ "$(cap_line Eff)" = "$(cap_bit "$CAP_CHECKPOINT_RESTORE")" ] || fail "not only cap 40: $output"
	assert_line "pid $want"
}

@test "set_tid in the user's own PID namespace: EPERM without CAP_CHECKPOINT_RESTORE (every other capability but CAP_SYS_ADMIN)" {
	requires non-root userns
	run in_userns_pidns without_cap_cr sh -c "\"$PROGS/caps\" && exec \"$PROGS/set-tid\" $(pick_ns_pid)"
	assert_failure 1
	local eff
	eff=$(cap_line Eff)
	[ $((0x$eff & (1 << CAP_CHECKPOINT_RESTORE))) = 0 ] || fail "CAP_CHECKPOINT_RESTORE still effective"
	[ $((0x$eff)) != 0 ] || fail "expected the other capabilities to stay effective"
	assert_line --index 5 EPERM
}

@test "set_tid in the user's own PID namespace: EEXIST for a PID in use (PID 1)" {
	requires non-root userns
	run in_userns_pidns only_cap_cr sh -c "exec \"$PROGS/set-tid\" 1"
	assert_failure 1
	assert_output EEXIST
}

@test "set_tid for the parent PID namespace too: EPERM, the user does not own the initial one" {
	requires non-root userns
	local outer
	outer=$(free_pid)
	# Full capabilities in the new user namespace, none over the initial PID namespace.
	run in_userns_pidns sh -c "exec \"$PROGS/set-tid\" $(pick_ns_pid) $outer"
	assert_failure 1
	assert_output EPERM
	[ ! -e "/proc/$outer" ]
}

@test "set_tid in the initial PID namespace: the asked-for PID through the file capability" {
	requires non-root
	run getcap "$PROGS/set-tid-fcap"
	assert_success
	assert_output --regexp 'cap_checkpoint_restore[=+]ep$'
	local want
	want=$(free_pid)
	run "$PROGS/set-tid-fcap" "$want"
	assert_success
	assert_output "pid $want"
}

@test "set_tid in the initial PID namespace: EPERM for the copy without the file capability" {
	requires non-root
	run getcap "$PROGS/set-tid"
	assert_output ""
	local want
	want=$(free_pid)
	run "$PROGS/set-tid" "$want"
	assert_failure 1
	assert_output EPERM
}
