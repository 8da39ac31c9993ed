// stackattack: page faults taken on hostile user stacks, for tests/vm/48-stack-attack.sh.
//
// Between the markers fsync(1001) and fsync(1002), each case writes the first byte of a
// page of its own (page I of the region at base=) with a stack that the user-stack walker
// must not trust past a point:
//   rbp     the frame pointer at a kernel-half, non-canonical, unaligned or just-below-the-
//           user-limit address (the end of the user address space: 0x7ffffffff000 with
//           4-level page tables, 2^56 - 4096 with 5-level ones; the page below it is mapped,
//           readable, and full of return addresses at the limit)
//   rsp     the stack pointer there (restored right after the write; nothing else runs)
//   ret     the return address in the frame planted at or above the user limit (an
//           assembly function whose unwind table row says where it is)
//   chain   a corrupted frame chain: a fake frame that returns into the JIT code and links
//           to one whose return address is planted
//   deep    the write at the bottom of a recursion 10 000 calls deep (the module's
//           stack_depth entries, as /sys/module/memmon/parameters/stack_depth says while
//           the program runs: 127, memmon record's default, or the depth it was loaded with)
//   deep_rbp  the same with a hostile frame pointer
//   jit     the write by code in an anonymous executable mapping (no unwind table covers it)
//   jit_rbp  the same, the JIT code setting a hostile frame pointer
//   vsyscall  the write by the kernel, in the time() it emulates for a call into the
//           vsyscall page (vsyscall=xonly, the default): the task's pc is in that page, at
//           or above the user limit (only where the process has a [vsyscall] mapping)
// It prints limit=, base=, jit=LO-HI, one line per case, in page order,
//   case=I kind=KIND value=0x... entries=N|- end=unreadable|early|depth|-
// (the stack the case's fault line must have when memmon record loaded the unwind tables:
// exactly N entries, or any number, and the reason it ends: unreadable, any reason but a
// whole stack, depth at stack_depth entries, or any), and faults= and major_faults=, the
// kernel's counts (getrusage) for the part between the markers.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define PAGE 4096UL
#define CASES_MAX 64

// The end of the user address space: a mapping fixed at 2^47 exists only with 5-level
// page tables.
static unsigned long user_limit(void)
{
	void *high = mmap((void *)(1UL << 47), PAGE, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (high == MAP_FAILED)
		return 0x7ffffffff000UL;
	munmap(high, PAGE);
	return (1UL << 56) - PAGE;
}

// fault_with_sp(page, sp): writes *page with RSP = sp; fault_with_return_address(page, ret):
// writes *page with its own return address replaced by ret. Both restore what they changed
// before they return; their CFI says, at every instruction, CFA = RSP + 8.
// fault_with_rbp(page, bp): a frame as -fno-omit-frame-pointer makes one (its CFI: CFA = RBP
// + 16 once RBP is set), in which RBP = bp while it writes *page. In assembly, so that the
// compiler leaves out neither the frame (gcc 12 does in a leaf) nor the CFI.
void fault_with_sp(volatile char *page, unsigned long sp);
void fault_with_return_address(volatile char *page, unsigned long ret);
void fault_with_rbp(volatile char *page, unsigned long bp);
__asm__(
	"	.text\n"
	"	.globl fault_with_rbp\n"
	"	.type fault_with_rbp, @function\n"
	"fault_with_rbp:\n"
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	mov %rsi, %rbp\n"
	"	movb $1, (%rdi)\n"
	"	mov %rsp, %rbp\n"
	"	pop %rbp\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	.cfi_restore %rbp\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size fault_with_rbp, .-fault_with_rbp\n");
__asm__(
	"	.text\n"
	"	.globl fault_with_sp\n"
	"	.type fault_with_sp, @function\n"
	"fault_with_sp:\n"
	"	.cfi_startproc\n"
	"	mov %rsp, %rax\n"
	"	mov %rsi, %rsp\n"
	"	movb $1, (%rdi)\n"
	"	mov %rax, %rsp\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size fault_with_sp, .-fault_with_sp\n"
	"	.globl fault_with_return_address\n"
	"	.type fault_with_return_address, @function\n"
	"fault_with_return_address:\n"
	"	.cfi_startproc\n"
	"	mov (%rsp), %rax\n"
	"	mov %rsi, (%rsp)\n"
	"	movb $1, (%rdi)\n"
	"	mov %rax, (%rsp)\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size fault_with_return_address, .-fault_with_return_address\n");

// Two fake frames in this function's own frame (above the callee's stack pointer): the
// first returns to `first` and links to the second, which returns to `planted`.
__attribute__((noinline)) static void fault_through_chain(volatile char *page, unsigned long first,
							   unsigned long planted)
{
	volatile unsigned long chain[4];

	chain[0] = (unsigned long)&chain[2];
	chain[1] = first;
	chain[2] = (unsigned long)&chain[2] + 64;
	chain[3] = planted;
	fault_with_rbp(page, (unsigned long)&chain[0]);
}

// Recurses `depth` calls deep, then writes *page (with RBP = bp unless bp is 0).
__attribute__((noinline)) static long recurse(volatile char *page, int depth, unsigned long bp)
{
	volatile long pad[2] = { depth, 0 };

	if (depth == 0) {
		if (bp)
			fault_with_rbp(page, bp);
		else
			page[0] = 1;
		return pad[0];
	}
	return recurse(page, depth - 1, bp) + pad[0];
}

// The vsyscall page's time() (VSYSCALL_ADDR + 0x400): the kernel emulates it.
#define VSYSCALL_TIME 0xffffffffff600400UL

// Whether the process has a [vsyscall] mapping: the kernel emulates calls into it.
static int has_vsyscall(void)
{
	char line[256];
	FILE *maps = fopen("/proc/self/maps", "r");
	int found = 0;

	if (!maps)
		return 0;
	while (!found && fgets(line, sizeof(line), maps))
		found = strstr(line, "[vsyscall]") != NULL;
	fclose(maps);
	return found;
}

// Calls the vsyscall page's time() with `page`: the kernel writes the time there.
static __attribute__((noinline)) void fault_in_vsyscall(volatile char *page)
{
	((long (*)(volatile char *))VSYSCALL_TIME)(page);
	// Not a tail call: the call's return address is in this function.
	__asm__ volatile("" ::: "memory");
}

// push rbp; mov rbp, rsp; movb $1, (rdi); pop rbp; ret
static const unsigned char jit_plain[] = { 0x55, 0x48, 0x89, 0xe5, 0xc6, 0x07, 0x01, 0x5d, 0xc3 };
// push rbp; mov rbp, rsi; movb $1, (rdi); pop rbp; ret
static const unsigned char jit_bad_rbp[] = { 0x55, 0x48, 0x89, 0xf5, 0xc6, 0x07, 0x01, 0x5d, 0xc3 };

static char *region;
static int cases;
static char lines[CASES_MAX][128];

// Starts case `kind` on the next page: records its line, returns the page.
static volatile char *next_case(const char *kind, unsigned long value, const char *entries,
				const char *end)
{
	if (cases == CASES_MAX)
		exit(2);
	snprintf(lines[cases], sizeof(lines[cases]), "case=%d kind=%s value=%#lx entries=%s end=%s",
		 cases, kind, value, entries, end);
	return region + PAGE * cases++;
}

// The module's stack depth now (what memmon record set before it started this program), as
// text; exits with 2 when it cannot be read.
static const char *stack_depth(void)
{
	static char depth[16];
	FILE *f = fopen("/sys/module/memmon/parameters/stack_depth", "r");

	if (!f || !fgets(depth, sizeof(depth), f))
		exit(2);
	fclose(f);
	depth[strcspn(depth, "\n")] = 0;
	return depth;
}

int main(void)
{
	const unsigned long limit = user_limit();
	// Return addresses: those of these at or above the limit.
	const unsigned long candidates[] = {
		limit, limit + 1, limit + PAGE - 1, 1UL << 47, 0xfffffffffff000UL, (1UL << 56) - 1,
		1UL << 56, 0xffff800000000000UL, 0xffffffff81000000UL, ~0UL,
	};
	const unsigned long bad_rbp[] = {
		0xffff888000000000UL, 0xffffffff81000000UL, 1UL << 47, 0x8000000000000000UL,
		limit - 8, limit - 16, limit - PAGE, limit, 0x10,
	};
	const unsigned long bad_rsp[] = {
		0xffff888000000000UL, 0xffffffff81000000UL, 1UL << 47, limit - 8, limit - 16, limit,
	};
	unsigned long planted[sizeof(candidates) / sizeof(candidates[0])];
	size_t nplanted = 0;
	void (*jit)(volatile char *, unsigned long);
	void (*jit_rbp)(volatile char *, unsigned long);
	struct rusage before, after;
	unsigned char *code;
	unsigned long *top;
	int vsyscall;
	size_t i;

	region = mmap(NULL, CASES_MAX * PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	code = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED || code == MAP_FAILED)
		return perror("mmap"), 1;
	madvise(region, CASES_MAX * PAGE, MADV_NOHUGEPAGE);
	memcpy(code, jit_plain, sizeof(jit_plain));
	memcpy(code + 64, jit_bad_rbp, sizeof(jit_bad_rbp));
	if (mprotect(code, PAGE, PROT_READ | PROT_EXEC))
		return perror("mprotect"), 1;
	jit = (void (*)(volatile char *, unsigned long))code;
	jit_rbp = (void (*)(volatile char *, unsigned long))(code + 64);
	// The last page below the user limit, readable, full of return addresses at the limit:
	// a frame pointer or stack pointer just below the limit reads them.
	top = mmap((void *)(limit - PAGE), PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (top != (void *)(limit - PAGE))
		return perror("mmap of the page below the user limit"), 1;
	for (i = 0; i < PAGE / sizeof(top[0]); i++)
		top[i] = limit;
	for (i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++)
		if (candidates[i] >= limit)
			planted[nplanted++] = candidates[i];
	vsyscall = has_vsyscall();
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("limit=%#lx\nbase=%p\njit=%p-%p\n", limit, (void *)region, (void *)code,
	       (void *)(code + PAGE));

	getrusage(RUSAGE_SELF, &before);
	fsync(1001);
	for (i = 0; i < sizeof(bad_rbp) / sizeof(bad_rbp[0]); i++)
		fault_with_rbp(next_case("rbp", bad_rbp[i], "1", "early"), bad_rbp[i]);
	for (i = 0; i < sizeof(bad_rsp) / sizeof(bad_rsp[0]); i++)
		fault_with_sp(next_case("rsp", bad_rsp[i], "1", "unreadable"), bad_rsp[i]);
	for (i = 0; i < nplanted; i++)
		fault_with_return_address(next_case("ret", planted[i], "1", "unreadable"),
					  planted[i]);
	for (i = 0; i < nplanted; i++)
		fault_through_chain(next_case("chain", planted[i], "2", "unreadable"),
				    (unsigned long)code + 4, planted[i]);
	recurse(next_case("deep", 10000, stack_depth(), "depth"), 10000, 0);
	recurse(next_case("deep_rbp", limit - 16, "1", "early"), 10000, limit - 16);
	jit(next_case("jit", 0, "-", "-"), 0);
	jit_rbp(next_case("jit_rbp", 0xffff888000000000UL, "1", "early"), 0xffff888000000000UL);
	jit_rbp(next_case("jit_rbp", 1UL << 47, "1", "early"), 1UL << 47);
	if (vsyscall)
		fault_in_vsyscall(next_case("vsyscall", (unsigned long)fault_in_vsyscall, "-", "-"));
	fsync(1002);
	getrusage(RUSAGE_SELF, &after);

	for (i = 0; i < (size_t)cases; i++)
		printf("%s\n", lines[i]);
	printf("faults=%ld\nmajor_faults=%ld\n",
	       (after.ru_minflt - before.ru_minflt) + (after.ru_majflt - before.ru_majflt),
	       after.ru_majflt - before.ru_majflt);
	return 0;
}
