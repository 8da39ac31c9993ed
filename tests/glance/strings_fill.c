// A program whose memory is first touched by glibc's string functions, which Debian's
// libc.so.6 has no names for (the memset and memcpy variants are local symbols, and the
// library is stripped): clear_arena brings in 12 MiB through memset, copy_records 8 MiB
// through memcpy, each from one call path. Both are held until the program exits.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024 * 1024)

static __attribute__((noinline)) char *clear_arena(size_t bytes)
{
	char *arena = malloc(bytes);

	if (!arena)
		exit(1);
	memset(arena, 0x5a, bytes);
	return arena;
}

static __attribute__((noinline)) char *copy_records(const char *from, size_t bytes)
{
	char *copy = malloc(bytes);

	if (!copy)
		exit(1);
	memcpy(copy, from, bytes);
	return copy;
}

int main(void)
{
	char *volatile arena = clear_arena(12 * MIB);
	char *volatile copy = copy_records(arena, 8 * MIB);
	long sum = 0;

	for (size_t i = 0; i < 8 * MIB; i += 4096)
		sum += ((volatile char *)copy)[i];
	printf("%ld\n", sum);
	return 0;
}
