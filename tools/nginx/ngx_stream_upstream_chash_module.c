/*
 * ngx_stream_upstream_chash_module: the `chash` balancer for stream (TCP and
 * UDP) upstreams, in a `stream { upstream {} }` block in place of `hash`:
 *
 *     chash KEY [flavor=nginx|pingora-v1|pingora-v2] [multiple=K]
 *           [bounded_load=F];
 *
 * The stream twin of ngx_http_upstream_chash_module: the ring, the node map
 * and the peer walks are ngx_chash_core's, shared with the HTTP module; this
 * file only adapts ngx_stream_upstream_rr_* peers to the core.
 *
 * flavor=nginx (the default) routes exactly as stream's `hash KEY
 * consistent;` of nginx 1.22 (src/stream/ngx_stream_upstream_hash_module.c),
 * whose consistent balancer is, rule for rule, the HTTP one: the same first
 * peer and the same sequence of peers on every retry of proxy_next_upstream
 * (one try a ring point, skipping peers already tried, down, failed or at
 * max_conns, smooth weighted round robin among the peers of one server line,
 * round robin after 20 tries, round robin for an empty key or a single peer).
 * What differs is nginx's plumbing, not the rules: a session's pool instead
 * of a request's, no keepalive cache (pc->cached), and server lines that
 * must carry a port (nginx's own stream `server` refuses the others).
 * The pingora flavours route as pingora-ketama does (IP:port servers only)
 * and fail over along the ring's walk over distinct nodes.
 *
 * The ring is built once per configuration load, in init_upstream, which runs
 * in the master (and in `nginx -t`): workers inherit it on fork and only read
 * it, so its pages stay shared copy-on-write. Peer state (fails, conns,
 * weights) is nginx's own round robin state, per worker or in the upstream's
 * `zone`, read and written under nginx's peer lock exactly as `hash` does.
 *
 * libchash is C++; every call below is through its C API, which never throws.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_stream.h>

#include "ngx_chash_core.h"


typedef struct {
    ngx_stream_complex_value_t        key;
    ngx_uint_t                        flavor;      /* chash_flavor */
    ngx_uint_t                        multiple;    /* 0: the flavour's own */
    double                            bounded_load;   /* 0: off */

    chash_ring                       *ring;        /* freed with the cycle */
    ngx_chash_nodes_t                 nodes;

    /*
     * peer[i] is the i-th peer of the list `mapped`. The list is the one
     * init_round_robin made, or the copy a `zone` made of it in shared memory
     * after init_upstream ran: a process remaps on its first session.
     */
    ngx_stream_upstream_rr_peers_t   *mapped;
    ngx_stream_upstream_rr_peer_t   **peer;

    ngx_str_t                         ring_id;     /* $chash_ring */
} ngx_stream_upstream_chash_srv_conf_t;


typedef struct {
    /* the round robin data must be first: round robin's get and free use it */
    ngx_stream_upstream_rr_peer_data_t     rrp;
    ngx_stream_upstream_chash_srv_conf_t  *conf;
    ngx_str_t                              key;
    ngx_chash_walk_t                       walk;
} ngx_stream_upstream_chash_peer_data_t;


static ngx_int_t ngx_stream_upstream_chash_init(ngx_conf_t *cf,
    ngx_stream_upstream_srv_conf_t *us);
static ngx_int_t ngx_stream_upstream_chash_init_peer(ngx_stream_session_t *s,
    ngx_stream_upstream_srv_conf_t *us);
static ngx_int_t ngx_stream_upstream_chash_get(ngx_peer_connection_t *pc,
    void *data);
static ngx_int_t ngx_stream_upstream_chash_add_variables(ngx_conf_t *cf);
static void *ngx_stream_upstream_chash_create_conf(ngx_conf_t *cf);
static char *ngx_stream_upstream_chash(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


static ngx_command_t  ngx_stream_upstream_chash_commands[] = {

    { ngx_string("chash"),
      NGX_STREAM_UPS_CONF|NGX_CONF_1MORE,
      ngx_stream_upstream_chash,
      NGX_STREAM_SRV_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_stream_module_t  ngx_stream_upstream_chash_module_ctx = {
    ngx_stream_upstream_chash_add_variables, /* preconfiguration */
    NULL,                                    /* postconfiguration */

    NULL,                                    /* create main configuration */
    NULL,                                    /* init main configuration */

    ngx_stream_upstream_chash_create_conf,   /* create server configuration */
    NULL                                     /* merge server configuration */
};


ngx_module_t  ngx_stream_upstream_chash_module = {
    NGX_MODULE_V1,
    &ngx_stream_upstream_chash_module_ctx,   /* module context */
    ngx_stream_upstream_chash_commands,      /* module directives */
    NGX_STREAM_MODULE,                       /* module type */
    NULL,                                    /* init master */
    NULL,                                    /* init module */
    NULL,                                    /* init process */
    NULL,                                    /* init thread */
    NULL,                                    /* exit thread */
    NULL,                                    /* exit process */
    NULL,                                    /* exit master */
    NGX_MODULE_V1_PADDING
};


/* Peer list order: nginx's `tried` bitmap is indexed by it. */
static ngx_int_t
ngx_stream_upstream_chash_map_peers(ngx_stream_upstream_chash_srv_conf_t *ccf,
    ngx_stream_upstream_rr_peers_t *peers, ngx_log_t *log)
{
    ngx_uint_t                      i;
    ngx_stream_upstream_rr_peer_t  *peer;

    for (peer = peers->peer, i = 0; peer; peer = peer->next, i++) {
        if (i == ccf->nodes.npeers) {
            break;
        }

        ccf->peer[i] = peer;
    }

    if (i != ccf->nodes.npeers || peer != NULL) {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "chash: upstream \"%V\" has %ui peers, not %ui",
                      peers->name, i, ccf->nodes.npeers);
        return NGX_ERROR;
    }

    ccf->mapped = peers;

    return NGX_OK;
}


static ngx_int_t
ngx_stream_upstream_chash_init(ngx_conf_t *cf,
    ngx_stream_upstream_srv_conf_t *us)
{
    ngx_uint_t                              i, n, *weights;
    ngx_str_t                             **texts;
    ngx_stream_upstream_rr_peers_t         *peers;
    ngx_stream_upstream_chash_srv_conf_t   *ccf;

    if (ngx_stream_upstream_init_round_robin(cf, us) != NGX_OK) {
        return NGX_ERROR;
    }

    us->peer.init = ngx_stream_upstream_chash_init_peer;

    ccf = ngx_stream_conf_upstream_srv_conf(us,
                                            ngx_stream_upstream_chash_module);
    peers = us->peer.data;

    n = peers->number;
    ccf->nodes.npeers = n;
    ccf->peer = ngx_palloc(cf->pool,
                           n * sizeof(ngx_stream_upstream_rr_peer_t *));
    texts = ngx_palloc(cf->temp_pool, n * sizeof(ngx_str_t *));
    weights = ngx_palloc(cf->temp_pool, n * sizeof(ngx_uint_t));
    if (ccf->peer == NULL || texts == NULL || weights == NULL) {
        return NGX_ERROR;
    }

    if (ngx_stream_upstream_chash_map_peers(ccf, peers, cf->log) != NGX_OK) {
        return NGX_ERROR;
    }

    for (i = 0; i < n; i++) {
        texts[i] = &ccf->peer[i]->server;
        weights[i] = (ngx_uint_t) ccf->peer[i]->weight;
    }

    return ngx_chash_build_from_servers(cf, &us->host, ccf->flavor,
                                        ccf->multiple, texts, weights, n,
                                        &ccf->nodes, &ccf->ring,
                                        &ccf->ring_id);
}


static ngx_int_t
ngx_stream_upstream_chash_init_peer(ngx_stream_session_t *s,
    ngx_stream_upstream_srv_conf_t *us)
{
    ngx_stream_upstream_chash_srv_conf_t   *ccf;
    ngx_stream_upstream_chash_peer_data_t  *hp;

    hp = ngx_palloc(s->connection->pool,
                    sizeof(ngx_stream_upstream_chash_peer_data_t));
    if (hp == NULL) {
        return NGX_ERROR;
    }

    s->upstream->peer.data = &hp->rrp;

    if (ngx_stream_upstream_init_round_robin_peer(s, us) != NGX_OK) {
        return NGX_ERROR;
    }

    ccf = ngx_stream_conf_upstream_srv_conf(us,
                                            ngx_stream_upstream_chash_module);

    if (ngx_stream_complex_value(s, &ccf->key, &hp->key) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_STREAM, s->connection->log, 0,
                   "upstream chash key:\"%V\"", &hp->key);

    hp->conf = ccf;

    s->upstream->peer.get = ngx_stream_upstream_chash_get;

    if (ngx_chash_walk_init(&hp->walk, ccf->flavor, ccf->ring, &hp->key,
                            s->connection->pool)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    hp->walk.bounded_load = ccf->bounded_load;

    return NGX_OK;
}


static ngx_uint_t
ngx_stream_upstream_chash_usable(void *data, ngx_uint_t i, time_t now)
{
    ngx_stream_upstream_chash_peer_data_t  *hp = data;

    ngx_stream_upstream_rr_peer_t  *peer;

    if (ngx_chash_tried(hp->rrp.tried, i)) {
        return 0;
    }

    peer = hp->conf->peer[i];

    if (peer->down) {
        return 0;
    }

    if (peer->max_fails
        && peer->fails >= peer->max_fails
        && now - peer->checked <= peer->fail_timeout)
    {
        return 0;
    }

    if (peer->max_conns && peer->conns >= peer->max_conns) {
        return 0;
    }

    return 1;
}


static void
ngx_stream_upstream_chash_weights(void *data, ngx_uint_t i, ngx_int_t **current,
    ngx_int_t **effective, ngx_int_t *weight)
{
    ngx_stream_upstream_chash_peer_data_t  *hp = data;

    ngx_stream_upstream_rr_peer_t  *peer;

    peer = hp->conf->peer[i];

    *current = &peer->current_weight;
    *effective = &peer->effective_weight;
    *weight = peer->weight;
}


static ngx_uint_t
ngx_stream_upstream_chash_conns(void *data, ngx_uint_t i)
{
    ngx_stream_upstream_chash_peer_data_t  *hp = data;

    return hp->conf->peer[i]->conns;
}


static const ngx_chash_peer_ops_t  ngx_stream_upstream_chash_peer_ops = {
    ngx_stream_upstream_chash_usable,
    ngx_stream_upstream_chash_weights,
    ngx_stream_upstream_chash_conns
};


/*
 * One try: the core's pick over this upstream's peers, then nginx's round
 * robin bookkeeping for the peer chosen, as `hash` does. nginx flavour: round
 * robin for a single peer, an empty key, or past 20 ring tries; pingora:
 * NGX_BUSY when the walk has visited every node.
 */
static ngx_int_t
ngx_stream_upstream_chash_get(ngx_peer_connection_t *pc, void *data)
{
    ngx_stream_upstream_chash_peer_data_t  *hp = data;

    time_t                                 now;
    ngx_int_t                              i;
    ngx_stream_upstream_rr_peer_t         *peer;
    ngx_stream_upstream_rr_peers_t        *peers;
    ngx_stream_upstream_chash_srv_conf_t  *ccf;

    ngx_log_debug1(NGX_LOG_DEBUG_STREAM, pc->log, 0,
                   "get chash peer, try: %ui", pc->tries);

    peers = hp->rrp.peers;
    ccf = hp->conf;

    ngx_stream_upstream_rr_peers_wlock(peers);

    if (ccf->flavor == CHASH_FLAVOR_NGINX
        && (peers->single || hp->key.len == 0))
    {
        ngx_stream_upstream_rr_peers_unlock(peers);
        return ngx_stream_upstream_get_round_robin_peer(pc, &hp->rrp);
    }

    if (ccf->mapped != peers
        && ngx_stream_upstream_chash_map_peers(ccf, peers, pc->log) != NGX_OK)
    {
        ngx_stream_upstream_rr_peers_unlock(peers);
        return NGX_ERROR;
    }

    pc->connection = NULL;

    now = ngx_time();

    i = ngx_chash_pick(&hp->walk, &ccf->nodes,
                       &ngx_stream_upstream_chash_peer_ops, hp, now, pc->log);

    if (i == NGX_CHASH_FALLBACK) {
        ngx_stream_upstream_rr_peers_unlock(peers);
        return ngx_stream_upstream_get_round_robin_peer(pc, &hp->rrp);
    }

    if (i == NGX_CHASH_EXHAUSTED) {
        pc->name = peers->name;
        ngx_stream_upstream_rr_peers_unlock(peers);
        return NGX_BUSY;
    }

    peer = ccf->peer[i];

    hp->rrp.current = peer;

    pc->sockaddr = peer->sockaddr;
    pc->socklen = peer->socklen;
    pc->name = &peer->name;

    peer->conns++;

    if (now - peer->checked > peer->fail_timeout) {
        peer->checked = now;
    }

    ngx_stream_upstream_rr_peers_unlock(peers);

    ngx_chash_set_tried(hp->rrp.tried, (ngx_uint_t) i);

    return NGX_OK;
}


static ngx_int_t
ngx_stream_upstream_chash_ring_variable(ngx_stream_session_t *s,
    ngx_stream_variable_value_t *v, uintptr_t data)
{
    ngx_stream_upstream_srv_conf_t        *uscf;
    ngx_stream_upstream_chash_srv_conf_t  *ccf;

    if (s->upstream == NULL
        || s->upstream->upstream == NULL
        || s->upstream->upstream->srv_conf == NULL)
    {
        v->not_found = 1;
        return NGX_OK;
    }

    uscf = s->upstream->upstream;
    ccf = ngx_stream_conf_upstream_srv_conf(uscf,
                                            ngx_stream_upstream_chash_module);

    if (ccf == NULL || ccf->ring == NULL
        || uscf->peer.init != ngx_stream_upstream_chash_init_peer)
    {
        v->not_found = 1;
        return NGX_OK;
    }

    v->len = ccf->ring_id.len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->data = ccf->ring_id.data;

    return NGX_OK;
}


static ngx_int_t
ngx_stream_upstream_chash_add_variables(ngx_conf_t *cf)
{
    ngx_stream_variable_t  *var;
    static ngx_str_t        name = ngx_string("chash_ring");

    var = ngx_stream_add_variable(cf, &name, NGX_STREAM_VAR_NOCACHEABLE);
    if (var == NULL) {
        return NGX_ERROR;
    }

    var->get_handler = ngx_stream_upstream_chash_ring_variable;

    return NGX_OK;
}


static void *
ngx_stream_upstream_chash_create_conf(ngx_conf_t *cf)
{
    ngx_stream_upstream_chash_srv_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_stream_upstream_chash_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->flavor = NGX_CONF_UNSET_UINT;

    return conf;
}


static char *
ngx_stream_upstream_chash(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_stream_upstream_chash_srv_conf_t  *ccf = conf;

    ngx_int_t                            multiple;
    ngx_str_t                           *value, s;
    ngx_uint_t                           i, f;
    ngx_stream_upstream_srv_conf_t      *uscf;
    ngx_stream_compile_complex_value_t   ccv;

    if (ccf->flavor != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    ngx_memzero(&ccv, sizeof(ngx_stream_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = &value[1];
    ccv.complex_value = &ccf->key;

    if (ngx_stream_compile_complex_value(&ccv) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    ccf->flavor = CHASH_FLAVOR_NGINX;
    ccf->multiple = 0;
    multiple = 0;

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "flavor=", 7) == 0) {
            s.data = value[i].data + 7;
            s.len = value[i].len - 7;

            for (f = 0; f < 3; f++) {
                if (s.len == ngx_strlen(ngx_chash_flavors[f])
                    && ngx_strncmp(s.data, ngx_chash_flavors[f],
                                   s.len) == 0)
                {
                    break;
                }
            }

            if (f == 3) {
                goto invalid;
            }

            ccf->flavor = f;
            continue;
        }

        if (ngx_strncmp(value[i].data, "bounded_load=", 13) == 0) {
            s.data = value[i].data + 13;
            s.len = value[i].len - 13;

            if (ngx_chash_parse_bounded_load(&s, &ccf->bounded_load)
                != NGX_OK)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\": "
                                   "bounded_load= takes a factor over 1, "
                                   "such as 1.25", &value[i]);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "multiple=", 9) == 0) {
            multiple = ngx_atoi(value[i].data + 9, value[i].len - 9);

            if (multiple == NGX_ERROR || multiple == 0
                || multiple > 0xffffffff)
            {
                goto invalid;
            }

            continue;
        }

        goto invalid;
    }

    if (multiple) {
        if (ccf->flavor != CHASH_FLAVOR_PINGORA_V2) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"multiple=\" is for flavor=pingora-v2 only "
                               "(nginx and pingora-v1 rings have 160 points "
                               "a weight unit)");
            return NGX_CONF_ERROR;
        }

        ccf->multiple = multiple;
    }

    uscf = ngx_stream_conf_get_module_srv_conf(cf, ngx_stream_upstream_module);

    if (uscf->peer.init_upstream) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "load balancing method redefined");
    }

    /* as `hash`: no backup servers */
    uscf->flags = NGX_STREAM_UPSTREAM_CREATE
                  |NGX_STREAM_UPSTREAM_WEIGHT
                  |NGX_STREAM_UPSTREAM_MAX_CONNS
                  |NGX_STREAM_UPSTREAM_MAX_FAILS
                  |NGX_STREAM_UPSTREAM_FAIL_TIMEOUT
                  |NGX_STREAM_UPSTREAM_DOWN;

    uscf->peer.init_upstream = ngx_stream_upstream_chash_init;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\"", &value[i]);

    return NGX_CONF_ERROR;
}
