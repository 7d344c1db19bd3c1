/*
 * ngx_http_upstream_chash_module: the `chash` balancer, in an upstream block
 * in place of `hash`:
 *
 *     chash KEY [flavor=FLAVOR] [multiple=K] [id=address|apisix]
 *           [bounded_load=F] [subset=VALUE] [the flavor's options];
 *
 * FLAVOR is any of libchash's flavor table (chash_flavor_name: nginx,
 * pingora-v1, pingora-v2, resty, and the other programs' haproxy,
 * ketama-md5, varnish-shard, envoy-ring, envoy-maglev, whose options are
 * the table's too: ngx_chash_flavor_options.c).
 *
 * flavor=nginx (the default) routes exactly as `hash KEY consistent;` of
 * nginx 1.22: the same first peer and the same sequence of peers on retries
 * (one try a ring point, skipping peers already tried, down, failed or at
 * max_conns, smooth weighted round robin among the peers of one server line,
 * round robin after 20 tries, round robin for an empty key or a single peer).
 * The pingora flavors route as pingora-ketama does (IP:port servers only),
 * flavor=resty as resty.chash does (a server's id: its address text, or
 * APISIX's host NUL port with id=apisix); both fail over along the ring's
 * walk over distinct nodes.
 *
 * The ring is built once per configuration load, in init_upstream, which runs
 * in the master (and in `nginx -t`): workers inherit it on fork and only read
 * it, so its pages stay shared copy-on-write. Peer state (fails, conns,
 * weights) is nginx's own round robin state, per worker or in the upstream's
 * `zone`, read and written under nginx's peer lock exactly as `hash` does.
 *
 * The module's body is shared with ngx_stream_upstream_chash_module
 * (ngx_chash_module.h explains how); this file names HTTP's types and calls
 * for it, declares the module and adds what only HTTP has: the chash_status
 * location. libchash is C++; every call to it is through its C API, which
 * never throws.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_chash_core.h"


/* HTTP's names for the body (ngx_chash_module.h) */
#define ngx_chash_proto(name)       ngx_http_ ## name
#define NGX_CHASH_PROTO(name)       NGX_HTTP_ ## name
#define ngx_chash_session_t         ngx_http_request_t
#define ngx_chash_session_pool(r)   (r)->pool
#define NGX_CHASH_LOG_DEBUG         NGX_LOG_DEBUG_HTTP
#define NGX_CHASH_STATUS_ZONE       NGX_CHASH_HTTP_STATUS_ZONE
#define NGX_CHASH_DEFAULT_PORT      80
#define NGX_CHASH_PROTO_NAME        "http"
#define NGX_CHASH_SSL               NGX_HTTP_SSL
/* create and merge location configuration: none */
#define NGX_CHASH_LOCATION_CONF_ENTRIES  , NULL, NULL

#include "ngx_chash_module.h"
#include "ngx_chash_module_peer-inl.h"
#include "ngx_chash_module_conf-inl.h"


static char *ngx_http_upstream_chash_status(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


static ngx_command_t  ngx_http_upstream_chash_commands[] = {

    NGX_CHASH_MODULE_COMMANDS

    { ngx_string("chash_status"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_upstream_chash_status,
      0,
      0,
      NULL },

      ngx_null_command
};


NGX_CHASH_MODULE_DEFINE(ngx_http_upstream_chash_commands);


/* chash_status: GET and HEAD, JSON, or ?format=prometheus */
static ngx_int_t
ngx_http_upstream_chash_status_handler(ngx_http_request_t *r)
{
    ngx_int_t               rc;
    ngx_str_t               format;
    ngx_buf_t              *b;
    ngx_uint_t              prom;
    ngx_chain_t             out;
    ngx_chash_main_conf_t  *mcf;

    static ngx_str_t  stream_zone = ngx_string(NGX_CHASH_STREAM_STATUS_ZONE);

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    prom = ngx_http_arg(r, (u_char *) "format", 6, &format) == NGX_OK
           && format.len == 10
           && ngx_strncmp(format.data, "prometheus", 10) == 0;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_upstream_chash_module);

    /* with the stream module loaded, its snapshot upstreams too */
    b = ngx_chash_status_render(&mcf->status,
                                ngx_chash_status_find((ngx_cycle_t *) ngx_cycle,
                                                      &stream_zone),
                                r->pool, prom);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (prom) {
        ngx_str_set(&r->headers_out.content_type,
                    "text/plain; version=0.0.4");
    } else {
        ngx_str_set(&r->headers_out.content_type, "application/json");
    }

    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


static char *
ngx_http_upstream_chash_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_upstream_chash_status_handler;

    return NGX_CONF_OK;
}
