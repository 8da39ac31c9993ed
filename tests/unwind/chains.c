// chains [PAGES [DELAY_MS]]: page faults in named functions, reached through the code real programs run. Built
// twice (tests/unwind/build.sh): -O2 -fomit-frame-pointer, and -O2 -fno-omit-frame-pointer
// -mno-omit-leaf-frame-pointer, static with glibc. Between the markers fsync(1001) and
// fsync(1002), each of these brings fresh pages in:
//   leaf_touch        a leaf helper without a frame (in the first build) writes one byte a page
//   memset_region     glibc's memset clears a fresh mapping
//   malloc_region     glibc's malloc carves chunks off a growing heap (_int_malloc's writes)
//   recurse           10 calls deep, then leaf_touch
//   alloca_frame      a variable-sized frame (alloca) whose stack pages it writes
//   thread_main       a second thread, through leaf_touch
// Every fault's chain of functions down to main (or thread_main) must be the same in both
// builds once memmon unwinds with tables. DELAY_MS: a sleep before the first marker (for
// tables loaded by hand after the start).
#include <alloca.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096UL

static char *fresh(size_t pages)
{
	char *p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, pages * PAGE, MADV_NOHUGEPAGE);
	return p;
}

// A leaf: with -fomit-frame-pointer (and gcc 12's leaf rule) it has no frame.
__attribute__((noinline)) void leaf_touch(volatile char *p, size_t pages)
{
	for (size_t i = 0; i < pages; i++)
		p[i * PAGE] = 1;
}

__attribute__((noinline)) void memset_region(size_t pages)
{
	char *p = fresh(pages);

	memset(p, 7, pages * PAGE);
	__asm__ volatile("" : : "r"(p) : "memory");
}

__attribute__((noinline)) void malloc_region(size_t chunks)
{
	static void *kept[4096];

	for (size_t i = 0; i < chunks && i < 4096; i++)
		kept[i] = malloc(3000);
	__asm__ volatile("" : : "r"(kept) : "memory");
}

__attribute__((noinline)) int recurse(int depth, char *p, size_t pages)
{
	if (depth == 0) {
		leaf_touch(p, pages);
		return 0;
	}
	// Not a tail call, nor a loop the compiler makes of it: the result passes through asm.
	int r = recurse(depth - 1, p, pages);

	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

__attribute__((noinline)) void alloca_frame(size_t pages)
{
	volatile char *p = alloca(pages * PAGE);

	// From the top (nearest the caller's frame) down, as the stack grows.
	for (size_t i = pages; i-- > 0;)
		p[i * PAGE] = 1;
	__asm__ volatile("" : : "r"(p) : "memory");
}

static size_t thread_pages;

__attribute__((noinline)) void *thread_main(void *arg)
{
	leaf_touch(arg, thread_pages);
	return NULL;
}

int main(int argc, char **argv)
{
	size_t pages = argc > 1 ? strtoul(argv[1], NULL, 0) : 16;
	char *a = fresh(pages), *b = fresh(pages), *c = fresh(pages);
	pthread_t thread;

	thread_pages = pages;
	if (argc > 2)
		usleep(strtoul(argv[2], NULL, 0) * 1000);
	fsync(1001);
	leaf_touch(a, pages);
	memset_region(pages);
	malloc_region(pages * 4);
	if (recurse(10, b, pages) != 10)
		return 1;
	alloca_frame(pages);
	if (pthread_create(&thread, NULL, thread_main, c) || pthread_join(thread, NULL))
		return 1;
	fsync(1002);
	return 0;
}
