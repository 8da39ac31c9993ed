# Calling code in a fresh PROT_EXEC file mapping: a file X fault at the mapping.
. /host/lib.sh
load buflen=4194304
run_measured /tmp/out /tmp/ev -- /progs/memtest exec /tmp/code
expect_eq "the code ran" "$(value_of result "$(cat /tmp/out)")" 42
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
base=$(value_of base "$(cat /tmp/out)")
expect_match "exec fault" "$w" " fault type=file access=X addr=$base ip=$base\$"
crosscheck "$w" /tmp/out
unload
