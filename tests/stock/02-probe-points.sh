# What a fault source without mm:mm_fault can attach to on Debian's 7.3.4+deb13-amd64:
# the fault handlers are traceable through ftrace (kprobes on ftrace) except those listed
# as int3-only or inlined, a kretprobe on handle_mm_fault fires for every fault of a
# workload, and the sched_process_* tracepoints exist. Stops being true if Debian's build
# changes inlining: then the module's stock fault source needs another look.
. /host/lib.sh
T=/sys/kernel/tracing
traceable="handle_mm_fault do_anonymous_page do_fault __do_fault finish_fault set_pte_range
    filemap_map_pages do_swap_page do_wp_page do_huge_pmd_anonymous_page do_huge_pmd_wp_page
    hugetlb_fault shmem_fault handle_userfault lock_vma_under_rcu lock_mm_and_find_vma
    folio_add_new_anon_rmap folio_add_anon_rmap_ptes folio_add_file_rmap_pmd
    do_huge_pmd_numa_page"
# One pass over the ~48000 lines (a grep per name takes seconds each under TCG).
printf '%s\n' $traceable wp_page_reuse > /tmp/want
grep -Fx -f /tmp/want $T/available_filter_functions | sort -u > /tmp/have
for f in $traceable; do
    grep -qx "$f" /tmp/have || fail "$f is not in available_filter_functions"
done
echo "ok: traceable: $(echo $traceable)"
# In kallsyms but not traceable (a probe there is an int3 kprobe), and inlined (absent).
awk '$3 == "wp_page_reuse" { found = 1 } END { exit !found }' /proc/kallsyms || fail "wp_page_reuse is not in kallsyms"
! grep -qx wp_page_reuse /tmp/have || echo "note: wp_page_reuse is traceable now"
inlined=$(awk '$3 == "mm_account_fault" || $3 == "do_numa_page" { print $3 }' /proc/kallsyms)
[ -z "$inlined" ] || echo "note: no longer inlined: $inlined"
for tp in sched_process_exec sched_process_exit sched_process_fork; do
    [ -d $T/events/sched/$tp ] || fail "no sched:$tp"
done
expect_eq "kprobes enabled" "$(cat /sys/kernel/debug/kprobes/enabled)" 1

# A kretprobe on handle_mm_fault counts at least one return per fault of a workload.
echo 'r:stockcheck handle_mm_fault ret=$retval' > $T/kprobe_events || fail "kretprobe on handle_mm_fault"
# x86_64 has kprobes on ftrace; arm64 has not (a BRK kprobe, then, on the function's entry).
case "$(uname -m)" in
    x86_64) expect_match "ftrace-based" "$(cat /sys/kernel/debug/kprobes/list)" 'handle_mm_fault.*\[FTRACE\]' ;;
    aarch64) expect_match "a BRK kprobe" "$(cat /sys/kernel/debug/kprobes/list)" 'handle_mm_fault\+0x0' ;;
    *) fail "unexpected machine $(uname -m)" ;;
esac
echo 1 > $T/events/kprobes/stockcheck/enable
/progs/memtest anon 200 > /tmp/anon.out || fail "memtest anon"
echo 0 > $T/events/kprobes/stockcheck/enable
hits=$(awk '$1 == "stockcheck" { print $2 }' $T/kprobe_profile)
missed=$(awk '$1 == "stockcheck" { print $3 }' $T/kprobe_profile)
echo "stockcheck: $hits hits, $missed missed"
[ "$hits" -ge "$(value_of faults "$(cat /tmp/anon.out)")" ] || fail "fewer handle_mm_fault returns than faults"
echo '-:stockcheck' >> $T/kprobe_events
