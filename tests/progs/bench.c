// bench MODE ...: workloads of `make bench` (scripts/bench.sh), timed by themselves.
//   faults T N   T threads each write one byte to each of N fresh anonymous pages of their
//                own region, all starting together; prints ns=<wall ns per fault>
//   mapunmap N   N pairs of mmap(4096, anonymous) + munmap, nothing touched; prints
//                ns=<ns per pair>
//   read FILE    reads FILE (O_NONBLOCK) 64 KiB at a time until end of file or EAGAIN;
//                prints lines=<lines read> ns=<ns> lines_per_s=<lines per second>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL

static size_t pages;
static pthread_barrier_t barrier;

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static char *map_pages(size_t n)
{
	char *p = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, n * PAGE, MADV_NOHUGEPAGE);
	return p;
}

static void *fault_thread(void *arg)
{
	volatile char *p = arg;

	pthread_barrier_wait(&barrier);
	for (size_t i = 0; i < pages; i++)
		p[i * PAGE] = 1;
	pthread_barrier_wait(&barrier);
	return NULL;
}

static int faults(int threads, size_t n)
{
	pthread_t tid[64];
	long long t0, t1;

	if (threads < 1 || threads > 64)
		return fprintf(stderr, "bench: 1 to 64 threads\n"), 2;
	pages = n;
	pthread_barrier_init(&barrier, NULL, threads + 1);
	for (int i = 0; i < threads; i++)
		if (pthread_create(&tid[i], NULL, fault_thread, map_pages(n)))
			return perror("pthread_create"), 1;
	pthread_barrier_wait(&barrier);
	t0 = now_ns();
	pthread_barrier_wait(&barrier);
	t1 = now_ns();
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	printf("ns=%lld\n", (t1 - t0) / (long long)(threads * n));
	return 0;
}

static int mapunmap(size_t n)
{
	long long t0 = now_ns();

	for (size_t i = 0; i < n; i++) {
		void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return perror("mmap"), 1;
		munmap(p, PAGE);
	}
	printf("ns=%lld\n", (now_ns() - t0) / (long long)n);
	return 0;
}

static int readfile(const char *path)
{
	static char buf[65536];
	long long lines = 0, t0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NONBLOCK);

	if (fd < 0)
		return perror(path), 1;
	t0 = now_ns();
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
	if (n < 0 && errno != EAGAIN)
		return perror("read"), 1;
	t0 = now_ns() - t0;
	printf("lines=%lld ns=%lld lines_per_s=%lld\n", lines, t0,
	       t0 ? lines * 1000000000LL / t0 : 0);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 4 && !strcmp(argv[1], "faults"))
		return faults(atoi(argv[2]), strtoul(argv[3], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "mapunmap"))
		return mapunmap(strtoul(argv[2], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "read"))
		return readfile(argv[2]);
	fprintf(stderr, "usage: bench faults THREADS N | mapunmap N | read FILE\n");
	return 2;
}
