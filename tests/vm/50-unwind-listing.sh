# The unwind file's listing under load (docs/unwind.md, "Reading"): 2 000 tables and 8
# watched processes of 4 096 ranges each (32 768 ranges, a 132 KB listing). Read whole and
# in 4 KiB reads it is exactly the listing the set-up makes, and reading it in 4 KiB reads
# costs about what one read does (it used to be made again at every read: 0.6 s for one
# read, 13 s in 4 KiB reads). A writer's writes, 2 ms apart, are timed alone for 5 s, then
# for 5 s while a reader lists the file in 4 KiB reads over and over (every listing read
# whole and exact): an ADD_TABLE of a table loaded, which only looks it up, so that its
# time is the time it waits for the store's mutex: its median under 50 ms and its slowest
# under 400 ms (250 ms and 2 s on the debug kernel; measured: at most 0.5 to 4 ms; it waited
# up to 0.9 s before, and a host busy elsewhere can stall one write for tens of ms), and a
# SET_MAPS of 4 096 ranges, whose own time is mostly its RCU grace period, with a median
# at most twice its median alone, plus 20 ms.
#
# Reader and writer run on one vCPU (taskset): under TCG, a writer woken on another vCPU
# waits for the host to run that vCPU's thread, tens of ms on a busy host (28 to 33 ms
# median, 0.2 to 0.3 s at most, measured with the host at a load of 14); on one vCPU what
# it waits for is the reader's hold of the mutex.
. /host/lib.sh
limit_us=50000 max_us=400000 min_listings=5
# the debug kernel lists 5 to 10 times slower (3 listings in the 5 s measured under a host
# load of 14): at least 2 there, so that writes still meet a reader between listings
[ -n "${MEMMON_DEBUG_KERNEL:-}" ] && limit_us=250000 max_us=2000000 min_listings=2
load
out=$(taskset 1 /progs/unwind-bounds listing 2000 8 4096 5) || fail "unwind-bounds listing: $out"
echo "$out"
v() { value_of "$1" "$out"; }
expect_eq "listings read during the writes that differ from the one expected" "$(v bad_listings)" 0
[ "$(v listings)" -ge $min_listings ] || fail "only $(v listings) listings read during the writes"
echo "ok: $(v listings) listings read in 4 KiB reads during the writes, all whole and exact"
# One listing in 4 KiB reads (33 reads) against one read of it all: the same work, a few
# more system calls.
whole=$(v whole_read_us) chunked=$(v chunked_read_us)
[ "$chunked" -le $((3 * whole + 50000)) ] ||
    fail "a listing in 4 KiB reads took $chunked us, one read of it $whole us"
echo "ok: a listing in 4 KiB reads took $chunked us, in one read $whole us"
for kind in noop setmaps; do
    [ "$(v ${kind}_reading_count)" -ge 10 ] || fail "only $(v ${kind}_reading_count) $kind writes"
    echo "$kind writes with the reader: median $(v ${kind}_reading_median_us) us, max $(v ${kind}_reading_max_us) us (alone: median $(v ${kind}_alone_median_us) us, max $(v ${kind}_alone_max_us) us)"
done
median=$(v noop_reading_median_us) max=$(v noop_reading_max_us)
[ "$median" -lt $limit_us ] ||
    fail "ADD_TABLEs of a table loaded took $median us (median) while a reader listed the file (limit $limit_us us)"
[ "$max" -lt $max_us ] ||
    fail "an ADD_TABLE of a table loaded took $max us while a reader listed the file (limit $max_us us)"
echo "ok: ADD_TABLEs of a table loaded with the reader: median $median us (limit $limit_us us), slowest $max us (limit $max_us us)"
median=$(v setmaps_reading_median_us) alone=$(v setmaps_alone_median_us)
[ "$median" -le $((2 * alone + 20000)) ] ||
    fail "SET_MAPS with the reader: median $median us, alone $alone us"
echo "ok: SET_MAPS median $median us with the reader, $alone us alone"
unload
