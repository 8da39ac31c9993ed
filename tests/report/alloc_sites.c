/*
 * Fixture program for `memmon report` (userspace/memmon/tests/report.rs).
 *
 * Allocates known amounts in named functions, touching every page with its own loops
 * (not memset), so that the faulting instruction alone already names the function:
 *   keep_cache()  KEEP_MIB MiB (default 3) of malloc'd memory, kept until exit
 *   scratch()     8 MiB malloc'd, touched and freed (temporary)
 *   load_table()  a 1 MiB file mapped and read, kept mapped
 *   reheat()      1 MiB anonymous, written, paged out (MADV_PAGEOUT) and read back
 * After each phase it writes a marker line to /proc/memmon/marker (when that exists) and
 * before exiting one called "end", so the capture has the final picture; it then waits
 * 0.3 s so that `memmon record` snapshots /proc/PID/status while that state lasts.
 *
 *   alloc_sites [--wait FILE]   with --wait: after the allocations, print "ready" and
 *                               wait until FILE exists before the "end" marker
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef KEEP_MIB
#define KEEP_MIB 3
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

#define MIB (1024L * 1024L)
#define PAGE 4096L

static volatile unsigned long sink;
static volatile char *kept;

static void say(const char *text)
{
    if (write(2, text, strlen(text)) < 0)
        _exit(3);
}

static void mark(const char *text)
{
    int fd = open("/proc/memmon/marker", O_WRONLY);
    if (fd < 0)
        return;
    if (write(fd, text, strlen(text)) < 0)
        say("alloc_sites: cannot write the marker\n");
    close(fd);
    /* Give the recorder time to snapshot maps and status while this state lasts. */
    usleep(300000);
}

__attribute__((noinline)) void keep_cache(void)
{
    long size = KEEP_MIB * MIB;
    volatile char *p = malloc(size);
    if (!p)
        exit(2);
    for (long i = 0; i < size; i += PAGE)
        p[i] = (char)i | 1;
    kept = p;
}

__attribute__((noinline)) void scratch(void)
{
    long size = 8 * MIB;
    volatile char *p = malloc(size);
    if (!p)
        exit(2);
    for (long i = 0; i < size; i += PAGE)
        p[i] = (char)i | 2;
    free((void *)p);
}

__attribute__((noinline)) static void make_table_file(const char *path)
{
    static char block[64 * 1024];
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) {
        say("alloc_sites: cannot create the table file\n");
        exit(2);
    }
    for (long i = 0; i < (long)sizeof block; i++)
        block[i] = (char)(i * 7);
    for (int n = 0; n < 16; n++)
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block) {
            say("alloc_sites: cannot write the table file\n");
            exit(2);
        }
    close(fd);
}

__attribute__((noinline)) void load_table(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        say("alloc_sites: cannot open the table file\n");
        exit(2);
    }
    const volatile char *t = mmap(NULL, MIB, PROT_READ, MAP_PRIVATE, fd, 0);
    if (t == MAP_FAILED) {
        say("alloc_sites: mmap failed\n");
        exit(2);
    }
    close(fd);
    unsigned long sum = 0;
    for (long i = 0; i < MIB; i += PAGE)
        sum += t[i];
    sink += sum;
}

__attribute__((noinline)) void reheat(void)
{
    long size = MIB;
    volatile char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        say("alloc_sites: mmap failed\n");
        exit(2);
    }
    for (long i = 0; i < size; i += PAGE)
        p[i] = (char)i | 4;
    if (madvise((void *)p, size, MADV_PAGEOUT) != 0)
        say("alloc_sites: madvise(MADV_PAGEOUT) failed\n");
    unsigned long sum = 0;
    for (long i = 0; i < size; i += PAGE)
        sum += p[i];
    sink += sum;
}

int main(int argc, char **argv)
{
    const char *wait_file = NULL;
    if (argc == 3 && strcmp(argv[1], "--wait") == 0)
        wait_file = argv[2];
    make_table_file("/tmp/alloc_sites.table");
    mark("start");
    keep_cache();
    mark("after-keep");
    scratch();
    mark("after-scratch");
    load_table("/tmp/alloc_sites.table");
    mark("after-table");
    reheat();
    mark("after-reheat");
    if (wait_file) {
        say("ready\n");
        struct stat st;
        while (stat(wait_file, &st) != 0)
            usleep(10000);
    }
    mark("end");
    return kept[0] == 1 ? 0 : 0;
}
