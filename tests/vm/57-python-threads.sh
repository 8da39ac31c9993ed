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
# A Python process of more threads than the walker looks at (docs/unwind.md: at most 256
# interpreters and thread states for the faulting thread's; new states go to the head of
# the list). `memmon record -- python3.11 SCRIPT`, the script starting 300 threads in turn;
# each maps one private anonymous page, waits until all have, and writes the page in its
# function touch. At that write the list holds, from its head, workers 299 down to 0, then
# the main thread: worker i's state is the (300 - i)th, looked at in step 301 - i (the
# interpreter is step 1). So workers 45 to 299 (255) must have Python frames, touch's
# first, and workers 0 to 44 (45) none, with pystack_end=depth; each write's line is found
# by its thread and the address its mmap returned.
# Multi-threaded TCG, as vm-54.
# vm-timeout: 900
. /host/lib.sh
load

cat > /tmp/threads.py <<'PY'
import mmap
import threading

N = 300
mapped = threading.Barrier(N + 1)
written = threading.Barrier(N + 1)


def touch(page):
    page[0] = 1


def worker():
    page = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    mapped.wait()
    touch(page)
    written.wait()


threads = [threading.Thread(target=worker) for _ in range(N)]
for thread in threads:
    thread.start()
mapped.wait()
written.wait()
for thread in threads:
    thread.join()
print("tids=" + ",".join(str(thread.native_id) for thread in threads))
PY

memmon record -o /tmp/t.cap -- python3.11 /tmp/threads.py > /tmp/t.out 2> /tmp/t.err ||
    { cat /tmp/t.err; fail "memmon record -- python3.11 /tmp/threads.py"; }
tids=$(sed -n 's/^tids=//p' /tmp/t.out)
[ -n "$tids" ] || fail "no tids= from the script"
pid=$(awk '$3 == "exec" { split($2, ids, "/"); print ids[1]; exit }' /tmp/t.cap)
[ -n "$pid" ] || fail "no exec line in the capture"

# For worker i (tid T): its one-page mmap's address, the fault line of T at it, and what
# that line's Python frames are; one line per worker: "i found|depth|other LINE".
echo "$tids" | tr ',' '\n' > /tmp/tids
awk -v pid="$pid" '
    FILENAME == "/tmp/tids" { tid[NR - 1] = $1; n = NR; next }
    /^#/ {
        if ($2 == "pycode" && $3 == pid && index($0, "\"name\":\"touch\"")) touch[$4] = 1
        next
    }
    { split($2, ids, "/") }
    ids[1] != pid { next }
    $3 == "mmap" && / len=4096 prot=rw- flags=PRIVATE\|ANONYMOUS / {
        for (f = 4; f <= NF; f++) if (index($f, "ret=") == 1) page[ids[2]] = substr($f, 5)
        next
    }
    $3 == "fault" {
        for (f = 4; f <= NF; f++) if (index($f, "addr=") == 1) addr = substr($f, 6)
        if (ids[2] in page && page[ids[2]] == addr) line[ids[2]] = $0
    }
    END {
        for (i = 0; i < n; i++) {
            t = tid[i]
            if (!(t in line)) { print i, "missing", t; continue }
            l = line[t]; ps = ""; end = ""
            m = split(l, w, " ")
            for (f = 1; f <= m; f++) {
                if (index(w[f], "pystack=") == 1) ps = substr(w[f], 9)
                if (index(w[f], "pystack_end=") == 1) end = substr(w[f], 13)
            }
            split(ps, e, ","); code = e[1]; sub(/\+.*/, "", code)
            if (ps != "" && end == "" && (code in touch)) print i, "found", l
            else if (ps == "" && end == "depth") print i, "depth", l
            else print i, "other", l
        }
    }' /tmp/tids /tmp/t.cap > /tmp/verdicts
awk '{ print $2 }' /tmp/verdicts | sort | uniq -c
grep -v ' found \| depth ' /tmp/verdicts | head -5
found=$(awk '$2 == "found"' /tmp/verdicts | wc -l)
depth=$(awk '$2 == "depth"' /tmp/verdicts | wc -l)
expect_eq "workers whose write has Python frames, touch first" "$found" 255
expect_eq "workers whose write ends pystack_end=depth" "$depth" 45
# Exactly the oldest 45: workers 0 to 44.
expect_eq "the first worker found" "$(awk '$2 == "found" { print $1; exit }' /tmp/verdicts)" 45
expect_eq "the last worker at depth" "$(awk '$2 == "depth" { i = $1 } END { print i }' /tmp/verdicts)" 44
unload
