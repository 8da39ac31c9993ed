#!/usr/bin/env bash
# scripts/tcg-race-signature against kernel logs: the forms it retries (an int3 no longer in
# the text: at a syscall's ftrace site, at a jump label in an interrupt; the jump to 0 on the
# syscall entry's stack; an int3 before memmon was loaded), and reports it must not retry (an
# int3 still in the text, in memmon's own code, without a Code line; another stack, a WARNING
# first, a plain call to NULL with interrupts on). Exits 1 on the first wrong answer.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
# check NAME WANT(retry|no) [MEMMON_LOADED]: the log on stdin
check() {
    local name=$1 want=$2 out rc
    sed 's/^/[    1.000000] /' > "$tmp/$name.log"
    out=$("$top/scripts/tcg-race-signature" "$tmp/$name.log")
    rc=$?
    if { [ "$want" = retry ] && [ $rc -eq 0 ] && [ -n "$out" ]; } || { [ "$want" = no ] && [ $rc -eq 1 ] && [ -z "$out" ]; }; then
        echo "ok: $name: ${out:-not retried}"
    else
        echo "FAIL: $name: want $want, got exit $rc ($out)"
        failed=1
    fi
}
loaded='memmon: loading out-of-tree module taints kernel.
memmon: loaded: buflen=131072 (2 rings of 65536 bytes), fault source: mm_fault'
syscall_trace='Call Trace:
 <TASK>
 ? do_syscall_64+0x82/0x970
 ? entry_SYSCALL_64_after_hwframe+0x76/0x7e
 </TASK>'
check int3-at-site retry <<EOT
$loaded
Oops: int3: 0000 [#1] SMP NOPTI
RIP: 0010:__x64_sys_munmap+0x5/0x40
Code: 90 90 90 90 90 90 90 90 90 90 90 90 f3 0f 1e fa e8 <5b> 1c 00 00 55 48 89 e5
EFLAGS: 00000246
$syscall_trace
EOT
check int3-still-there no <<EOT
$loaded
Oops: int3: 0000 [#1] SMP NOPTI
RIP: 0010:__x64_sys_munmap+0x5/0x40
Code: 90 90 90 90 90 90 90 90 90 90 90 90 f3 0f 1e fa cc <5b> 1c 00 00 55 48 89 e5
EFLAGS: 00000246
$syscall_trace
EOT
check jump-to-0 retry <<EOT
$loaded
BUG: kernel NULL pointer dereference, address: 0000000000000000
#PF: supervisor instruction fetch in kernel mode
RIP: 0010:0x0
Code: Unable to access opcode bytes at 0xffffffffffffffd6.
EFLAGS: 00010002
$syscall_trace
EOT
check call-to-null-interrupts-on no <<EOT
$loaded
BUG: kernel NULL pointer dereference, address: 0000000000000000
#PF: supervisor instruction fetch in kernel mode
RIP: 0010:0x0
Code: Unable to access opcode bytes at 0xffffffffffffffd6.
EFLAGS: 00010246
$syscall_trace
EOT
check jump-to-0-deeper-stack no <<EOT
$loaded
BUG: kernel NULL pointer dereference, address: 0000000000000000
#PF: supervisor instruction fetch in kernel mode
RIP: 0010:0x0
Code: Unable to access opcode bytes at 0xffffffffffffffd6.
EFLAGS: 00010002
Call Trace:
 <TASK>
 ? memmon_fault_probe+0x10/0x80 [memmon]
 ? do_syscall_64+0x82/0x970
 ? entry_SYSCALL_64_after_hwframe+0x76/0x7e
 </TASK>
EOT
check warning-first no <<EOT
$loaded
WARNING: CPU: 1 PID: 70 at kernel/kprobes.c:1000 arm_kprobe+0x10/0x20
RIP: 0010:arm_kprobe+0x10/0x20
Call Trace:
 <TASK>
 ? do_syscall_64+0x82/0x970
 </TASK>
Oops: int3: 0000 [#1] SMP NOPTI
EOT
check int3-at-boot retry <<EOT
Run /init as init process
Oops: int3: 0000 [#1] SMP NOPTI
RIP: 0010:static_key_enable+0x12/0x30
Code: 00 00 cc <0f> 1f 44 00 00
EFLAGS: 00000246
Call Trace:
 <TASK>
 ? jump_label_update+0x50/0x120
 ? kernel_init+0x1a/0x130
 </TASK>
EOT
check int3-after-load-elsewhere no <<EOT
$loaded
Oops: int3: 0000 [#1] SMP NOPTI
RIP: 0010:static_key_enable+0x12/0x30
Code: 00 00 cc <0f> 1f 44 00 00
EFLAGS: 00000246
Call Trace:
 <TASK>
 ? jump_label_update+0x50/0x120
 ? kernel_init+0x1a/0x130
 </TASK>
EOT
# A vm-44 boot on Debian's 7.3.4 (2026-12-07): a jump label's int3 in the scheduler, in a
# timer interrupt on the idle task; the text holds the patched jmp (eb 57).
check int3-jump-label-in-irq retry <<EOT
$loaded
Oops: int3: 0000 [#1] SMP NOPTI
RIP: 0010:ttwu_do_activate+0x93/0x1b0
Code: 00 80 f9 02 0f 44 d0 e8 ab f9 ff ff c6 43 35 01 44 89 e2 48 89 de 48 89 ef e8 d9 fe ff ff c6 43 36 00 c7 43 18 00 00 00 00 eb <57> 48 8b 83 18 04 00 00 48 83 78 60 00 74 36 83 bd a0 0f 00 00 02
RSP: 0018:ff68b9f300003dd0 EFLAGS: 00000006
Call Trace:
 <IRQ>
 try_to_wake_up+0x2b6/0x790
 ? __pfx_process_timeout+0x10/0x10
 call_timer_fn+0x28/0x120
 </IRQ>
 <TASK>
 asm_sysvec_apic_timer_interrupt+0x1a/0x20
 default_idle+0x9/0x20
 </TASK>
EOT
check int3-in-memmon no <<EOT
$loaded
Oops: int3: 0000 [#1] SMP NOPTI
RIP: 0010:memmon_fault_probe+0x11/0x80 [memmon]
Code: 90 90 90 90 90 90 90 90 90 90 90 90 f3 0f 1e fa 55 <48> 89 e5 41 57 41 56
EFLAGS: 00000246
$syscall_trace
EOT
check int3-no-code no <<EOT
$loaded
Oops: int3: 0000 [#1] SMP NOPTI
RIP: 0010:ttwu_do_activate+0x93/0x1b0
Code: Unable to access opcode bytes at 0xffffffff81000000.
EFLAGS: 00000006
$syscall_trace
EOT
check clean-log no <<EOT
$loaded
memmon: unloaded
EOT
exit $failed
