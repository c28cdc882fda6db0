// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: any bytes as what a peer sends the OTLP exporter (a
 * receiver's answer, protobuf or JSON) and as a timeline document to
 * encode (termline-otlp reads documents it does not control). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "otlp-encode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_tokener *tok;
	struct json_object *doc;
	char msg[64];

	for (int p = 0; p < 2; p++)
		for (int s = 0; s < 2; s++)
			tl_otlp_rejected((enum tl_otlp_protocol)p, (enum tl_otlp_signal)s, (const char *)data,
					 size, msg, sizeof(msg));
	if (size > 1 << 20)
		return 0;
	tok = json_tokener_new_ex(64);
	if (!tok)
		return 0;
	doc = json_tokener_parse_ex(tok, (const char *)data, (int)size);
	json_tokener_free(tok);
	for (int p = 0; doc && p < 2; p++) {
		struct tl_otlp_encode_opts o = {.protocol = (enum tl_otlp_protocol)p, .logs = true,
						.piece_items = 7};
		struct tl_otlp_encoded e = {0};

		if (tl_otlp_encode(doc, &o, &e) == 0) {
			char *body = NULL;
			size_t len = 0;

			if (tl_otlp_body(o.protocol, TL_OTLP_TRACES, e.pieces, e.n_pieces ? 1 : 0, &body,
					 &len) == 0)
				free(body);
			tl_otlp_encoded_done(&e);
		}
	}
	json_object_put(doc);
	return 0;
}
