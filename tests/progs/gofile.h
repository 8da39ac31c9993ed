/* wait_for_go(GO): creates GO.ready, then waits until GO exists (at most 600 s), so that a
 * test can act on the process at a known point (load its unwind tables, say) and let it go
 * on by creating GO. Returns 0, or 1 after printing why it could not wait. */
#ifndef MEMMON_TESTS_GOFILE_H
#define MEMMON_TESTS_GOFILE_H

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static inline int wait_for_go(const char *go)
{
	char ready[4096];
	int fd, tries = 0;

	snprintf(ready, sizeof(ready), "%s.ready", go);
	fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return perror(ready), 1;
	close(fd);
	while (access(go, F_OK) != 0) {
		if (++tries > 60000)
			return fprintf(stderr, "no %s after 600 s\n", go), 1;
		usleep(10000);
	}
	return 0;
}

#endif
