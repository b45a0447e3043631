# Shared by tests/host/real-programs.test and real-services.test: sourced by
# their inner scripts, which run as the test user inside `unshare -Urpf`
# with $bin (crest, procstate and the programs' scripts) and $crest set.
# TAP counter and lines, waits, and the checkpoint/restore cycle of a tree
# with what /proc shows of it compared (tests/progs/procstate).
n=0 why= detail=
ok() { n=$((n+1)); echo "ok $n - $1"; }
fail() { n=$((n+1)); echo "not ok $n - $1"; shift; for l in "$@"; do [ -n "$l" ] && printf '%s\n' "$l" | sed 's/^/#   /'; done; }
wait_for() { local i; for ((i = 0; i < $2 * 20; i++)); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
tree_pids() {
    local all=" $1 " more=1 pid ppid
    while [ -n "$more" ]; do
        more=
        while read -r pid ppid; do
            [[ $all == *" $ppid "* && $all != *" $pid "* ]] && { all="$all$pid "; more=1; }
        done < <(ps -eo pid=,ppid=)
    done
    echo $all
}

# settle PID...: wait until what /proc shows of them holds still for a
# second, or SETTLE_GAP seconds (at most 20 tries): a daemon's allocator
# gives memory back a few
# seconds after start-up or after a restore (BEAM's), a change of its own
# that the comparison below would count against the restore.
settle() {
    local a b i
    a=$("$bin/procstate" "$@")
    for ((i = 0; i < 20; i++)); do
        sleep "${SETTLE_GAP:-1}"
        b=$("$bin/procstate" "$@")
        [ "$a" = "$b" ] && return 0
        a=$b
    done
}

# timers_fired BEFORE AFTER: the two differ only in timerfds' unread
# expirations, each as many or more after: a timer of the program that
# expired between the first look and the checkpoint, or after the restore
# (BEAM's), not a change the restore made.
timers_fired() {
    local nb na
    [ "$(sed 's/ ticks: [0-9]*/ ticks: N/' "$1")" = "$(sed 's/ ticks: [0-9]*/ ticks: N/' "$2")" ] || return 1
    paste -d'\n' <(grep -o ' ticks: [0-9]*' "$1") <(grep -o ' ticks: [0-9]*' "$2") | while read -r _ nb && read -r _ na; do
        [ "$na" -ge "$nb" ] || exit 1
    done
}

# cycle NAME DIR PID K: checkpoint the tree of PID and restore it, what
# /proc shows compared (with SETTLE=1, once it holds still). Sets $why on
# failure.
cycle() {
    local name=$1 d=$2 pid=$3 k=$4 tree t i
    tree=$(tree_pids "$pid")
    # shellcheck disable=SC2086 # a list of PIDs
    [ -z "${SETTLE:-}" ] || settle $tree
    # shellcheck disable=SC2086 # a list of PIDs
    "$bin/procstate" $tree >"$d/proc-$k.before"
    if ! "$crest" checkpoint --pid "$pid" --image-path "$d/img-$k" >"$d/ckpt-$k.err" 2>&1; then
        why="checkpoint $k failed: $(tail -3 "$d/ckpt-$k.err")"; return 1
    fi
    for t in $tree; do
        alive "$t" && { why="checkpoint $k: PID $t still runs"; return 1; }
    done
    for ((i = 0; i < 100; i++)); do [ -e "/proc/$pid" ] || break; sleep 0.05; done
    if ! "$crest" restore --image-path "$d/img-$k" -d --pid-file "$d/pid-$k" >"$d/rest-$k.err" 2>&1; then
        why="restore $k failed: $(tail -3 "$d/rest-$k.err")"; return 1
    fi
    [ "$(cat "$d/pid-$k")" = "$pid" ] || { why="restore $k: root PID $(cat "$d/pid-$k"), expected $pid"; return 1; }
    # shellcheck disable=SC2086 # a list of PIDs
    "$bin/procstate" $tree >"$d/proc-$k.after"
    if ! cmp -s "$d/proc-$k.before" "$d/proc-$k.after" && ! timers_fired "$d/proc-$k.before" "$d/proc-$k.after"; then
        why="restore $k: /proc shows another state than before the checkpoint (tests/progs/procstate)"
        detail="< before, > after:
$(diff "$d/proc-$k.before" "$d/proc-$k.after" | grep '^[<>]' | head -12)"
        return 1
    fi
    return 0
}

# cycles NAME DIR PID: two cycles; $why and $detail say what failed.
cycles() {
    local k
    why= detail=
    for k in 1 2; do cycle "$1" "$2" "$3" "$k" || return 1; done
}

# interp NAME DIR PID: two cycles, then SIGTERM and the program's verdict.
interp() {
    local name=$1 d=$2 pid=$3 i
    if ! cycles "$name" "$d" "$pid"; then
        fail "$name: $why" "$detail"; kill -KILL "$pid" 2>/dev/null; return
    fi
    kill -TERM "$pid"
    for ((i = 0; i < 600; i++)); do grep -qE '^(PASS|FAIL)' "$d/result" 2>/dev/null && break; sleep 0.05; done
    sleep 0.2
    if grep -q '^PASS' "$d/result" 2>/dev/null && ! grep -q '^FAIL' "$d/result"; then
        ok "$name: two checkpoint/restore cycles, /proc the same, its own checks pass"
    else
        fail "$name: its own checks after restore" "$(cat "$d/result" "$d/out" 2>/dev/null | head -10)"
    fi
}

# free_port: a TCP port of 127.0.0.1 free a moment ago.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start() { # DIR COMMAND...: in DIR, stdin from /dev/null, output to DIR/out
    local d=$1; shift
    (cd "$d" && exec "$@" </dev/null >"$d/out" 2>&1) &
    disown $!
}
