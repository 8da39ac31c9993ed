# arm64 only (scenarios.txt's tag "arm64"): user stacks through frame records whose return
# addresses are signed by pointer authentication, as in Debian's arm64 userspace (built with
# -mbranch-protection=standard). /progs/stacks-pac is tests/progs/stacks.c built so (make
# progs-arm64): outer() -> middle() -> touch() writes 64 fresh pages. The return address
# middle()'s frame record holds is signed (bits above the user address space set; QEMU's
# -cpu max signs as hardware does); every fault line's stack still starts in touch, middle
# and outer, in that order, each entry a plain user address: the walk strips the signature.
. /host/lib.sh
expect_eq "machine" "$(uname -m)" aarch64
load buflen=4194304 stack_depth=16
run_measured /tmp/out /tmp/ev -- /progs/stacks-pac 64
lr=$(value_of saved_lr "$(cat /tmp/out)")
[ -n "$lr" ] || fail "stacks-pac printed no saved_lr"
# The program's text is at 0x400000: an address of it has no bit at or above 2^32 set.
[ $(( lr >> 32 )) -ne 0 ] || fail "saved return address $lr is not signed (no pointer authentication?)"
echo "ok: the saved return address into outer is signed: $lr"
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
range() { value_of "$1" "$(cat /tmp/out)"; }
in_range() { # in_range ADDR LO-HI
    [ $(($1)) -ge $((${2%-*})) ] && [ $(($1)) -lt $((${2#*-})) ]
}
n=0
for s in $(printf '%s\n' "$w" | grep ' fault type=anon access=W ' | field stack); do
    set -- $(echo "$s" | tr ',' ' ')
    in_range "$1" "$(range touch)" && in_range "$2" "$(range middle)" && in_range "$3" "$(range outer)" ||
        fail "stack $s is not touch, middle, outer ($(range touch) $(range middle) $(range outer))"
    n=$((n + 1))
done
expect_eq "fault lines with touch/middle/outer stacks" "$n" 64
unload
