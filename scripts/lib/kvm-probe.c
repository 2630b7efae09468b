// SPDX-License-Identifier: GPL-2.0
/*
 * Is this KVM device usable?  scripts/accel's first step (built on the
 * host, run on the host; it only asks the device for a VM of its own,
 * nothing is loaded or configured in the host kernel).
 *
 *   kvm-probe DEVICE
 *
 * Opens DEVICE, checks KVM_GET_API_VERSION, creates a VM with 64 KiB of
 * memory and two vCPUs (the harness's guests have two), and runs on the
 * first a few bytes of real-mode code: a loop of LOOPS iterations that
 * never leaves the guest, then EXITS writes to port 0x80, each an exit to
 * this program, then hlt.  A KVM that works runs the loop at the CPU's
 * speed (a few ms; its writes take microseconds each); the nested KVM of
 * the machines this project was built on (a PVM host, no VMX) opens and
 * runs it, but the loop takes ~1000x as long, as does every guest.  The
 * loop must end within LOOP_MS, everything within SECONDS.  Exit 0 and one
 * line "usable: ..." when it did; exit 1 and one line saying what failed
 * otherwise (2: usage).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define LOOPS	4000000UL
#define LOOP_MS	400.0
#define EXITS	20000UL
#define SECONDS	2

static volatile sig_atomic_t expired;
static void on_alarm(int sig) { (void)sig; expired = 1; }

static int fail(const char *what)
{
	printf("%s: %s\n", what, strerror(errno));
	return 1;
}

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1e3 + (t.tv_nsec - t0->tv_nsec) / 1e6;
}

int main(int argc, char **argv)
{
	/*
	 * 0: mov ecx, LOOPS	6: addr32 loop 6	9: mov cx, EXITS
	 * 12: out 0x80, al	14: loop 12		16: hlt
	 */
	static const uint8_t code[] = {
		0x66, 0xb9, LOOPS & 0xff, (LOOPS >> 8) & 0xff,
		(LOOPS >> 16) & 0xff, LOOPS >> 24,
		0x67, 0xe2, 0xfd,
		0xb9, EXITS & 0xff, EXITS >> 8,
		0xe6, 0x80,
		0xe2, 0xfc,
		0xf4,
	};
	unsigned long seen = 0;
	int kvm, vm, cpu, ret;
	struct kvm_userspace_memory_region mem;
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_run *run;
	struct timespec t0;
	struct sigaction sa;
	double loop_ms = -1, ms;
	uint8_t *ram;
	long runsz;

	if (argc != 2) {
		fprintf(stderr, "usage: kvm-probe DEVICE\n");
		return 2;
	}
	kvm = open(argv[1], O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return fail("open");
	ret = ioctl(kvm, KVM_GET_API_VERSION, 0);
	if (ret < 0)
		return fail("KVM_GET_API_VERSION");
	if (ret != KVM_API_VERSION) {
		printf("KVM_GET_API_VERSION: %d, not %d\n", ret, KVM_API_VERSION);
		return 1;
	}
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		return fail("KVM_CREATE_VM");
	ram = mmap(NULL, 0x10000, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ram == MAP_FAILED)
		return fail("mmap");
	memcpy(ram, code, sizeof(code));
	mem = (struct kvm_userspace_memory_region){
		.slot = 0, .guest_phys_addr = 0, .memory_size = 0x10000,
		.userspace_addr = (uintptr_t)ram,
	};
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &mem) < 0)
		return fail("KVM_SET_USER_MEMORY_REGION");
	cpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (cpu < 0)
		return fail("KVM_CREATE_VCPU 0");
	if (ioctl(vm, KVM_CREATE_VCPU, 1) < 0)
		return fail("KVM_CREATE_VCPU 1");
	runsz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (runsz < (long)sizeof(*run))
		return fail("KVM_GET_VCPU_MMAP_SIZE");
	run = mmap(NULL, runsz, PROT_READ | PROT_WRITE, MAP_SHARED, cpu, 0);
	if (run == MAP_FAILED)
		return fail("mmap of the vCPU");
	if (ioctl(cpu, KVM_GET_SREGS, &sregs) < 0)
		return fail("KVM_GET_SREGS");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(cpu, KVM_SET_SREGS, &sregs) < 0)
		return fail("KVM_SET_SREGS");
	memset(&regs, 0, sizeof(regs));
	regs.rip = 0;
	regs.rflags = 2;
	if (ioctl(cpu, KVM_SET_REGS, &regs) < 0)
		return fail("KVM_SET_REGS");

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART: KVM_RUN returns EINTR */
	sigaction(SIGALRM, &sa, NULL);
	alarm(SECONDS);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (ioctl(cpu, KVM_RUN, 0) < 0) {
			if (errno == EINTR && expired) {
				if (loop_ms < 0)
					printf("too slow: a loop of %lu iterations in the guest not done in %d s (a working KVM takes a few ms)\n",
					       LOOPS, SECONDS);
				else
					printf("too slow: %lu of %lu port exits in %d s\n",
					       seen, EXITS, SECONDS);
				return 1;
			}
			if (errno == EINTR)
				continue;
			return fail("KVM_RUN");
		}
		if (run->exit_reason == KVM_EXIT_IO &&
		    run->io.direction == KVM_EXIT_IO_OUT && run->io.port == 0x80) {
			if (!seen++)
				loop_ms = since(&t0);
			continue;
		}
		if (run->exit_reason == KVM_EXIT_HLT)
			break;
		printf("unexpected exit reason %u after %lu port exits\n",
		       run->exit_reason, seen);
		return 1;
	}
	alarm(0);
	ms = since(&t0);
	if (seen != EXITS) {
		printf("halted after %lu port exits, not %lu\n", seen, EXITS);
		return 1;
	}
	if (loop_ms > LOOP_MS) {
		printf("too slow: a loop of %lu iterations in the guest took %.0f ms (a working KVM takes a few ms; limit %.0f)\n",
		       LOOPS, loop_ms, LOOP_MS);
		return 1;
	}
	printf("usable: a loop of %lu iterations in %.1f ms, %lu port exits in %.1f ms\n",
	       LOOPS, loop_ms, EXITS, ms - loop_ms);
	return 0;
}
