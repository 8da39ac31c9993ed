// memtest MODE [N]: a workload with known page faults, for memmon's VM scenarios.
//
// The measured part of every mode runs between two in-stream markers, fsync(1001) and
// fsync(1002) (they fail with EBADF and show up as "fsync fd=1001 ret=-EBADF"). Around them
// it reads the kernel's own fault counters (getrusage), and prints on stdout:
//   base=0x...     the start of the region the workload touched
//   faults=N       minor + major faults the kernel counted for the measured part
//   major_faults=N of which major
//   elapsed_ns=N   CLOCK_MONOTONIC time the measured part took
// Modes:
//   anon N       write one byte at the start of each of N fresh anonymous pages
//   file PATH N  create PATH with N pages, map it MAP_PRIVATE, read one byte of each page
//   cow N        write N anonymous pages, fork; the child writes them again (its faults
//                are measured; the parent waits)
//   swap N       write N pages, MADV_PAGEOUT them, read them again (measured: the reads)
//   exec PATH    write machine code to PATH, map it PROT_READ|PROT_EXEC, call it
//   populate N   mmap N pages with MAP_POPULATE
//   thp          a 2 MiB-aligned anonymous region with MADV_HUGEPAGE, one write
//   churn R N [D]  R rounds of: map N anonymous pages, write each, unmap them; with D,
//                from D frames of recursion (deep stacks, followed by frame pointers)
//   race N       two threads write the same N fresh anonymous pages at once, in the same
//                order, so that they race to fault the same pages (spurious faults)
//   threads T N  T threads each write N fresh anonymous pages of their own region, in
//                address order, all at once
//   hugetlb N    map N 2 MiB hugetlbfs pages (MAP_HUGETLB), write one byte of each
//   malloc       the original memmon experiment: malloc 12 KiB, touch it; then malloc
//                growing sizes 4 KiB .. 256 KiB, write, free (prints the heap's bounds
//                heap_lo= and heap_hi=)
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL

static struct rusage before, after;
static struct timespec t0;

static void start(void)
{
	// After a fork these are copy-on-write: fault them in before measuring.
	memset(&before, 0, sizeof(before));
	memset(&after, 0, sizeof(after));
	clock_gettime(CLOCK_MONOTONIC, &t0);	// and the vDSO, not copied at fork
	getrusage(RUSAGE_SELF, &before);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fsync(1001);
}

static void stop(void)
{
	struct timespec t1;

	fsync(1002);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &after);
	printf("faults=%ld\n", (after.ru_minflt + after.ru_majflt) -
			       (before.ru_minflt + before.ru_majflt));
	printf("major_faults=%ld\n", after.ru_majflt - before.ru_majflt);
	printf("elapsed_ns=%lld\n", (t1.tv_sec - t0.tv_sec) * 1000000000LL +
				     (t1.tv_nsec - t0.tv_nsec));
}

static char *map_anon(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, len, MADV_NOHUGEPAGE);
	return p;
}

// Keeps the compiler from optimising away an allocation that is written and freed.
static void escape(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static void touch(volatile char *p, size_t pages, int write)
{
	for (size_t i = 0; i < pages; i++) {
		if (write)
			p[i * PAGE] = 1;
		else
			(void)p[i * PAGE];
	}
}

// R rounds of map, write and unmap N pages, from D more frames of recursion.
__attribute__((noinline)) static void churn(size_t rounds, size_t n, size_t depth)
{
	if (depth > 0) {
		churn(rounds, n, depth - 1);
		__asm__ volatile("" ::: "memory");	// not a tail call: a frame each
		return;
	}
	for (size_t r = 0; r < rounds; r++) {
		char *p = map_anon(n * PAGE);

		touch(p, n, 1);
		munmap(p, n * PAGE);
	}
}

static char *race_region;
static size_t race_pages;
static pthread_barrier_t race_barrier;

// Both threads meet twice: once before the measurement starts, once to start racing.
static void *race_thread(void *arg)
{
	if (!arg)
		pthread_barrier_wait(&race_barrier);
	pthread_barrier_wait(&race_barrier);
	touch(race_region, race_pages, 1);
	return NULL;
}

static void *own_region_thread(void *region)
{
	pthread_barrier_wait(&race_barrier);
	pthread_barrier_wait(&race_barrier);
	touch(region, race_pages, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	size_t n = argc > 2 ? strtoul(argv[argc - 1], NULL, 0) : 0;
	volatile char sink;
	char *p;

	// Pre-fault what the measured parts use besides their regions (the vDSO included).
	getrusage(RUSAGE_SELF, &before);
	getrusage(RUSAGE_SELF, &after);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	setvbuf(stdout, NULL, _IONBF, 0);

	if (!strcmp(mode, "anon")) {
		p = map_anon(n * PAGE);
		printf("base=%p\n", p);
		start();
		touch(p, n, 1);
		stop();
	} else if (!strcmp(mode, "file") && argc == 4) {
		int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
		char page[PAGE];

		memset(page, 'x', sizeof(page));
		for (size_t i = 0; i < n; i++)
			if (write(fd, page, PAGE) != (ssize_t)PAGE)
				return perror("write"), 1;
		p = mmap(NULL, n * PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED)
			return perror("mmap"), 1;
		madvise(p, n * PAGE, MADV_NOHUGEPAGE);
		printf("base=%p\n", p);
		start();
		touch(p, n, 0);
		stop();
	} else if (!strcmp(mode, "cow")) {
		pid_t child;
		int status;

		p = map_anon(n * PAGE);
		printf("base=%p\n", p);
		touch(p, n, 1);
		child = fork();
		if (child == 0) {
			start();
			touch(p, n, 1);
			stop();
			_exit(0);
		}
		waitpid(child, &status, 0);
		printf("child=%d\n", child);
	} else if (!strcmp(mode, "swap")) {
		p = map_anon(n * PAGE);
		printf("base=%p\n", p);
		touch(p, n, 1);
		if (madvise(p, n * PAGE, MADV_PAGEOUT))
			return perror("madvise(MADV_PAGEOUT)"), 1;
		start();
		touch(p, n, 0);
		stop();
	} else if (!strcmp(mode, "exec") && argc == 3) {
#ifdef __aarch64__
		// mov w0, #42; ret (little-endian). The kernel makes the instruction cache
		// coherent with the page when it maps it executable (__sync_icache_dcache()).
		static const unsigned char code[] = { 0x40, 0x05, 0x80, 0x52, 0xc0, 0x03, 0x5f, 0xd6 };
#else
		// mov eax, 42; ret
		static const unsigned char code[] = { 0xb8, 0x2a, 0, 0, 0, 0xc3 };
#endif
		int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0755);
		int (*fn)(void);

		if (fd < 0 || write(fd, code, sizeof(code)) != sizeof(code))
			return perror(argv[2]), 1;
		p = mmap(NULL, PAGE, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED)
			return perror("mmap"), 1;
		printf("base=%p\n", p);
		fn = (int (*)(void))p;
		start();
		sink = fn();
		stop();
		printf("result=%d\n", sink);
	} else if (!strcmp(mode, "populate")) {
		start();
		p = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		stop();
		printf("base=%p\n", p);
	} else if (!strcmp(mode, "thp")) {
		size_t huge = 2UL << 20;
		char *raw = mmap(NULL, 2 * huge, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		p = (char *)(((uintptr_t)raw + huge - 1) & ~(huge - 1));
		if (madvise(p, huge, MADV_HUGEPAGE))
			return perror("madvise(MADV_HUGEPAGE)"), 1;
		printf("base=%p\n", p);
		start();
		p[0] = 1;
		stop();
	} else if (!strcmp(mode, "churn") && (argc == 4 || argc == 5)) {
		size_t rounds = strtoul(argv[2], NULL, 0);

		size_t pages = strtoul(argv[3], NULL, 0);

		start();
		churn(rounds, pages, argc == 5 ? strtoul(argv[4], NULL, 0) : 0);
		stop();
	} else if (!strcmp(mode, "race")) {
		pthread_t other;

		race_region = p = map_anon(n * PAGE);
		race_pages = n;
		pthread_barrier_init(&race_barrier, NULL, 2);
		if (pthread_create(&other, NULL, race_thread, NULL))
			return perror("pthread_create"), 1;
		printf("base=%p\n", p);
		pthread_barrier_wait(&race_barrier);
		start();
		race_thread(p);
		pthread_join(other, NULL);
		stop();
	} else if (!strcmp(mode, "threads") && argc == 4) {
		size_t threads = strtoul(argv[2], NULL, 0);
		pthread_t tids[64];

		if (threads < 1 || threads > 64)
			return fprintf(stderr, "1 to 64 threads\n"), 2;
		race_pages = n;
		pthread_barrier_init(&race_barrier, NULL, threads + 1);
		for (size_t i = 0; i < threads; i++)
			if (pthread_create(&tids[i], NULL, own_region_thread, map_anon(n * PAGE)))
				return perror("pthread_create"), 1;
		pthread_barrier_wait(&race_barrier);
		start();
		pthread_barrier_wait(&race_barrier);
		for (size_t i = 0; i < threads; i++)
			pthread_join(tids[i], NULL);
		stop();
	} else if (!strcmp(mode, "hugetlb")) {
		size_t huge = 2UL << 20;

		p = mmap(NULL, n * huge, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		if (p == MAP_FAILED)
			return perror("mmap(MAP_HUGETLB)"), 1;
		printf("base=%p\n", p);
		start();
		for (size_t i = 0; i < n; i++)
			p[i * huge] = 1;
		stop();
	} else if (!strcmp(mode, "malloc")) {
		char *first = malloc(1);

		// The heap starts at the page of the first block ever allocated.
		printf("heap_lo=%#lx\n", (unsigned long)first & ~(PAGE - 1));
		start();
		p = malloc(12 * 1024);
		touch(p, 3, 1);
		escape(p);
		for (size_t kib = 4; kib <= 256; kib += 4) {
			char *q = malloc(kib * 1024);

			memset(q, 1, kib * 1024);
			escape(q);
			free(q);
		}
		stop();
		printf("heap_hi=%p\n", sbrk(0));
		printf("base=%p\n", p);
	} else {
		fprintf(stderr, "usage: memtest anon|cow|swap|populate N | file PATH N | exec PATH | thp | malloc\n");
		return 2;
	}
	return 0;
}
