// A Go program of two functions that hold memory: fillCache keeps about 12 MiB of byte
// slices in a map, buildJournal about 6 MiB of strings in a slice. Built with Debian's Go.
package main

import (
	"fmt"
	"strings"
)

//go:noinline
func fillCache(entries int) map[int][]byte {
	cache := make(map[int][]byte, entries)
	for i := 0; i < entries; i++ {
		value := make([]byte, 1024)
		for j := range value {
			value[j] = byte(i)
		}
		cache[i] = value
	}
	return cache
}

//go:noinline
func buildJournal(lines int) []string {
	journal := make([]string, 0, lines)
	for i := 0; i < lines; i++ {
		journal = append(journal, fmt.Sprintf("%8d: %s", i, strings.Repeat("x", 240)))
	}
	return journal
}

func main() {
	cache := fillCache(12 * 1024)
	journal := buildJournal(24 * 1024)
	fmt.Println(len(cache), len(journal))
}
