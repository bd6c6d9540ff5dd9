// SPDX-License-Identifier: GPL-2.0
/*
 * KCOV for the fuzzer; see cover.h.
 *
 * KCOV records return addresses of the instrumentation calls, so each PC
 * names one call site, that is one edge (sanitizer-coverage-level=3 splits
 * critical edges). The module's total is the number of relocations against
 * __sanitizer_cov_trace_pc in its runtime text: only radiance.ko is
 * instrumented on the debug kernel (tools/kernel/debug.config), which has no
 * RANDOMIZE_BASE: KCOV's PCs are the addresses sysfs shows.
 */
#include "cover.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcov.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define KCOV_WORDS (1u << 18)

static int is_text(const char *name)
{
	return !strncmp(name, ".text", 5);
}

/* The address sysfs gives section `name` of the loaded module, or 0. */
static uint64_t section_addr(const char *name)
{
	char path[256];
	unsigned long long addr = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/radiance/sections/%s", name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llx", &addr) != 1)
		addr = 0;
	fclose(f);
	return addr;
}

static int read_file(const char *path, uint8_t **out, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint8_t *buf;
	size_t got = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return -EINVAL;
	}
	buf = malloc(st.st_size);
	while (buf && got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, st.st_size - got);

		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	if (!buf || got != (size_t)st.st_size) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	*len = got;
	return 0;
}

int module_text_load(struct module_text *text, const char *ko_path)
{
	uint8_t *elf = NULL;
	size_t len = 0;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	const char *shstr;
	uint32_t trace_pc = 0;
	int ret = read_file(ko_path, &elf, &len);

	if (ret)
		return ret;
	eh = (const Elf64_Ehdr *)elf;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > len || eh->e_shstrndx >= eh->e_shnum) {
		free(elf);
		return -EINVAL;
	}
	sh = (const Elf64_Shdr *)(elf + eh->e_shoff);
	shstr = (const char *)elf + sh[eh->e_shstrndx].sh_offset;
	memset(text, 0, sizeof(*text));
	text->lo = UINT64_MAX;

	for (int i = 0; i < eh->e_shnum; i++) {
		const char *name = shstr + sh[i].sh_name;
		uint64_t addr;

		if (sh[i].sh_type == SHT_SYMTAB) {
			const Elf64_Sym *sym = (const Elf64_Sym *)(elf + sh[i].sh_offset);
			const char *str = (const char *)elf + sh[sh[i].sh_link].sh_offset;

			for (uint64_t s = 0; s < sh[i].sh_size / sizeof(*sym); s++)
				if (!strcmp(str + sym[s].st_name, "__sanitizer_cov_trace_pc"))
					trace_pc = s;
		}
		if (!is_text(name) || !(sh[i].sh_flags & SHF_EXECINSTR) || !sh[i].sh_size)
			continue;
		addr = section_addr(name);
		if (!addr)
			continue;
		if (addr < text->lo)
			text->lo = addr;
		if (addr + sh[i].sh_size > text->hi)
			text->hi = addr + sh[i].sh_size;
	}
	if (text->lo >= text->hi) {
		free(elf);
		return -ENOENT;	/* not loaded, or sysfs hides the addresses */
	}
	text->site = calloc(1, text->hi - text->lo);
	if (!text->site) {
		free(elf);
		return -ENOMEM;
	}
	/* A call's relocation sits 1 byte into its 5-byte instruction: KCOV
	 * records the return address, 4 past it. */
	for (int i = 0; trace_pc && i < eh->e_shnum; i++) {
		const Elf64_Rela *r = (const Elf64_Rela *)(elf + sh[i].sh_offset);
		uint64_t addr;

		if (sh[i].sh_type != SHT_RELA || sh[i].sh_info >= eh->e_shnum ||
		    !is_text(shstr + sh[sh[i].sh_info].sh_name))
			continue;
		addr = section_addr(shstr + sh[sh[i].sh_info].sh_name);
		for (uint64_t j = 0; j < sh[i].sh_size / sizeof(*r); j++) {
			uint64_t pc = addr + r[j].r_offset + 4;

			if (ELF64_R_SYM(r[j].r_info) != trace_pc)
				continue;
			text->edges++;
			if (addr && pc >= text->lo && pc < text->hi)
				text->site[pc - text->lo] = 1;
		}
	}
	free(elf);
	return text->edges ? 0 : -ENODATA; /* not built with KCOV */
}

void module_text_free(struct module_text *text)
{
	free(text->site);
	text->site = NULL;
}

int cover_map_init(struct cover_map *map, const struct module_text *text)
{
	map->text = text;
	map->seen = mmap(NULL, text->hi - text->lo, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return map->seen == MAP_FAILED ? -errno : 0;
}

int cover_map_add(struct cover_map *map, uint64_t pc)
{
	uint8_t *b;

	if (pc < map->text->lo || pc >= map->text->hi)
		return 0;
	b = &map->seen[pc - map->text->lo];
	return !__atomic_exchange_n(b, 1, __ATOMIC_RELAXED);
}

uint32_t cover_map_count(const struct cover_map *map)
{
	uint32_t n = 0;

	for (uint64_t i = 0; i < map->text->hi - map->text->lo; i++)
		n += map->seen[i];
	return n;
}

void cover_map_print(const struct cover_map *map, const char *prefix)
{
	uint32_t n = 0;

	for (uint64_t i = 0; i < map->text->hi - map->text->lo; i++) {
		if (!map->seen[i])
			continue;
		printf("%s%s%llx", n % 16 ? " " : prefix, n % 16 ? "" : " ", (unsigned long long)i);
		if (++n % 16 == 0)
			putchar('\n');
	}
	if (n % 16)
		putchar('\n');
}

int kcov_open(struct kcov *k)
{
	k->mode = -1;
	k->words = KCOV_WORDS;
	k->fd = open("/sys/kernel/debug/kcov", O_RDWR | O_CLOEXEC);
	if (k->fd < 0)
		return -errno;
	if (ioctl(k->fd, KCOV_INIT_TRACE, k->words))
		goto fail;
	k->area = mmap(NULL, k->words * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, k->fd, 0);
	if (k->area == MAP_FAILED)
		goto fail;
	return 0;
fail:
	close(k->fd);
	k->fd = -1;
	return -errno;
}

int kcov_open_remote(struct kcov *k, uint32_t instance)
{
	struct kcov_remote_arg arg = {
		.trace_mode = KCOV_TRACE_PC, .area_size = KCOV_WORDS,
		.common_handle = kcov_remote_handle(KCOV_SUBSYSTEM_COMMON, instance),
	};
	int ret = kcov_open(k);

	if (ret)
		return ret;
	if (ioctl(k->fd, KCOV_REMOTE_ENABLE, &arg)) {
		ret = -errno;
		kcov_close(k);
		return ret;
	}
	k->mode = KCOV_TRACE_PC;
	return 0;
}

void kcov_close(struct kcov *k)
{
	if (k->fd < 0)
		return;
	kcov_stop(k);
	munmap(k->area, k->words * sizeof(uint64_t));
	close(k->fd);
	k->fd = -1;
}

int kcov_start(struct kcov *k, int mode)
{
	if (k->fd < 0)
		return -EBADF;
	if (k->mode != mode) {
		kcov_stop(k);
		if (ioctl(k->fd, KCOV_ENABLE, mode))
			return -errno;
		k->mode = mode;
	}
	__atomic_store_n(&k->area[0], 0, __ATOMIC_RELAXED);
	return 0;
}

void kcov_stop(struct kcov *k)
{
	if (k->mode >= 0)
		ioctl(k->fd, KCOV_DISABLE, 0);
	k->mode = -1;
}

/* How many PCs a PC-mode trace holds (area[1] on), 0 in any other mode. */
static uint64_t kcov_pcs(const struct kcov *k)
{
	uint64_t count;

	if (k->fd < 0 || k->mode != KCOV_TRACE_PC)
		return 0;
	count = __atomic_load_n(&k->area[0], __ATOMIC_RELAXED);
	return count < k->words - 1 ? count : k->words - 1;
}

uint32_t kcov_collect_pcs(struct kcov *k, struct cover_map *maps, int n)
{
	uint64_t count = kcov_pcs(k);
	uint32_t fresh = 0;

	if (!count)
		return 0;
	for (uint64_t i = 1; i <= count; i++) {
		fresh += cover_map_add(&maps[0], k->area[i]);
		for (int m = 1; m < n; m++)
			cover_map_add(&maps[m], k->area[i]);
	}
	__atomic_store_n(&k->area[0], 0, __ATOMIC_RELAXED);
	return fresh;
}

int kcov_collect_module(struct kcov *k, struct cover_map *map, uint64_t lo)
{
	uint64_t count = kcov_pcs(k), size = map->text->hi - map->text->lo;
	int fresh = 0;

	if (!count)
		return 0;
	for (uint64_t i = 1; i <= count; i++) {
		uint64_t off = k->area[i] - lo;

		if (k->area[i] >= lo && off < size && !map->text->site[off])
			return -ESRCH;
	}
	for (uint64_t i = 1; i <= count; i++)
		if (k->area[i] >= lo && k->area[i] - lo < size)
			fresh += cover_map_add(map, map->text->lo + (k->area[i] - lo));
	__atomic_store_n(&k->area[0], 0, __ATOMIC_RELAXED);
	return fresh;
}

void kcov_collect_hints(struct kcov *k, const struct module_text *text, struct hints *h)
{
	uint64_t count;

	if (k->fd < 0 || k->mode != KCOV_TRACE_CMP)
		return;
	count = __atomic_load_n(&k->area[0], __ATOMIC_RELAXED);
	/* Four words a record: type, operand 1, operand 2, PC. */
	if (count > (k->words - 1) / 4)
		count = (k->words - 1) / 4;
	for (uint64_t i = 0; i < count; i++) {
		const uint64_t *rec = &k->area[1 + 4 * i];
		uint64_t v = rec[1], pc = rec[3];
		uint32_t j;

		if (!(rec[0] & KCOV_CMP_CONST) || pc < text->lo || pc >= text->hi || v < 2)
			continue;
		for (j = 0; j < h->n && h->v[j] != v; j++)
			;
		if (j == h->n && h->n < HINTS_MAX)
			h->v[h->n++] = v;
	}
	__atomic_store_n(&k->area[0], 0, __ATOMIC_RELAXED);
}
