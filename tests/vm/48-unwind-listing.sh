# The unwind file's listing under load (docs/unwind.md, "Reading"): 2 000 tables and 8
# watched processes of 4 096 ranges each (32 768 ranges, a 152 KB listing). Read whole and
# in 4 KiB reads it is exactly the listing the set-up makes, and reading it in 4 KiB reads
# costs about what one read does (it used to be made again at every read: 0.5 to 0.8 s a
# read, 9 s in 4 KiB reads). A writer's writes (an ADD_TABLE of a table loaded, which only
# looks it up, and a SET_MAPS of 4 096 ranges, in turn, 2 ms apart) are timed alone for 5 s,
# then for 5 s while a reader lists the file in 4 KiB reads over and over: every listing
# read is whole and exact, and no write takes more than 50 ms (250 ms on the debug kernel)
# with the reader (it waited up to 1 s behind a reader before). Measured: see
# docs/unwind.md.
. /host/lib.sh
limit_us=50000
[ -n "${MEMMON_DEBUG_KERNEL:-}" ] && limit_us=250000
load
out=$(/progs/unwind-bounds listing 2000 8 4096 5) || fail "unwind-bounds listing: $out"
echo "$out"
v() { value_of "$1" "$out"; }
expect_eq "listings read during the writes that differ from the one expected" "$(v bad_listings)" 0
[ "$(v listings)" -ge 5 ] || fail "only $(v listings) listings read during the writes"
echo "ok: $(v listings) listings read in 4 KiB reads during the writes, all whole and exact"
# One listing in 4 KiB reads (38 reads) against one read of it all: the same work, a few
# more system calls.
whole=$(v whole_read_us) chunked=$(v chunked_read_us)
[ "$chunked" -le $((3 * whole + 50000)) ] ||
    fail "a listing in 4 KiB reads took $chunked us, one read of it $whole us"
echo "ok: a listing in 4 KiB reads took $chunked us, in one read $whole us"
for kind in noop setmaps; do
    [ "$(v ${kind}_reading_count)" -ge 10 ] || fail "only $(v ${kind}_reading_count) $kind writes"
    max=$(v ${kind}_reading_max_us)
    [ "$max" -lt $limit_us ] ||
        fail "a $kind write took $max us while a reader listed the file (limit $limit_us us; alone: $(v ${kind}_alone_max_us) us)"
    echo "ok: $kind writes with the reader: median $(v ${kind}_reading_median_us) us, max $max us (alone: median $(v ${kind}_alone_median_us) us, max $(v ${kind}_alone_max_us) us)"
done
unload
