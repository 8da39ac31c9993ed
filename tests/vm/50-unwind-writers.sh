# Who may write the unwind and watch-pids files, and what writev does to the unwind file
# (docs/unwind.md). A write needs CAP_SYS_ADMIN in the writer and in the process that
# opened the file: root writes (a DROP_TABLE of a table not loaded: ENOENT); a child that
# dropped to uid 65534 after root opened the files gets EPERM on both; a root process that
# opened unwind without CAP_SYS_ADMIN in its effective set and raised it again before
# writing gets EPERM; an open watch-pids inherited by a shell of uid 65534 too; each with
# its dmesg line, and nothing changes. writev: an ADD_TABLE split over two buffers is
# refused (EINVAL, a line that says why) and loads nothing; in one buffer it loads; two
# whole commands in two buffers are both taken.
. /host/lib.sh
load
sleep 1000 &
sleeper=$!
kmsg_mark
out=$(/progs/unwind-bounds cred) || fail "unwind-bounds cred: $out"
echo "$out"
expect_eq "root's write (ENOENT)" "$(value_of root "$out")" 2
expect_eq "unwind after setuid (EPERM)" "$(value_of setuid_unwind "$out")" 1
expect_eq "watch-pids after setuid (EPERM)" "$(value_of setuid_watch "$out")" 1
expect_eq "unwind opened without CAP_SYS_ADMIN (EPERM)" "$(value_of opened_without_cap "$out")" 1
expect_eq "unwind opened again with it (ENOENT)" "$(value_of reopened "$out")" 2
klog=$(kmsg_new)
expect_match "dmesg: unwind after setuid" "$klog" \
    "memmon: unwind: refused a write: the writer has no CAP_SYS_ADMIN \(the process that opened the file had it\)"
expect_match "dmesg: watch-pids after setuid" "$klog" \
    "memmon: watch-pids: refused a write: the writer has no CAP_SYS_ADMIN"
expect_match "dmesg: opened without CAP_SYS_ADMIN" "$klog" \
    "memmon: unwind: refused a write: the process that opened the file had no CAP_SYS_ADMIN"
expect_eq "nothing watched" "$(cat /proc/memmon/watch-pids)" ""
# An open file inherited across exec by a process of another user.
/progs/asuser 65534 sh -c "echo $sleeper >&3" 3>/proc/memmon/watch-pids 2>/tmp/err &&
    fail "a write through an inherited watch-pids was taken"
expect_match "inherited watch-pids" "$(cat /tmp/err)" "Operation not permitted"
expect_eq "still nothing watched" "$(cat /proc/memmon/watch-pids)" ""
echo $sleeper > /proc/memmon/watch-pids || fail "root's own write of watch-pids"
expect_eq "watched by root's write" "$(cat /proc/memmon/watch-pids)" "$sleeper"

kmsg_mark
out=$(/progs/unwind-bounds writev) || fail "unwind-bounds writev: $out"
echo "$out"
expect_eq "an ADD_TABLE split over two buffers (EINVAL)" "$(value_of split "$out")" 22
expect_eq "the split table is not loaded" "$(value_of split_loaded "$out")" 0
expect_match "dmesg on the split command" "$(kmsg_new)" \
    "memmon: unwind: refused: a write shorter than its header's length field: a command is one write\(\) \(writev's buffers are separate writes\)"
expect_eq "the ADD_TABLE in one buffer" "$(value_of one "$out")" 0
expect_eq "it is loaded" "$(value_of one_loaded "$out")" 1
expect_eq "two whole commands in two buffers: all their bytes" "$(value_of two "$out")" "$(value_of two_total "$out")"
expect_eq "the first (DROP_TABLE) applied" "$(value_of two_dropped "$out")" 1
expect_eq "the second (ADD_TABLE) applied" "$(value_of two_loaded "$out")" 1
kill $sleeper
wait 2>/dev/null
unload
