/*
 * ngx_stream_upstream_chash_module: the `chash` balancer for stream (TCP and
 * UDP) upstreams, in a `stream { upstream {} }` block in place of `hash`:
 *
 *     chash KEY [flavor=FLAVOR] [multiple=K] [id=address|apisix]
 *           [bounded_load=F] [subset=VALUE] [the flavor's options];
 *
 * FLAVOR is any of libchash's flavor table (chash_flavor_name: nginx,
 * pingora-v1, pingora-v2, resty, and the other programs' haproxy,
 * ketama-md5, varnish-shard, envoy-ring, envoy-maglev, whose options are
 * the table's too: ngx_chash_flavor_options.c).
 *     chash_snapshot FILE ...;     chash_migrate FILE rollout=VALUE ...;
 *
 * The stream twin of ngx_http_upstream_chash_module, and the same code: the
 * module's body (ngx_chash_module.h, ngx_chash_module_peer-inl.h,
 * ngx_chash_module_conf-inl.h) is written once over the names this file gives
 * it, stream's ngx_stream_upstream_rr_* peers and ngx_stream_session_t, and
 * the ring, the walks, the snapshots and the policy are ngx_chash_core's.
 *
 * flavor=nginx (the default) routes exactly as stream's `hash KEY
 * consistent;` of nginx 1.22 (src/stream/ngx_stream_upstream_hash_module.c),
 * whose consistent balancer is, rule for rule, the HTTP one. What differs is
 * nginx's plumbing, named below: a session's pool instead of a request's,
 * stream's debug log, the status zone's name, and servers that must carry a
 * port (nginx's own stream `server` refuses the others; so does a stream
 * snapshot's node, NGX_CHASH_DEFAULT_PORT 0).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_stream.h>

#include "ngx_chash_core.h"


/* stream's names for the body (ngx_chash_module.h) */
#define ngx_chash_proto(name)       ngx_stream_ ## name
#define NGX_CHASH_PROTO(name)       NGX_STREAM_ ## name
#define ngx_chash_session_t         ngx_stream_session_t
#define ngx_chash_session_pool(s)   (s)->connection->pool
#define NGX_CHASH_LOG_DEBUG         NGX_LOG_DEBUG_STREAM
#define NGX_CHASH_STATUS_ZONE       NGX_CHASH_STREAM_STATUS_ZONE
#define NGX_CHASH_DEFAULT_PORT      0
#define NGX_CHASH_PROTO_NAME        "stream"
#define NGX_CHASH_SSL               NGX_STREAM_SSL
#define NGX_CHASH_LOCATION_CONF_ENTRIES  /* stream has no locations */

#include "ngx_chash_module.h"
#include "ngx_chash_module_peer-inl.h"
#include "ngx_chash_module_conf-inl.h"


static ngx_command_t  ngx_stream_upstream_chash_commands[] = {

    NGX_CHASH_MODULE_COMMANDS

      ngx_null_command
};


NGX_CHASH_MODULE_DEFINE(ngx_stream_upstream_chash_commands);
