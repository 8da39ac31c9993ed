// deepstack D N: dive() calls itself until D frames of it are on the stack; the innermost
// calls touch(), which writes N fresh anonymous pages, between the markers fsync(1001) and
// fsync(1002) (the stack the recursion uses faulted in before). Built with frame pointers,
// leaf functions too. Prints the address ranges of touch and dive (from their symbols'
// addresses to the next of this file's functions): touch=LO-HI dive=LO-HI.
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096UL

static volatile char *pages;
static size_t count;

__attribute__((noinline)) void done(void)
{
	__asm__ volatile("" ::: "memory");
}

// Not a leaf (it calls done()), so that it has a frame of its own.
__attribute__((noinline)) void touch(void)
{
	for (size_t i = 0; i < count; i++)
		pages[i * PAGE] = 1;
	done();
}

// Faults in the stack that the recursion will use, so that the only faults between the
// markers are touch()'s.
__attribute__((noinline)) void prefault_stack(void)
{
	volatile char room[256 * 1024];

	for (size_t i = 0; i < sizeof(room); i += PAGE)
		room[i] = 1;
}

// Not a tail call: the frame stays on the stack while the next one runs.
__attribute__((noinline)) int dive(int depth)
{
	if (depth > 1)
		depth = dive(depth - 1) + 1;
	else
		touch();
	__asm__ volatile("" ::: "memory");
	return depth;
}

int main(int argc, char **argv);

static void *end_of(void *f);

// The start of the first of this file's functions after @f: where @f ends.
static void *end_of(void *f)
{
	void *all[] = { (void *)done, (void *)touch, (void *)prefault_stack, (void *)dive,
			(void *)end_of, (void *)main };
	void *end = NULL;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if ((char *)all[i] > (char *)f && (!end || (char *)all[i] < (char *)end))
			end = all[i];
	return end;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 100;

	count = argc > 2 ? strtoul(argv[2], NULL, 0) : 16;
	pages = mmap(NULL, count * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED)
		return perror("mmap"), 1;
	madvise((void *)pages, count * PAGE, MADV_NOHUGEPAGE);
	setvbuf(stdout, NULL, _IONBF, 0);
	prefault_stack();
	printf("touch=%p-%p\ndive=%p-%p\n", (void *)touch, end_of((void *)touch), (void *)dive,
	       end_of((void *)dive));
	fsync(1001);
	if (dive(depth) != depth)
		return fprintf(stderr, "deepstack: dive returned the wrong depth\n"), 1;
	fsync(1002);
	return 0;
}
