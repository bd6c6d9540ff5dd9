/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A fuzzer program, as syzkaller has them: a short sequence of typed calls
 * on the uapi whose resources (files, handles, queues, mappings, fds) flow
 * from the call that made them to the calls that use them. A call names a
 * resource by a selector taken modulo the number of that kind made so far,
 * so a program stays meaningful through any mutation; dead resources stay
 * selectable (a destroyed BO's handle, a closed fd) on purpose.
 */
#ifndef RADIANCE_FUZZ_PROG_H
#define RADIANCE_FUZZ_PROG_H

#include <stddef.h>
#include <stdint.h>

#include "cover.h"

#define PROG_MAX_CALLS 24
#define CALL_ARGS 6
#define CALL_RES 3
/* A selector asking for the raw value in the call's last argument. */
#define RES_RAW 0xffffffffu
/* Run on the program's second thread. */
#define CALL_ASYNC 0x01u
#define CALL_PLACE_SHIFT 1
#define CALL_PLACE (0x7u << CALL_PLACE_SHIFT)
/* Made 4^k times in a row, k this field (a call that makes an object, not
 * async): tens of objects of a kind in a file, past the first capacity of
 * the module's vectors and deep in its trees, which 24 calls rarely reach. */
#define CALL_REPEAT_SHIFT 4
#define CALL_REPEAT (0x3u << CALL_REPEAT_SHIFT)

struct call {
	uint16_t op;		/* enum op (calls.h) */
	uint8_t how;		/* CALL_ASYNC, where its ioctl's argument is
				 * (CALL_PLACE; enum arg_place, calls.h), and
				 * CALL_REPEAT */
	uint8_t fail_nth;	/* fail its n-th allocation or user copy
				 * (if not async); 0: none */
	uint32_t res[CALL_RES];
	uint64_t a[CALL_ARGS];
};

struct prog {
	uint32_t n;
	struct call c[PROG_MAX_CALLS];
};

/* xorshift64*: small, and the same sequence everywhere for one seed. */
struct rng {
	uint64_t s;
};

static inline void rng_seed(struct rng *r, uint64_t seed)
{
	r->s = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
	if (!r->s)
		r->s = 1;
}

static inline uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

/* Uniform in [0, n); n > 0. */
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return rng_next(r) % n;
}

/* True once in n. */
static inline int rng_one_in(struct rng *r, uint64_t n)
{
	return rng_below(r, n) == 0;
}

/* A value that tends to matter for sizes, offsets, counts and flags:
 * boundaries, powers of two and their neighbours, constants the module
 * compared against (`hints`, may be NULL), or anything. */
uint64_t rng_value(struct rng *r, const struct hints *hints);

/* A fresh program of `len` calls. */
void prog_generate(struct prog *p, struct rng *r, const struct hints *h, uint32_t len);
/* Changes `p` a little: an argument, a selector, a call added, removed or
 * made asynchronous, or a splice with `other` (may be NULL). */
void prog_mutate(struct prog *p, struct rng *r, const struct hints *h, const struct prog *other);

/* Corpus files: the bytes of a struct prog up to its last call. */
int prog_save(const struct prog *p, const char *path);
int prog_load(struct prog *p, const char *path);
/* One line of text for the console (hex), and back. */
void prog_print_hex(const struct prog *p, const char *prefix);
int prog_parse_hex(struct prog *p, const char *hex);

#endif
