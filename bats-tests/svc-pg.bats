#!/usr/bin/env bats
# vm-kernel: stock patched
# vm-only: patched a TCP session
# Without address randomisation (vm-suites: TCG translates again every
# exec at a new address, 1.5 times the time): svc-redis-aslr.bats runs a real
# service with it, and the host tests all run with it.
# PostgreSQL 15 (Debian's) in a rootless container whose root is the VM's own
# file system, run as the container's user 1000 (PostgreSQL refuses root):
# the container's init (root of the container, given CAP_SETUID and
# CAP_SETGID) runs initdb (or unpacks the data directory initdb made for an
# earlier test, see pg_start), the server and its clients under setpriv, as
# a service that drops its privileges does. A psql session over the unix
# socket, fed from a FIFO, holds an open transaction with an uncommitted
# row; after checkpoint and restore the same session sees its row, commits
# it, and a new client sees it (issue 12). The server's tasks are under a
# subordinate ID on the host, its data directory of mode 0700, its SysV
# segment of mode 0600: what crest reads through its broker and restores as
# their user. Figures are printed as `# ` lines.

load helpers
load checkpoint-helpers
load svc-helpers

setup() {
	requires non-root vm cmd:crest cmd:setpriv cmd:python3 file:/usr/lib/postgresql/15/bin/postgres cmd:psql
	svc_setup
	# The init drops to UID 1000 for PostgreSQL: it needs the capabilities.
	jq '.process.capabilities |= with_entries(if .key == "bounding" or .key == "permitted"
			or .key == "effective" then .value += ["CAP_SETUID", "CAP_SETGID"] else . end)' \
		"$BUNDLE/config.json" >"$BUNDLE/c.json" && mv "$BUNDLE/c.json" "$BUNDLE/config.json"
	svc_fifo sess
	MARK=0
}

teardown() {
	# PostgreSQL's files are UID 1000's of the container (a subordinate ID),
	# its data directory mode 0700: removed as that user, inside.
	# Bounded: bats' per-test limit does not cover teardown (two CI boots
	# once stood still in this suite past it).
	local id
	for id in ${ID2:-} ${ID:-}; do
		if timeout 60 "$CREST" state "$id" >/dev/null 2>&1; then
			timeout 120 "$CREST" exec "$id" setpriv --reuid=1000 --regid=1000 --clear-groups \
				rm -rf /tmp/pgdata >/dev/null 2>&1 || true
		fi
	done
	teardown_bundle
	rm -rf "$IMAGE" "$SVC" "$BATS_TEST_TMPDIR/svc2" 2>/dev/null || true
}

AS_PG="setpriv --reuid=1000 --regid=1000 --clear-groups"

# pg_start ID [TCP]: the init script: the data directory, the server (unix
# socket in /tmp, TCP on 127.0.0.1:5432; dynamic shared memory in files of
# the data directory: POSIX shared memory in the container's own /dev/shm is
# refused, see zdtm-lost posix-shm), a table t of 1000 rows, and the session
# psql reading /tmp/sess.in (over TCP with TCP, else the unix socket).
#
# The data directory: under TCG initdb took about 12 s a test, on each of
# two kernels. The first test that starts PostgreSQL runs initdb and, before
# its server starts, has user 1000 write the data directory as a tar file
# to the init's redirection (the file is the test user's, which the host
# can keep and remove): the suite file's template. Each later test links
# it into its bundle's root (not /tmp: the --leave-running test copies /tmp
# whole; the root is read-only) and has user 1000 unpack it into its own
# /tmp: its own data directory as initdb left it, owned by user 1000 and of
# mode 0700 (-p keeps initdb's modes), for its own server, in which it
# makes its own table t.
#
# Every test runs PostgreSQL's default shared memory (shared_buffers 128
# MB: a 146 MB shared anonymous mapping, about 10 MB of it touched): the
# image holds what is touched (16 MB in all, format 19 "memfiles"; it was
# 162 MB, checkpoint 6.5 s and restore 9.8 s under TCG, when crest saved
# and restored the object whole).
pg_start() {
	local id=$1 host=/tmp tpl=${BATS_FILE_TMPDIR:-$BATS_TEST_TMPDIR}/pgdata.tar datadir
	[ "${2:-}" = tcp ] && host=127.0.0.1
	if [ -s "$tpl" ]; then
		ln "$tpl" "$BUNDLE/rootfs/pgdata.tar" || fail "linking the data directory's template into the bundle failed"
		datadir="$AS_PG tar -C /tmp -xpf /pgdata.tar >/tmp/pgdata.log 2>&1 || exit 1"
	else
		datadir="$AS_PG initdb -D /tmp/pgdata -U postgres --auth=trust >/tmp/pgdata.log 2>&1 || exit 1
		$AS_PG tar -C /tmp -cf - pgdata >/tmp/pgdata.tar 2>>/tmp/pgdata.log || exit 1"
	fi
	cat >"$SVC/run.sh" <<-EOF
		#!/bin/sh
		export PATH=/usr/lib/postgresql/15/bin:\$PATH
		$datadir
		$AS_PG postgres -D /tmp/pgdata -k /tmp -p 5432 -c listen_addresses=127.0.0.1 \
			-c dynamic_shared_memory_type=mmap >/tmp/pg.log 2>&1 &
		until $AS_PG pg_isready -h /tmp -p 5432 -q; do sleep 0.2; done
		$AS_PG psql -h /tmp -U postgres -X -q -v ON_ERROR_STOP=1 -c \
			"create table t (id int primary key, v text);
			 insert into t select g, md5(g::text) from generate_series(1, 1000) g;" \
			>/tmp/setup.out 2>&1 && : >/tmp/setup.done
		$AS_PG psql -h $host -p 5432 -U postgres -X -n -q -A -t <>/tmp/sess.in >/tmp/sess.out 2>&1 &
		wait
	EOF
	svc_run "$id" /bin/sh /tmp/run.sh
	wait_file "$SVC/setup.done" 300 || fail "PostgreSQL did not start: $(cat "$SVC/pgdata.log" "$SVC/pg.log" "$SVC/setup.out" 2>/dev/null | tail -20)"
	# Renamed whole once complete: a test never finds half a template.
	[ -s "$tpl" ] || mv "$SVC/pgdata.tar" "$tpl" || fail "keeping the data directory's template failed"
	pg_sess "select 'ready';"
	[ "$REPLY" = ready ] || fail "the session did not answer: [$REPLY]"
}

# pg_sess SQL: SQL on the held session, then a marker; REPLY is what came
# before the marker (30 s at most).
pg_sess() {
	local start mark i out=$SVC/sess.out
	start=$(stat -c %s "$out" 2>/dev/null || echo 0)
	MARK=$((MARK + 1))
	mark="mark-$$-$MARK"
	svc_send sess "$1\nselect '$mark';\n"
	for ((i = 0; i < 300; i++)); do
		if tail -c +$((start + 1)) "$out" 2>/dev/null | grep -q "^$mark\$"; then
			REPLY=$(tail -c +$((start + 1)) "$out" | awk -v m="$mark" '$0 == m { exit } { print }')
			return 0
		fi
		sleep 0.1
	done
	fail "the session did not answer [$1] within 30 s: $(tail -c 300 "$out")"
}

# pg_new SQL: a new client's answer (psql through crest exec, as user 1000).
pg_new() {
	"$CREST" exec "$ID" $AS_PG /usr/bin/psql -h /tmp -p 5432 -U postgres -X -A -t -c "$1"
}

# pg_postmaster ID: the host PID of the server's first process (the one
# whose parent is not a postgres).
pg_postmaster() {
	local p
	for p in $(cr_tasks "$1"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = postgres ] || continue
		[ "$(cat "/proc/$(awk '/^PPid:/ { print $2 }' "/proc/$p/status")/comm" 2>/dev/null)" = postgres ] && continue
		echo "$p"
		return 0
	done
	return 1
}

# The rows, as a digest PostgreSQL computes.
SUM_SQL="select count(*) || ' ' || sum(id) || ' ' || md5(string_agg(v, ',' order by id)) from t"
want_sum() { # N: the digest of rows 1..1000, with N=1001 also row 5001
	python3 -c '
import hashlib, sys
n = int(sys.argv[1])
v = [hashlib.md5(str(i).encode()).hexdigest() for i in range(1, 1001)]
if n == 1001:
    v.append("uncommitted")
print(n, sum(range(1, 1001)) + (5001 if n == 1001 else 0), hashlib.md5(",".join(v).encode()).hexdigest())' "$1"
}

# pg_users ID: the host UIDs of the postgres processes of container ID.
pg_uids() {
	local p
	for p in $(cr_tasks "$1"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = postgres ] && awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$p/status"
	done | sort -u
}

@test "PostgreSQL as container user 1000: an open transaction, its session and the rows survive checkpoint and restore" {
	ID="pg-$$"
	local uids want1000 want1001 n pool
	pg_start "$ID"
	pg_sess "begin; insert into t values (5001, 'uncommitted'); $SUM_SQL;"
	want1001=$(want_sum 1001)
	want1000=$(want_sum 1000)
	[ "$REPLY" = "$want1001" ] || fail "in the transaction: expected [$want1001], got [$REPLY]"
	[ "$(pg_new "$SUM_SQL")" = "$want1000" ] || fail "a new client sees the uncommitted row before the checkpoint"
	uids=$(pg_uids "$ID")
	[ -n "$uids" ] && [[ $uids != *$'\n'* ]] || fail "postgres processes under several UIDs: [$uids]"
	[ "${uids%% *}" != "$(id -u)" ] || fail "postgres runs as the test user itself, not as a container user"
	n=$(cr_tasks "$ID" | wc -w)
	# The buffer pool: the postmaster's shared anonymous mapping, its size.
	pool=$(awk '/\/dev\/zero \(deleted\)/ { m = 1; next } m && /^Size:/ { print $2; exit }' \
		"/proc/$(pg_postmaster "$ID")/smaps")
	[ -n "$pool" ] || fail "no shared anonymous mapping (the buffer pool) in the postmaster"
	svc_cycle_stopped "$ID"
	echo "# PostgreSQL ($n tasks, stopped): checkpoint ${SVC_CKPT_MS} ms, restore ${SVC_REST_MS} ms, image ${SVC_IMG_KIB} KiB (buffer pool ${pool} KiB)" >&3
	# Its untouched pages are not saved (they were: an image larger than it).
	[ "$SVC_IMG_KIB" -lt "$pool" ] || fail "the image (${SVC_IMG_KIB} KiB) is not smaller than the buffer pool it maps (${pool} KiB): its holes were saved"
	[ "$(pg_uids "$ID")" = "$uids" ] || fail "postgres UIDs after restore: [$(pg_uids "$ID")], before [$uids]"
	[ "$(cr_tasks "$ID" | wc -w)" = "$n" ] || fail "$n tasks before, $(cr_tasks "$ID" | wc -w) after"
	# The session is the same one, still in its transaction.
	pg_sess "$SUM_SQL;"
	[ "$REPLY" = "$want1001" ] || fail "the session after restore: expected [$want1001], got [$REPLY]"
	[ "$(pg_new "$SUM_SQL")" = "$want1000" ] || fail "a new client after restore sees the uncommitted row"
	pg_sess "commit; $SUM_SQL;"
	[ "$REPLY" = "$want1001" ] || fail "after commit: [$REPLY]"
	[ "$(pg_new "$SUM_SQL")" = "$want1001" ] || fail "a new client does not see the committed row: [$(pg_new "$SUM_SQL")]"
	# Written after restore, and a second cycle.
	pg_sess "insert into t values (6001, 'after'); select count(*) from t;"
	[ "$REPLY" = 1002 ] || fail "insert after restore: [$REPLY]"
	rm -rf "$IMAGE"
	# Running: what /proc shows is the program's to change meanwhile.
	svc_cycle "$ID" -
	[ "$(pg_new "select count(*), max(id) from t")" = "1002|6001" ] || fail "after a second cycle: [$(pg_new "select count(*), max(id) from t")]"
	pg_sess "select count(*) from t;"
	[ "$REPLY" = 1002 ] || fail "the session after a second cycle: [$REPLY]"
}

@test "PostgreSQL: a TCP session is refused without --tcp-established (the server serves on); with it the session goes on" {
	ID="pg-$$"
	local pid
	pg_start "$ID" tcp
	pg_sess "begin; insert into t values (5001, 'uncommitted');"
	cr_checkpoint "$ID"
	[ "$status" != 0 ] || fail "a checkpoint with an established connection succeeded without --tcp-established"
	[ "${#lines[@]}" = 1 ] || fail "the refusal is not one line: $output"
	[[ $output == *established* ]] || fail "the refusal does not say why: $output"
	[ ! -e "$IMAGE" ] || fail "a refused checkpoint left an image"
	for pid in $(cr_tasks "$ID"); do
		task_untouched "$pid" >/dev/null || fail "task $pid after the refusal: $(task_untouched "$pid")"
	done
	pg_sess "select count(*) from t;"
	[ "$REPLY" = 1001 ] || fail "the session after the refusal: [$REPLY]"
	cr_checkpoint "$ID" --tcp-established
	[ "$status" = 0 ] || fail "checkpoint --tcp-established: $output"
	cr_restore "$ID"
	[ "$status" = 0 ] || fail "restore: $output"
	pg_sess "select count(*) from t;"
	[ "$REPLY" = 1001 ] || fail "the TCP session after restore: [$REPLY]"
	pg_sess "commit;"
	[ "$(pg_new "select count(*) from t")" = 1001 ] || fail "the commit of the TCP session is not seen"
}

# --leave-running (issue 12): the container's /tmp (the data directory,
# owned by the container's user 1000 and of mode 0700: copied inside the
# container's user namespace) is copied right after the checkpoint, before
# the session does anything more (no cgroup in the VM, so no pause: what
# PostgreSQL's background processes write meanwhile is what their memory in
# the image already holds). The original keeps its session and commits; the
# image restored under a new ID, with the copy as its /tmp, has the session
# in its transaction and rolls it back, each apart from the other.
@test "PostgreSQL: --leave-running: the original's session commits on; the image restored under a new ID has the open transaction apart and rolls it back" {
	ID="pg-$$"
	ID2="pg-copy-$$"
	local svc1=$SVC svc2=$BATS_TEST_TMPDIR/svc2 want1000 want1001 init
	pg_start "$ID"
	pg_sess "begin; insert into t values (5001, 'uncommitted'); $SUM_SQL;"
	want1001=$(want_sum 1001)
	want1000=$(want_sum 1000)
	[ "$REPLY" = "$want1001" ] || fail "in the transaction: expected [$want1001], got [$REPLY]"
	init=$(cr_init "$ID")
	cr_checkpoint "$ID" --leave-running
	[ "$status" = 0 ] || fail "checkpoint --leave-running: $output"
	nsenter -U -t "$init" cp -a "$svc1" "$svc2" || fail "copying /tmp inside the container's user namespace failed"
	[ "$(cr_init "$ID")" = "$init" ] || fail "the original's init changed"
	# The original: the same session, its row, then committed.
	pg_sess "$SUM_SQL;"
	[ "$REPLY" = "$want1001" ] || fail "the original's session after --leave-running: [$REPLY]"
	pg_sess "commit; $SUM_SQL;"
	[ "$(pg_new "$SUM_SQL")" = "$want1001" ] || fail "the original's commit is not seen: [$(pg_new "$SUM_SQL")]"
	# The copy, under a new ID, with the copied files as its /tmp.
	jq --arg svc "$svc2" '(.mounts[] | select(.destination == "/tmp")).source = $svc' \
		"$BUNDLE/config.json" >"$BUNDLE/config.json.tmp" && mv "$BUNDLE/config.json.tmp" "$BUNDLE/config.json"
	cr_restore "$ID2"
	[ "$status" = 0 ] || fail "restore under $ID2: $output"
	SVC=$svc2 ID=$ID2
	pg_sess "$SUM_SQL;"
	[ "$REPLY" = "$want1001" ] || fail "the copy's session: expected its open transaction [$want1001], got [$REPLY]"
	[ "$(pg_new "$SUM_SQL")" = "$want1000" ] || fail "a new client of the copy sees the original's commit: [$(pg_new "$SUM_SQL")]"
	pg_sess "rollback; insert into t values (7001, 'copy'); select count(*), max(id) from t;"
	[ "$REPLY" = "1001|7001" ] || fail "the copy after rollback and insert: [$REPLY]"
	SVC=$svc1 ID="pg-$$"
	[ "$(pg_new "select count(*), max(id) from t")" = "1001|5001" ] || fail "the original sees the copy's writes: [$(pg_new "select count(*), max(id) from t")]"
}
