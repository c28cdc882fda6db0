// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: any bytes as a timeline document through the finding rules
 * (documents come from agents and state dirs the CLI does not control). */
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "findings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object *f = NULL;

	if (tl_findings_from_text((const char *)data, size, &f) == 0)
		json_object_put(f);
	return 0;
}
