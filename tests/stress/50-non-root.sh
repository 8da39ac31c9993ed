# A user other than root cannot read events or watch-pids, nor write watch-pids or marker
# (EACCES); it can read stats.
. /host/lib.sh
load
as() { /progs/asuser 65534 "$@"; }
for f in events watch-pids; do
    as cat /proc/memmon/$f > /dev/null 2> /tmp/err && fail "a non-root read of $f worked"
    expect_match "read $f" "$(cat /tmp/err)" "Permission denied"
done
for f in watch-pids marker; do
    as sh -c "echo 1 > /proc/memmon/$f" 2> /tmp/err && fail "a non-root write to $f worked"
    expect_match "write $f" "$(cat /tmp/err)" "Permission denied"
done
as cat /proc/memmon/stats > /tmp/stats || fail "a non-root read of stats failed"
expect_match "stats" "$(head -1 /tmp/stats)" "^produced [0-9]+$"
expect_eq "nothing was watched" "$(cat /proc/memmon/watch-pids)" ""
unload
