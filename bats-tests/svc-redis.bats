#!/usr/bin/env bats
# vm-kernel: stock patched
# vm-only: patched survive --tcp-established
# redis (Debian's redis-server 7.0) in a rootless container whose root is the
# VM's own file system, with its client inside the same container
# (svc-conn: one TCP connection held open, fed from a FIFO): 10,000 keys and
# the connection survive a checkpoint and restore. Figures (checkpoint and
# restore time, image size, the time redis did not answer its client) are
# printed as `# ` lines. Without address randomisation, as the other
# services' suites (vm-suites: TCG translates every exec anew at a new
# address); svc-redis-aslr.bats runs redis's main cycle with it.

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

@test "redis: 10,000 keys and an open connection survive --tcp-established (same CLIENT ID)" {
	ID="redis-$$"
	local id=$ID before after t0 t1 t2 conns addr size
	redis_start "$id"
	load_keys
	before=$(client_id)
	[[ $before =~ ^:[0-9]+$ ]] || fail "CLIENT ID: [$before]"
	rcmd "CLIENT LIST"
	addr=$(grep -o ' addr=[^ ]*' <<<"$REPLY")
	[ -n "$addr" ] || fail "no addr= in CLIENT LIST: $REPLY"
	rcmd PING
	t0=$LAST_ANSWER
	t1=$(date +%s.%N)
	cr_checkpoint "$id" --tcp-established
	[ "$status" = 0 ] || fail "checkpoint failed: $output"
	t2=$(date +%s.%N)
	cr_gone "$id"
	echo "# redis checkpoint (10,000 keys, --tcp-established): $(secs "$t1" "$t2") s" >&3
	t1=$(date +%s.%N)
	cr_restore "$id"
	[ "$status" = 0 ] || fail "restore failed: $output"
	t2=$(date +%s.%N)
	rcmd PING
	[ "$REPLY" = "+PONG" ] || fail "no PONG on the held connection after restore: [$REPLY]"
	size=$(du -sk "$IMAGE" | cut -f1)
	echo "# redis restore: $(secs "$t1" "$t2") s, first answer $(secs "$t2" "$LAST_ANSWER") s later; image $size KiB; its client had no answer for $(secs "$t0" "$LAST_ANSWER") s" >&3
	after=$(client_id)
	[ "$after" = "$before" ] || fail "CLIENT ID changed: $before -> $after"
	check_keys
	conns=$(grep -c "^svc-conn ended" "$SVC/conn.log" 2>/dev/null || true)
	[ "${conns:-0}" = 0 ] || fail "the client's connection ended: $(cat "$SVC/conn.log")"
	rcmd "CLIENT LIST"
	[ "$(grep -c '^id=' <<<"$REPLY")" = 1 ] || fail "expected one client, got: $REPLY"
	[[ $REPLY == *"$addr "* ]] || fail "the client's address is not${addr} any more: $REPLY"
	# The restored connection and listeners are checkpointed again.
	rm -rf "$IMAGE"
	cr_checkpoint "$id" --tcp-established
	[ "$status" = 0 ] || fail "second checkpoint failed: $output"
	cr_restore "$id"
	[ "$status" = 0 ] || fail "second restore failed: $output"
	rcmd "CLIENT ID" DBSIZE "GET key:9999"
	[ "$REPLY" = "$before"$'\n'":10000"$'\n'"\$$((7 + ${#SEED}))"$'\n'"v-9999-$SEED" ] || fail "after a second cycle: [$REPLY]"
	[ "$(grep -c "^svc-conn ended" "$SVC/conn.log")" = 0 ] || fail "the connection ended in the second cycle"
}

# The refusal's checks: one line naming what was refused, no image, and the
# same connection still answers with the same data.
refused_still_serving() {
	local what=$1 before=$2
	[ "$status" != 0 ] || fail "the checkpoint succeeded"
	[ "${#lines[@]}" = 1 ] || fail "the refusal is not one line: $output"
	[[ $output == *"$what"* ]] || fail "the refusal does not say '$what': $output"
	[ ! -e "$IMAGE" ] || fail "a refused checkpoint left $IMAGE behind"
	local pid
	for pid in $(cr_tasks "$ID"); do
		task_untouched "$pid" >/dev/null || fail "task $pid after the refusal: $(task_untouched "$pid")"
	done
	check_keys
	[ "$(client_id)" = "$before" ] || fail "CLIENT ID changed across a refused checkpoint"
	[ "$(grep -c "^svc-conn ended" "$SVC/conn.log")" = 0 ] || fail "the connection ended: $(cat "$SVC/conn.log")"
}

@test "redis: checkpoint --tcp-close with a connection open: the client's connection comes back closed, it reconnects, the keys are there" {
	ID="redis-$$"
	local before after
	redis_start "$ID"
	load_keys
	before=$(client_id)
	cr_checkpoint "$ID" --tcp-close
	[ "$status" = 0 ] || fail "checkpoint failed: $output"
	cr_gone "$ID"
	cr_restore "$ID"
	[ "$status" = 0 ] || fail "restore failed: $output"
	rcmd PING
	[ "$REPLY" = "+PONG" ] || fail "no PONG after restore: [$REPLY]"
	grep -q "^svc-conn ended" "$SVC/conn.log" || fail "the client's connection did not end: $(cat "$SVC/conn.log")"
	after=$(client_id)
	[ "$after" != "$before" ] || fail "the same CLIENT ID $before on a new connection"
	check_keys
	rcmd "CLIENT LIST"
	[ "$(grep -c '^id=' <<<"$REPLY")" = 1 ] || fail "expected one client (the closed one gone), got: $REPLY"
}

# With --leave-running the original serves on; the image restored under a
# new ID gets a copy of /tmp (the FIFO, the files its tasks hold open), its
# own network namespace, and its own copy of the keys.
@test "redis: --leave-running: the original keeps serving its client, the image restored under a new ID serves the same keys apart" {
	ID="redis-$$"
	local id2="redis-copy-$$" before flags=(--tcp-established) svc2=$BATS_TEST_TMPDIR/svc2
	redis_start "$ID"
	load_keys
	before=$(client_id)
	cr_checkpoint "$ID" --leave-running "${flags[@]}"
	[ "$status" = 0 ] || fail "checkpoint --leave-running ${flags[*]} failed: $output"
	check_keys
	[ "$(client_id)" = "$before" ] || fail "the original's CLIENT ID changed"
	rcmd "SET only:orig 1"
	cp -a "$SVC" "$svc2"
	jq --arg svc "$svc2" '(.mounts[] | select(.destination == "/tmp")).source = $svc' \
		"$BUNDLE/config.json" >"$BUNDLE/config.json.tmp" && mv "$BUNDLE/config.json.tmp" "$BUNDLE/config.json"
	cr_restore "$id2"
	[ "$status" = 0 ] || fail "restore under $id2 failed: $output"
	CDIR=$svc2
	rcmd PING
	[ "$REPLY" = "+PONG" ] || fail "the copy does not answer: [$REPLY]"
	[ "$(client_id)" = "$before" ] || fail "the copy's CLIENT ID differs from $before"
	check_keys
	rcmd "GET only:orig" "SET only:copy 2"
	[ "$REPLY" = '$-1'$'\n''+OK' ] || fail "the copy saw the original's write: [$REPLY]"
	CDIR=$SVC
	rcmd "GET only:copy" "GET only:orig"
	[ "$REPLY" = '$-1'$'\n''$1'$'\n''1' ] || fail "the original: [$REPLY]"
	[ "$(grep -c "^svc-conn ended" "$SVC/conn.log")" = 0 ] || fail "the original's connection ended: $(cat "$SVC/conn.log")"
}

@test "redis: checkpoint without --tcp-established while a connection is open is refused in one line; redis serves on" {
	ID="redis-$$"
	local before
	redis_start "$ID"
	load_keys
	before=$(client_id)
	cr_checkpoint "$ID"
	refused_still_serving "established TCP connection" "$before"
}
