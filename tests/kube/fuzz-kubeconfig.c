/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: kubeconfig parsing (YAML, keys, base64 data). Loading never
 * runs exec plugins, so arbitrary input is safe to feed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	struct tl_kubeconfig *kc = NULL;
	char err[512];
	FILE *f;

	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/fuzz-kubeconfig-%d", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	if (tl_kubeconfig_load(path, &kc, err, sizeof(err)) == 0) {
		if (!kc->server || strncmp(kc->server, "http", 4) != 0)
			abort();
		tl_kubeconfig_free(kc);
	} else {
		/* every failure is one line naming the file, with no control
		 * byte of the input echoed into it */
		if (strncmp(err, "kubeconfig ", 11) != 0)
			abort();
		for (const unsigned char *p = (const unsigned char *)err; *p; p++)
			if (*p < 0x20 || *p == 0x7f)
				abort();
	}
	return 0;
}
