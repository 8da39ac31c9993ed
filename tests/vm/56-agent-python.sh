# vm-add: /usr/bin/python3.11:/usr/bin/python3.11
# vm-add: /lib64/ld-linux-x86-64.so.2:/lib64/ld-linux-x86-64.so.2
# vm-add: /lib/x86_64-linux-gnu/libc.so.6:/lib/x86_64-linux-gnu/libc.so.6
# vm-add: /lib/x86_64-linux-gnu/libm.so.6:/lib/x86_64-linux-gnu/libm.so.6
# vm-add: /lib/x86_64-linux-gnu/libz.so.1:/lib/x86_64-linux-gnu/libz.so.1
# vm-add: /lib/x86_64-linux-gnu/libexpat.so.1:/lib/x86_64-linux-gnu/libexpat.so.1
# vm-add: /usr/lib/python3.11/os.py:/usr/lib/python3.11/os.py
# vm-add: /usr/lib/python3.11/_weakrefset.py:/usr/lib/python3.11/_weakrefset.py
# vm-add: /usr/lib/python3.11/functools.py:/usr/lib/python3.11/functools.py
# vm-add: /usr/lib/python3.11/keyword.py:/usr/lib/python3.11/keyword.py
# vm-add: /usr/lib/python3.11/operator.py:/usr/lib/python3.11/operator.py
# vm-add: /usr/lib/python3.11/reprlib.py:/usr/lib/python3.11/reprlib.py
# vm-add: /usr/lib/python3.11/threading.py:/usr/lib/python3.11/threading.py
# vm-add: /usr/lib/python3.11/types.py:/usr/lib/python3.11/types.py
# vm-add: /usr/lib/python3.11/collections/__init__.py:/usr/lib/python3.11/collections/__init__.py
# vm-add: /usr/lib/python3.11/encodings/__init__.py:/usr/lib/python3.11/encodings/__init__.py
# vm-add: /usr/lib/python3.11/encodings/aliases.py:/usr/lib/python3.11/encodings/aliases.py
# vm-add: /usr/lib/python3.11/encodings/utf_8.py:/usr/lib/python3.11/encodings/utf_8.py
# vm-add: /usr/lib/python3.11/lib-dynload:/usr/lib/python3.11/lib-dynload
# memmon agent and Python (issues 41 and 43): the agent watches a cgroup in which Debian's
# python3.11 runs a script (written here) that holds 24 MiB of bytes made in load_a and a
# 12 MiB str made in load_b, and describes the interpreter to the module as record does. The
# agent reads each code object its stacks name from the process's memory, so its metrics and
# snapshots name the script's functions: memmon_site_resident_bytes has a series for load_a
# with 24 MiB and one for load_b with 12 MiB (each within 10 %), and the spool's snapshot
# (pprof) names both functions and the script's file. No option but the cgroup.
# Multi-threaded TCG, as vm-53.
# vm-timeout: 900
. /host/lib.sh
cg=/sys/fs/cgroup
grep -q "^[^ ]* $cg cgroup2 " /proc/mounts || mount -t cgroup2 none $cg || fail "cannot mount cgroup2 at $cg"
mkdir -p $cg/work/py || fail "mkdir in $cg"
load buflen=4194304
m=/tmp/metrics.prom

# wait_until's limit here, and what it prints on a timeout
wait_seconds=240
on_wait_timeout() {
    tail -20 /tmp/agent.err
    grep '^memmon_site_resident_bytes{' $m
}

cat > /tmp/app.py <<'PY'
import os
import time

MIB = 1 << 20
held = []


def load_a():
    out = []
    for _ in range(24):
        out.append(b"a" * MIB)
    return out


def load_b():
    return "b" * (12 * MIB)


def main():
    held.append(load_a())
    held.append(load_b())
    with open("/tmp/py-held", "w") as done:
        done.write(str(os.getpid()))
    while not os.path.exists("/tmp/py-done"):
        time.sleep(0.05)


main()
PY

cat > /tmp/agent.toml <<CONF
cgroups = ["work/*"]
interval = 4
listen = ""
metrics_file = "$m"
[spool]
dir = "/tmp/spool"
max_size = "16M"
CONF
memmon agent --config /tmp/agent.toml 2>/tmp/agent.err &
ap=$!
wait_until "the agent watching work/py" grep -qx "c:$cg/work/py" /proc/memmon/watch-pids
sh -c "echo \$\$ > $cg/work/py/cgroup.procs && exec python3.11 /tmp/app.py" &
py=$!
wait_until "the script holding" test -s /tmp/py-held

# site_bytes FUNCTION: the memmon_site_resident_bytes series of work/py whose site names
# FUNCTION, summed (one function may be two sites: its first pages faulted before the
# agent loaded the interpreter's unwind tables have a shorter native part)
site_bytes() {
    grep '^memmon_site_resident_bytes{' $m | grep 'cgroup="/work/py"' | grep -F "$1" |
        awk '{ sum += $NF } END { print sum + 0 }'
}
# near FUNCTION MIB: its site holds MIB MiB within 10 %
near() {
    v=$(site_bytes "$1")
    want=$(($2 << 20))
    [ $((v * 10)) -ge $((want * 9)) ] && [ $((v * 10)) -le $((want * 11)) ]
}
wait_until "load_a's 24 MiB in the metrics" near load_a 24
wait_until "load_b's 12 MiB in the metrics" near load_b 12
grep '^memmon_site_resident_bytes{' $m | grep 'cgroup="/work/py"'
echo "ok: load_a $(site_bytes load_a) B, load_b $(site_bytes load_b) B"

# A snapshot written after the script held: it names both functions and the script's file
# (pprof's string table, gzip'd).
wait_until "a snapshot of work/py" sh -c "ls /tmp/spool | grep -q -- '-work_py-interval.pb.gz\$'"
sleep 5
latest=$(ls -t /tmp/spool/*-work_py-*.pb.gz | head -1)
for name in load_a load_b /tmp/app.py; do
    zcat "$latest" | grep -qaF "$name" || fail "the snapshot $latest does not name $name"
done
echo "ok: the snapshot names load_a, load_b and /tmp/app.py"

touch /tmp/py-done
wait $py || fail "the script failed"
kill -TERM $ap
wait $ap || fail "the agent's exit status"
echo PASS
