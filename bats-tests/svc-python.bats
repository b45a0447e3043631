#!/usr/bin/env bats
# vm-kernel: stock patched
# vm-only: patched an open connection
# Without address randomisation (vm-suites: TCG translates again every
# exec at a new address, 1.5 times the time): svc-redis-aslr.bats runs a real
# service with it, and the host tests all run with it.
# python3 -m http.server in a rootless container (issue 12, "Real
# services"): Debian's python3 from the VM's own root, a directory served
# from /tmp, checkpointed and restored by crest. Each test checks the bytes
# served, not exit codes. A client connection inside the container
# (svc-conn) must be restored as it was with --tcp-established (on the
# stock kernel crest outside the container puts the restorer's socket in
# repair mode), and makes
# a checkpoint without that flag refuse with the server left serving.

load helpers
load checkpoint-helpers
load svc-helpers

PORT=8000

setup() {
	requires vm non-root
	svc_setup
	mkdir -p "$SVC/www"
	# 64 KiB of bytes that differ from line to line, and their digest.
	seq 1 9000 | sed 's/^/line /' | head -c 65536 >"$SVC/www/data.txt"
	WANT=$(sha256sum <"$SVC/www/data.txt" | cut -c1-64)
}

teardown() {
	teardown_bundle
}

# py_start ID [CLIENT]: the container's init is a shell that starts the
# server and, with CLIENT, an svc-conn client named CLIENT once the port
# answers; both are children of the init, in the checkpointed tree.
py_start() {
	local id=$1 client=${2:-}
	svc_init "$PORT" "$client" "python3 -m http.server -d /tmp/www -b 127.0.0.1 $PORT >/tmp/http.log 2>&1"
	svc_run "$id" /bin/sh /tmp/run.sh
	svc_wait_port "$id" "$PORT"
	[ -z "$client" ] || svc_conn_wait "$client"
}

# py_get ID: the digest of /data.txt fetched by curl inside container ID
# (crest exec), or "failed: ..." .
py_get() {
	local out
	if out=$("$CREST" exec "$1" curl -sS --max-time 20 "http://127.0.0.1:$PORT/data.txt" 2>&1 | sha256sum | cut -c1-64); then
		echo "$out"
	else
		echo "failed: $out"
	fi
}

# py_pids ID: the server's and the init's PIDs as the container sees them.
py_pids() {
	cr_ns_pids "$1" | grep -E ' (sh|python3)$'
}

@test "python3 http.server: checkpoint and restore, the same file is served by the same processes; the figures" {
	local pids last
	py_start py
	[ "$(py_get py)" = "$WANT" ] || fail "the server does not serve the file before the checkpoint"
	last=$(svc_ms)
	pids=$(py_pids py)
	svc_cycle py
	[ "$(py_pids py)" = "$pids" ] || fail "PIDs differ: before '$pids', after '$(py_pids py)'"
	local got i
	for ((i = 0; i < 100; i++)); do
		got=$(py_get py)
		[ "$got" = "$WANT" ] && break
		sleep 0.1
	done
	[ "$got" = "$WANT" ] || fail "after restore the server gives $got, not the file ($WANT)"
	echo "# python3 http.server: checkpoint $SVC_CKPT_MS ms, restore $SVC_REST_MS ms, image $SVC_IMG_KIB KiB, unavailable $(($(svc_ms) - last - SVC_PROC_MS)) ms (from the last answer before the checkpoint to the first after the restore, with curl through crest exec)" >&3
}

@test "python3 http.server: --leave-running keeps the original serving, and the image restores under a new ID beside it" {
	py_start py
	cr_checkpoint py --leave-running
	[ "$status" = 0 ] || fail "checkpoint --leave-running: $output"
	[ "$(py_get py)" = "$WANT" ] || fail "the original stopped serving after checkpoint --leave-running"
	cr_restore py2
	[ "$status" = 0 ] || fail "restore as py2: $output"
	[ "$(py_get py2)" = "$WANT" ] || fail "the copy restored as py2 does not serve the file"
	[ "$(py_get py)" = "$WANT" ] || fail "the original stopped serving after the copy was restored"
	[ "$(cr_init py)" != "$(cr_init py2)" ] || fail "py and py2 have one init"
}

@test "python3 http.server: an open connection is refused without --tcp-established (the server serves on), and with it the same connection is answered after restore" {
	py_start py c1
	cr_checkpoint py
	[ "$status" != 0 ] || fail "checkpoint with an established connection and no --tcp-established succeeded"
	[ "${#lines[@]}" = 1 ] || fail "the refusal is not one line: $output"
	[[ $output == *"--tcp-established"* ]] || fail "the refusal does not name --tcp-established: $output"
	[ "$(py_get py)" = "$WANT" ] || fail "the server stopped serving after the refused checkpoint"
	cr_checkpoint py --tcp-established
	[ "$status" = 0 ] || fail "checkpoint --tcp-established: $output"
	cr_restore py --tcp-established
	[ "$status" = 0 ] || fail "restore --tcp-established: $output"
	# The request goes over the connection opened before the checkpoint.
	svc_send c1 'GET /data.txt HTTP/1.0\r\n\r\n'
	svc_expect c1 '^line 1$' 30
	local body
	for ((i = 0; i < 100; i++)); do
		body=$(sed '1,/^\r$/d' "$SVC/c1.out" | sha256sum | cut -c1-64)
		[ "$body" = "$WANT" ] && break
		sleep 0.1
	done
	[ "$body" = "$WANT" ] || fail "the restored connection got $(wc -c <"$SVC/c1.out") bytes that are not the file: $(head -c 200 "$SVC/c1.out")"
}
