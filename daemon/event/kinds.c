/* SPDX-License-Identifier: Apache-2.0 */
/* The kind table (kinds.h) and the lookups by name. docs/timeline-format.md
 * lists the same kinds and fields: keep both in step. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "kinds.h"

/* The table, from the list of kinds.h: a row per kind, its fields from
 * its field list. */
#define FIELD_INFO(slot, key, type) { key, TL_FT_##type },
#define KIND_ROW(e, n, nm, src, flags, list) \
	[TL_KIND_##e] = { nm, TL_SRC_##src, flags, TL_NF_##list, { TL_FIELDS_##list(FIELD_INFO) } },

const struct tl_kind_info tl_kinds[TL_KIND_MAX] = { TL_KINDS(KIND_ROW) };

#define KIND_CHECK(e, n, nm, src, flags, list) \
	_Static_assert(n > 0 && n < TL_KIND_MAX, nm ": number out of range"); \
	_Static_assert(TL_NF_##list <= TL_FIELDS_MAX, nm ": more fields than TL_FIELDS_MAX");
TL_KINDS(KIND_CHECK)

static const char *const source_names[TL_SRC_MAX] = {
	[TL_SRC_API] = "api",
	[TL_SRC_KERNEL] = "kernel",
	[TL_SRC_LOG] = "log",
};

const char *tl_kind_name(enum tl_kind k)
{
	if ((unsigned)k >= TL_KIND_MAX || !tl_kinds[k].name)
		return "unknown";
	return tl_kinds[k].name;
}

enum tl_kind tl_kind_parse(const char *name)
{
	if (!name)
		return TL_KIND_NONE;
	for (unsigned k = 1; k < TL_KIND_MAX; k++)
		if (tl_kinds[k].name && strcmp(tl_kinds[k].name, name) == 0)
			return (enum tl_kind)k;
	return TL_KIND_NONE;
}

int tl_kind_field(enum tl_kind k, const char *name)
{
	if ((unsigned)k >= TL_KIND_MAX || !name)
		return -1;
	for (unsigned i = 0; i < tl_kinds[k].n_fields; i++)
		if (strcmp(tl_kinds[k].fields[i].name, name) == 0)
			return (int)i;
	return -1;
}

const char *tl_container_id_bare(const char *id)
{
	const char *p = id ? strstr(id, "://") : NULL;

	return p ? p + 3 : id;
}

const char *tl_source_name(enum tl_source s)
{
	if ((unsigned)s >= TL_SRC_MAX)
		return "unknown";
	return source_names[s];
}

int tl_source_parse(const char *s, enum tl_source *ret)
{
	for (unsigned i = 0; s && i < TL_SRC_MAX; i++) {
		if (strcmp(s, source_names[i]) == 0) {
			*ret = (enum tl_source)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *tl_signal_result_name(uint32_t result)
{
	/* enum trace_signal_result (include/trace/events/signal.h) */
	static const char *const names[] = { "delivered", "ignored", "pending", "overflow_fail",
					     "lose_info" };

	return result < sizeof(names) / sizeof(names[0]) ? names[result] : "unknown";
}
