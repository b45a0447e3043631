#!/usr/bin/env bats
# vm-kernel: stock
# vm-aslr: stock
# redis's main cycle (svc-redis.bats has the others) with address
# randomisation, as users run it, on the stock kernel: a restored task's
# vdso, stack and mappings lie elsewhere than the restorer's own. The other
# services' suites run without it (vm-suites: under TCG every exec is
# translated anew at a new address, 1.5 times the time); every host test
# runs with it.

load helpers
load checkpoint-helpers
load svc-helpers
load redis-helpers

setup() {
	redis_setup
}

teardown() {
	redis_teardown
}

@test "redis: 10,000 keys survive a checkpoint with no connection open; both listeners (127.0.0.1, ::1), expiry, jemalloc and the lazy-free thread work after restore; /proc the same across a stopped cycle" {
	ID="redis-$$"
	local t0 t1 t2
	redis_start "$ID"
	load_keys
	rcmd "EXPIRE key:1 1000"
	[ "$REPLY" = ":1" ] || fail "EXPIRE key:1: [$REPLY]"
	conn_close
	t0=$(date +%s.%N)
	cr_checkpoint "$ID"
	[ "$status" = 0 ] || fail "checkpoint failed: $output"
	t2=$(date +%s.%N)
	cr_gone "$ID"
	echo "# redis checkpoint (10,000 keys, no connection): $(secs "$t0" "$t2") s, image $(du -sk "$IMAGE" | cut -f1) KiB" >&3
	t1=$(date +%s.%N)
	cr_restore "$ID"
	[ "$status" = 0 ] || fail "restore failed: $output"
	t2=$(date +%s.%N)
	echo ::1 >"$SVC/conn-on"
	rcmd PING
	[ "$REPLY" = "+PONG" ] || fail "no PONG through ::1 after restore: [$REPLY]"
	echo "# redis restore: $(secs "$t1" "$t2") s; a new client's first answer $(secs "$t2" "$LAST_ANSWER") s later; no answer from the start of the checkpoint for $(secs "$t0" "$LAST_ANSWER") s" >&3
	check_keys
	rcmd "CLIENT LIST"
	[[ $REPLY == *"addr=[::1]:"* ]] || [[ $REPLY == *"addr=::1:"* ]] || fail "the client is not on ::1: $REPLY"
	conn_close
	echo 127.0.0.1 >"$SVC/conn-on"
	rcmd "GET key:77"
	[ "$(tail -1 <<<"$REPLY")" = "v-77-$SEED" ] || fail "GET through 127.0.0.1 after restore: [$REPLY]"
	# Expiry runs on the clocks the restored redis reads.
	rcmd "TTL key:1"
	[[ $REPLY =~ ^:([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -gt 700 ] && [ "${BASH_REMATCH[1]}" -le 1000 ] \
		|| fail "TTL of a key set to expire in 1000 s: [$REPLY]"
	# jemalloc gives memory for 20,000 more keys; a bio thread frees them
	# all (FLUSHALL ASYNC hands the old dictionary to the lazy-free thread).
	rcmd "EVAL \"for i = 1, 20000 do redis.call('SET', 'more:' .. i, string.rep('x', 100)) end return redis.call('DBSIZE')\" 0"
	[ "$(tail -1 <<<"$REPLY")" = ":30000" ] || fail "DBSIZE after 20,000 more keys: [$REPLY]"
	rcmd "FLUSHALL ASYNC"
	local i freed=
	for ((i = 0; i < 100; i++)); do
		rcmd "INFO"
		if [[ $REPLY =~ lazyfree_pending_objects:0 ]] && [[ $REPLY =~ lazyfreed_objects:([0-9]+) ]] \
			&& [ "${BASH_REMATCH[1]}" -gt 0 ]; then
			freed=${BASH_REMATCH[1]}
			break
		fi
		sleep 0.2
	done
	[ -n "$freed" ] || fail "the lazy-free thread freed nothing after FLUSHALL ASYNC: $(grep lazyfree <<<"$REPLY")"
	rcmd DBSIZE
	[ "$REPLY" = ":0" ] || fail "DBSIZE after FLUSHALL: [$REPLY]"
	# A second cycle with the tree stopped: what /proc shows of redis
	# (its bio and jemalloc threads) and of the client's shell compared,
	# with nothing of redis's own timers run in between (svc_cycle_stopped).
	rcmd "SET after-flush yes"
	conn_close
	rm -rf "$IMAGE"
	svc_cycle_stopped "$ID"
	echo 127.0.0.1 >"$SVC/conn-on"
	rcmd "GET after-flush"
	[ "$(tail -1 <<<"$REPLY")" = "yes" ] || fail "GET after the stopped cycle: [$REPLY]"
}
