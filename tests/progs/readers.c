// readers MODE: exercises /proc/memmon/events as a reader would.
//   eagain        O_NONBLOCK read of an empty ring fails with EAGAIN
//   small         a read into a buffer too small for one line fails with EINVAL
//   nonseek       lseek fails with ESPIPE
//   eintr         a blocked read is interrupted by a signal (handler without SA_RESTART):
//                 EINTR
//   pollwait      poll until readable or hung up; prints the revents (for rmmod tests)
//   selectwait    the same with select; prints select=ok
//   selectex, selectwr, pollpri
//                 wait for what a reader of events never gets: select on exceptfds, on
//                 writefds, poll for POLLPRI|POLLOUT; print MODE=ok when woken (at unload)
//   epollhold SECONDS
//                 register with an epoll instance and sleep without waiting on it
//   epolladd SECONDS
//                 for SECONDS, add the open file to new epoll instances over and over,
//                 keeping the last 128 open (so registrations keep arriving, during an
//                 unload too); prints epolladd=N (the additions)
//   zero          a read of 0 bytes returns 0 at once, even with nothing to read
//   poll-latency  poll on a drained reader while a child writes a marker 200 ms later;
//                 prints latency_us= (marker write to poll return)
//   epoll         the same wake-up through epoll; prints epoll=ok
//   wake-latency HOW
//                 a drained reader sleeps in HOW (read, poll, select or epoll); a marker
//                 is written; prints HOW_us= (marker write to the reader's return with the
//                 line) and HOW_after_stamp_us= (from the event's time stamp)
//   until-end HOW
//                 read until the module goes away, waiting in HOW (read, poll, select or
//                 epoll) whenever there is nothing to read; ends at end of file or EIO (the
//                 file was removed), printing HOW: events=N lost=M end=eof|eio
//   uffd-stuck    one process of an open file is stuck in read() copying out to a
//                 userfaultfd-backed buffer, holding the file's read lock; a second one
//                 blocks in read() behind it and is sent SIGKILL: prints waiter=killed if
//                 it died within 3 s, waiter=stuck otherwise (needs a line to read)
//   slow DELAY_US OUT
//                 read 4 KiB at a time, sleeping DELAY_US after each read, until the
//                 file /tmp/done exists and nothing is left; writes the stream to OUT and
//                 prints events=N lost=M (the sum of lost count=)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/userfaultfd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *events = "/proc/memmon/events";

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static void on_alarm(int sig)
{
	(void)sig;
}

static int open_drained(void)
{
	static char buf[65536];
	int fd = open(events, O_RDONLY | O_NONBLOCK);

	if (fd < 0)
		perror(events), exit(1);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	return fd;
}

// Forks a child that writes a marker after 200 ms; returns the read end of a pipe on which
// it sends the time of the write.
static int marker_later(void)
{
	int p[2];

	if (pipe(p))
		perror("pipe"), exit(1);
	if (fork() == 0) {
		long long t;
		int m;

		usleep(200000);
		m = open("/proc/memmon/marker", O_WRONLY);
		t = now_us();
		if (m < 0 || write(m, "wake", 4) != 4)
			perror("marker"), _exit(1);
		if (write(p[1], &t, sizeof(t)) != sizeof(t))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	return p[0];
}

// One reader of wake-latency: waits for the first event with `how`, reads it, and sends its
// wake-up time (us) on `out`.
static void wait_one(const char *how, int out)
{
	static char buf[65536];
	int fd = open_drained();
	long long woke;

	if (!strcmp(how, "read")) {
		int flags = fcntl(fd, F_GETFL);

		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	} else if (!strcmp(how, "poll")) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (poll(&pfd, 1, 5000) != 1)
			exit(1);
	} else if (!strcmp(how, "select")) {
		fd_set rd;
		struct timeval tv = { .tv_sec = 5 };

		FD_ZERO(&rd);
		FD_SET(fd, &rd);
		if (select(fd + 1, &rd, NULL, NULL, &tv) != 1)
			exit(1);
	} else {
		struct epoll_event ev = { .events = EPOLLIN };
		int ep = epoll_create1(0);

		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) || epoll_wait(ep, &ev, 1, 5000) != 1)
			exit(1);
	}
	if (read(fd, buf, sizeof(buf)) <= 0)
		exit(1);
	woke = now_us();
	if (write(out, &woke, sizeof(woke)) != sizeof(woke))
		exit(1);
	// The event's own time stamp (seconds.nanoseconds), for the stamp-to-wake latency.
	woke -= strtoll(buf, NULL, 10) * 1000000LL + strtoll(strchr(buf, '.') + 1, NULL, 10) / 1000;
	if (write(out, &woke, sizeof(woke)) != sizeof(woke))
		exit(1);
	exit(0);
}

// Counts the events and the lost count= of a chunk of whole lines.
static void count_lines(const char *buf, ssize_t n, long *nevents, long *lost)
{
	for (const char *p = buf; p < buf + n;) {
		const char *end = memchr(p, '\n', buf + n - p);

		if (!end)
			break;
		if (end - p > 16 && memmem(p, end - p, " lost count=", 12))
			*lost += atol((const char *)memmem(p, end - p, "count=", 6) + 6);
		else
			(*nevents)++;
		p = end + 1;
	}
}

static int until_end(const char *how)
{
	static char buf[65536];
	long nevents = 0, lost = 0;
	int fd = open(events, O_RDONLY | O_NONBLOCK), ep = -1;
	const char *end;

	if (fd < 0)
		return perror(events), 1;
	if (!strcmp(how, "read")) {
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	} else if (!strcmp(how, "epoll")) {
		struct epoll_event ev = { .events = EPOLLIN };

		ep = epoll_create1(0);
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
			return perror("epoll"), 1;
	} else if (strcmp(how, "poll") && strcmp(how, "select")) {
		return fprintf(stderr, "readers: until-end read|poll|select|epoll\n"), 2;
	}
	for (;;) {
		ssize_t n;

		if (!strcmp(how, "poll")) {
			struct pollfd pfd = { .fd = fd, .events = POLLIN };

			if (poll(&pfd, 1, -1) < 0)
				return perror("poll"), 1;
		} else if (!strcmp(how, "select")) {
			fd_set rd;

			FD_ZERO(&rd);
			FD_SET(fd, &rd);
			if (select(fd + 1, &rd, NULL, NULL, NULL) < 0)
				return perror("select"), 1;
		} else if (ep >= 0) {
			struct epoll_event ev;

			if (epoll_wait(ep, &ev, 1, -1) < 0)
				return perror("epoll_wait"), 1;
		}
		n = read(fd, buf, sizeof(buf));
		if (n > 0) {
			count_lines(buf, n, &nevents, &lost);
			continue;
		}
		if (n < 0 && errno == EAGAIN)
			continue;
		if (n == 0) {
			end = "eof";
		} else if (errno == EIO) {
			end = "eio";
		} else {
			perror("read");
			return 1;
		}
		break;
	}
	printf("%s: events=%ld lost=%ld end=%s\n", how, nevents, lost, end);
	return 0;
}

static int uffd_stuck(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	size_t len = 65536;
	int fd = open(events, O_RDONLY), uffd, holder, waiter, status;
	char *stuck;
	long long start;

	if (fd < 0)
		return perror(events), 1;
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api))
		return perror("userfaultfd"), 1;
	stuck = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg.range.start = (unsigned long)stuck;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (stuck == MAP_FAILED || ioctl(uffd, UFFDIO_REGISTER, &reg))
		return perror("UFFDIO_REGISTER"), 1;
	holder = fork();
	if (holder == 0) {
		// Faults on the missing page in copy_to_user(), which nobody resolves.
		read(fd, stuck, len);
		_exit(0);
	}
	usleep(500000);
	waiter = fork();
	if (waiter == 0) {
		static char buf[65536];

		read(fd, buf, sizeof(buf));
		_exit(0);
	}
	usleep(500000);
	kill(waiter, SIGKILL);
	start = now_us();
	while (waitpid(waiter, &status, WNOHANG) == 0 && now_us() - start < 3000000)
		usleep(10000);
	printf("waiter=%s\n", now_us() - start < 3000000 ? "killed" : "stuck");
	kill(holder, SIGKILL);
	waitpid(holder, &status, 0);
	waitpid(waiter, &status, 0);
	return 0;
}

static int wake_latency(const char *how)
{
	int pipefd[2];
	long long wrote, woke, after_stamp;
	int marker;

	if (pipe(pipefd))
		return perror("pipe"), 1;
	if (fork() == 0)
		wait_one(how, pipefd[1]);
	// Let the reader open, drain and go to sleep.
	usleep(300000);
	marker = open("/proc/memmon/marker", O_WRONLY);
	if (marker < 0)
		return perror("marker"), 1;
	wrote = now_us();
	if (write(marker, "wake", 4) != 4)
		return perror("marker"), 1;
	if (read(pipefd[0], &woke, sizeof(woke)) != sizeof(woke) ||
	    read(pipefd[0], &after_stamp, sizeof(after_stamp)) != sizeof(after_stamp))
		return printf("%s=FAILED\n", how), 1;
	printf("%s_us=%lld %s_after_stamp_us=%lld\n", how, woke - wrote, how, after_stamp);
	wait(NULL);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	char buf[4096];
	int fd;

	if (!strcmp(mode, "eagain")) {
		fd = open_drained();
		if (read(fd, buf, sizeof(buf)) != -1 || errno != EAGAIN)
			return printf("eagain=FAILED errno=%d\n", errno), 1;
		printf("eagain=ok\n");
	} else if (!strcmp(mode, "small")) {
		fd = open(events, O_RDONLY | O_NONBLOCK);
		if (read(fd, buf, 10) != -1 || errno != EINVAL)
			return printf("small=FAILED errno=%d\n", errno), 1;
		if (read(fd, buf, sizeof(buf)) <= 0)
			return printf("small=FAILED: nothing after\n"), 1;
		printf("small=ok\n");
	} else if (!strcmp(mode, "nonseek")) {
		fd = open(events, O_RDONLY | O_NONBLOCK);
		if (lseek(fd, 0, SEEK_SET) != -1 || errno != ESPIPE)
			return printf("nonseek=FAILED errno=%d\n", errno), 1;
		printf("nonseek=ok\n");
	} else if (!strcmp(mode, "eintr")) {
		struct sigaction sa = { .sa_handler = on_alarm };

		fd = open_drained();
		fcntl(fd, F_SETFL, 0);
		sigaction(SIGALRM, &sa, NULL);
		alarm(1);
		if (read(fd, buf, sizeof(buf)) != -1 || errno != EINTR)
			return printf("eintr=FAILED errno=%d\n", errno), 1;
		printf("eintr=ok\n");
	} else if (!strcmp(mode, "pollwait")) {
		struct pollfd pfd = { .fd = open_drained(), .events = POLLIN };

		if (poll(&pfd, 1, -1) != 1)
			return perror("poll"), 1;
		printf("revents=%#x\n", pfd.revents);
	} else if (!strcmp(mode, "selectwait")) {
		fd_set rd;

		fd = open_drained();
		FD_ZERO(&rd);
		FD_SET(fd, &rd);
		if (select(fd + 1, &rd, NULL, NULL, NULL) != 1 || !FD_ISSET(fd, &rd))
			return perror("select"), 1;
		printf("select=ok\n");
	} else if (!strcmp(mode, "selectex") || !strcmp(mode, "selectwr")) {
		fd_set set;

		fd = open_drained();
		FD_ZERO(&set);
		FD_SET(fd, &set);
		if (!strcmp(mode, "selectex") ? select(fd + 1, NULL, NULL, &set, NULL) != 1
					      : select(fd + 1, NULL, &set, NULL, NULL) != 1)
			return perror("select"), 1;
		printf("%s=ok\n", mode);
	} else if (!strcmp(mode, "pollpri")) {
		struct pollfd pfd = { .events = POLLPRI | POLLOUT };

		pfd.fd = open_drained();
		if (poll(&pfd, 1, -1) != 1)
			return perror("poll"), 1;
		printf("pollpri=ok\n");
	} else if (!strcmp(mode, "epollhold") && argc == 3) {
		struct epoll_event ev = { .events = EPOLLIN };
		int ep = epoll_create1(0);

		fd = open_drained();
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
			return perror("epoll_ctl"), 1;
		sleep(atoi(argv[2]));
		printf("epollhold=ok\n");
	} else if (!strcmp(mode, "epolladd") && argc == 3) {
		struct epoll_event ev = { .events = EPOLLIN };
		long long end = now_us() + atoll(argv[2]) * 1000000LL;
		int held[128], adds = 0;

		fd = open_drained();
		for (int i = 0; i < 128; i++)
			held[i] = -1;
		while (now_us() < end) {
			int slot = adds % 128;

			if (held[slot] >= 0)
				close(held[slot]);
			held[slot] = epoll_create1(0);
			if (held[slot] < 0 || epoll_ctl(held[slot], EPOLL_CTL_ADD, fd, &ev))
				return perror("epolladd"), 1;
			adds++;
		}
		printf("epolladd=%d\n", adds);
	} else if (!strcmp(mode, "zero")) {
		fd = open_drained();
		fcntl(fd, F_SETFL, 0);
		if (read(fd, buf, 0) != 0)
			return printf("zero=FAILED errno=%d\n", errno), 1;
		printf("zero=ok\n");
	} else if (!strcmp(mode, "wake-latency") && argc == 3) {
		return wake_latency(argv[2]);
	} else if (!strcmp(mode, "poll-latency")) {
		struct pollfd pfd = { .fd = open_drained(), .events = POLLIN };
		int from_child = marker_later();
		long long woke, wrote;

		if (poll(&pfd, 1, 5000) != 1)
			return printf("poll-latency=FAILED: no wake-up in 5 s\n"), 1;
		woke = now_us();
		if (read(from_child, &wrote, sizeof(wrote)) != sizeof(wrote))
			return perror("pipe"), 1;
		wait(NULL);
		printf("latency_us=%lld\n", woke - wrote);
	} else if (!strcmp(mode, "epoll")) {
		struct epoll_event ev = { .events = EPOLLIN }, got;
		int ep = epoll_create1(0);

		fd = open_drained();
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
			return perror("epoll_ctl"), 1;
		marker_later();
		if (epoll_wait(ep, &got, 1, 5000) != 1 || !(got.events & EPOLLIN))
			return printf("epoll=FAILED\n"), 1;
		wait(NULL);
		printf("epoll=ok\n");
	} else if (!strcmp(mode, "uffd-stuck")) {
		return uffd_stuck();
	} else if (!strcmp(mode, "until-end") && argc == 3) {
		return until_end(argv[2]);
	} else if (!strcmp(mode, "slow") && argc == 4) {
		long delay = strtol(argv[2], NULL, 10), nevents = 0, lost = 0;
		FILE *out = fopen(argv[3], "w");
		struct pollfd pfd;
		char line[1024];
		size_t have = 0;

		fd = open(events, O_RDONLY | O_NONBLOCK);
		if (fd < 0 || !out)
			return perror("open"), 1;
		pfd.fd = fd;
		pfd.events = POLLIN;
		for (;;) {
			ssize_t n;

			if (poll(&pfd, 1, 300) == 0) {
				if (access("/tmp/done", F_OK) == 0)
					break;
				continue;
			}
			n = read(fd, buf, sizeof(buf));
			if (n < 0 && errno == EAGAIN)
				continue;
			if (n <= 0)
				break;
			fwrite(buf, 1, n, out);
			for (ssize_t i = 0; i < n; i++) {
				line[have++] = buf[i];
				if (buf[i] != '\n')
					continue;
				line[have] = 0;
				have = 0;
				if (strstr(line, " lost count="))
					lost += atol(strstr(line, "count=") + 6);
				else
					nevents++;
			}
			if (delay)
				usleep(delay);
		}
		fclose(out);
		printf("events=%ld lost=%ld\n", nevents, lost);
	} else {
		fprintf(stderr, "usage: readers eagain|small|nonseek|pollwait|poll-latency|epoll|slow DELAY_US OUT\n");
		return 2;
	}
	return 0;
}
