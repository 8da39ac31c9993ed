// resident ANON FILE HEAP SWAP DIR: a process that holds memory of every kind before memmon
// watches it, for tests/vm/60-resident-at-start.sh.
//
// Maps ANON anonymous pages (no THP) and writes each, then pages SWAP of them out
// (MADV_PAGEOUT: swap must be on), half of them in each half of the mapping; maps ANON / 4
// more anonymous pages and only reads them (the shared zero page: mapped, not resident);
// writes DIR/resident.data of FILE pages, maps it MAP_PRIVATE and reads each page (file
// pages); grows the heap (brk) by HEAP pages and writes each. Prints
//   ready anon=0x... zero=0x... file=0x... heap=0x...
// and waits until DIR/go1 exists. Then frees half of each: unmaps the second half of the
// anonymous mapping (with its swapped pages) and of the file's, shrinks the heap by half;
// prints "freed" and waits until DIR/go2 exists, then exits at once (_exit: no code runs
// after, so its last state is the one the scenario read).
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL

static void wait_for(const char *dir, const char *name)
{
	char path[4096];
	struct timespec step = { 0, 50 * 1000 * 1000 };

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	while (access(path, F_OK))
		nanosleep(&step, NULL);
}

static char *map_anon(unsigned long pages)
{
	char *p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, pages * PAGE, MADV_NOHUGEPAGE);
	return p;
}

int main(int argc, char **argv)
{
	unsigned long anon, file, heap, swap, i;
	char path[4096], page[PAGE];
	volatile char sum = 0;
	char *a, *z, *f, *h;
	int fd;

	if (argc != 6)
		return fprintf(stderr, "usage: resident ANON FILE HEAP SWAP DIR\n"), 2;
	anon = strtoul(argv[1], NULL, 0);
	file = strtoul(argv[2], NULL, 0);
	heap = strtoul(argv[3], NULL, 0);
	swap = strtoul(argv[4], NULL, 0);
	setvbuf(stdout, NULL, _IONBF, 0);

	a = map_anon(anon);
	for (i = 0; i < anon; i++)
		a[i * PAGE] = 1;
	if (swap && madvise(a + (anon / 2 - swap / 2) * PAGE, swap * PAGE, MADV_PAGEOUT))
		return perror("madvise(MADV_PAGEOUT)"), 1;
	z = map_anon(anon / 4);
	for (i = 0; i < anon / 4; i++)
		sum += z[i * PAGE];

	snprintf(path, sizeof(path), "%s/resident.data", argv[5]);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return perror("open"), 1;
	memset(page, 'x', sizeof(page));
	for (i = 0; i < file; i++)
		if (write(fd, page, PAGE) != (ssize_t)PAGE)
			return perror("write"), 1;
	f = mmap(NULL, file * PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
	if (f == MAP_FAILED)
		return perror("mmap file"), 1;
	for (i = 0; i < file; i++)
		sum += f[i * PAGE];

	// The break page-aligned first: the heap's pages are whole pages of its own.
	h = sbrk(0);
	if (sbrk((-(unsigned long)h & (PAGE - 1)) + heap * PAGE) == (void *)-1)
		return perror("sbrk"), 1;
	h += -(unsigned long)h & (PAGE - 1);
	for (i = 0; i < heap; i++)
		h[i * PAGE] = 1;

	printf("ready anon=%p zero=%p file=%p heap=%p\n", a, z, f, h);
	wait_for(argv[5], "go1");

	if (munmap(a + anon / 2 * PAGE, (anon - anon / 2) * PAGE) ||
	    munmap(f + file / 2 * PAGE, (file - file / 2) * PAGE))
		return perror("munmap"), 1;
	if (sbrk(-(long)((heap - heap / 2) * PAGE)) == (void *)-1)
		return perror("sbrk shrink"), 1;
	printf("freed\n");
	wait_for(argv[5], "go2");
	_exit(0);
}
