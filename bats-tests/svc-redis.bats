#!/usr/bin/env bats
# vm-kernel: patched stock
# redis (Debian's redis-server 7.0) in a rootless container whose root is the
# VM's own file system, with its client inside the same container
# (svc-conn: one TCP connection held open, fed from a FIFO): 10,000 keys and
# the connection survive a checkpoint and restore. Figures (checkpoint and
# restore time, image size, the time redis did not answer its client) are
# printed as `# ` lines.

load helpers
load checkpoint-helpers
load svc-helpers

setup() {
	requires non-root vm cmd:crest cmd:redis-server cmd:redis-cli
	svc_setup
	svc_fifo redis
	CDIR=$SVC
	: >"$SVC/conn.log"
	MARK=0
}

teardown() {
	teardown_bundle
	rm -rf "$IMAGE" "$SVC" 2>/dev/null || true
}

# The container's init: redis without persistence on 127.0.0.1 and ::1, and
# a client that holds one connection to the address written in /tmp/conn-on
# while that file is there, and connects again when its connection ends
# (each end is logged in /tmp/conn.log: a connection closed by --tcp-close
# shows there, a kept one does not). No command but sleep is started while
# it waits, nothing at all while it is connected.
redis_start() {
	local id=$1
	echo 127.0.0.1 >"$SVC/conn-on"
	svc_run "$id" /bin/sh -c '
		redis-server --port 6379 --bind "127.0.0.1 -::1" --save "" --appendonly no \
			--dir /tmp --logfile /tmp/redis.log &
		until redis-cli -p 6379 ping >/dev/null 2>&1; do sleep 0.1; done
		while :; do
			if read -r addr </tmp/conn-on 2>/dev/null; then
				'"$PROGS"'/svc-conn tcp "$addr" 6379 /tmp/redis.in /tmp/redis.out 2>>/tmp/conn.log
				echo "svc-conn ended" >>/tmp/conn.log
			fi
			sleep 0.2
		done'
	rcmd PING
	[ "$REPLY" = "+PONG" ] || fail "redis did not answer PING: [$REPLY]"
}

# conn_close: the client asks redis to close its connection (QUIT) and stops
# connecting; returns once it has ended, so no TCP connection is left.
conn_close() {
	local i n
	n=$(grep -c "^svc-conn ended" "$CDIR/conn.log" 2>/dev/null || true)
	rm -f "$CDIR/conn-on"
	timeout 30 bash -c 'printf "QUIT\r\n" >"$1"' conn_close "$CDIR/redis.in" || fail "conn_close: nobody reads the FIFO"
	for ((i = 0; i < 300; i++)); do
		[ "$(grep -c "^svc-conn ended" "$CDIR/conn.log" 2>/dev/null || true)" -gt "${n:-0}" ] && return 0
		sleep 0.1
	done
	fail "the client did not end after QUIT"
}

# rcmd CMD...: send the inline commands CMD... on the held connection, then an
# ECHO marker; wait (30 s at most) for the marker's reply. REPLY is what came
# before it, with the \r removed. Records when it answered in LAST_ANSWER.
CDIR=
rcmd() {
	local start mark i IN=$CDIR/redis.in OUT=$CDIR/redis.out
	start=$(stat -c %s "$OUT" 2>/dev/null || echo 0)
	MARK=$((MARK + 1))
	mark="mark-$$-$MARK"
	timeout 30 bash -c 'for c in "${@:2}"; do printf "%s\r\n" "$c"; done >"$1"' rcmd "$IN" "$@" "ECHO $mark" \
		|| fail "rcmd: nobody reads $IN"
	for ((i = 0; i < 300; i++)); do
		# A client that connects anew empties OUT before it reads the FIFO.
		[ "$(stat -c %s "$OUT" 2>/dev/null || echo 0)" -ge "$start" ] || start=0
		if tail -c +$((start + 1)) "$OUT" 2>/dev/null | grep -q "^$mark"; then
			LAST_ANSWER=$(date +%s.%N)
			REPLY=$(tail -c +$((start + 1)) "$OUT" | tr -d '\r' |
				awk -v m="$mark" '$0 == m { for (j = 1; j < n; j++) print l[j]; exit } { l[++n] = $0 }')
			return 0
		fi
		sleep 0.1
	done
	fail "no answer to [$*] within 30 s; connection log: $(cat "$CDIR/conn.log" 2>/dev/null)"
}

# The 10,000 keys: key:N = v-N-SEED.
SEED=$$
load_keys() {
	local start
	start=$(stat -c %s "$CDIR/redis.out")
	awk -v s="$SEED" 'BEGIN { for (i = 1; i <= 10000; i++) printf "SET key:%d v-%d-%s\r\n", i, i, s }' >"$SVC/keys"
	timeout 60 dd if="$SVC/keys" of="$CDIR/redis.in" bs=64k status=none || fail "load_keys: nobody reads the FIFO"
	# Replies come in order: once DBSIZE's is there, every SET's is.
	rcmd DBSIZE
	[ "$(tail -1 <<<"$REPLY")" = ":10000" ] || fail "expected 10000 keys after loading, got [$(tail -1 <<<"$REPLY")]"
	[ "$(tail -c +$((start + 1)) "$CDIR/redis.out" | grep -c '^+OK')" = 10000 ] || fail "not 10000 SETs answered +OK"
}

# check_keys: DBSIZE, the SHA-1 of all 10,000 values (joined by ','),
# computed by redis itself, and three sampled values.
check_keys() {
	local want
	want=$(awk -v s="$SEED" 'BEGIN { for (i = 1; i <= 10000; i++) printf "%sv-%d-%s", (i > 1 ? "," : ""), i, s }' | sha1sum | cut -c1-40)
	rcmd DBSIZE
	[ "$REPLY" = ":10000" ] || fail "DBSIZE: expected :10000, got [$REPLY]"
	rcmd "EVAL \"local t = {} for i = 1, 10000 do t[i] = redis.call('GET', 'key:' .. i) end return redis.sha1hex(table.concat(t, ','))\" 0"
	[ "$(tail -1 <<<"$REPLY")" = "$want" ] || fail "SHA-1 of the values: expected $want, got [$REPLY]"
	rcmd "GET key:1" "GET key:5000" "GET key:10000" "GET key:10001"
	local exp="" i v
	for i in 1 5000 10000; do
		v=v-$i-$SEED
		exp+="\$${#v}"$'\n'"$v"$'\n'
	done
	exp+='$-1'
	[ "$REPLY" = "$exp" ] || fail "sampled values: expected [$exp], got [$REPLY]"
}

client_id() {
	rcmd "CLIENT ID"
	echo "$REPLY"
}

secs() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'
}

@test "redis: 10,000 keys and an open connection survive --tcp-established (same CLIENT ID); refused on a stock kernel" {
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
	if [ "${CREST_KERNEL:-}" = stock ]; then
		cr_checkpoint "$id" --tcp-established
		refused_still_serving TCP_REPAIR "$before"
		return
	fi
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

@test "redis: 10,000 keys survive a checkpoint with no connection open; both listeners (127.0.0.1, ::1), expiry, jemalloc and the lazy-free thread work after restore" {
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
	[ "${CREST_KERNEL:-}" != stock ] || flags=(--tcp-close)
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
	if [ "${CREST_KERNEL:-}" != stock ]; then
		[ "$(client_id)" = "$before" ] || fail "the copy's CLIENT ID differs from $before"
	fi
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
