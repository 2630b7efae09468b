/* SPDX-License-Identifier: MIT */
/*
 * The smallest io_uring, by its system calls (no liburing in the guest):
 * one ring and one IORING_OP_READ at a time, waited for.  The kernel's
 * writes into tracked memory that kwrites and gc-kwrites make include an
 * io_uring read.  Include mw-test.h first.
 */
#ifndef MW_URING_H
#define MW_URING_H

#include <linux/io_uring.h>

struct mw_ring {
	int fd;				/* -1: none */
	unsigned int *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail,
		     *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

/*
 * A ring of 4 entries into *rg: 0, or -errno of io_uring_setup (no
 * io_uring here; rg->fd is -1).  A ring that cannot be mapped is
 * mw_bail()'s, with the run's seed.
 */
static inline int mw_uring_setup(struct mw_ring *rg, const uint64_t *seed)
{
	struct io_uring_params p = { 0 };
	size_t sqsz, cqsz;
	char *sq, *cq;

	rg->fd = (int)syscall(__NR_io_uring_setup, 4, &p);
	if (rg->fd < 0)
		return -errno;
	sqsz = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cqsz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP)
		sqsz = cqsz = sqsz > cqsz ? sqsz : cqsz;
	sq = mmap(NULL, sqsz, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_POPULATE, rg->fd, IORING_OFF_SQ_RING);
	cq = p.features & IORING_FEAT_SINGLE_MMAP ? sq :
	     mmap(NULL, cqsz, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_POPULATE, rg->fd, IORING_OFF_CQ_RING);
	rg->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe),
			PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
			rg->fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || rg->sqes == MAP_FAILED)
		mw_bail("mmap the io_uring rings", seed);
	rg->sq_tail = (unsigned int *)(sq + p.sq_off.tail);
	rg->sq_mask = (unsigned int *)(sq + p.sq_off.ring_mask);
	rg->sq_array = (unsigned int *)(sq + p.sq_off.array);
	rg->cq_head = (unsigned int *)(cq + p.cq_off.head);
	rg->cq_tail = (unsigned int *)(cq + p.cq_off.tail);
	rg->cq_mask = (unsigned int *)(cq + p.cq_off.ring_mask);
	rg->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	return 0;
}

/*
 * One IORING_OP_READ of len bytes at off of fd into buf, waited for (an
 * interrupted io_uring_enter is retried): the bytes read, or -errno.
 */
static inline long mw_uring_read(struct mw_ring *rg, int fd, void *buf,
				 size_t len, off_t off)
{
	unsigned int tail = *rg->sq_tail, idx = tail & *rg->sq_mask, head;
	struct io_uring_sqe *sqe = &rg->sqes[idx];
	long res;

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_READ;
	sqe->fd = fd;
	sqe->addr = (uintptr_t)buf;
	sqe->len = len;
	sqe->off = off;
	rg->sq_array[idx] = idx;
	__atomic_store_n(rg->sq_tail, tail + 1, __ATOMIC_RELEASE);
	while (syscall(__NR_io_uring_enter, rg->fd, 1, 1,
		       IORING_ENTER_GETEVENTS, NULL, 0) != 1)
		if (errno != EINTR)
			return -errno;
	head = *rg->cq_head;
	while (head == __atomic_load_n(rg->cq_tail, __ATOMIC_ACQUIRE))
		if (syscall(__NR_io_uring_enter, rg->fd, 0, 1,
			    IORING_ENTER_GETEVENTS, NULL, 0) < 0 &&
		    errno != EINTR)
			return -errno;
	res = rg->cqes[head & *rg->cq_mask].res;
	__atomic_store_n(rg->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

#endif /* MW_URING_H */
