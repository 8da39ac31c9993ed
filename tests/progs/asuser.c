// asuser UID CMD [ARG...]: run CMD with user and group id UID (for permission tests).
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	uid_t uid;

	if (argc < 3) {
		fprintf(stderr, "usage: asuser UID CMD [ARG...]\n");
		return 2;
	}
	uid = strtoul(argv[1], NULL, 10);
	if (setgid(uid) || setuid(uid))
		return perror("setuid"), 2;
	execvp(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
}
