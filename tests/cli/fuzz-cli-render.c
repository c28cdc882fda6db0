// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: any bytes as a timeline document through what the CLI makes
 * of one for people: escaped for the terminal, the verdict, the fix, the
 * SVG picture and the Perfetto trace (documents come from agents and state
 * dirs the CLI does not control). */
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "cli.h"
#include "findings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct cli cli = {.prog = "fuzz", .width = 80, .utf8 = true, .output = "svg"};
	struct json_tokener *tok = json_tokener_new();
	struct json_object *doc, *fs = NULL;
	FILE *null = fopen("/dev/null", "w");
	struct tl_model m;
	struct verdict v;

	if (!tok || !null)
		goto out;
	doc = json_tokener_parse_ex(tok, (const char *)data, (int)(size > INT32_MAX ? 0 : size));
	if (!doc || doc_escape(doc) < 0 || doc_findings(doc, &fs) < 0)
		goto done;
	if (tl_model_build(doc, &m) == 0) {
		verdict_build(&cli, &m, fs, &v);
		verdict_print_fix(&cli, null, &m, &v);
	}
	tl_model_done(&m);
	render_svg(&cli, null, doc);
	render_trace(null, doc);
done:
	json_object_put(fs);
	json_object_put(doc);
out:
	if (tok)
		json_tokener_free(tok);
	if (null)
		fclose(null);
	return 0;
}
