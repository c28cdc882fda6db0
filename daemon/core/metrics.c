/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

/* A handful of families with a few label sets each: linear lists are
 * simpler than a hash and fast enough at these sizes. Label cardinality is
 * bounded by the callers (event types, resources, error kinds). */
#define MAX_SERIES_PER_FAMILY 256

struct tl_histogram {
	size_t n;         /* bounds */
	double *bounds;   /* ascending, finite */
	uint64_t *counts; /* per bucket, n + 1 (the last: +Inf), not cumulative */
	uint64_t count;
	double sum;
};

struct series {
	struct tl_metric cell; /* first: a handle is a pointer to it */
	char *labels;          /* "" for none */
	struct tl_histogram *hist; /* a histogram family's series */
	struct series *next;
};

struct family {
	char *name;
	char *help;
	enum tl_metric_kind kind;
	unsigned n_series, max_series;
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
	f->max_series = MAX_SERIES_PER_FAMILY;
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
	if (!create || f->n_series >= f->max_series)
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

void tl_metric_limit(const char *name, unsigned max_series)
{
	struct family *f = find_family(name, true, TL_METRIC_COUNTER);

	if (f)
		f->max_series = max_series;
}

static void hist_free(struct tl_histogram *h)
{
	if (!h)
		return;
	free(h->bounds);
	free(h->counts);
	free(h);
}

struct tl_histogram *tl_histogram_new(const char *name, const char *labels, const double *bounds,
				      size_t n_bounds, const char *help)
{
	struct tl_histogram *h;
	struct family *f;
	struct series *s;

	if (!bounds || !n_bounds)
		return NULL;
	for (size_t i = 0; i < n_bounds; i++)
		if (!isfinite(bounds[i]) || (i && bounds[i] <= bounds[i - 1]))
			return NULL;
	tl_metric_describe(name, TL_METRIC_HISTOGRAM, help);
	f = find_family(name, true, TL_METRIC_HISTOGRAM);
	s = f ? find_series(f, labels, true) : NULL;
	if (!s)
		return NULL;
	if (s->hist)
		return s->hist;
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->n = n_bounds;
	h->bounds = malloc(n_bounds * sizeof(*h->bounds));
	h->counts = calloc(n_bounds + 1, sizeof(*h->counts));
	if (!h->bounds || !h->counts) {
		hist_free(h);
		return NULL;
	}
	memcpy(h->bounds, bounds, n_bounds * sizeof(*h->bounds));
	s->hist = h;
	return h;
}

void tl_histogram_observe(struct tl_histogram *h, double v)
{
	size_t lo = 0, hi;

	if (!h || isnan(v))
		return;
	/* the first bucket whose bound is >= v (le: less or equal) */
	hi = h->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->bounds[mid] >= v)
			hi = mid;
		else
			lo = mid + 1;
	}
	h->counts[lo]++;
	h->count++;
	h->sum += v;
}

uint64_t tl_histogram_count(const struct tl_histogram *h)
{
	return h ? h->count : 0;
}

char *tl_metric_label_value(char *dst, size_t size, const char *v)
{
	size_t o = 0;

	if (!size)
		return dst;
	for (const char *p = v ? v : ""; *p; p++) {
		const char *esc = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : *p == '\n' ? "\\n" : NULL;
		size_t n = esc ? 2 : 1;

		if (o + n >= size)
			break;
		if (esc)
			memcpy(dst + o, esc, 2);
		else
			dst[o] = *p;
		o += n;
	}
	dst[o] = '\0';
	return dst;
}

/* A float as the exposition format reads it, as Prometheus' own client
 * writes it (Go's 'g' with the shortest precision): the fewest digits that
 * read back as the same double, in exponent form below 1e-4 and from 1e6
 * ("0.25", "10", "300", "1e+06", "7.00000235e+06"), "+Inf". */
static const char *fmt_float(char *buf, size_t size, double v)
{
	char e[40];
	int digits, exp;

	if (isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	if (isnan(v))
		return "NaN";
	if (v == 0)
		return "0";
	for (digits = 1; digits < 17; digits++) {
		snprintf(e, sizeof(e), "%.*e", digits - 1, v);
		if (strtod(e, NULL) == v)
			break;
	}
	snprintf(e, sizeof(e), "%.*e", digits - 1, v);
	exp = atoi(strchr(e, 'e') + 1);
	if (exp < -4 || exp >= 6)
		snprintf(buf, size, "%s", e);
	else
		snprintf(buf, size, "%.*f", digits - 1 - exp > 0 ? digits - 1 - exp : 0, v);
	return buf;
}

static void render_histogram(FILE *out, const struct family *f, const struct series *s)
{
	const struct tl_histogram *h = s->hist;
	const char *sep = s->labels[0] ? "," : "";
	uint64_t cum = 0;
	char b[40];

	if (!h)
		return;
	for (size_t i = 0; i <= h->n; i++) {
		cum += h->counts[i];
		fprintf(out, "%s_bucket{%s%sle=\"%s\"} %llu\n", f->name, s->labels, sep,
			i < h->n ? fmt_float(b, sizeof(b), h->bounds[i]) : "+Inf",
			(unsigned long long)cum);
	}
	if (s->labels[0]) {
		fprintf(out, "%s_sum{%s} %s\n", f->name, s->labels, fmt_float(b, sizeof(b), h->sum));
		fprintf(out, "%s_count{%s} %llu\n", f->name, s->labels, (unsigned long long)h->count);
	} else {
		fprintf(out, "%s_sum %s\n", f->name, fmt_float(b, sizeof(b), h->sum));
		fprintf(out, "%s_count %llu\n", f->name, (unsigned long long)h->count);
	}
}

static const char *kind_name(enum tl_metric_kind k)
{
	return k == TL_METRIC_COUNTER ? "counter" : k == TL_METRIC_GAUGE ? "gauge" : "histogram";
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
		fprintf(out, "\n# TYPE %s %s\n", f->name, kind_name(f->kind));
		if (!f->series && f->kind == TL_METRIC_COUNTER && !strchr(f->name, '{'))
			fprintf(out, "%s 0\n", f->name);
		for (struct series *s = f->series; s; s = s->next) {
			if (f->kind == TL_METRIC_HISTOGRAM)
				render_histogram(out, f, s);
			else if (s->labels[0])
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
			hist_free(s->hist);
			free(s);
		}
		free(f->name);
		free(f->help);
		free(f);
	}
	families_tail = &families;
	memset(hints, 0, sizeof(hints));
}

/* ---- bounded label values ---- */

struct tl_label_set {
	size_t max, n, cap; /* cap: slots, a power of two >= 2 * max */
	char **slot;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

int tl_label_set_new(size_t max, struct tl_label_set **ret)
{
	struct tl_label_set *s;
	size_t cap = 16;

	if (!max || max > SIZE_MAX / 4)
		return -EINVAL;
	while (cap < 2 * max)
		cap *= 2;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->slot = calloc(cap, sizeof(*s->slot));
	if (!s->slot) {
		free(s);
		return -ENOMEM;
	}
	s->max = max;
	s->cap = cap;
	*ret = s;
	return 0;
}

void tl_label_set_free(struct tl_label_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->cap; i++)
		free(s->slot[i]);
	free(s->slot);
	free(s);
}

bool tl_label_set_admit(struct tl_label_set *s, const char *key)
{
	size_t i;

	if (!s || !key)
		return false;
	/* at most half full: a free slot ends every probe */
	for (i = hash_str(key) & (s->cap - 1); s->slot[i]; i = (i + 1) & (s->cap - 1))
		if (strcmp(s->slot[i], key) == 0)
			return true;
	if (s->n >= s->max)
		return false;
	s->slot[i] = strdup(key);
	if (!s->slot[i])
		return false;
	s->n++;
	return true;
}

size_t tl_label_set_size(const struct tl_label_set *s)
{
	return s ? s->n : 0;
}
