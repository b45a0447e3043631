#!/bin/bash
# Lazy restore scenarios in process mode (crest restore --lazy-pages), run
# by tests/host/lazy-restore.test on the host and by
# bats-tests/restore-lazy.bats in the VM, each as PID 1 of
# `unshare -Urpf --mount-proc`, in a writable working directory:
#
#   lazy-scenario.bash SCENARIO
#
# with CREST (the crest binary), PROGS (the directory of zdtm-anon-mem and
# zdtm-lazy) and MIB (the size of their large region) in the environment.
# Prints PASS (with NOTE lines), SKIP: and why (exit 0), or FAIL: and what
# differed (exit 1). Scenarios that need a test build (CREST_FAULT,
# CREST_LAZY_PACE_MS, CREST_STATS) say SKIP without one.
#
#   anon        zdtm-anon-mem, restore --lazy-pages -d: every byte, the
#               untouched pages not resident, the protections; once every
#               page is in, no task is traced
#   while       zdtm-lazy, the background copies slowed down
#               (CREST_LAZY_PACE_MS): the program forks, moves a region,
#               drops half of another, has the kernel read and write its
#               memory, all while its pages come in; the stats show faults
#               and the fork; every byte; crest exits once all is in
#   exit-early  zdtm-lazy, crest letting go of its tasks only once the
#               program and its thread have exited (CREST_FAULT=
#               lazy-late-detach, as on a slow machine): crest collects the
#               thread (the leader's exit waits for it) and exits
#   tree        a shell and two zdtm-anon-mem children, all three lazy: the
#               shell's wait gets both statuses, both programs check every
#               byte
#   wait        restore --lazy-pages without -d: crest waits for the root,
#               its exit status is the root's
#   kill-filler the filling process SIGKILLed after 3 background copies:
#               the tree is killed, no check of the program ran to a
#               verdict (no page was answered with zeros), nothing left
#   kill-guard  the guard SIGKILLed: crest kills the tree, nothing left
#   corrupt     one byte of the page file changed: the restore returns once
#               the tree runs, then the check of the page file (computed
#               while the pages come in) kills the tree, in one line that
#               names the checksum, and nothing left
#   old-kernel  a kernel without UFFD_USER_MODE_ONLY (CREST_FAULT=
#               lazy-old-kernel): refused in one line, nothing created, the
#               image unchanged and restored eagerly afterwards
#   container   --lazy-pages with a container ID: refused in one line
for fd in /proc/$$/fd/*; do
    fd=${fd##*/}
    [ "$fd" -gt 2 ] && [ "$fd" != 255 ] && eval "exec $fd>&-"
done
set -u
scenario=$1
wait_for() { local i; for ((i = 0; i < $2 * 20; i++)); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
hooks=false
"$CREST" --version 2>/dev/null | grep -q '^test hooks: on' && hooks=true
need_hooks() { $hooks || { echo "SKIP: this crest is not a test build (configure --enable-test-hooks): no $1"; exit 0; }; }
# start PROG: the program, checkpointed; its PID in $pid, its image in img.
start() {
    rm -rf img ready result
    ZDTM_ANON_MIB=$MIB "$PROGS/$1" "$PWD/ready" "$PWD/result" </dev/null >out 2>&1 &
    disown $!
    wait_for ready 60 || { echo "FAIL: $1 never became ready: $(cat out)"; exit 1; }
    pid=$(cat ready)
    "$CREST" checkpoint --pid "$pid" --image-path img 2>ckpt.err || { echo "FAIL: checkpoint: $(cat ckpt.err)"; exit 1; }
    for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.05; done
}
# verdict: the program's own verdict after SIGTERM (PASS, or its lines).
verdict() {
    local i
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 1200; i++)); do grep -qE '^(PASS|FAIL|ERROR)' result 2>/dev/null && ! alive "$pid" && break; sleep 0.05; done
    grep -qE '^(FAIL|ERROR)' result && { echo "FAIL: the restored program: $(head -5 result)"; exit 1; }
    grep -q '^PASS' result || { echo "FAIL: no verdict from the restored program: $(cat result 2>/dev/null)"; exit 1; }
}
# untraced: no task of the restored tree is traced once every page is in.
untraced() {
    local i
    for ((i = 0; i < 400; i++)); do
        grep -q '^TracerPid:[[:space:]]*0$' "/proc/$pid/status" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "FAIL: process $pid still traced 20 s after the restore: $(grep TracerPid /proc/$pid/status)"
    exit 1
}
# crest_gone: the process that filled the pages has let the tree go and exited.
# A bound on a hang, not a timing (crest exits within a second or two of the
# verdict, VM included). The failures CI once saw here were a hang of the
# final detach (a leader that exited waited for by its TID), not slowness.
crest_gone() {
    local i
    for ((i = 0; i < 1800; i++)); do
        pgrep -x crest >/dev/null || { GONE_AFTER=$((i / 20)); return 0; }
        sleep 0.05
    done
    echo "FAIL: crest still runs 90 s after the restored program's verdict: $(pgrep -a -x crest)"
    hang_report
    exit 1
}
# hang_report: what each process left in this PID namespace is doing.
hang_report() {
    local p t
    for p in $(ls /proc | grep -E '^[0-9]+$'); do
        [ "$p" = 1 ] || [ "$p" = $$ ] || [ "$p" = "$BASHPID" ] && continue
        [ -r "/proc/$p/comm" ] || continue
        for t in /proc/$p/task/*; do
            echo "  task ${t##*/} of $p ($(cat /proc/$p/comm 2>/dev/null)):" \
                "$(grep -E '^(State|TracerPid|SigPnd|ShdPnd|SigBlk)' "$t/status" 2>/dev/null | tr -s '\t\n' '  ')" \
                "wchan $(cat "$t/wchan" 2>/dev/null) syscall $(cat "$t/syscall" 2>/dev/null)"
        done
        [ "$(cat /proc/$p/comm 2>/dev/null)" = crest ] || continue
        echo "  fds of $p: $(ls -l /proc/$p/fd 2>/dev/null | awk 'NR > 1 { printf "%s->%s ", $9, $11 }')"
        command -v strace >/dev/null && timeout 3 strace -tt -p "$p" 2>&1 | head -40 | sed 's/^/  strace: /'
    done
    echo "  stderr of the restore: $(tail -5 rest.err 2>/dev/null)"
}
# nothing_left: the tree is gone, and no crest process is left.
nothing_left() {
    local i
    for ((i = 0; i < 200; i++)); do
        ! alive "$pid" && ! pgrep -x crest-lazyguard >/dev/null && return 0
        sleep 0.05
    done
    echo "FAIL: left behind: tree root $pid $(alive "$pid" && echo alive), guard $(pgrep -x crest-lazyguard)"
    exit 1
}

# killed_after RC WHAT: the lazy restore returned RC once the tree ran;
# then WHAT must kill the tree, without any verdict of its own, nothing of
# it or of crest left. It is left waiting meanwhile: a SIGTERM now would let
# it check its memory by faults and end before that (the kill-guard case
# once passed a verdict so in CI).
killed_after() {
    local i
    for ((i = 0; i < 1200; i++)); do alive "$pid" || break; sleep 0.05; done
    kill -TERM "$pid" 2>/dev/null
    nothing_left
    crest_gone
    [ "$1" = 0 ] || { echo "FAIL: restore exited $1 before $2: $(cat rest.err)"; exit 1; }
    [ ! -s result ] || { echo "FAIL: the program ran to a verdict: $(cat result)"; exit 1; }
}

case "$scenario" in
anon)
    start zdtm-anon-mem
    "$CREST" restore --image-path img -d --lazy-pages --pid-file pid 2>rest.err || { echo "FAIL: restore: $(cat rest.err)"; exit 1; }
    [ "$(cat pid)" = "$pid" ] || { echo "FAIL: pid file says $(cat pid), expected $pid"; exit 1; }
    untraced
    verdict
    ;;
while)
    need_hooks "CREST_LAZY_PACE_MS"
    start zdtm-lazy
    CREST_STATS=1 CREST_LAZY_PACE_MS=40 "$CREST" restore --image-path img -d --lazy-pages 2>rest.err \
        || { echo "FAIL: restore: $(cat rest.err)"; exit 1; }
    verdict
    crest_gone
    st=$(grep 'lazy restore stats' rest.err)
    faults=$(sed -n 's/.*faults \([0-9]*\),.*/\1/p' <<<"$st")
    forks=$(sed -n 's/.*forks \([0-9]*\),.*/\1/p' <<<"$st")
    [ "${faults:-0}" -gt 0 ] && [ "${forks:-0}" = 1 ] \
        || { echo "FAIL: the pages did not come by fault, or the fork was not seen: '$st' $(cat rest.err)"; exit 1; }
    echo "NOTE: $st; crest exited ${GONE_AFTER} s after the verdict"
    ;;
exit-early)
    need_hooks "CREST_FAULT"
    start zdtm-lazy
    CREST_STATS=1 CREST_FAULT=lazy-late-detach "$CREST" restore --image-path img -d --lazy-pages 2>rest.err \
        || { echo "FAIL: restore: $(cat rest.err)"; exit 1; }
    verdict
    crest_gone
    grep -q 'lazy restore stats' rest.err || { echo "FAIL: no stats: $(cat rest.err)"; exit 1; }
    echo "NOTE: $(grep 'lazy restore stats' rest.err); crest exited ${GONE_AFTER} s after the verdict"
    ;;
tree)
    rm -rf img r1 r2 res1 res2
    ZDTM_ANON_MIB=$MIB setsid sh -c "'$PROGS/zdtm-anon-mem' '$PWD/r1' '$PWD/res1' & '$PROGS/zdtm-anon-mem' '$PWD/r2' '$PWD/res2' & wait; echo done >'$PWD/sh.done'" </dev/null >out 2>&1 &
    disown $!
    wait_for r1 60 && wait_for r2 60 || { echo "FAIL: the programs never became ready: $(cat out)"; exit 1; }
    sleep 0.3
    k1=$(cat r1) k2=$(cat r2)
    root=$(ps -o ppid= -p "$k1" | tr -d ' ')
    "$CREST" checkpoint --pid "$root" --image-path img 2>ckpt.err || { echo "FAIL: checkpoint: $(cat ckpt.err)"; exit 1; }
    for ((i = 0; i < 100; i++)); do alive "$root" || break; sleep 0.05; done
    CREST_STATS=1 "$CREST" restore --image-path img -d --lazy-pages 2>rest.err || { echo "FAIL: restore: $(cat rest.err)"; exit 1; }
    kill -TERM "$k1" "$k2"
    for ((i = 0; i < 1200; i++)); do [ -e sh.done ] && break; sleep 0.05; done
    grep -q '^PASS' res1 && grep -q '^PASS' res2 && [ -e sh.done ] \
        || { echo "FAIL: verdicts '$(cat res1 2>/dev/null)' '$(cat res2 2>/dev/null)', shell done: $(cat sh.done 2>/dev/null)"; exit 1; }
    $hooks && { grep -q 'lazy restore stats: 3 processes' rest.err || { echo "FAIL: not 3 lazy processes: $(cat rest.err)"; exit 1; }; }
    echo "NOTE: $(grep 'lazy restore stats' rest.err)"
    ;;
wait)
    start zdtm-anon-mem
    (sleep 1; kill -TERM "$pid") &
    "$CREST" restore --image-path img --lazy-pages 2>rest.err
    rc=$?
    [ "$rc" = 0 ] || { echo "FAIL: restore --lazy-pages (waiting for the root) exited $rc: $(cat rest.err)"; exit 1; }
    grep -q '^PASS' result || { echo "FAIL: no PASS: $(cat result 2>/dev/null)"; exit 1; }
    ;;
kill-filler | kill-guard)
    need_hooks CREST_FAULT
    start zdtm-lazy
    CREST_FAULT=lazy-$scenario CREST_FAULT_AFTER=3 CREST_LAZY_PACE_MS=40 \
        "$CREST" restore --image-path img -d --lazy-pages 2>rest.err
    # The restore itself returned once the tree ran (status 0); then the
    # fault, at the third background copy: the tree must die of it.
    killed_after $? "the fault"
    echo "NOTE: $(grep -v 'restore stats' rest.err | head -2 | tr '\n' ' ')"
    ;;
corrupt)
    start zdtm-anon-mem
    pf=$(ls img/pages-*.img | head -1)
    sz=$(stat -c %s "$pf")
    b=$(od -An -tu1 -j $((sz / 2)) -N1 "$pf" | tr -d ' ')
    printf "\\x$(printf %02x $((b ^ 0xff)))" | dd of="$pf" bs=1 seek=$((sz / 2)) conv=notrunc 2>/dev/null
    [ "$(od -An -tu1 -j $((sz / 2)) -N1 "$pf" | tr -d ' ')" = $((b ^ 0xff)) ] || { echo "FAIL: could not change the page file"; exit 1; }
    "$CREST" restore --image-path img -d --lazy-pages 2>rest.err
    killed_after $? "the check"
    [ "$(grep -cv 'restore stats' rest.err)" = 1 ] && grep -q 'the restored tree is killed: .*checksum mismatch' rest.err \
        || { echo "FAIL: not one line naming the checksum: $(cat rest.err)"; exit 1; }
    echo "NOTE: $(cat rest.err)"
    ;;
old-kernel)
    need_hooks CREST_FAULT
    start zdtm-anon-mem
    sum=$(find img -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)
    CREST_FAULT=lazy-old-kernel "$CREST" restore --image-path img -d --lazy-pages 2>rest.err && { echo "FAIL: accepted"; exit 1; }
    [ "$(wc -l <rest.err)" = 1 ] && grep -q 'lazy-pages: .*UFFD_USER_MODE_ONLY (Linux 5.11)' rest.err \
        || { echo "FAIL: not one line naming the kernel's lack: $(cat rest.err)"; exit 1; }
    ! alive "$pid" || { echo "FAIL: process $pid exists after the refusal"; exit 1; }
    [ "$(find img -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)" = "$sum" ] || { echo "FAIL: the image changed"; exit 1; }
    # The same image restores eagerly afterwards.
    "$CREST" restore --image-path img -d 2>rest2.err || { echo "FAIL: eager restore after the refusal: $(cat rest2.err)"; exit 1; }
    verdict
    echo "NOTE: $(cat rest.err)"
    ;;
container)
    "$CREST" restore --image-path img --lazy-pages some-container 2>rest.err && { echo "FAIL: accepted"; exit 1; }
    [ "$(wc -l <rest.err)" = 1 ] && grep -q 'lazy-pages.*process mode' rest.err \
        || { echo "FAIL: not one line: $(cat rest.err)"; exit 1; }
    echo "NOTE: $(cat rest.err)"
    ;;
*)
    echo "FAIL: unknown scenario $scenario"
    exit 1
    ;;
esac
echo PASS
