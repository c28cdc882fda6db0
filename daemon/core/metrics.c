/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

/* A handful of families with a few label sets each: linear lists are
 * simpler than a hash and fast enough at these sizes. Label cardinality is
 * bounded by the callers (event types, resources, error kinds). */
#define MAX_SERIES_PER_FAMILY 256

struct series {
	struct tl_metric cell; /* first: a handle is a pointer to it */
	char *labels;          /* "" for none */
	struct series *next;
};

struct family {
	char *name;
	char *help;
	enum tl_metric_kind kind;
	unsigned n_series;
	struct series *series;
	struct family *next;
};

static struct family *families;
static struct family **families_tail = &families;

/* Callers name families with string literals, and some count per request:
 * the family last found for a name's address is tried first (one strcmp,
 * not one per family before it). */
#define HINTS 64
static struct {
	const char *name;
	struct family *f;
} hints[HINTS];

static struct family *find_family(const char *name, bool create, enum tl_metric_kind kind)
{
	size_t h = ((uintptr_t)name >> 3) % HINTS;
	struct family *f;

	if (hints[h].name == name && strcmp(hints[h].f->name, name) == 0)
		return hints[h].f;
	for (f = families; f; f = f->next)
		if (strcmp(f->name, name) == 0)
			goto found;
	if (!create)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->name = strdup(name);
	if (!f->name) {
		free(f);
		return NULL;
	}
	f->kind = kind;
	*families_tail = f;
	families_tail = &f->next;
found:
	hints[h].name = name;
	hints[h].f = f;
	return f;
}

static struct series *find_series(struct family *f, const char *labels, bool create)
{
	struct series *s, **pp = &f->series;

	if (!labels)
		labels = "";
	for (s = f->series; s; s = s->next) {
		if (strcmp(s->labels, labels) == 0)
			return s;
		pp = &s->next;
	}
	if (!create || f->n_series >= MAX_SERIES_PER_FAMILY)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->labels = strdup(labels);
	if (!s->labels) {
		free(s);
		return NULL;
	}
	*pp = s;
	f->n_series++;
	return s;
}

void tl_metric_describe(const char *name, enum tl_metric_kind kind, const char *help)
{
	struct family *f = find_family(name, true, kind);

	if (!f)
		return;
	f->kind = kind;
	if (help && !f->help)
		f->help = strdup(help);
}

void tl_metric_add(const char *name, const char *labels, uint64_t delta)
{
	struct family *f = find_family(name, true, TL_METRIC_COUNTER);
	struct series *s = f ? find_series(f, labels, true) : NULL;

	if (s)
		s->cell.value += (int64_t)delta;
}

void tl_metric_set(const char *name, const char *labels, int64_t value)
{
	struct family *f = find_family(name, true, TL_METRIC_GAUGE);
	struct series *s = f ? find_series(f, labels, true) : NULL;

	if (s)
		s->cell.value = value;
}

struct tl_metric *tl_metric_new(const char *name, const char *labels, enum tl_metric_kind kind,
				const char *help)
{
	struct family *f;
	struct series *s;

	tl_metric_describe(name, kind, help);
	f = find_family(name, true, kind);
	s = f ? find_series(f, labels, true) : NULL;
	return s ? &s->cell : NULL;
}

int64_t *tl_metric_cell(const char *name, const char *labels, enum tl_metric_kind kind)
{
	struct tl_metric *m = tl_metric_new(name, labels, kind, NULL);

	return m ? &m->value : NULL;
}

int64_t tl_metric_value(const struct tl_metric *m)
{
	return m ? m->value : 0;
}

int64_t tl_metric_get(const char *name, const char *labels)
{
	struct family *f = find_family(name, false, TL_METRIC_COUNTER);
	struct series *s = f ? find_series(f, labels, false) : NULL;

	return s ? s->cell.value : 0;
}

static void write_help(FILE *out, const char *help)
{
	/* Exposition format: backslash and newline are escaped in HELP. */
	for (const char *p = help; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", out);
		else if (*p == '\n')
			fputs("\\n", out);
		else
			fputc(*p, out);
	}
}

int tl_metrics_render(FILE *out)
{
	for (struct family *f = families; f; f = f->next) {
		fprintf(out, "# HELP %s ", f->name);
		write_help(out, f->help ? f->help : f->name);
		fprintf(out, "\n# TYPE %s %s\n", f->name,
			f->kind == TL_METRIC_COUNTER ? "counter" : "gauge");
		if (!f->series && f->kind == TL_METRIC_COUNTER && !strchr(f->name, '{'))
			fprintf(out, "%s 0\n", f->name);
		for (struct series *s = f->series; s; s = s->next) {
			if (s->labels[0])
				fprintf(out, "%s{%s} %lld\n", f->name, s->labels, (long long)s->cell.value);
			else
				fprintf(out, "%s %lld\n", f->name, (long long)s->cell.value);
		}
	}
	return ferror(out) ? -EIO : 0;
}

void tl_metrics_reset(void)
{
	while (families) {
		struct family *f = families;

		families = f->next;
		while (f->series) {
			struct series *s = f->series;

			f->series = s->next;
			free(s->labels);
			free(s);
		}
		free(f->name);
		free(f->help);
		free(f);
	}
	families_tail = &families;
	memset(hints, 0, sizeof(hints));
}
