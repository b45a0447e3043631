#!/usr/bin/env bats
# Seed 003: /proc/sys/kernel/ns_last_pid is writable with CAP_CHECKPOINT_RESTORE
# in the user namespace that owns the caller's PID namespace.

load helpers

@test "ns_last_pid in the user's own PID namespace: the next fork gets the next PID, with only CAP_CHECKPOINT_RESTORE" {
	requires non-root userns
	local last=$((200 + RANDOM % 800))
	run in_userns_pidns only_cap_cr sh -c "\"$PROGS/caps\" && exec \"$PROGS/ns-last-pid\" $last"
	assert_success
	[ "$(cap_line Eff)" = "$(cap_bit "$CAP_CHECKPOINT_RESTORE")" ] || fail "not only cap 40: $output"
	assert_line "pid $((last + 1))"
}

@test "ns_last_pid in the user's own PID namespace: EPERM without CAP_CHECKPOINT_RESTORE (every other capability but CAP_SYS_ADMIN)" {
	requires non-root userns
	run in_userns_pidns without_cap_cr sh -c "exec \"$PROGS/ns-last-pid\" $((200 + RANDOM % 800))"
	assert_failure 1
	assert_output EPERM
}

@test "ns_last_pid of the initial PID namespace: EPERM for the unprivileged user" {
	requires non-root
	local before
	before=$(cat /proc/sys/kernel/ns_last_pid)
	run "$PROGS/ns-last-pid" $((before + 1000))
	assert_failure 1
	assert_output EPERM
	# Not moved to the value asked for (other forks may have moved it a little).
	[ "$(cat /proc/sys/kernel/ns_last_pid)" -lt $((before + 1000)) ]
}
