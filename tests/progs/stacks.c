// stacks N: outer() -> middle() -> touch(), which writes N fresh anonymous pages, between the
// markers fsync(1001) and fsync(1002). Built with frame pointers, leaf functions too
// (-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer). Prints the address ranges
// of the three functions (from their symbols' addresses, the next function's start, or
// main's, as the end): touch=LO-HI middle=LO-HI outer=LO-HI, and base=. On arm64 also
// saved_lr=, the return address into outer() as middle()'s frame record holds it: signed by
// pointer authentication (bits above the address's) when built with
// -mbranch-protection=standard (make progs-arm64's stacks-pac), the address itself else.
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096UL

__attribute__((noinline)) void done(void)
{
	__asm__ volatile("" ::: "memory");
}

// Not a leaf (it calls done()), so that it has a frame even where the compiler omits leaf
// functions' frame pointers (gcc 12 does, despite -mno-omit-leaf-frame-pointer).
__attribute__((noinline)) void touch(volatile char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i * PAGE] = 1;
	done();
}

#ifdef __aarch64__
static unsigned long saved_lr;
#endif

__attribute__((noinline)) void middle(volatile char *p, size_t n)
{
#ifdef __aarch64__
	// The frame record: the caller's x29, then the return address (x30) as saved.
	saved_lr = ((volatile unsigned long *)__builtin_frame_address(0))[1];
#endif
	touch(p, n);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void outer(volatile char *p, size_t n)
{
	middle(p, n);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 16;
	char *p = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return perror("mmap"), 1;
	madvise(p, n * PAGE, MADV_NOHUGEPAGE);
	setvbuf(stdout, NULL, _IONBF, 0);
	// The functions are laid out in source order: each ends where the next begins.
	printf("touch=%p-%p\nmiddle=%p-%p\nouter=%p-%p\nbase=%p\n",
	       (void *)touch, (void *)middle, (void *)middle, (void *)outer,
	       (void *)outer, (void *)main, p);
	fsync(1001);
	outer(p, n);
	fsync(1002);
#ifdef __aarch64__
	printf("saved_lr=%#lx\n", saved_lr);
#endif
	return 0;
}
