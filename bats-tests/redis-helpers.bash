# Vocabulary of the redis suites (svc-redis.bats, and the redis container of
# the two-node migration, migrate-node-a/b.bats). Load it after svc-helpers.
#
#   redis_start ID     the container's init: redis and a held client
#                      connection (see below); waits for its PING
#   rcmd CMD...        inline commands on the held connection (REPLY)
#   load_keys          the 10,000 keys key:N = v-N-SEED
#   check_keys         they are all there (redis computes their SHA-1)
#   client_id          the held connection's CLIENT ID
#   conn_close         the client quits and stops connecting
#   secs A B           B - A, two `date +%s.%N` values, in seconds
#   redis_setup, redis_teardown
#                      a suite's setup and teardown (svc-redis*.bats; not
#                      setup() here: the migrate suites load this file too)
# CDIR is the directory of the client's files (the container's /tmp, $SVC),
# SEED the keys' seed (this shell's PID unless set).
redis_setup() {
	requires non-root vm cmd:crest cmd:redis-server cmd:redis-cli
	svc_setup
	svc_fifo redis
	CDIR=$SVC
	: >"$SVC/conn.log"
	MARK=0
}

redis_teardown() {
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
