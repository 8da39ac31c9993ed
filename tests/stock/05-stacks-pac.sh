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
# With 52-bit user addresses (LPA2) and the top byte ignored, a user pointer's
# authentication code has 3 bits (52 to 54): 1 signature in 8 is all zero. An exec takes new
# keys, so the program runs again (at most 8 times) until its return address is signed.
signed=
for try in 1 2 3 4 5 6 7 8; do
    run_measured /tmp/out /tmp/ev -- /progs/stacks-pac 64
    lr=$(value_of saved_lr "$(cat /tmp/out)")
    [ -n "$lr" ] || fail "stacks-pac printed no saved_lr"
    # The program's text is at 0x400000: an address of it has no bit at or above 2^32 set.
    if [ $(( lr >> 32 )) -ne 0 ]; then signed=$lr; break; fi
    echo "run $try: saved return address $lr unsigned (an all-zero code), again"
done
[ -n "$signed" ] || fail "no run of 8 signed its return address (no pointer authentication?)"
echo "ok: the saved return address into outer is signed: $signed (run $try)"
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
