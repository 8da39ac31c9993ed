// access gens N | loop N | until FILE: a workload for access sampling (module parameter
// sample_ms).
//
// Both modes map 4096 anonymous pages (no THP) and write each page's index into it.
//
// gens N: then waits for two generations to end (the first whose arming began after the
// writes, and the next), then,
// between the markers fsync(1001) and fsync(1002), for N generations: waits until
// the module starts a new one (the "generations" counter of /proc/memmon/stats moves on; it
// polls every millisecond, so the touching starts right after the arming), then hot_loop()
// writes the same 256 pages (0..255) and, in the third generation only, scan_once() reads
// 1024 pages (1024..2047) once; each generation checks that the counter did not move while it
// touched (else it prints straddled=1). Prints base=, the address ranges of hot_loop,
// scan_once and main (hot_loop=LO-HI ...), genI=G for each generation I (1..N) the module's
// number G, straddled=0|1, and faults= / major_faults= (the kernel's counts, getrusage, for the
// part between the markers). With the counter absent (no module) it does not wait.
//
// loop N: touches every page N times (a read and a write) between the markers, prints
// straddled=0, faults= and major_faults=. until FILE: the same until FILE exists, and prints
// loops=N.
//
// Both end by checking every page's contents (index and the writes it received): exits 1 with
// "corrupt page I" if one is wrong, else prints ok=1.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define NPAGES 4096
#define HOT 256
#define SCAN_FIRST 1024
#define SCAN_PAGES 1024

static char stats[4096];

// The "generations" counter of /proc/memmon/stats, -1 without it.
static long generations(void)
{
	int fd = open("/proc/memmon/stats", O_RDONLY);
	ssize_t n;
	char *at;

	if (fd < 0)
		return -1;
	n = read(fd, stats, sizeof(stats) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	stats[n] = 0;
	at = strstr(stats, "\ngenerations ");
	return at ? strtol(at + 13, NULL, 10) : -1;
}

static void pause_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

// Waits until the counter moves past `last`; returns its new value.
static long next_generation(long last)
{
	long g;

	while ((g = generations()) == last && g >= 0)
		pause_ms(1);
	return g;
}

__attribute__((noinline)) void done(void)
{
	__asm__ volatile("" ::: "memory");
}

// Writes the first word of pages 0..HOT-1: their count of writes, after the index.
__attribute__((noinline)) void hot_loop(volatile long *p)
{
	for (unsigned long i = 0; i < HOT; i++)
		p[i * PAGE / sizeof(long) + 1] += 1;
	done();
}

// Reads pages SCAN_FIRST.. once.
__attribute__((noinline)) long scan_once(volatile long *p)
{
	long sum = 0;

	for (unsigned long i = SCAN_FIRST; i < SCAN_FIRST + SCAN_PAGES; i++)
		sum += p[i * PAGE / sizeof(long)];
	done();
	return sum;
}

__attribute__((noinline)) void loop_all(volatile long *p)
{
	for (unsigned long i = 0; i < NPAGES; i++)
		p[i * PAGE / sizeof(long) + 1] += p[i * PAGE / sizeof(long)] == (long)i;
	done();
}

int main(int argc, char **argv)
{
	int gens_mode = argc > 1 && !strcmp(argv[1], "gens");
	int until_mode = argc > 2 && !strcmp(argv[1], "until");
	long n = argc > 2 && !until_mode ? strtol(argv[2], NULL, 0) : 0;
	long want_scan = 0, hot_writes = 0, g, last;
	struct rusage before, after;
	int straddled = 0;
	volatile long *p;

	if (argc < 3 || (!gens_mode && !until_mode && strcmp(argv[1], "loop")))
		return fprintf(stderr, "usage: access gens N | loop N | until FILE\n"), 2;
	p = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return perror("mmap"), 1;
	madvise((void *)p, NPAGES * PAGE, MADV_NOHUGEPAGE);
	setvbuf(stdout, NULL, _IONBF, 0);
	for (unsigned long i = 0; i < NPAGES; i++)
		p[i * PAGE / sizeof(long)] = i;
	for (unsigned long i = SCAN_FIRST; i < SCAN_FIRST + SCAN_PAGES; i++)
		want_scan += i;
	printf("base=%p\nhot_loop=%p-%p\nscan_once=%p-%p\nloop_all=%p-%p\n", (void *)p,
	       (void *)hot_loop, (void *)scan_once, (void *)scan_once, (void *)loop_all,
	       (void *)loop_all, (void *)main);
	last = generations();
	// A generation whose arming was under way while the pages were written may have missed
	// some: start after the next one, whose arming began once they all were. And one more, so
	// that two whole generations pass without an access between the writes and the first
	// generation below, wherever in its generation the writing fell (memmon report --cold 2
	// then sees every page cold at its first access).
	if (gens_mode && last >= 0)
		last = next_generation(next_generation(last));
	// The fault lines between the markers must be the faults between the getrusage calls:
	// nothing may fault between a getrusage and its marker, so their code (on pages sampling
	// arms) runs once just before, and the sequence takes microseconds.
	getrusage(RUSAGE_SELF, &after);
	fsync(1000);
	getrusage(RUSAGE_SELF, &before);
	fsync(1001);
	if (gens_mode) {
		for (long i = 1; i <= n; i++) {
			g = last < 0 ? -1 : next_generation(last);
			hot_loop(p);
			hot_writes++;
			if (i == 3 && scan_once(p) != want_scan)
				return printf("scan_once read wrong data\n"), 1;
			last = generations();
			if (last != g)
				straddled = 1;
			printf("gen%ld=%ld\n", i, g);
		}
	} else if (until_mode) {
		while (access(argv[2], F_OK)) {
			loop_all(p);
			n++;
		}
		printf("loops=%ld\n", n);
	} else {
		for (long i = 0; i < n; i++)
			loop_all(p);
	}
	getrusage(RUSAGE_SELF, &after);
	fsync(1000);
	fsync(1002);
	getrusage(RUSAGE_SELF, &after);
	printf("straddled=%d\n", straddled);
	printf("faults=%ld\nmajor_faults=%ld\n",
	       (after.ru_minflt + after.ru_majflt) - (before.ru_minflt + before.ru_majflt),
	       after.ru_majflt - before.ru_majflt);
	for (unsigned long i = 0; i < NPAGES; i++) {
		long writes = gens_mode ? (i < HOT ? hot_writes : 0) : n;

		if (p[i * PAGE / sizeof(long)] != (long)i || p[i * PAGE / sizeof(long) + 1] != writes)
			return printf("corrupt page %lu\n", i), 1;
	}
	printf("ok=1\n");
	return 0;
}
