// drain [FILE]: print every event the ring still holds, without blocking: opens
// /proc/memmon/events (or FILE) with O_NONBLOCK and reads until EAGAIN.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/proc/memmon/events";
	static char buf[65536];
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	ssize_t n;

	if (fd < 0)
		return perror(path), 1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write(1, buf, n) != n)
			return perror("write"), 1;
	if (n < 0 && errno != EAGAIN)
		return perror("read"), 1;
	return 0;
}
