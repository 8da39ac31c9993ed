// A Node.js script of the shape the report must answer at first glance: two functions hold
// memory of known sizes until the script exits, holdObjects 24 MiB of JavaScript arrays
// (24 arrays of 131072 numbers, 1 MiB each: V8 puts each in its large-object space, where
// they stay) and holdBuffers 20 MiB of Buffers (20 of 1 MiB, outside V8's heap, filled);
// holdRecords keeps 120000 small objects, which V8's scavenger copies out of the young
// generation: those pages are the collector's. Run with
// `memmon record --jit-maps -- node hold.js` (tests/vm/51-runtimes.sh).
'use strict';

const ARRAY_LENGTH = 131072; // 8-byte elements: 1 MiB
const BUFFER_BYTES = 1 << 20;

function holdObjects(count) {
  const arrays = [];
  for (let i = 0; i < count; i++) {
    arrays.push(new Array(ARRAY_LENGTH).fill(i));
  }
  return arrays;
}

function holdBuffers(count) {
  const buffers = [];
  for (let i = 0; i < count; i++) {
    const buffer = Buffer.alloc(BUFFER_BYTES);
    buffer.fill(i + 1);
    buffers.push(buffer);
  }
  return buffers;
}

function holdRecords(count) {
  const records = [];
  for (let i = 0; i < count; i++) {
    records.push({ id: i, name: 'record ' + i, tags: [i, i + 1] });
  }
  return records;
}

const objects = holdObjects(24);
const buffers = holdBuffers(20);
const records = holdRecords(120000);
console.log(objects.length, buffers.length, records.length);
// Held until the process exits, as a server holds its memory: process.exit() ends it
// without tearing the heap down first (a script that runs off its end frees its buffers
// and unmaps V8's heap before it exits), so the peak and the end are the same.
process.exit(0);
