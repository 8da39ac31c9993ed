# Two threads write the same 2000 fresh pages at once: the faults that lose the race map
# nothing (type=spurious, or type=anon pages=0) and are counted by the kernel all the same.
# Fault lines equal rusage exactly, and the anon faults map each of the 2000 pages once.
. /host/lib.sh
load buflen=16777216
run_measured /tmp/out /tmp/ev -- /progs/memtest race 2000
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
crosscheck "$w" /tmp/out
expect_eq "pages mapped by anon faults" "$(pages_sum "$(printf '%s\n' "$w" | grep ' fault type=anon ')")" 2000
echo "faults: $(printf '%s\n' "$w" | grep -c ' fault ') of which spurious $(printf '%s\n' "$w" | grep -c ' fault type=spurious ')," \
    "anon pages=0 $(printf '%s\n' "$w" | grep -c ' fault type=anon .*pages=0')"
expect_eq "fault types other than anon and spurious" \
    "$(printf '%s\n' "$w" | grep ' fault ' | grep -vc ' type=anon \| type=spurious ')" 0
unload
