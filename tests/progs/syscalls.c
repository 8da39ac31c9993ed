// syscalls MODE: makes mm system calls with known arguments and prints, for each, the
// line memmon must give for it (without the time and ids) as "expect <kind> <keys...>",
// from the call's own arguments and results.
//   calls    one of each probed call, successes and failures, between markers
//   threads  4 threads, each mmaps and munmaps (4096 * (i + 1)) bytes; prints
//            "expect-tid <tid> <line>"
//   marker FIFO
//            fsync(1001), then waits for a line on FIFO (the test writes a marker
//            meanwhile), then fsync(1002)
//   grow     malloc of 4, 8, ... 256 KiB, freeing those of 128 KiB and more (the original
//            memmon experiment)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 4096UL

static const char *err(long ret)
{
	static __thread char buf[32];

	switch (-ret) {
	case EINVAL: return "-EINVAL";
	case ENOMEM: return "-ENOMEM";
	case EBADF: return "-EBADF";
	case EPERM: return "-EPERM";
	}
	snprintf(buf, sizeof(buf), "-E%ld", -ret);
	return buf;
}

// The result as memmon prints it: errors by name, successes in hex or decimal.
static const char *ret_hex(long ret)
{
	static __thread char buf[32];

	if (ret < 0 && ret > -4096)
		return err(ret);
	snprintf(buf, sizeof(buf), "%#lx", (unsigned long)ret);
	return buf;
}

static const char *ret_dec(long ret)
{
	static __thread char buf[32];

	if (ret < 0 && ret > -4096)
		return err(ret);
	snprintf(buf, sizeof(buf), "%ld", ret);
	return buf;
}

// raw syscalls, so that libc adds nothing and errors come back as -errno
static long raw(long nr, long a, long b, long c, long d, long e, long f)
{
	long r = syscall(nr, a, b, c, d, e, f);

	return r == -1 ? -errno : r;
}

static void *thread_main(void *arg)
{
	long i = (long)arg, len = PAGE * (i + 1);
	long p = raw(SYS_mmap, 0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long r = raw(SYS_munmap, p, len, 0, 0, 0, 0);
	long tid = syscall(SYS_gettid);

	printf("expect-tid %ld mmap addr=0x0 len=%ld prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=%s\n",
	       tid, len, ret_hex(p));
	printf("expect-tid %ld munmap addr=%#lx len=%ld ret=%s\n", tid, p, len, ret_dec(r));
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "calls")) {
		long p, q, r, cur, fd;
		char page[PAGE];

		fd = open("/tmp/syscalls.data", O_RDWR | O_CREAT | O_TRUNC, 0644);
		memset(page, 'y', sizeof(page));
		if (fd < 0 || write(fd, page, PAGE) != (ssize_t)PAGE)
			return perror("data file"), 1;
		fsync(1001);
		printf("expect fsync fd=1001 ret=-EBADF\n");

		p = raw(SYS_mmap, 0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		printf("expect mmap addr=0x0 len=8192 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=%s\n", ret_hex(p));
		r = raw(SYS_mmap, 0, PAGE, PROT_READ, MAP_SHARED, fd, 0);
		printf("expect mmap addr=0x0 len=4096 prot=r-- flags=SHARED fd=%ld off=0 ret=%s file=/tmp/syscalls.data\n",
		       fd, ret_hex(r));
		printf("expect munmap addr=%#lx len=4096 ret=%s\n", r, ret_dec(raw(SYS_munmap, r, PAGE, 0, 0, 0, 0)));
		r = raw(SYS_mmap, 0, PAGE, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_POPULATE, fd, 0);
		printf("expect mmap addr=0x0 len=4096 prot=r-x flags=PRIVATE|POPULATE fd=%ld off=0 ret=%s file=/tmp/syscalls.data\n",
		       fd, ret_hex(r));
		r = raw(SYS_mprotect, p, 2 * PAGE, PROT_READ, 0, 0, 0);
		printf("expect mprotect addr=%#lx len=8192 prot=r-- ret=%s\n", p, ret_dec(r));
		r = raw(SYS_madvise, p, 2 * PAGE, MADV_DONTNEED, 0, 0, 0);
		printf("expect madvise addr=%#lx len=8192 advice=DONTNEED ret=%s\n", p, ret_dec(r));
		r = raw(SYS_madvise, p, 2 * PAGE, 77, 0, 0, 0);
		printf("expect madvise addr=%#lx len=8192 advice=77 ret=%s\n", p, ret_dec(r));
		q = raw(SYS_mremap, p, 2 * PAGE, 4 * PAGE, MREMAP_MAYMOVE, 0, 0);
		printf("expect mremap old=%#lx old_len=8192 new_len=16384 flags=MAYMOVE new=0x0 ret=%s\n", p, ret_hex(q));
		r = raw(SYS_mlock, q, PAGE, 0, 0, 0, 0);
		printf("expect mlock addr=%#lx len=4096 ret=%s\n", q, ret_dec(r));
		r = raw(SYS_mlock2, q + PAGE, PAGE, MLOCK_ONFAULT, 0, 0, 0);
		printf("expect mlock2 addr=%#lx len=4096 flags=ONFAULT ret=%s\n", q + PAGE, ret_dec(r));
		r = raw(SYS_munlock, q, 2 * PAGE, 0, 0, 0, 0);
		printf("expect munlock addr=%#lx len=8192 ret=%s\n", q, ret_dec(r));
		r = raw(SYS_mlockall, MCL_CURRENT | MCL_FUTURE, 0, 0, 0, 0, 0);
		printf("expect mlockall flags=CURRENT|FUTURE ret=%s\n", ret_dec(r));
		r = raw(SYS_munlockall, 0, 0, 0, 0, 0, 0);
		printf("expect munlockall ret=%s\n", ret_dec(r));
		r = raw(SYS_munmap, q + 1, PAGE, 0, 0, 0, 0);
		printf("expect munmap addr=%#lx len=4096 ret=%s\n", q + 1, ret_dec(r));
		r = raw(SYS_munmap, q, 4 * PAGE, 0, 0, 0, 0);
		printf("expect munmap addr=%#lx len=16384 ret=%s\n", q, ret_dec(r));
		r = raw(SYS_mmap, 0, 1UL << 40, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		printf("expect mmap addr=0x0 len=1099511627776 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=%s\n", ret_hex(r));
		cur = raw(SYS_brk, 0, 0, 0, 0, 0, 0);
		printf("expect brk req=0x0 ret=%s\n", ret_hex(cur));
		r = raw(SYS_brk, cur + PAGE, 0, 0, 0, 0, 0);
		printf("expect brk req=%#lx ret=%s\n", cur + PAGE, ret_hex(r));
		r = raw(SYS_brk, cur, 0, 0, 0, 0, 0);
		printf("expect brk req=%#lx ret=%s\n", cur, ret_hex(r));
		r = raw(SYS_fsync, fd, 0, 0, 0, 0, 0);
		printf("expect fsync fd=%ld ret=%s\n", fd, ret_dec(r));
		for (int i = 0; i <= 2; i++)
			printf("expect fsync fd=%d ret=%s\n", i, ret_dec(raw(SYS_fsync, i, 0, 0, 0, 0, 0)));
		fsync(1002);
		printf("expect fsync fd=1002 ret=-EBADF\n");
	} else if (!strcmp(mode, "threads")) {
		pthread_t t[4];

		fsync(1001);
		for (long i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, thread_main, (void *)i);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		fsync(1002);
	} else if (!strcmp(mode, "marker") && argc == 3) {
		char line[16];
		FILE *fifo;

		fsync(1001);
		fifo = fopen(argv[2], "r");
		if (!fifo || !fgets(line, sizeof(line), fifo))
			return perror(argv[2]), 1;
		fsync(1002);
	} else if (!strcmp(mode, "grow")) {
		fsync(1001);
		for (size_t kib = 4; kib <= 256; kib += 4) {
			char *q = malloc(kib * 1024);

			q[0] = 1;
			__asm__ volatile("" : : "r"(q) : "memory");
			// Keep the small ones, so that the heap has to grow.
			if (kib >= 128)
				free(q);
		}
		fsync(1002);
	} else {
		fprintf(stderr, "usage: syscalls calls|threads|grow|marker FIFO\n");
		return 2;
	}
	return 0;
}
