// dlopen_z PAGES [USECS | GO-FILE]: opens Debian's libz with dlopen after the start, waits, then
// compresses PAGES pages of text with it, between the markers fsync(1001) and fsync(1002): the
// pages zlib's deflate state brings in are written by zlib and glibc code called from
// compress_pages. The wait is for memmon record to load libz's unwind table, which it does on
// the library's mmap line: USECS microseconds (default 500000), or, given a path, until that
// file exists (at most 120 s), after creating GO-FILE.ready to say the library is mapped.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../progs/gofile.h"

typedef int (*compress2_fn)(unsigned char *, unsigned long *, const unsigned char *, unsigned long, int);

__attribute__((noinline)) void compress_pages(compress2_fn compress2, size_t pages)
{
	size_t len = pages * 4096;
	unsigned char *in = malloc(len), *out;
	unsigned long out_len = len + len / 100 + 1024;

	for (size_t i = 0; i < len; i++)
		in[i] = "memmon unwinds zlib "[i % 20] + (i / 4096) % 3;
	out = malloc(out_len);
	if (!in || !out || compress2(out, &out_len, in, len, 9) != 0) {
		fprintf(stderr, "compress2 failed\n");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	size_t pages = argc > 1 ? strtoul(argv[1], NULL, 0) : 64;
	void *z = dlopen("libz.so.1", RTLD_NOW);
	compress2_fn compress2;

	if (!z)
		return fprintf(stderr, "dlopen: %s\n", dlerror()), 1;
	compress2 = (compress2_fn)dlsym(z, "compress2");
	if (!compress2)
		return 1;
	if (argc > 2 && argv[2][0] == '/') {
		if (wait_for_go(argv[2]))
			return 1;
	} else {
		usleep(argc > 2 ? strtoul(argv[2], NULL, 0) : 500000);
	}
	fsync(1001);
	compress_pages(compress2, pages);
	fsync(1002);
	return 0;
}
