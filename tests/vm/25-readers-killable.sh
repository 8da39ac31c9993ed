# A reader blocked behind another read() of the same open file, which is stuck copying out
# to a userfaultfd-backed buffer while it holds the file's read lock, dies at SIGKILL: the
# wait for that lock is killable.
. /host/lib.sh
load
echo "something to read" > /proc/memmon/marker
out=$(timeout 20 /progs/readers uffd-stuck) || fail "readers uffd-stuck: $out"
expect_eq "the blocked reader" "$out" "waiter=killed"
unload
