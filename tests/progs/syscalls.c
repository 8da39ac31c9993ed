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
//   newcalls msync, pkey_mprotect, mseal, process_madvise, shmat and shmdt, each a success
//            and a failure, and an mmap of a file whose path is longer than 112 bytes
//   lastthread  the main thread exits first (pthread_exit); the other thread ends the
//            process with exit(7) of its own thread only
//   rss      maps, touches and exits; prints its /proc/self/status counters in bytes
//            just before (anon= file= shmem= swap= peak=)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 4096UL

// x86_64 numbers, for libc headers older than the calls.
#define NR_pidfd_open 434
#define NR_process_madvise 440
#define NR_mseal 462

// The kB value of a /proc/self/status line, in bytes.
static long status_bytes(const char *key)
{
	char line[256];
	long kb = -1;
	size_t n = strlen(key);
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			kb = strtol(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return kb * 1024;
}

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

static void *last_thread(void *arg)
{
	(void)arg;
	usleep(200000);
	syscall(SYS_exit, 7);
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
	} else if (!strcmp(mode, "newcalls")) {
		char path[256] = "/tmp/";
		struct iovec iov;
		long p, r, pidfd, id, fd;

		// A path of 5 + 150 + 5 bytes: its file= keeps the last 112.
		memset(path + 5, 'd', 150);
		memcpy(path + 155, "/tail", 6);
		path[155] = 0;
		if (mkdir(path, 0755) && errno != EEXIST)
			return perror("mkdir"), 1;
		path[155] = '/';
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || ftruncate(fd, PAGE))
			return perror(path), 1;
		pidfd = raw(NR_pidfd_open, getpid(), 0, 0, 0, 0, 0);
		fsync(1001);
		printf("expect fsync fd=1001 ret=-EBADF\n");
		p = raw(SYS_mmap, 0, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		printf("expect mmap addr=0x0 len=4096 prot=rw- flags=SHARED fd=%ld off=0 ret=%s file=...%s\n",
		       fd, ret_hex(p), path + strlen(path) - 112);
		r = raw(SYS_msync, p, PAGE, MS_SYNC, 0, 0, 0);
		printf("expect msync addr=%#lx len=4096 flags=SYNC ret=%s\n", p, ret_dec(r));
		r = raw(SYS_msync, p + 1, PAGE, MS_ASYNC | MS_INVALIDATE, 0, 0, 0);
		printf("expect msync addr=%#lx len=4096 flags=ASYNC|INVALIDATE ret=%s\n", p + 1, ret_dec(r));
		r = raw(SYS_pkey_mprotect, p, PAGE, PROT_READ, -1, 0, 0);
		printf("expect pkey_mprotect addr=%#lx len=4096 prot=r-- pkey=-1 ret=%s\n", p, ret_dec(r));
		r = raw(SYS_pkey_mprotect, p, PAGE, PROT_READ, 5, 0, 0);
		printf("expect pkey_mprotect addr=%#lx len=4096 prot=r-- pkey=5 ret=%s\n", p, ret_dec(r));
		iov.iov_base = (void *)p;
		iov.iov_len = PAGE;
		r = raw(NR_process_madvise, pidfd, (long)&iov, 1, MADV_COLD, 0, 0);
		printf("expect process_madvise pidfd=%ld vec=%#lx vlen=1 advice=COLD flags=0 ret=%s\n",
		       pidfd, (long)&iov, ret_dec(r));
		r = raw(NR_process_madvise, 999, (long)&iov, 1, MADV_COLD, 0, 0);
		printf("expect process_madvise pidfd=999 vec=%#lx vlen=1 advice=COLD flags=0 ret=%s\n",
		       (long)&iov, ret_dec(r));
		r = raw(NR_mseal, p, PAGE, 0, 0, 0, 0);
		printf("expect mseal addr=%#lx len=4096 flags=0 ret=%s\n", p, ret_dec(r));
		r = raw(NR_mseal, p, PAGE, 1, 0, 0, 0);
		printf("expect mseal addr=%#lx len=4096 flags=0x1 ret=%s\n", p, ret_dec(r));
		id = shmget(IPC_PRIVATE, 2 * PAGE, IPC_CREAT | 0600);
		r = raw(SYS_shmat, id, 0, SHM_RDONLY, 0, 0, 0);
		printf("expect shmat shmid=%ld addr=0x0 flags=RDONLY ret=%s\n", id, ret_hex(r));
		printf("expect shmdt addr=%#lx ret=%s\n", r, ret_dec(raw(SYS_shmdt, r, 0, 0, 0, 0, 0)));
		r = raw(SYS_shmat, -1, 0, 0, 0, 0, 0);
		printf("expect shmat shmid=-1 addr=0x0 flags=0 ret=%s\n", ret_hex(r));
		r = raw(SYS_shmdt, 4096, 0, 0, 0, 0, 0);
		printf("expect shmdt addr=0x1000 ret=%s\n", ret_dec(r));
		shmctl(id, IPC_RMID, NULL);
		// For the dur= comparison: a 64 MiB MAP_POPULATE mapping and a 4 KiB one.
		r = raw(SYS_mmap, 0, 64UL << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		printf("big=%#lx\n", r);
		raw(SYS_munmap, r, 64UL << 20, 0, 0, 0, 0);
		r = raw(SYS_mmap, 0, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		printf("small=%#lx\n", r);
		fsync(1002);
		printf("expect fsync fd=1002 ret=-EBADF\n");
	} else if (!strcmp(mode, "lastthread")) {
		pthread_t t;

		if (pthread_create(&t, NULL, last_thread, NULL))
			return perror("pthread_create"), 1;
		pthread_exit(NULL);
	} else if (!strcmp(mode, "rss")) {
		char *anon = mmap(NULL, 100 * PAGE, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		char out[256];
		int len;

		for (int i = 0; i < 100; i++)
			anon[i * PAGE] = 1;
		// Once to touch what reading and printing need, then for real; nothing after it
		// touches new memory (write(2), _exit(2)).
		len = snprintf(out, sizeof(out), "anon=%ld\n", status_bytes("RssAnon"));
		len = snprintf(out, sizeof(out), "anon=%ld\nfile=%ld\nshmem=%ld\nswap=%ld\npeak=%ld\n",
			       status_bytes("RssAnon"), status_bytes("RssFile"), status_bytes("RssShmem"),
			       status_bytes("VmSwap"), status_bytes("VmHWM"));
		if (write(1, out, len) != len)
			return 1;
		_exit(3);
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
