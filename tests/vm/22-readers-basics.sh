# Reader semantics: EAGAIN when empty with O_NONBLOCK, EINVAL for a buffer too small for a
# line, no seeking, EINTR on a signal, whole lines only.
. /host/lib.sh
load
expect_eq "O_NONBLOCK on an empty ring" "$(/progs/readers eagain)" "eagain=ok"
echo hello > /proc/memmon/marker
expect_eq "buffer too small" "$(/progs/readers small)" "small=ok"
expect_eq "lseek" "$(/progs/readers nonseek)" "nonseek=ok"
expect_eq "a signal interrupts a blocked read" "$(/progs/readers eintr)" "eintr=ok"
expect_eq "a 0-byte read returns at once" "$(/progs/readers zero)" "zero=ok"
# whole lines even with odd buffer sizes: dd with 100-byte reads
i=0; while [ $i -lt 30 ]; do echo "line number $i" > /proc/memmon/marker; i=$((i + 1)); done
/progs/drain -b 100 > /tmp/ev || fail "reading with 100-byte reads"
expect_eq "lines read in 100-byte reads" "$(grep -c ' mark text=' /tmp/ev)" 31
expect_eq "every line is complete" "$(grep -vc '^[0-9]*\.[0-9]\{9\} [0-9]*/[0-9]* mark text=[^ ]*$' /tmp/ev)" 0
expect_match "marker text escaped" "$(grep 'number\\x207$' /tmp/ev)" ' mark text=line\\x20number\\x207$'
unload
