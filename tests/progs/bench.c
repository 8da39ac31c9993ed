// bench MODE ...: workloads of `make bench` (scripts/bench.sh), timed by themselves.
//   faults T N   T threads each write one byte to each of N fresh anonymous pages of their
//                own region, all starting together; prints ns=<wall ns per fault>
//   mapunmap N   N pairs of mmap(4096, anonymous) + munmap, nothing touched; prints
//                ns=<ns per pair>
//   sample N PCT ROUNDS sync|sleep
//                maps N pages and writes them, then ROUNDS times: waits for the next
//                generation of access sampling ("generations" in /proc/memmon/stats: sync)
//                or 100 ms (sleep), then writes PCT % of the pages, a random set each round;
//                prints ns=<ns per page written> touched=<pages written in all>
//   read FILE    reads FILE (O_NONBLOCK) 64 KiB at a time until end of file or EAGAIN;
//                prints lines=<lines read> ns=<ns> lines_per_s=<lines per second>
//   deep D N GO  maps N pages, creates GO.ready and waits until GO exists (for the caller to
//                load unwind tables), then calls a chain of D distinct functions (at most 136)
//                and writes one byte to each page at the bottom; prints ns=<ns per fault>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gofile.h"

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

struct fault_thread {
	pthread_t tid;
	volatile char *p;
	long long start, end;
};

/* Each thread times its own faults: the run lasts from the first thread's start to the last
 * one's end, however late the main thread runs after the barrier. */
static void *fault_thread(void *arg)
{
	struct fault_thread *t = arg;

	pthread_barrier_wait(&barrier);
	t->start = now_ns();
	for (size_t i = 0; i < pages; i++)
		t->p[i * PAGE] = 1;
	t->end = now_ns();
	return NULL;
}

static int faults(int threads, size_t n)
{
	static struct fault_thread t[64];
	long long t0 = 0, t1 = 0;

	if (threads < 1 || threads > 64)
		return fprintf(stderr, "bench: 1 to 64 threads\n"), 2;
	pages = n;
	pthread_barrier_init(&barrier, NULL, threads);
	for (int i = 0; i < threads; i++) {
		t[i].p = map_pages(n);
		if (pthread_create(&t[i].tid, NULL, fault_thread, &t[i]))
			return perror("pthread_create"), 1;
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i].tid, NULL);
		if (i == 0 || t[i].start < t0)
			t0 = t[i].start;
		if (i == 0 || t[i].end > t1)
			t1 = t[i].end;
	}
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

static volatile char *deep_pages;
static size_t deep_count;
static long long deep_spent;

// The bottom of bench deep's chain: the timed faults.
__attribute__((noinline)) static int deep_bottom(int depth)
{
	long long t0 = now_ns();

	for (size_t i = 0; i < deep_count; i++)
		deep_pages[i * PAGE] = 1;
	deep_spent = now_ns() - t0;
	return depth;
}

// A chain of distinct functions, each calling the next through a volatile pointer (never
// inlined, no call turned into a jump), so that each level is a frame of its own in its own
// function, as a real call chain is, and a stack walk looks each one up afresh.
#define DEEP_LEVELS 136
static int (*volatile deep_next[DEEP_LEVELS + 1])(int);
#define DEEP_LEVEL(n)                                                   \
	__attribute__((noinline)) static int deep_##n(int depth)         \
	{                                                               \
		if (depth > 0)                                          \
			return deep_next[n + 1](depth - 1) ^ (n);       \
		return deep_bottom(depth);                              \
	}
DEEP_LEVEL(0) DEEP_LEVEL(1) DEEP_LEVEL(2) DEEP_LEVEL(3) DEEP_LEVEL(4) DEEP_LEVEL(5)
DEEP_LEVEL(6) DEEP_LEVEL(7) DEEP_LEVEL(8) DEEP_LEVEL(9) DEEP_LEVEL(10) DEEP_LEVEL(11)
DEEP_LEVEL(12) DEEP_LEVEL(13) DEEP_LEVEL(14) DEEP_LEVEL(15) DEEP_LEVEL(16)
DEEP_LEVEL(17) DEEP_LEVEL(18) DEEP_LEVEL(19) DEEP_LEVEL(20) DEEP_LEVEL(21)
DEEP_LEVEL(22) DEEP_LEVEL(23) DEEP_LEVEL(24) DEEP_LEVEL(25) DEEP_LEVEL(26)
DEEP_LEVEL(27) DEEP_LEVEL(28) DEEP_LEVEL(29) DEEP_LEVEL(30) DEEP_LEVEL(31)
DEEP_LEVEL(32) DEEP_LEVEL(33) DEEP_LEVEL(34) DEEP_LEVEL(35) DEEP_LEVEL(36)
DEEP_LEVEL(37) DEEP_LEVEL(38) DEEP_LEVEL(39) DEEP_LEVEL(40) DEEP_LEVEL(41)
DEEP_LEVEL(42) DEEP_LEVEL(43) DEEP_LEVEL(44) DEEP_LEVEL(45) DEEP_LEVEL(46)
DEEP_LEVEL(47) DEEP_LEVEL(48) DEEP_LEVEL(49) DEEP_LEVEL(50) DEEP_LEVEL(51)
DEEP_LEVEL(52) DEEP_LEVEL(53) DEEP_LEVEL(54) DEEP_LEVEL(55) DEEP_LEVEL(56)
DEEP_LEVEL(57) DEEP_LEVEL(58) DEEP_LEVEL(59) DEEP_LEVEL(60) DEEP_LEVEL(61)
DEEP_LEVEL(62) DEEP_LEVEL(63) DEEP_LEVEL(64) DEEP_LEVEL(65) DEEP_LEVEL(66)
DEEP_LEVEL(67) DEEP_LEVEL(68) DEEP_LEVEL(69) DEEP_LEVEL(70) DEEP_LEVEL(71)
DEEP_LEVEL(72) DEEP_LEVEL(73) DEEP_LEVEL(74) DEEP_LEVEL(75) DEEP_LEVEL(76)
DEEP_LEVEL(77) DEEP_LEVEL(78) DEEP_LEVEL(79) DEEP_LEVEL(80) DEEP_LEVEL(81)
DEEP_LEVEL(82) DEEP_LEVEL(83) DEEP_LEVEL(84) DEEP_LEVEL(85) DEEP_LEVEL(86)
DEEP_LEVEL(87) DEEP_LEVEL(88) DEEP_LEVEL(89) DEEP_LEVEL(90) DEEP_LEVEL(91)
DEEP_LEVEL(92) DEEP_LEVEL(93) DEEP_LEVEL(94) DEEP_LEVEL(95) DEEP_LEVEL(96)
DEEP_LEVEL(97) DEEP_LEVEL(98) DEEP_LEVEL(99) DEEP_LEVEL(100) DEEP_LEVEL(101)
DEEP_LEVEL(102) DEEP_LEVEL(103) DEEP_LEVEL(104) DEEP_LEVEL(105) DEEP_LEVEL(106)
DEEP_LEVEL(107) DEEP_LEVEL(108) DEEP_LEVEL(109) DEEP_LEVEL(110) DEEP_LEVEL(111)
DEEP_LEVEL(112) DEEP_LEVEL(113) DEEP_LEVEL(114) DEEP_LEVEL(115) DEEP_LEVEL(116)
DEEP_LEVEL(117) DEEP_LEVEL(118) DEEP_LEVEL(119) DEEP_LEVEL(120) DEEP_LEVEL(121)
DEEP_LEVEL(122) DEEP_LEVEL(123) DEEP_LEVEL(124) DEEP_LEVEL(125) DEEP_LEVEL(126)
DEEP_LEVEL(127) DEEP_LEVEL(128) DEEP_LEVEL(129) DEEP_LEVEL(130) DEEP_LEVEL(131)
DEEP_LEVEL(132) DEEP_LEVEL(133) DEEP_LEVEL(134) DEEP_LEVEL(135)
static int (*volatile deep_next[DEEP_LEVELS + 1])(int) = {
	deep_0, deep_1, deep_2, deep_3, deep_4, deep_5, deep_6, deep_7, deep_8, deep_9,
	deep_10, deep_11, deep_12, deep_13, deep_14, deep_15, deep_16, deep_17, deep_18,
	deep_19, deep_20, deep_21, deep_22, deep_23, deep_24, deep_25, deep_26, deep_27,
	deep_28, deep_29, deep_30, deep_31, deep_32, deep_33, deep_34, deep_35, deep_36,
	deep_37, deep_38, deep_39, deep_40, deep_41, deep_42, deep_43, deep_44, deep_45,
	deep_46, deep_47, deep_48, deep_49, deep_50, deep_51, deep_52, deep_53, deep_54,
	deep_55, deep_56, deep_57, deep_58, deep_59, deep_60, deep_61, deep_62, deep_63,
	deep_64, deep_65, deep_66, deep_67, deep_68, deep_69, deep_70, deep_71, deep_72,
	deep_73, deep_74, deep_75, deep_76, deep_77, deep_78, deep_79, deep_80, deep_81,
	deep_82, deep_83, deep_84, deep_85, deep_86, deep_87, deep_88, deep_89, deep_90,
	deep_91, deep_92, deep_93, deep_94, deep_95, deep_96, deep_97, deep_98, deep_99,
	deep_100, deep_101, deep_102, deep_103, deep_104, deep_105, deep_106, deep_107,
	deep_108, deep_109, deep_110, deep_111, deep_112, deep_113, deep_114, deep_115,
	deep_116, deep_117, deep_118, deep_119, deep_120, deep_121, deep_122, deep_123,
	deep_124, deep_125, deep_126, deep_127, deep_128, deep_129, deep_130, deep_131,
	deep_132, deep_133, deep_134, deep_135, deep_bottom,
};

static int deep(int depth, size_t n, const char *go)
{
	deep_pages = map_pages(n);
	deep_count = n;
	if (wait_for_go(go))
		return 1;
	if (depth < 0 || depth > DEEP_LEVELS)
		return fprintf(stderr, "bench: deep takes 0 to %d levels\n", DEEP_LEVELS), 2;
	deep_next[0](depth);
	printf("ns=%lld\n", n ? deep_spent / (long long)n : 0);
	return 0;
}

// The "generations" counter of /proc/memmon/stats, -1 without it.
static long generations(void)
{
	static char buf[4096];
	int fd = open("/proc/memmon/stats", O_RDONLY);
	ssize_t n;
	char *at;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	at = strstr(buf, "\ngenerations ");
	return at ? strtol(at + 13, NULL, 10) : -1;
}

static int sample(size_t n, unsigned int pct, int rounds, int sync)
{
	volatile char *p = (volatile char *)map_pages(n);
	size_t *order = calloc(n, sizeof(*order)), k = n * pct / 100, touched = 0;
	unsigned long long seed = 88172645463325252ULL;
	long long spent = 0, t0;
	struct timespec pause = { 0, 100000000L };
	long last = generations();

	if (!order)
		return perror("calloc"), 1;
	for (size_t i = 0; i < n; i++) {
		p[i * PAGE] = 1;
		order[i] = i;
	}
	for (int r = 0; r < rounds; r++) {
		// A random k-subset: the first k of a partial Fisher-Yates shuffle (xorshift).
		for (size_t i = 0; i < k; i++) {
			size_t j, t;

			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			j = i + seed % (n - i);
			t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		if (sync && last >= 0) {
			long g;

			while ((g = generations()) == last && g >= 0)
				nanosleep(&(struct timespec){ 0, 1000000L }, NULL);
			last = g;
		} else {
			nanosleep(&pause, NULL);
		}
		t0 = now_ns();
		for (size_t i = 0; i < k; i++)
			p[order[i] * PAGE] += 1;
		spent += now_ns() - t0;
		touched += k;
	}
	printf("ns=%lld touched=%zu\n", touched ? spent / (long long)touched : 0, touched);
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
	if (argc == 5 && !strcmp(argv[1], "deep"))
		return deep(atoi(argv[2]), strtoul(argv[3], NULL, 0), argv[4]);
	if (argc == 6 && !strcmp(argv[1], "sample"))
		return sample(strtoul(argv[2], NULL, 0), atoi(argv[3]), atoi(argv[4]),
			      !strcmp(argv[5], "sync"));
	fprintf(stderr, "usage: bench faults THREADS N | mapunmap N | sample N PCT ROUNDS sync|sleep | read FILE | deep D N GO\n");
	return 2;
}
