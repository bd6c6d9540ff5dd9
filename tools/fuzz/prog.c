// SPDX-License-Identifier: GPL-2.0
/* Programs: generation, mutation and storage; see prog.h. */
#include "prog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "calls.h"

uint64_t rng_value(struct rng *r, const struct hints *hints)
{
	static const uint64_t special[] = {
		0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, 255, 256, 511, 512,
		4095, 4096, 4097, 8192, 65535, 65536, 1u << 20, (1u << 20) + 1, 64u << 20,
		0x7fffffff, 0x80000000u, 0xffffffffu, 1ull << 32, (1ull << 32) + 4096,
		1ull << 48, 0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull - 4095,
		~0ull - 1, ~0ull,
	};
	uint64_t v;

	switch (rng_below(r, 8)) {
	case 0:
	case 1:
	case 2:
		return special[rng_below(r, sizeof(special) / sizeof(special[0]))];
	case 3:
		v = 1ull << rng_below(r, 64);
		return v + rng_below(r, 3) - 1;
	case 4:
		if (hints && hints->n)
			return hints->v[rng_below(r, hints->n)] + rng_below(r, 3) - 1;
		return rng_below(r, 256);
	case 5:
		return rng_below(r, 4096);
	case 6:
		return rng_below(r, 256) * 4096;
	default:
		return rng_next(r);
	}
}

static void insert_call(struct prog *p, uint32_t at, const struct call *c)
{
	if (p->n >= PROG_MAX_CALLS)
		return;
	memmove(&p->c[at + 1], &p->c[at], (p->n - at) * sizeof(p->c[0]));
	p->c[at] = *c;
	p->n++;
}

/*
 * The trace events on from the program's start, or a debugfs read at its
 * end: the events and the listings then see whatever the program made
 * (aliases, failed semaphores, queues part done), which a call picked at
 * random places rarely reaches.
 */
static void add_observer(struct prog *p, struct rng *r, const struct hints *h)
{
	struct call c;

	if (rng_one_in(r, 2)) {
		call_generate(&c, OP_TRACE_EVENTS, r, h);
		c.a[0] = 1;	/* on */
		insert_call(p, 0, &c);
	} else {
		call_generate(&c, OP_DEBUGFS_READ, r, h);
		insert_call(p, p->n, &c);
	}
}

void prog_generate(struct prog *p, struct rng *r, const struct hints *h, uint32_t len)
{
	/* Now and then without the objects its calls need, to fail them. */
	int chain = !rng_one_in(r, 8);

	memset(p, 0, sizeof(*p));
	if (len > PROG_MAX_CALLS)
		len = PROG_MAX_CALLS;
	while (p->n < len) {
		struct call c;

		call_generate(&c, call_pick_op(r), r, h);
		if (!chain)
			p->c[p->n++] = c;
		else if (!call_append(p, &c, r, h))
			break;
	}
	if (rng_one_in(r, 4))
		add_observer(p, r, h);
}

void prog_mutate(struct prog *p, struct rng *r, const struct hints *h, const struct prog *other)
{
	struct call fresh, *c;
	uint32_t i;

	if (!p->n) {
		prog_generate(p, r, h, 1 + rng_below(r, 8));
		return;
	}
	i = rng_below(r, p->n);
	c = &p->c[i];
	switch (rng_below(r, 10)) {
	case 0:
	case 1:
	case 2: {
		/* One argument: a new value, a bit flipped, or a step. */
		uint64_t *a = &c->a[rng_below(r, CALL_ARGS)];

		switch (rng_below(r, 3)) {
		case 0:
			*a = rng_value(r, h);
			break;
		case 1:
			*a ^= 1ull << rng_below(r, 64);
			break;
		default:
			*a += rng_below(r, 33) - 16;
			break;
		}
		break;
	}
	case 3:
		c->res[rng_below(r, CALL_RES)] = rng_one_in(r, 16) ? RES_RAW : rng_below(r, 8);
		break;
	case 4:
	case 5:
		if (rng_one_in(r, 4)) {
			add_observer(p, r, h);
			break;
		}
		call_generate(&fresh, call_pick_op(r), r, h);
		insert_call(p, rng_below(r, p->n + 1), &fresh);
		break;
	case 6:
		if (p->n > 1) {
			memmove(c, c + 1, (p->n - i - 1) * sizeof(*c));
			p->n--;
		}
		break;
	case 7:
		/* Run on the other thread, pass the argument elsewhere, or
		 * make more of the call's object. */
		switch (rng_below(r, 3)) {
		case 0:
			c->how ^= CALL_ASYNC;
			break;
		case 1:
			c->how = (c->how & ~CALL_PLACE) | rng_below(r, ARG_PLACES) << CALL_PLACE_SHIFT;
			break;
		default:
			c->how = (c->how & ~CALL_REPEAT) | rng_below(r, 4) << CALL_REPEAT_SHIFT;
			break;
		}
		break;
	case 8:
		/* An error path: fail one of the call's allocations, or none. */
		c->fail_nth = rng_one_in(r, 3) ? 0 : 1 + rng_below(r, 16);
		break;
	default:
		/* Splice: our head, the other's tail. */
		if (other && other->n) {
			uint32_t from = rng_below(r, other->n);

			while (from < other->n && p->n < PROG_MAX_CALLS)
				p->c[p->n++] = other->c[from++];
		} else {
			call_generate(c, call_pick_op(r), r, h);
		}
		break;
	}
}

int prog_save(const struct prog *p, const char *path)
{
	size_t len = offsetof(struct prog, c) + p->n * sizeof(p->c[0]);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, p, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

int prog_load(struct prog *p, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	memset(p, 0, sizeof(*p));
	n = read(fd, p, sizeof(*p));
	close(fd);
	if (n < (ssize_t)offsetof(struct prog, c) || p->n > PROG_MAX_CALLS ||
	    (size_t)n < offsetof(struct prog, c) + p->n * sizeof(p->c[0]))
		return -EINVAL;
	for (uint32_t i = 0; i < p->n; i++)
		if (p->c[i].op >= OP_COUNT)
			return -EINVAL;
	return 0;
}

void prog_print_hex(const struct prog *p, const char *prefix)
{
	const uint8_t *b = (const uint8_t *)p;
	size_t len = offsetof(struct prog, c) + p->n * sizeof(p->c[0]);

	printf("%s", prefix);
	for (size_t i = 0; i < len; i++)
		printf("%02x", b[i]);
	printf("\n");
	fflush(stdout);
}

int prog_parse_hex(struct prog *p, const char *hex)
{
	uint8_t *b = (uint8_t *)p;
	size_t i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < sizeof(*p) && hex[2 * i] && hex[2 * i + 1]; i++) {
		unsigned int v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		b[i] = v;
	}
	if (i < offsetof(struct prog, c) || p->n > PROG_MAX_CALLS ||
	    i < offsetof(struct prog, c) + p->n * sizeof(p->c[0]))
		return -EINVAL;
	for (uint32_t c = 0; c < p->n; c++)
		if (p->c[c].op >= OP_COUNT)
			return -EINVAL;
	return 0;
}
