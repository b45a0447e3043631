#!/bin/bash
# Pre-dump scenarios in process mode (crest checkpoint --pre-dump and
# --parent-path), run by tests/host/predump.test on the host and by
# bats-tests/checkpoint-predump.bats in the VM, each as PID 1 of
# `unshare -Urpf --mount-proc`, in a writable working directory:
#
#   predump-scenario.bash SCENARIO
#
# with CREST (the crest binary) and PROG (zdtm-predump) in the environment.
# Prints PASS, or FAIL: and what differed (exit 1).
#
#   chain N         N pre-dumps (0.3 s apart, the program writing), the final
#                   checkpoint with --parent-path of the last; the final image
#                   takes pages from its parents; restore; every page checked
#   nosd            --pre-dump where soft-dirty is not tracked (forced with
#                   the test knob CREST_NO_SOFT_DIRTY=1): one line, the tree
#                   runs on, no image
#   other-tree      a parent pre-dump of another tree: refused, one line
#   not-predump     a parent that is a full checkpoint: refused, one line
#   missing         a parent that does not exist: refused, one line
#   corrupt         a byte of the parent's page file that the final image
#                   reads changed after the final checkpoint: restore
#                   refuses in one line, nothing left
#   replaced        the parent directory replaced by another pre-dump of the
#                   same tree: restore refuses in one line, nothing left
#   restore-pre     a pre-dump restored by itself: refused, one line
# Descriptors the caller leaks (bats' own) would become part of the tree.
for fd in /proc/$$/fd/*; do
    fd=${fd##*/}
    [ "$fd" -gt 2 ] && [ "$fd" != 255 ] && eval "exec $fd>&-"
done
set -u
scenario=$1
n=${2:-1}
fails=
failed() { fails="$fails${fails:+; }$*"; }
wait_for() { local i; for ((i = 0; i < $2 * 20; i++)); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
# one_line FILE WORD: FILE is one "crest: " line that names WORD.
one_line() { [ "$(wc -l <"$1")" = 1 ] && grep -q "^crest: .*$2" "$1"; }
start() {
    rm -f "$1.ready" "$1.result"
    "$PROG" "$1.ready" "$1.result" </dev/null >/dev/null 2>&1 &
    wait_for "$1.ready" 30 || { echo "FAIL: zdtm-predump never became ready"; exit 1; }
    cat "$1.ready"
}
# verdict NAME PID: SIGTERM, the program's PASS.
verdict() {
    local i
    kill -TERM "$2"
    for ((i = 0; i < 600; i++)); do grep -qE '^(PASS|FAIL|ERROR)' "$1.result" 2>/dev/null && break; sleep 0.05; done
    grep -q '^PASS' "$1.result" && ! grep -qE '^(FAIL|ERROR)' "$1.result" \
        || failed "the program's verdict: $(grep -vE '^(NOTE|PASS)' "$1.result" 2>/dev/null | head -3 | tr '\n' ' ')"
}
# predumps PID N: pre1 .. preN, each with the previous as parent.
predumps() {
    local i
    for ((i = 1; i <= $2; i++)); do
        sleep 0.3
        if [ "$i" = 1 ]; then
            "$CREST" checkpoint --pre-dump --pid "$1" --image-path pre1 2>"pre$i.err"
        else
            "$CREST" checkpoint --pre-dump --pid "$1" --image-path "pre$i" --parent-path "../pre$((i - 1))" 2>"pre$i.err"
        fi || { failed "pre-dump $i: $(cat "pre$i.err")"; return 1; }
        alive "$1" || { failed "the tree does not run on after pre-dump $i"; return 1; }
    done
}
# final PID N: the checkpoint with the last pre-dump as parent (relative).
final() {
    sleep 0.3
    "$CREST" checkpoint --pid "$1" --image-path final --parent-path "../pre$2" 2>final.err \
        || { failed "final checkpoint: $(cat final.err)"; return 1; }
}
# refused WHAT WORD PID DIR: the last command failed with one line naming
# WORD, the tree runs on, DIR does not exist.
refused() {
    local rc=$?
    [ "$rc" != 0 ] || failed "$1: not refused"
    one_line err "$2" || failed "$1: not one line naming $2: $(head -3 err | tr '\n' ' ')"
    [ -z "$3" ] || alive "$3" || failed "$1: the tree is gone"
    [ -z "$4" ] || [ ! -e "$4" ] || failed "$1: $4 was written"
}

case $scenario in
chain)
    pid=$(start t)
    if predumps "$pid" "$n" && final "$pid" "$n"; then
        own=$(stat -c %s final/pages-"$pid".img)
        taken=$(grep -c '"from"' final/tree.json)
        [ "$taken" -gt 0 ] || failed "the final image takes no page from its parents"
        alive "$pid" && failed "the tree still runs after the final checkpoint"
        sleep 0.2
        if "$CREST" restore -d --image-path final 2>restore.err; then
            alive "$pid" || failed "restored, but PID $pid does not run"
            verdict t "$pid"
        else
            failed "restore: $(cat restore.err)"
        fi
        echo "NOTE: final page file $own bytes, $taken runs taken from the parents"
    else
        kill -TERM "$pid"
    fi
    ;;
nosd)
    pid=$(start t)
    CREST_NO_SOFT_DIRTY=1 "$CREST" checkpoint --pre-dump --pid "$pid" --image-path pre1 2>err
    refused "pre-dump without soft-dirty" soft-dirty "$pid" pre1
    verdict t "$pid"
    ;;
other-tree)
    a=$(start a)
    b=$(start b)
    predumps "$a" 1
    "$CREST" checkpoint --pid "$b" --image-path final --parent-path ../pre1 2>err
    refused "a parent of another tree" "another tree" "$b" final
    verdict a "$a"
    verdict b "$b"
    ;;
not-predump)
    pid=$(start t)
    "$CREST" checkpoint --leave-running --pid "$pid" --image-path full 2>full.err || failed "full checkpoint: $(cat full.err)"
    "$CREST" checkpoint --pid "$pid" --image-path final --parent-path ../full 2>err
    refused "a parent that is not a pre-dump" "not a pre-dump" "$pid" final
    verdict t "$pid"
    ;;
missing)
    pid=$(start t)
    "$CREST" checkpoint --pid "$pid" --image-path final --parent-path /nonexistent/pre1 2>err
    refused "a missing parent" "parent image" "$pid" final
    verdict t "$pid"
    ;;
corrupt | replaced)
    pid=$(start t)
    predumps "$pid" 1 && final "$pid" 1
    if [ "$scenario" = corrupt ]; then
        f=pre1/pages-$pid.img
        # In a page the final image takes from pre1: a restore checks only
        # the blocks of a parent it reads (chain.c, sums-PID.bin).
        off=$(jq -r --argjson p "$pid" '[.processes[] | select(.pid == $p) | .pages[] | select(.from == 1)][0].off // empty' final/tree.json)
        [ -n "$off" ] || failed "the final image takes no page from pre1"
        chmod u+w "$f"
        printf '\x5a' | dd of="$f" bs=1 seek=$((${off:-0} + 100)) conv=notrunc status=none
        word=pages-
    else
        # Another pre-dump of the tree, made meanwhile, in its place: the
        # tree is gone, so the replacement is of a new run of the program.
        p2=$(start u)
        "$CREST" checkpoint --pre-dump --pid "$p2" --image-path pre1b 2>/dev/null
        kill -TERM "$p2"
        rm -rf pre1 && mv pre1b pre1
        word="not the image"
    fi
    "$CREST" restore -d --image-path final 2>err
    refused "restore through a $scenario parent" "$word" "" ""
    sleep 0.2
    alive "$pid" && failed "PID $pid runs after a refused restore"
    ;;
restore-pre)
    pid=$(start t)
    predumps "$pid" 1
    "$CREST" restore -d --image-path pre1 2>err
    refused "restore of a pre-dump" "pre-dump" "$pid" ""
    verdict t "$pid"
    ;;
*)
    echo "FAIL: unknown scenario $scenario"
    exit 1
    ;;
esac
if [ -n "$fails" ]; then
    echo "FAIL: $fails"
    exit 1
fi
echo PASS
