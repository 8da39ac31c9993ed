// drain [-b SIZE] [FILE | -F FD]: print every event the ring still holds, without blocking:
// opens /proc/memmon/events (or FILE) with O_NONBLOCK, or reads the open file FD (made
// non-blocking: a reader opened before, whose position it keeps), and reads SIZE bytes at a
// time (default 65536) until EAGAIN.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[65536];
	size_t size = sizeof(buf);
	const char *path;
	ssize_t n;
	int fd;

	if (argc > 2 && !strcmp(argv[1], "-b")) {
		size = strtoul(argv[2], NULL, 10);
		if (size == 0 || size > sizeof(buf))
			return fprintf(stderr, "drain: bad size\n"), 2;
		argv += 2;
		argc -= 2;
	}
	path = argc > 1 ? argv[1] : "/proc/memmon/events";
	if (argc > 2 && !strcmp(argv[1], "-F")) {
		fd = atoi(argv[2]);
		if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
			return perror("drain: fcntl"), 1;
	} else {
		fd = open(path, O_RDONLY | O_NONBLOCK);
	}
	if (fd < 0)
		return perror(path), 1;
	while ((n = read(fd, buf, size)) > 0)
		if (write(1, buf, n) != n)
			return perror("write"), 1;
	if (n < 0 && errno != EAGAIN)
		return perror("read"), 1;
	return 0;
}
