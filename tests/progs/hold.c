// hold N FILE [MS]: a workload that holds memory, for the agent's scenarios.
//
// Maps N (0: none) anonymous pages (no THP) and writes one byte of each, 256 pages (1 MiB) at a time
// with MS milliseconds between two such steps (default 0: all at once), prints held=N, then
// sleeps in steps of 100 ms until FILE exists, and exits 0. With MS, it grows slowly enough
// for a cgroup's memory.max to be neared before it is reached.
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define STEP 256UL

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
	unsigned long n;
	long ms;
	char *p;

	if (argc < 3)
		return fprintf(stderr, "usage: hold N FILE [MS]\n"), 2;
	n = strtoul(argv[1], NULL, 0);
	ms = argc > 3 ? strtol(argv[3], NULL, 0) : 0;
	setvbuf(stdout, NULL, _IONBF, 0);
	if (n) {
		p = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return perror("mmap"), 1;
		madvise(p, n * PAGE, MADV_NOHUGEPAGE);
	}
	for (unsigned long i = 0; i < n; i++) {
		p[i * PAGE] = 1;
		if (ms && i % STEP == STEP - 1)
			sleep_ms(ms);
	}
	printf("held=%lu\n", n);
	while (access(argv[2], F_OK))
		sleep_ms(100);
	return 0;
}
