// SPDX-License-Identifier: Apache-2.0
/* Helpers the verbs share: JSON access, offsets, colours, output files. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cli.h"
#include "findings.h"
#include "json-util.h"

const char *json_str(struct json_object *o, const char *key)
{
	return tl_json_str(o, key);
}

struct json_object *json_path(struct json_object *o, const char *dotted)
{
	char key[128];

	while (o && *dotted) {
		const char *dot = strchr(dotted, '.');
		size_t n = dot ? (size_t)(dot - dotted) : strlen(dotted);
		struct json_object *v;

		if (n >= sizeof(key) || !json_object_is_type(o, json_type_object))
			return NULL;
		memcpy(key, dotted, n);
		key[n] = 0;
		if (!json_object_object_get_ex(o, key, &v))
			return NULL;
		o = v;
		dotted += n + (dot ? 1 : 0);
	}
	return o;
}

int split_ns_name(const char *arg, const char *dflt_ns, char **ret_ns, char **ret_name)
{
	const char *slash = strchr(arg, '/');

	if (slash) {
		if (slash == arg || !slash[1] || strchr(slash + 1, '/'))
			return -EINVAL;
		*ret_ns = strndup(arg, (size_t)(slash - arg));
		*ret_name = strdup(slash + 1);
	} else {
		if (!*arg)
			return -EINVAL;
		*ret_ns = strdup(dflt_ns ? dflt_ns : "default");
		*ret_name = strdup(arg);
	}
	if (!*ret_ns || !*ret_name) {
		free(*ret_ns);
		free(*ret_name);
		return -ENOMEM;
	}
	return 0;
}

void fmt_offset(char *buf, size_t len, int64_t ns)
{
	/* rounded to the millisecond, as the findings' numbers are */
	int64_t ms = (ns < 0 ? -ns + 500000 : ns + 500000) / 1000000;

	snprintf(buf, len, "%c%lld.%03llds", ns < 0 && ms ? '-' : '+', (long long)(ms / 1000),
		 (long long)(ms % 1000));
}

FILE *open_out(const struct cli *cli)
{
	if (!cli->out_file || strcmp(cli->out_file, "-") == 0)
		return stdout;
	return fopen(cli->out_file, "we");
}

int close_out(const struct cli *cli, FILE *f)
{
	int r = 0;

	if (fflush(f) != 0 || ferror(f))
		r = -EIO;
	if (f != stdout && fclose(f) != 0)
		r = -EIO;
	if (r < 0)
		cli_err(cli, "%s: write failed", cli->out_file ? cli->out_file : "stdout");
	return r;
}

const char *col(const struct cli *cli, const char *which)
{
	if (!cli->color)
		return "";
	if (strcmp(which, "red") == 0)
		return "\033[31m";
	if (strcmp(which, "yellow") == 0)
		return "\033[33m";
	if (strcmp(which, "green") == 0)
		return "\033[32m";
	if (strcmp(which, "bold") == 0)
		return "\033[1m";
	if (strcmp(which, "dim") == 0)
		return "\033[2m";
	if (strcmp(which, "cyan") == 0)
		return "\033[36m";
	return "\033[0m";
}

size_t doc_failed_requests(struct json_object *doc)
{
	uint64_t n = 0;

	tl_findings_failed_requests(doc, &n);
	return (size_t)n;
}

int print_json(FILE *f, struct json_object *o)
{
	const char *s = json_object_to_json_string_ext(
	    o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);

	if (!s)
		return -ENOMEM;
	return fprintf(f, "%s\n", s) < 0 ? -EIO : 0;
}

int doc_findings(struct json_object *doc, struct json_object **ret)
{
	return tl_findings_compute(doc, ret);
}

void cli_err(const struct cli *cli, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cli->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
