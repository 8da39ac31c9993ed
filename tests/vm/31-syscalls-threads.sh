# A 4-thread process: each call carries the calling thread's tid.
. /host/lib.sh
load buflen=4194304
run_measured /tmp/out /tmp/ev -- /progs/syscalls threads
pid=$(pid_of_run /tmp/ev)
expect_eq "threads seen" "$(grep -c '^expect-tid' /tmp/out)" 8
check_expected /tmp/out /tmp/ev "$pid" || fail "thread lines differ"
for t in $(awk '{ print $2 }' /tmp/out | sort -u); do
    [ "$t" != "$pid" ] || fail "a thread's tid equals the pid"
done
unload
