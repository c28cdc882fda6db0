/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: an exec credential plugin's output, which the plugin fully
 * controls. A credential accepted must be one that can go into a header;
 * a rejection says why in one line. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tl_kube_creds c = { 0 };
	char msg[256] = "", *s = malloc(size + 1);
	int r;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	r = tl_kube_exec_credential_parse(s, &c, msg, sizeof(msg));
	if (r == 0) {
		if (!c.token && !(c.cert_pem && c.key_pem))
			abort();
		if (c.token && !tl_kube_token_ok(c.token))
			abort();
	} else if (r != -EINVAL && r != -ENOMEM) {
		abort();
	} else if (!msg[0] && r == -EINVAL) {
		abort();
	}
	free(c.token);
	free(c.cert_pem);
	free(c.key_pem);
	free(s);
	return 0;
}
