# The original memmon experiment: a 12 KiB malloc touched page by page faults in the brk heap;
# growing allocations past the 128 KiB mmap threshold fault inside their mmap'ed regions.
. /host/lib.sh
load buflen=4194304
run_measured /tmp/out /tmp/ev -- /progs/memtest malloc
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
printf '%s\n' "$w" > /tmp/w
crosscheck "$w" /tmp/out
# every fault lies in the heap or in a region mapped by an mmap line before it and not yet
# unmapped
awk -v heap_lo_text="$(value_of heap_lo "$(cat /tmp/out)")" -v heap_hi_text="$(value_of heap_hi "$(cat /tmp/out)")" '
    function hex(s,   n, i, c) { n = 0; s = tolower(substr(s, 3))
        for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; n = n * 16 + c }
        return n }
    function val(k,   i) { for (i = 4; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2) }
    BEGIN { heap_lo = hex(heap_lo_text); heap_hi = hex(heap_hi_text) }
    $3 == "mmap" { lo = hex(val("ret")); hi = lo + val("len"); mapped++ }
    $3 == "munmap" { lo = hi = 0; unmapped++ }
    $3 == "fault" { a = hex(val("addr"))
        if (a >= lo && a < hi) in_mmap++
        else if (a >= heap_lo && a < heap_hi) in_heap++
        else { print "stray fault: " $0; bad++ } }
    END { printf "heap=%d mmap=%d mapped=%d unmapped=%d bad=%d\n", in_heap, in_mmap, mapped, unmapped, bad + 0 }
' /tmp/w > /tmp/summary
cat /tmp/summary
expect_match "faults by region" "$(tail -n 1 /tmp/summary)" '^heap=[1-9][0-9]* mmap=[1-9][0-9]* mapped=32 unmapped=32 bad=0$'
unload
