#!/usr/bin/env bats
# vm-as: root
# Seed 010: the uclamp sysctls (sched_util_clamp_*) and cgroup v2's
# cpu.uclamp.min.  Root, because the sysctls are the system's; every test
# puts back the values it found.

load helpers

SYSCTL_DIR=/proc/sys/kernel
KNOBS=(sched_util_clamp_min sched_util_clamp_max sched_util_clamp_min_rt_default)

knob() { cat "$SYSCTL_DIR/$1"; }
all_knobs() { local k; for k in "${KNOBS[@]}"; do echo "$k=$(knob "$k")"; done; }

# A field of /proc/PID/sched ("effective uclamp.min   :   600").
sched_field() {
	awk -F: -v f="$2" '{ k = $1; sub(/ +$/, "", k) } k == f { gsub(/ /, "", $2); print $2 }' "/proc/$1/sched"
}

setup() {
	requires root file:$SYSCTL_DIR/sched_util_clamp_min
	SAVED=$(all_knobs)
	RT_PID= BG_PID=
}

teardown() {
	local p
	for p in ${RT_PID:-} ${BG_PID:-}; do kill "$p" 2>/dev/null || true; done
	[ -n "${SAVED:-}" ] || return 0
	# max first, so that min never exceeds it on the way back.
	local k
	for k in sched_util_clamp_max sched_util_clamp_min sched_util_clamp_min_rt_default; do
		"$PROGS/write-file" "$SYSCTL_DIR/$k" "$(sed -n "s/^$k=//p" <<<"$SAVED")" >/dev/null
	done
	[ "$(all_knobs)" = "$SAVED" ] || echo "# could not restore the uclamp sysctls: $(all_knobs)" >&3
}

@test "uclamp: the three sched_util_clamp_* sysctls exist with their default 1024" {
	local k
	for k in "${KNOBS[@]}"; do
		[ "$(knob "$k")" = 1024 ] || fail "$k is $(knob "$k"), not 1024"
	done
}

@test "uclamp: an out-of-range write fails with EINVAL and changes none of the three" {
	local k
	for k in "${KNOBS[@]}"; do
		run "$PROGS/write-file" "$SYSCTL_DIR/$k" 1025
		assert_failure 1
		assert_output EINVAL
		[ "$(all_knobs)" = "$SAVED" ] || fail "after writing 1025 to $k: $(all_knobs)"
	done
	# The other side: a value in range is taken.
	run "$PROGS/write-file" "$SYSCTL_DIR/sched_util_clamp_min" 512
	assert_success
	[ "$(knob sched_util_clamp_min)" = 512 ]
}

@test "uclamp: an RT task's boost follows min_rt_default=800 clamped by min=600, then 800 once the limit is lifted" {
	requires cmd:chrt
	chrt -f 10 sleep 1000 &
	RT_PID=$!
	# Wait until sleep runs under SCHED_FIFO (chrt execs into it).
	local i
	for ((i = 0; i < 50; i++)); do
		[ "$(sched_field "$RT_PID" policy)" = 1 ] && break
		sleep 0.1
	done
	[ "$(sched_field "$RT_PID" policy)" = 1 ] || fail "sleep did not become SCHED_FIFO"

	run "$PROGS/write-file" "$SYSCTL_DIR/sched_util_clamp_min_rt_default" 800
	assert_success
	run "$PROGS/write-file" "$SYSCTL_DIR/sched_util_clamp_min" 600
	assert_success
	[ "$(sched_field "$RT_PID" uclamp.min)" = 800 ] || fail "requested uclamp.min $(sched_field "$RT_PID" uclamp.min)"
	[ "$(sched_field "$RT_PID" 'effective uclamp.min')" = 600 ] \
		|| fail "effective uclamp.min $(sched_field "$RT_PID" 'effective uclamp.min') with min=600"

	run "$PROGS/write-file" "$SYSCTL_DIR/sched_util_clamp_min" 1024
	assert_success
	[ "$(sched_field "$RT_PID" 'effective uclamp.min')" = 800 ] \
		|| fail "effective uclamp.min $(sched_field "$RT_PID" 'effective uclamp.min') once the limit is lifted"
}

@test "uclamp: a normal (CFS) task gets no RT boost: effective uclamp.min 0" {
	sleep 1000 &
	BG_PID=$!
	run "$PROGS/write-file" "$SYSCTL_DIR/sched_util_clamp_min_rt_default" 800
	assert_success
	[ "$(sched_field "$BG_PID" policy)" = 0 ] || fail "sleep is not SCHED_OTHER"
	[ "$(sched_field "$BG_PID" 'effective uclamp.min')" = 0 ] \
		|| fail "effective uclamp.min $(sched_field "$BG_PID" 'effective uclamp.min') for a CFS task"
}

@test "uclamp: cgroup v2 cpu.uclamp.min above 100 fails with ERANGE (as the test user, in its delegated cgroup)" {
	[ -n "${CREST_CGROUP:-}" ] || fail "CREST_CGROUP is not set"
	grep -qw cpu "$CREST_CGROUP/cgroup.subtree_control" || fail "cpu controller not enabled below $CREST_CGROUP"
	local cg=$CREST_CGROUP/uclamp-$$
	as_test_user mkdir "$cg"
	[ -f "$cg/cpu.uclamp.min" ] || { rmdir "$cg"; fail "no cpu.uclamp.min in $cg"; }
	run as_test_user "$PROGS/write-file" "$cg/cpu.uclamp.min" 101
	local over=$status over_out=$output
	run as_test_user "$PROGS/write-file" "$cg/cpu.uclamp.min" 100.01
	local frac=$status frac_out=$output
	run as_test_user "$PROGS/write-file" "$cg/cpu.uclamp.min" 42.5
	local ok=$status value
	value=$(cat "$cg/cpu.uclamp.min")
	rmdir "$cg"
	[ "$over" = 1 ] && [ "$over_out" = ERANGE ] || fail "101: status $over, $over_out"
	[ "$frac" = 1 ] && [ "$frac_out" = ERANGE ] || fail "100.01: status $frac, $frac_out"
	[ "$ok" = 0 ] || fail "42.5 was refused"
	[ "$value" = 42.50 ] || fail "cpu.uclamp.min reads $value after writing 42.5"
}
