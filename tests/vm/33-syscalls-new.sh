# msync, pkey_mprotect, mseal, process_madvise, shmat and shmdt, successes and failures,
# give exactly the lines their caller expects; a file= path longer than 112 bytes keeps its
# end; dur= of a 64 MiB MAP_POPULATE mmap exceeds that of a 4 KiB mmap.
. /host/lib.sh
load buflen=4194304
run_measured /tmp/out /tmp/ev -- /progs/syscalls newcalls
pid=$(pid_of_run /tmp/ev)
check_expected /tmp/out /tmp/ev "$pid" || fail "syscall lines differ from what the program did"
big=$(value_of big "$(cat /tmp/out)")
small=$(value_of small "$(cat /tmp/out)")
dur_big=$(grep " mmap .* ret=$big " /tmp/ev | field dur)
dur_small=$(grep " mmap .* ret=$small " /tmp/ev | field dur)
echo "dur: 64 MiB MAP_POPULATE $dur_big ns, 4 KiB $dur_small ns"
[ -n "$dur_big" ] && [ -n "$dur_small" ] && [ "$dur_big" -gt "$dur_small" ] || fail "dur= of the populated mmap is not larger"
unload
