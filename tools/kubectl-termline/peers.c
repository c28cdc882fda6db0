// SPDX-License-Identifier: Apache-2.0
/* Who the peers were: a document's peer addresses resolved against the API
 * server (daemon/kube/kube-peers.h) before its findings are computed, so
 * that explain and rollout name the consumers (docs/cli.md). One resolver
 * and one source for the whole command: a rollout's many timelines share
 * the cache. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "findings.h"
#include "findings-consumers.h"
#include "kube-peers.h"

static struct source *peer_src;
static struct tl_peers *peers;
static bool peers_off;
static struct json_object *rollout_agg;
/* The source keeps a pointer to its cli: the API's copy lives as long. */
static struct cli peer_cli;

static int api_get(void *ud, const char *path, struct json_object **ret)
{
	struct src_err e = {0};

	return source_api_get(ud, path, ret, &e);
}

static void peers_done(void)
{
	tl_peers_free(peers);
	source_free(peer_src);
	json_object_put(rollout_agg);
}

int resolve_peers(const struct cli *cli, struct json_object *doc)
{
	struct src_err e = {0};
	int r;

	/* --no-resolve; --from without a kubeconfig named: no API server */
	if (peers_off || cli->no_resolve || (cli->from && !cli->kubeconfig))
		return 0;
	if (!peers) {
		struct tl_peers_config cfg = { .get = api_get };

		peer_cli = *cli;
		peer_cli.from = NULL;
		r = source_open(&peer_cli, &peer_src, &e);
		if (r == 0) {
			cfg.userdata = peer_src;
			r = tl_peers_new(&cfg, &peers);
		}
		if (r < 0) {
			cli_err(cli, "peers not resolved: %s", e.msg[0] ? e.msg : strerror(-r));
			peers_off = true;
			source_free(peer_src);
			peer_src = NULL;
			return 0;
		}
		atexit(peers_done);
	}
	r = tl_peers_annotate(peers, doc);
	return r < 0 && r != -EINVAL ? r : 0;
}

void rollout_consumers_add(struct json_object *findings)
{
	if (!rollout_agg)
		rollout_agg = json_object_new_object();
	if (rollout_agg)
		(void)tl_consumers_rollout_add(rollout_agg, findings);
}

struct json_object *rollout_consumers(void)
{
	return rollout_agg ? tl_consumers_rollout_done(rollout_agg) : json_object_new_array();
}
