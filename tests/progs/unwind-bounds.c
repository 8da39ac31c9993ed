// unwind-bounds MODE ...: the bounds of /proc/memmon/unwind under load (docs/unwind.md).
// Prints key=value lines; exits 1 when something it checks itself is wrong (with a
// "unwind-bounds: ..." line on stderr), 2 on a usage or set-up error.
//
//   listing TABLES PROCESSES RANGES SECONDS
//       forks PROCESSES children and watches them, loads TABLES tables (3 rows each) and
//       gives each child RANGES ranges (range i uses table (i / 2) % TABLES); checks that
//       the listing is exactly the one these make (read whole, and in 4 KiB reads); times
//       one read of the whole listing and one listing in 4 KiB reads; then for SECONDS
//       times each write of a writer (an ADD_TABLE of a table loaded, which only looks it
//       up, then a SET_MAPS of RANGES ranges for the first child, in turn), first alone,
//       then while a reader lists the file in 4 KiB reads over and over (each listing
//       compared with the one expected, which these writes do not change). Prints whole_read_us, chunked_read_us, listings (read during
//       the writes, all whole), and for each kind of write, alone and with the reader:
//       {noop,setmaps}_{alone,reading}_{max,median}_us and _count.
//   oversize WRITERS LEN
//       WRITERS threads each write an ADD_TABLE of LEN bytes at once (rows that fill it,
//       a key each; the buffer is not touched past its first page), each through its own
//       open file, while a thread samples /proc/meminfo every millisecond. Prints
//       errnos=E1,E2,... (0 for success), max_us (the slowest write), avail_drop_kb
//       (MemAvailable before the writes less its lowest during them) and vmalloc_rise_kb
//       (VmallocUsed's highest during them less before: what the module copies writes
//       into).
//   staging WRITERS LEN
//       one write of an ADD_TABLE of LEN bytes of valid rows whose buffer's pages past the
//       first are missing (userfaultfd): the module copies it in and waits there; then
//       WRITERS - 1 other writes of the same bytes, then the pages are given and the first
//       write completes (each write through its own open file). Prints first=ERRNO,
//       others=E1,E2,..., others_max_us, avail_drop_kb (MemAvailable before the first
//       write less while it waits), vmalloc_rise_kb (the same of VmallocUsed, up),
//       after=ERRNO (the same write once more, after the first is done) and
//       after_other=ERRNO (the same with another key).
//   cred
//       as root: opens unwind and watch-pids; a DROP_TABLE of a table not loaded gets
//       ENOENT; then (in a child) drops to uid 65534 and writes through the same open
//       files; then (in another) opens unwind with CAP_SYS_ADMIN out of its effective set
//       and writes with it back. Prints root=ERRNO, setuid_unwind=ERRNO,
//       setuid_watch=ERRNO, opened_without_cap=ERRNO, reopened=ERRNO (0 for success).
//   writev
//       an ADD_TABLE given to writev(2) in two buffers (split after 24 bytes), in one
//       buffer, and two whole commands (DROP_TABLE and ADD_TABLE) in two buffers. Prints
//       split=ERRNO split_loaded=0|1 one=ERRNO one_loaded=0|1 two=RESULT (bytes written,
//       or -ERRNO) two_dropped=0|1 two_loaded=0|1.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define UNWIND "/proc/memmon/unwind"
#define WATCH "/proc/memmon/watch-pids"
#define HEADER_BYTES 16
#define KEY_BYTES 16
#define ADD_TABLE_FIXED (HEADER_BYTES + KEY_BYTES + 8)
#define SET_MAPS_FIXED (HEADER_BYTES + 8)
#define ROW_BYTES 8
#define RANGE_BYTES 40
#define PAGE 4096

static void die(const char *what)
{
	fprintf(stderr, "unwind-bounds: %s: %s\n", what, strerror(errno));
	exit(2);
}

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v, p[1] = v >> 8;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = v >> (8 * i);
}

static void header(uint8_t *p, uint16_t command, uint32_t len)
{
	memcpy(p, "MMUW", 4);
	put16(p + 4, 1);
	put16(p + 6, command);
	put32(p + 8, len);
	put32(p + 12, 0);
}

// Key number n of a family: keys sort by n.
static void key_of(uint8_t *key, char family, uint32_t n)
{
	memset(key, 0, KEY_BYTES);
	memcpy(key, "unwbound", 8);
	key[11] = family;
	key[12] = n >> 24, key[13] = n >> 16, key[14] = n >> 8, key[15] = n;
}

static void key_hex(const uint8_t *key, char *out)
{
	for (int i = 0; i < KEY_BYTES; i++)
		sprintf(out + 2 * i, "%02x", key[i]);
}

// Row i of a table of `rows` rows: CFA = the stack pointer + 8 every 16 bytes, the last one
// the end.
static void row_at(uint8_t *p, size_t i, size_t rows)
{
	put32(p, 0x1000 + 16 * i);
	put16(p + 4, i + 1 == rows ? 0 : 8);
	p[6] = i + 1 == rows ? 3 : 0;
	p[7] = 0;
}

// The architecture of the tables (docs/unwind.md): the one this program is built for, whose
// module takes them (its rows, CFA = the stack pointer + 8, mean the same on both).
#ifdef __aarch64__
#define TABLE_ARCH 1
#else
#define TABLE_ARCH 0
#endif

// The header, key and counts of an ADD_TABLE of `rows` rows.
static void add_table_prefix(uint8_t *p, const uint8_t *key, size_t rows)
{
	header(p, 1, ADD_TABLE_FIXED + rows * ROW_BYTES);
	memcpy(p + HEADER_BYTES, key, KEY_BYTES);
	put32(p + HEADER_BYTES + KEY_BYTES, rows);
	put32(p + HEADER_BYTES + KEY_BYTES + 4, TABLE_ARCH);
}

// A whole ADD_TABLE of `rows` rows (malloc'ed); its size in *len.
static uint8_t *add_table(const uint8_t *key, size_t rows, size_t *len)
{
	uint8_t *p;

	*len = ADD_TABLE_FIXED + rows * ROW_BYTES;
	p = malloc(*len);
	if (!p)
		die("malloc");
	add_table_prefix(p, key, rows);
	for (size_t i = 0; i < rows; i++)
		row_at(p + ADD_TABLE_FIXED + i * ROW_BYTES, i, rows);
	return p;
}

static void drop_table(uint8_t *p, const uint8_t *key)
{
	header(p, 3, HEADER_BYTES + KEY_BYTES);
	memcpy(p + HEADER_BYTES, key, KEY_BYTES);
}

// 0, or the errno of one write of `len` bytes.
static int write_errno(int fd, const void *buf, size_t len)
{
	ssize_t n = write(fd, buf, len);

	if (n < 0)
		return errno;
	if ((size_t)n != len) {
		fprintf(stderr, "unwind-bounds: a short write: %zd of %zu\n", n, len);
		exit(1);
	}
	return 0;
}

// A field of /proc/meminfo, in KiB.
static long meminfo_kb(const char *field)
{
	char line[256], name[64];
	long kb = -1, value;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		die("/proc/meminfo");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63[^:]: %ld kB", name, &value) == 2 && !strcmp(name, field)) {
			kb = value;
			break;
		}
	fclose(f);
	return kb;
}

static long mem_available_kb(void)
{
	return meminfo_kb("MemAvailable");
}

// The whole unwind file, read `chunk` bytes at a time from a new open file (malloc'ed,
// NUL-terminated); its length in *len.
static char *read_listing(size_t chunk, size_t *len)
{
	size_t cap = 1 << 20, got = 0;
	char *text = malloc(cap + 1);
	int fd = open(UNWIND, O_RDONLY);
	ssize_t n;

	if (fd < 0 || !text)
		die(UNWIND);
	for (;;) {
		if (got + chunk > cap) {
			cap *= 2;
			text = realloc(text, cap + 1);
			if (!text)
				die("realloc");
		}
		n = read(fd, text + got, chunk);
		if (n < 0)
			die("read " UNWIND);
		if (n == 0)
			break;
		got += n;
	}
	close(fd);
	text[got] = 0;
	*len = got;
	return text;
}

// --- listing -----------------------------------------------------------------------------

static int tables, processes, ranges_per_process;
static pid_t *children;
static volatile int reading, stop;
static long listings, bad_listings;
// The listing the set-up makes: the writes timed change nothing it shows.
static const char *want;

// Range i of a process: its table.
static uint32_t range_table(int i)
{
	return (i / 2) % tables;
}

// A SET_MAPS of pid with ranges_per_process ranges, the ranges at `base`.
static uint8_t *set_maps(pid_t pid, uint64_t base, size_t *len)
{
	uint8_t *p;

	*len = SET_MAPS_FIXED + (size_t)ranges_per_process * RANGE_BYTES;
	p = malloc(*len);
	if (!p)
		die("malloc");
	header(p, 2, *len);
	put32(p + HEADER_BYTES, pid);
	put32(p + HEADER_BYTES + 4, ranges_per_process);
	for (int i = 0; i < ranges_per_process; i++) {
		uint8_t *r = p + SET_MAPS_FIXED + (size_t)i * RANGE_BYTES;

		put64(r, base + (uint64_t)i * 0x1000);
		put64(r + 8, base + (uint64_t)i * 0x1000 + 0x1000);
		put64(r + 16, base);
		key_of(r + 24, 'L', range_table(i));
	}
	return p;
}

static int cmp_pid(const void *a, const void *b)
{
	return *(const pid_t *)a - *(const pid_t *)b;
}

// The listing the set-up makes, with the module's bound `max`.
static char *expected_listing(long max)
{
	size_t cap = (size_t)tables * 128 + (size_t)processes * 64 + 128, at = 0;
	char *text = malloc(cap), hex[2 * KEY_BYTES + 1];
	long *uses = calloc(tables, sizeof(long));
	long runs = 0, total;
	uint8_t key[KEY_BYTES];

	if (!text || !uses)
		die("malloc");
	for (int i = 0; i < ranges_per_process; i++) {
		uses[range_table(i)] += processes;
		runs += i == 0 || range_table(i) != range_table(i - 1);
	}
	// 3 rows: 64 + 3 x 8 + an index of 3 entries x 4 (pcs 0x1000 to 0x1020, 16-byte
	// buckets); a process: 64 + 32 per range.
	for (int t = 0; t < tables; t++) {
		key_of(key, 'L', t);
		key_hex(key, hex);
		at += sprintf(text + at, "table %s rows=3 bytes=100 ranges=%ld\n", hex, uses[t]);
	}
	for (int c = 0; c < processes; c++)
		at += sprintf(text + at, "process %d ranges=%d tables=%ld\n", children[c],
			      ranges_per_process, runs);
	total = 100L * tables + (64L + 32L * ranges_per_process) * processes;
	sprintf(text + at, "total bytes=%ld max=%ld\n", total, max);
	free(uses);
	return text;
}

static void *reader(void *arg)
{
	(void)arg;
	while (!stop) {
		size_t len;
		char *text = read_listing(4096, &len);

		if (reading) {
			listings++;
			if (strcmp(text, want)) {
				if (!bad_listings)
					fprintf(stderr, "unwind-bounds: a listing read during the writes:\n%s", text);
				bad_listings++;
			}
		}
		free(text);
	}
	return NULL;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

// Times the writer's writes for `seconds`: an ADD_TABLE of a loaded table and a SET_MAPS in
// turn; prints their figures under `name`.
static void time_writes(int fd, const char *name, int seconds, const uint8_t *noop,
			size_t noop_len, uint8_t *const maps[2], size_t maps_len)
{
	size_t cap = 1 << 16, n[2] = { 0, 0 };
	long long *lat[2] = { malloc(cap * sizeof(long long)), malloc(cap * sizeof(long long)) };
	long long end = now_us() + seconds * 1000000LL;
	int turn = 0;

	if (!lat[0] || !lat[1])
		die("malloc");
	while (now_us() < end && n[1] < cap) {
		long long start = now_us();
		int kind = turn % 2, e;

		e = kind == 0 ? write_errno(fd, noop, noop_len) :
				write_errno(fd, maps[(turn / 2) % 2], maps_len);
		if (e) {
			errno = e;
			die(kind == 0 ? "the ADD_TABLE of a loaded table" : "the SET_MAPS");
		}
		lat[kind][n[kind]++] = now_us() - start;
		turn++;
		// A writer that writes now and then, as memmon's does.
		usleep(2000);
	}
	for (int kind = 0; kind < 2; kind++) {
		const char *what = kind == 0 ? "noop" : "setmaps";

		qsort(lat[kind], n[kind], sizeof(long long), cmp_ll);
		printf("%s_%s_count=%zu\n", what, name, n[kind]);
		printf("%s_%s_median_us=%lld\n", what, name, n[kind] ? lat[kind][n[kind] / 2] : -1);
		printf("%s_%s_max_us=%lld\n", what, name, n[kind] ? lat[kind][n[kind] - 1] : -1);
		free(lat[kind]);
	}
}

static int listing(int argc, char **argv)
{
	int fd, watch, seconds;
	uint8_t key[KEY_BYTES], *noop, *maps[2];
	size_t len, noop_len, maps_len;
	char watch_line[4096], *got;
	long long start;
	long max = -1;
	pthread_t thread;
	int at = 0, status = 0;

	if (argc != 6)
		return fprintf(stderr, "usage: unwind-bounds listing TABLES PROCESSES RANGES SECONDS\n"), 2;
	tables = atoi(argv[2]), processes = atoi(argv[3]);
	ranges_per_process = atoi(argv[4]), seconds = atoi(argv[5]);
	if (tables < 1 || processes < 1 || processes > 64 || ranges_per_process < 1)
		return fprintf(stderr, "unwind-bounds: bad counts\n"), 2;
	children = calloc(processes, sizeof(pid_t));
	for (int c = 0; c < processes; c++) {
		children[c] = fork();
		if (children[c] == 0) {
			pause();
			_exit(0);
		}
		if (children[c] < 0)
			die("fork");
	}
	qsort(children, processes, sizeof(pid_t), cmp_pid);
	for (int c = 0; c < processes; c++)
		at += snprintf(watch_line + at, sizeof(watch_line) - at, "%d ", children[c]);
	watch = open(WATCH, O_WRONLY);
	if (watch < 0 || write(watch, watch_line, at) != at)
		die("watching the children");
	fd = open(UNWIND, O_WRONLY);
	if (fd < 0)
		die(UNWIND);
	for (int t = 0; t < tables; t++) {
		uint8_t *table;

		key_of(key, 'L', t);
		table = add_table(key, 3, &len);
		if ((errno = write_errno(fd, table, len)))
			die("ADD_TABLE");
		free(table);
	}
	for (int c = 0; c < processes; c++) {
		uint8_t *maps = set_maps(children[c], 0x10000000, &len);

		if ((errno = write_errno(fd, maps, len)))
			die("SET_MAPS");
		free(maps);
	}
	// The bound, from the listing's last line.
	got = read_listing(1 << 20, &len);
	if (strstr(got, "total bytes="))
		sscanf(strstr(got, "total bytes="), "total bytes=%*d max=%ld", &max);
	want = expected_listing(max);
	if (strcmp(got, want)) {
		fprintf(stderr, "unwind-bounds: the listing read whole is not the one expected:\n"
				"got %zu bytes:\n%.2000s\nwant %zu bytes:\n%.2000s\n",
			len, got, strlen(want), want);
		status = 1;
	}
	free(got);
	printf("listing_bytes=%zu\n", strlen(want));

	start = now_us();
	got = read_listing(1 << 20, &len);
	printf("whole_read_us=%lld\n", now_us() - start);
	free(got);
	start = now_us();
	got = read_listing(4096, &len);
	printf("chunked_read_us=%lld\n", now_us() - start);
	if (strcmp(got, want)) {
		fprintf(stderr, "unwind-bounds: the listing read in 4 KiB reads differs from the one expected\n");
		status = 1;
	}
	free(got);

	key_of(key, 'L', 0);
	noop = add_table(key, 3, &noop_len);
	maps[0] = set_maps(children[0], 0x10000000, &maps_len);
	maps[1] = set_maps(children[0], 0x20000000, &maps_len);
	time_writes(fd, "alone", seconds, noop, noop_len, maps, maps_len);
	if (pthread_create(&thread, NULL, reader, NULL))
		die("pthread_create");
	reading = 1;
	time_writes(fd, "reading", seconds, noop, noop_len, maps, maps_len);
	reading = 0;
	stop = 1;
	pthread_join(thread, NULL);
	printf("listings=%ld\nbad_listings=%ld\n", listings, bad_listings);
	if (bad_listings)
		status = 1;
	for (int c = 0; c < processes; c++)
		kill(children[c], SIGKILL);
	while (wait(NULL) > 0)
		;
	return status;
}

// --- oversize and staging ------------------------------------------------------------------

// A write of its own open file: writes through one open file wait for each other (the
// file position's lock of a file shared by threads).
struct writer {
	int fd;
	const uint8_t *buf;
	size_t len;
	int err;
	long long us;
};

static void *write_once(void *arg)
{
	struct writer *w = arg;
	long long start = now_us();

	w->err = write_errno(w->fd, w->buf, w->len);
	w->us = now_us() - start;
	return NULL;
}

static volatile long lowest_avail, highest_vmalloc;
static volatile int sampling;

static void *sample_memory(void *arg)
{
	(void)arg;
	while (sampling) {
		long avail = mem_available_kb(), vmalloc = meminfo_kb("VmallocUsed");

		if (avail < lowest_avail)
			lowest_avail = avail;
		if (vmalloc > highest_vmalloc)
			highest_vmalloc = vmalloc;
		usleep(1000);
	}
	return NULL;
}

// A buffer of `len` bytes (rounded up to pages) whose first page holds an ADD_TABLE's
// prefix for a table filling `len` and key `key`; the other pages are not touched.
static uint8_t *untouched_table(size_t len, const uint8_t *key, size_t *mapped)
{
	uint8_t *p;

	*mapped = (len + PAGE - 1) / PAGE * PAGE;
	p = mmap(NULL, *mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	add_table_prefix(p, key, (len - ADD_TABLE_FIXED) / ROW_BYTES);
	return p;
}

static int open_unwind(void)
{
	int fd = open(UNWIND, O_WRONLY);

	if (fd < 0)
		die(UNWIND);
	return fd;
}

static int oversize(int argc, char **argv)
{
	int writers;
	size_t len, mapped;
	struct writer *w;
	pthread_t *threads, sampler;
	long before, vmalloc_before;
	long long max = 0;

	if (argc != 4)
		return fprintf(stderr, "usage: unwind-bounds oversize WRITERS LEN\n"), 2;
	writers = atoi(argv[2]);
	len = strtoul(argv[3], NULL, 0);
	if (writers < 1 || len < ADD_TABLE_FIXED + ROW_BYTES || (len - ADD_TABLE_FIXED) % ROW_BYTES)
		return fprintf(stderr, "unwind-bounds: bad WRITERS or LEN\n"), 2;
	w = calloc(writers, sizeof(*w));
	threads = calloc(writers, sizeof(*threads));
	for (int i = 0; i < writers; i++) {
		uint8_t key[KEY_BYTES];

		key_of(key, 'O', i);
		w[i].fd = open_unwind();
		w[i].buf = untouched_table(len, key, &mapped);
		w[i].len = len;
	}
	before = lowest_avail = mem_available_kb();
	vmalloc_before = highest_vmalloc = meminfo_kb("VmallocUsed");
	sampling = 1;
	if (pthread_create(&sampler, NULL, sample_memory, NULL))
		die("pthread_create");
	for (int i = 0; i < writers; i++)
		if (pthread_create(&threads[i], NULL, write_once, &w[i]))
			die("pthread_create");
	printf("errnos=");
	for (int i = 0; i < writers; i++) {
		pthread_join(threads[i], NULL);
		printf("%s%d", i ? "," : "", w[i].err);
		if (w[i].us > max)
			max = w[i].us;
	}
	printf("\n");
	sampling = 0;
	pthread_join(sampler, NULL);
	printf("max_us=%lld\n", max);
	printf("avail_drop_kb=%ld\n", before - lowest_avail);
	printf("vmalloc_rise_kb=%ld\n", highest_vmalloc - vmalloc_before);
	return 0;
}

static int staging(int argc, char **argv)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	struct uffdio_copy copy;
	struct uffd_msg msg;
	struct pollfd pfd;
	struct writer first, *others;
	pthread_t thread;
	uint8_t key[KEY_BYTES], *source, *buf;
	size_t len, mapped, rows;
	int writers, uffd;
	long before, waiting, vmalloc_before, vmalloc_waiting;
	long long max = 0;

	if (argc != 4)
		return fprintf(stderr, "usage: unwind-bounds staging WRITERS LEN\n"), 2;
	writers = atoi(argv[2]);
	len = strtoul(argv[3], NULL, 0);
	if (writers < 2 || len < PAGE + ADD_TABLE_FIXED || (len - ADD_TABLE_FIXED) % ROW_BYTES)
		return fprintf(stderr, "unwind-bounds: bad WRITERS or LEN\n"), 2;
	rows = (len - ADD_TABLE_FIXED) / ROW_BYTES;
	key_of(key, 'S', 0);
	source = add_table(key, rows, &len);
	buf = untouched_table(len, key, &mapped);
	memcpy(buf, source, PAGE);
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api))
		die("userfaultfd");
	reg.range.start = (unsigned long)buf;
	reg.range.len = mapped;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
	before = mem_available_kb();
	vmalloc_before = meminfo_kb("VmallocUsed");
	first = (struct writer){ .fd = open_unwind(), .buf = buf, .len = len };
	if (pthread_create(&thread, NULL, write_once, &first))
		die("pthread_create");
	// The first write is copying in once it faults on the second page.
	pfd = (struct pollfd){ .fd = uffd, .events = POLLIN };
	if (poll(&pfd, 1, 10000) != 1 || read(uffd, &msg, sizeof(msg)) != sizeof(msg))
		die("waiting for the first write to fault");
	waiting = mem_available_kb();
	vmalloc_waiting = meminfo_kb("VmallocUsed");
	others = calloc(writers - 1, sizeof(*others));
	printf("others=");
	for (int i = 0; i < writers - 1; i++) {
		others[i] = (struct writer){ .fd = open_unwind(), .buf = buf, .len = len };
		write_once(&others[i]);
		printf("%s%d", i ? "," : "", others[i].err);
		if (others[i].us > max)
			max = others[i].us;
	}
	printf("\nothers_max_us=%lld\n", max);
	printf("avail_drop_kb=%ld\n", before - waiting);
	printf("vmalloc_rise_kb=%ld\n", vmalloc_waiting - vmalloc_before);
	copy = (struct uffdio_copy){
		.dst = (unsigned long)buf + PAGE,
		.src = (unsigned long)source + PAGE,
		.len = mapped - PAGE,
	};
	// The last page of the source may be short of a whole one: copy from a page-sized
	// staging buffer instead where needed.
	if (len < mapped) {
		uint8_t *padded = malloc(mapped);

		if (!padded)
			die("malloc");
		memset(padded, 0, mapped);
		memcpy(padded, source, len);
		copy.src = (unsigned long)padded + PAGE;
	}
	if (ioctl(uffd, UFFDIO_COPY, &copy))
		die("UFFDIO_COPY");
	pthread_join(thread, NULL);
	printf("first=%d\n", first.err);
	// Nothing is held for it any more: the same write again (of a table now loaded,
	// which changes nothing) is taken, and one of another table of its size cannot fit.
	printf("after=%d\n", write_errno(first.fd, buf, len));
	key_of(buf + HEADER_BYTES, 'S', 1);
	printf("after_other=%d\n", write_errno(first.fd, buf, len));
	return 0;
}

// --- cred and writev -----------------------------------------------------------------------

static int cap_sys_admin(int on)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		die("capget");
	if (on)
		d[CAP_SYS_ADMIN / 32].effective |= 1u << (CAP_SYS_ADMIN % 32);
	else
		d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
	return syscall(SYS_capset, &h, d);
}

// The exit status of a child that runs f.
static int in_child(int (*f)(int, int), int unwind, int watch)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(f(unwind, watch));
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		die("child");
	return WEXITSTATUS(status);
}

static int drop_missing(int fd)
{
	uint8_t cmd[HEADER_BYTES + KEY_BYTES], key[KEY_BYTES];

	key_of(key, 'C', 0);
	drop_table(cmd, key);
	return write_errno(fd, cmd, sizeof(cmd));
}

static int setuid_unwind(int unwind, int watch)
{
	(void)watch;
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		die("setresuid");
	return drop_missing(unwind);
}

static int setuid_watch(int unwind, int watch)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "%d", getpid());

	(void)unwind;
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		die("setresuid");
	return write_errno(watch, line, n);
}

static int opened_without_cap(int unwind, int watch)
{
	int fd, e;

	(void)unwind, (void)watch;
	if (cap_sys_admin(0))
		die("capset (off)");
	fd = open(UNWIND, O_WRONLY);
	if (fd < 0)
		die("opening " UNWIND " without CAP_SYS_ADMIN");
	if (cap_sys_admin(1))
		die("capset (on)");
	e = drop_missing(fd);
	close(fd);
	return e;
}

static int cred(void)
{
	int unwind = open(UNWIND, O_WRONLY), watch = open(WATCH, O_WRONLY), fd;

	if (unwind < 0 || watch < 0)
		die("opening the files");
	printf("root=%d\n", drop_missing(unwind));
	printf("setuid_unwind=%d\n", in_child(setuid_unwind, unwind, watch));
	printf("setuid_watch=%d\n", in_child(setuid_watch, unwind, watch));
	printf("opened_without_cap=%d\n", in_child(opened_without_cap, unwind, watch));
	fd = open(UNWIND, O_WRONLY);
	if (fd < 0)
		die(UNWIND);
	printf("reopened=%d\n", drop_missing(fd));
	return 0;
}

// Whether the table of `key` is in the listing.
static int loaded(const uint8_t *key)
{
	char hex[2 * KEY_BYTES + 1], want[2 * KEY_BYTES + 16];
	size_t len;
	char *text = read_listing(65536, &len);
	int found;

	key_hex(key, hex);
	snprintf(want, sizeof(want), "table %s ", hex);
	found = strstr(text, want) != NULL;
	free(text);
	return found;
}

static int writev_result(int fd, struct iovec *iov, int n)
{
	ssize_t r = writev(fd, iov, n);

	return r < 0 ? -errno : (int)r;
}

static int writev_mode(void)
{
	uint8_t key[KEY_BYTES], other[KEY_BYTES], drop[HEADER_BYTES + KEY_BYTES], *table, *second;
	size_t len, second_len;
	struct iovec iov[2];
	int fd = open(UNWIND, O_WRONLY), r;

	if (fd < 0)
		die(UNWIND);
	key_of(key, 'W', 0);
	table = add_table(key, 17, &len);
	iov[0] = (struct iovec){ table, 24 };
	iov[1] = (struct iovec){ table + 24, len - 24 };
	r = writev_result(fd, iov, 2);
	printf("split=%d\n", r < 0 ? -r : 0);
	printf("split_loaded=%d\n", loaded(key));
	iov[0] = (struct iovec){ table, len };
	r = writev_result(fd, iov, 1);
	printf("one=%d\n", r < 0 ? -r : 0);
	printf("one_loaded=%d\n", loaded(key));
	key_of(other, 'W', 1);
	second = add_table(other, 5, &second_len);
	drop_table(drop, key);
	iov[0] = (struct iovec){ drop, sizeof(drop) };
	iov[1] = (struct iovec){ second, second_len };
	printf("two=%d\n", writev_result(fd, iov, 2));
	printf("two_total=%zu\n", sizeof(drop) + second_len);
	printf("two_dropped=%d\n", !loaded(key));
	printf("two_loaded=%d\n", loaded(other));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "listing"))
		return listing(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "oversize"))
		return oversize(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "staging"))
		return staging(argc, argv);
	if (argc == 2 && !strcmp(argv[1], "cred"))
		return cred();
	if (argc == 2 && !strcmp(argv[1], "writev"))
		return writev_mode();
	fprintf(stderr, "usage: unwind-bounds listing|oversize|staging|cred|writev ...\n");
	return 2;
}
