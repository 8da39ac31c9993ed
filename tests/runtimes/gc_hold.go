// A Go program that holds memory of known sizes while forcing collections: holdBlocks
// keeps 16 blocks of 1 MiB, holdRecords 131072 records of 64 bytes (8 MiB), with
// runtime.GC() after each, and they are held until the program exits. Go's collector does
// not move objects: what it touches first is its marking's (mark bits, work buffers).
// Built with Debian's Go (tests/runtimes/build.sh).
package main

import (
	"fmt"
	"os"
	"runtime"
)

type record struct {
	id    int64
	next  *record
	value [48]byte
}

//go:noinline
func holdBlocks(count int) [][]byte {
	blocks := make([][]byte, 0, count)
	for i := 0; i < count; i++ {
		block := make([]byte, 1<<20)
		for j := range block {
			block[j] = byte(i + j)
		}
		blocks = append(blocks, block)
	}
	return blocks
}

//go:noinline
func holdRecords(count int) []*record {
	records := make([]*record, 0, count)
	var previous *record
	for i := 0; i < count; i++ {
		r := &record{id: int64(i), next: previous}
		r.value[0] = byte(i)
		records = append(records, r)
		previous = r
	}
	return records
}

func main() {
	blocks := holdBlocks(16)
	runtime.GC()
	records := holdRecords(131072)
	runtime.GC()
	runtime.GC()
	fmt.Println(len(blocks), len(records))
	// Held to the end: exit with them live.
	runtime.KeepAlive(blocks)
	runtime.KeepAlive(records)
	os.Exit(0)
}
