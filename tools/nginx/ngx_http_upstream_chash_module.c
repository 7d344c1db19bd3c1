/*
 * ngx_http_upstream_chash_module: the `chash` balancer, in an upstream block
 * in place of `hash`:
 *
 *     chash KEY [flavor=nginx|pingora-v1|pingora-v2] [multiple=K];
 *
 * flavor=nginx (the default) routes exactly as `hash KEY consistent;` of
 * nginx 1.22: the same first peer and the same sequence of peers on retries
 * (one try a ring point, skipping peers already tried, down, failed or at
 * max_conns, smooth weighted round robin among the peers of one server line,
 * round robin after 20 tries, round robin for an empty key or a single peer).
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
#include <ngx_http.h>

#include <time.h>

#include <chash/chash_c.h>


/* nginx's hash balancer gives up on the ring after this many tries. */
#define NGX_CHASH_MAX_TRIES  20


typedef struct {
    ngx_http_complex_value_t        key;
    ngx_uint_t                      flavor;      /* chash_flavor */
    ngx_uint_t                      multiple;    /* 0: the flavour's own */

    chash_ring                     *ring;        /* freed with the cycle */

    /*
     * Ring node k owns the peers node_peers[node_first[k] ..
     * node_first[k + 1] - 1] (indices in the peer list, ascending). nginx
     * flavour: one node per distinct server text (a name that resolves to N
     * addresses is N peers of one node); pingora: one node per peer.
     */
    ngx_uint_t                      nnodes;
    ngx_uint_t                      npeers;
    ngx_uint_t                     *node_first;
    ngx_uint_t                     *node_peers;

    /*
     * peer[i] is the i-th peer of the list `mapped`. The list is the one
     * init_round_robin made, or the copy a `zone` made of it in shared memory
     * after init_upstream ran: a process remaps on its first request.
     */
    ngx_http_upstream_rr_peers_t   *mapped;
    ngx_http_upstream_rr_peer_t   **peer;

    ngx_str_t                       ring_id;     /* $chash_ring */
} ngx_http_upstream_chash_srv_conf_t;


typedef struct {
    /* the round robin data must be first: round robin's get and free use it */
    ngx_http_upstream_rr_peer_data_t     rrp;
    ngx_http_upstream_chash_srv_conf_t  *conf;
    ngx_str_t                            key;
    ngx_uint_t                           tries;
    uint32_t                             node;     /* nginx: current point's */
    chash_cursor                         cursor;   /* nginx: next point */
    chash_distinct_walk                 *walk;     /* pingora: 8 KiB */
    ngx_event_get_peer_pt                get_rr_peer;
} ngx_http_upstream_chash_peer_data_t;


static ngx_int_t ngx_http_upstream_chash_init(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_upstream_chash_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_upstream_chash_get_nginx(ngx_peer_connection_t *pc,
    void *data);
static ngx_int_t ngx_http_upstream_chash_get_pingora(
    ngx_peer_connection_t *pc, void *data);
static ngx_int_t ngx_http_upstream_chash_add_variables(ngx_conf_t *cf);
static void *ngx_http_upstream_chash_create_conf(ngx_conf_t *cf);
static char *ngx_http_upstream_chash(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


static ngx_command_t  ngx_http_upstream_chash_commands[] = {

    { ngx_string("chash"),
      NGX_HTTP_UPS_CONF|NGX_CONF_TAKE123,
      ngx_http_upstream_chash,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_upstream_chash_module_ctx = {
    ngx_http_upstream_chash_add_variables, /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    ngx_http_upstream_chash_create_conf,   /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_upstream_chash_module = {
    NGX_MODULE_V1,
    &ngx_http_upstream_chash_module_ctx,   /* module context */
    ngx_http_upstream_chash_commands,      /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static const char  *ngx_http_upstream_chash_flavors[] = {
    "nginx", "pingora-v1", "pingora-v2"
};


/* Peer list order: nginx's `tried` bitmap is indexed by it. */
static ngx_int_t
ngx_http_upstream_chash_map_peers(ngx_http_upstream_chash_srv_conf_t *ccf,
    ngx_http_upstream_rr_peers_t *peers, ngx_log_t *log)
{
    ngx_uint_t                    i;
    ngx_http_upstream_rr_peer_t  *peer;

    for (peer = peers->peer, i = 0; peer; peer = peer->next, i++) {
        if (i == ccf->npeers) {
            break;
        }

        ccf->peer[i] = peer;
    }

    if (i != ccf->npeers || peer != NULL) {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "chash: upstream \"%V\" has %ui peers, not %ui",
                      peers->name, i, ccf->npeers);
        return NGX_ERROR;
    }

    ccf->mapped = peers;

    return NGX_OK;
}


typedef struct {
    ngx_str_t   *server;
    ngx_uint_t   index;      /* in the peer list */
} ngx_http_upstream_chash_text_t;


typedef struct {
    ngx_uint_t   start;      /* in the sorted texts */
    ngx_uint_t   end;
    ngx_uint_t   index;      /* the run's first peer */
} ngx_http_upstream_chash_run_t;


static int ngx_libc_cdecl
ngx_http_upstream_chash_cmp_text(const void *one, const void *two)
{
    const ngx_http_upstream_chash_text_t  *a = one, *b = two;

    int  rc;

    rc = ngx_memcmp(a->server->data, b->server->data,
                    ngx_min(a->server->len, b->server->len));

    if (rc != 0) {
        return rc < 0 ? -1 : 1;
    }

    if (a->server->len != b->server->len) {
        return a->server->len < b->server->len ? -1 : 1;
    }

    return a->index < b->index ? -1 : (a->index > b->index);
}


static int ngx_libc_cdecl
ngx_http_upstream_chash_cmp_run(const void *one, const void *two)
{
    const ngx_http_upstream_chash_run_t  *a = one, *b = two;

    return a->index < b->index ? -1 : (a->index > b->index);
}


static ngx_int_t
ngx_http_upstream_chash_add(ngx_conf_t *cf,
    ngx_http_upstream_chash_srv_conf_t *ccf, chash_builder *b,
    ngx_str_t *server, ngx_uint_t weight)
{
    if (chash_builder_add(b, (const char *) server->data, server->len,
                          (uint32_t) weight)
        != CHASH_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "chash flavor=%s: server \"%V\": %s",
                           ngx_http_upstream_chash_flavors[ccf->flavor],
                           server, chash_builder_error(b));
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * Nodes of the nginx flavour: peers with one server text share one chain of
 * points in nginx (the chain of the largest weight among them, since the
 * chain of weight w is a prefix of the chain of any larger weight), and
 * nginx picks among them by server text. Node ids follow the first peer of
 * each text, so chash's "first listed wins" tie-break is nginx's.
 * Returns NGX_OK, NGX_ERROR (no memory) or NGX_DECLINED (logged).
 */
static ngx_int_t
ngx_http_upstream_chash_group(ngx_conf_t *cf,
    ngx_http_upstream_chash_srv_conf_t *ccf, chash_builder *b)
{
    ngx_int_t                        rc;
    ngx_uint_t                       i, j, k, n, weight, nruns;
    ngx_http_upstream_chash_run_t   *runs;
    ngx_http_upstream_chash_text_t  *text;

    n = ccf->npeers;

    text = ngx_alloc(n * sizeof(ngx_http_upstream_chash_text_t), cf->log);
    runs = ngx_alloc(n * sizeof(ngx_http_upstream_chash_run_t), cf->log);

    if (text == NULL || runs == NULL) {
        rc = NGX_ERROR;
        goto done;
    }

    for (i = 0; i < n; i++) {
        text[i].server = &ccf->peer[i]->server;
        text[i].index = i;
    }

    ngx_qsort(text, n, sizeof(ngx_http_upstream_chash_text_t),
              ngx_http_upstream_chash_cmp_text);

    nruns = 0;

    for (i = 0; i < n; i = j) {
        for (j = i + 1; j < n; j++) {
            if (text[j].server->len != text[i].server->len
                || ngx_memcmp(text[j].server->data, text[i].server->data,
                              text[i].server->len) != 0)
            {
                break;
            }
        }

        runs[nruns].start = i;
        runs[nruns].end = j;
        runs[nruns].index = text[i].index;    /* smallest: sorted by index */
        nruns++;
    }

    ngx_qsort(runs, nruns, sizeof(ngx_http_upstream_chash_run_t),
              ngx_http_upstream_chash_cmp_run);

    ccf->nnodes = nruns;
    ccf->node_first = ngx_palloc(cf->pool, (nruns + 1) * sizeof(ngx_uint_t));
    ccf->node_peers = ngx_palloc(cf->pool, n * sizeof(ngx_uint_t));

    if (ccf->node_first == NULL || ccf->node_peers == NULL) {
        rc = NGX_ERROR;
        goto done;
    }

    rc = NGX_OK;

    for (k = 0, j = 0; k < nruns; k++) {
        ccf->node_first[k] = j;
        weight = 0;

        for (i = runs[k].start; i < runs[k].end; i++) {
            ccf->node_peers[j++] = text[i].index;
            weight = ngx_max(weight,
                             (ngx_uint_t) ccf->peer[text[i].index]->weight);
        }

        rc = ngx_http_upstream_chash_add(cf, ccf, b,
                                         text[runs[k].start].server, weight);
        if (rc != NGX_OK) {
            goto done;
        }
    }

    ccf->node_first[nruns] = j;

done:

    if (text) {
        ngx_free(text);
    }

    if (runs) {
        ngx_free(runs);
    }

    return rc;
}


static ngx_int_t
ngx_http_upstream_chash_one_per_peer(ngx_conf_t *cf,
    ngx_http_upstream_chash_srv_conf_t *ccf, chash_builder *b)
{
    ngx_uint_t   i, n;
    ngx_str_t   *server;

    n = ccf->npeers;

    ccf->nnodes = n;
    ccf->node_first = ngx_palloc(cf->pool, (n + 1) * sizeof(ngx_uint_t));
    ccf->node_peers = ngx_palloc(cf->pool, n * sizeof(ngx_uint_t));

    if (ccf->node_first == NULL || ccf->node_peers == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < n; i++) {
        ccf->node_first[i] = i;
        ccf->node_peers[i] = i;

        /* the builder refuses anything but IP:port: one peer a line */
        server = &ccf->peer[i]->server;

        if (ngx_http_upstream_chash_add(cf, ccf, b, server,
                                        ccf->peer[i]->weight)
            != NGX_OK)
        {
            return NGX_DECLINED;
        }
    }

    ccf->node_first[n] = n;

    return NGX_OK;
}


static void
ngx_http_upstream_chash_cleanup(void *data)
{
    ngx_http_upstream_chash_srv_conf_t  *ccf = data;

    chash_ring_free(ccf->ring);
    ccf->ring = NULL;
}


static uint64_t
ngx_http_upstream_chash_usec(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}


static ngx_int_t
ngx_http_upstream_chash_init(ngx_conf_t *cf, ngx_http_upstream_srv_conf_t *us)
{
    int                                  rc;
    uint8_t                              fingerprint[CHASH_FINGERPRINT_SIZE];
    uint64_t                             start, build_us;
    ngx_int_t                            grc;
    chash_builder                       *b;
    ngx_pool_cleanup_t                  *cln;
    chash_memory_usage                   mem;
    ngx_http_upstream_rr_peers_t        *peers;
    ngx_http_upstream_chash_srv_conf_t  *ccf;

    if (ngx_http_upstream_init_round_robin(cf, us) != NGX_OK) {
        return NGX_ERROR;
    }

    us->peer.init = ngx_http_upstream_chash_init_peer;

    ccf = ngx_http_conf_upstream_srv_conf(us, ngx_http_upstream_chash_module);
    peers = us->peer.data;

    ccf->npeers = peers->number;
    ccf->peer = ngx_palloc(cf->pool,
                           ccf->npeers * sizeof(ngx_http_upstream_rr_peer_t *));
    if (ccf->peer == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_upstream_chash_map_peers(ccf, peers, cf->log) != NGX_OK) {
        return NGX_ERROR;
    }

    start = ngx_http_upstream_chash_usec();

    rc = chash_builder_new((chash_flavor) ccf->flavor,
                           (uint32_t) ccf->multiple, &b);
    if (rc != CHASH_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "chash: %s",
                           chash_strerror(rc));
        return NGX_ERROR;
    }

    /* refuse only what libchash cannot hold (2^31 - 1 points, 12 GiB of
     * columns), not its 2^30 default: nginx's own hash has no limit */
    rc = chash_builder_set_max_points(b, 0x7fffffff);
    if (rc != CHASH_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "chash: %s",
                           chash_strerror(rc));
        chash_builder_free(b);
        return NGX_ERROR;
    }

    if (ccf->flavor == CHASH_FLAVOR_NGINX) {
        grc = ngx_http_upstream_chash_group(cf, ccf, b);

    } else {
        grc = ngx_http_upstream_chash_one_per_peer(cf, ccf, b);
    }

    if (grc != NGX_OK) {
        chash_builder_free(b);
        return NGX_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        chash_builder_free(b);
        return NGX_ERROR;
    }

    rc = chash_builder_build(b, &ccf->ring);     /* consumes b */
    if (rc != CHASH_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "chash in upstream \"%V\": %s", &us->host,
                           chash_last_error());
        return NGX_ERROR;
    }

    cln->handler = ngx_http_upstream_chash_cleanup;
    cln->data = ccf;

    build_us = ngx_http_upstream_chash_usec() - start;

    if (chash_ring_memory_usage(ccf->ring, &mem) != CHASH_OK
        || chash_ring_fingerprint(ccf->ring, fingerprint) != CHASH_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "chash: %s",
                           chash_last_error());
        return NGX_ERROR;
    }

    /* $chash_ring: the first 8 bytes of the routing fingerprint, in hex */
    ccf->ring_id.len = 16;
    ccf->ring_id.data = ngx_pnalloc(cf->pool, ccf->ring_id.len);
    if (ccf->ring_id.data == NULL) {
        return NGX_ERROR;
    }

    ngx_hex_dump(ccf->ring_id.data, fingerprint, ccf->ring_id.len / 2);

    ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0,
                       "chash upstream \"%V\": flavor=%s multiple=%uD, "
                       "%ui peers, %uD nodes, %uL points, %uL collisions, "
                       "%uL bytes (columns %uL, index %uL, collision table "
                       "%uL, nodes %uL), ring %V, built in %uL us",
                       &us->host, ngx_http_upstream_chash_flavors[ccf->flavor],
                       chash_ring_point_multiple(ccf->ring), ccf->npeers,
                       chash_ring_num_nodes(ccf->ring),
                       chash_ring_num_points(ccf->ring),
                       chash_ring_points_generated(ccf->ring)
                       - chash_ring_num_points(ccf->ring),
                       mem.column_bytes + mem.index_bytes
                       + mem.collision_table_bytes + mem.other_bytes,
                       mem.column_bytes, mem.index_bytes,
                       mem.collision_table_bytes, mem.other_bytes,
                       &ccf->ring_id, build_us);

    return NGX_OK;
}


static ngx_int_t
ngx_http_upstream_chash_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us)
{
    uint32_t                              hash;
    ngx_http_upstream_chash_srv_conf_t   *ccf;
    ngx_http_upstream_chash_peer_data_t  *hp;

    hp = ngx_palloc(r->pool, sizeof(ngx_http_upstream_chash_peer_data_t));
    if (hp == NULL) {
        return NGX_ERROR;
    }

    r->upstream->peer.data = &hp->rrp;

    if (ngx_http_upstream_init_round_robin_peer(r, us) != NGX_OK) {
        return NGX_ERROR;
    }

    ccf = ngx_http_conf_upstream_srv_conf(us, ngx_http_upstream_chash_module);

    if (ngx_http_complex_value(r, &ccf->key, &hp->key) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "upstream chash key:\"%V\"", &hp->key);

    hp->conf = ccf;
    hp->tries = 0;
    hp->get_rr_peer = ngx_http_upstream_get_round_robin_peer;

    hash = ngx_crc32_long(hp->key.data, hp->key.len);

    if (ccf->flavor == CHASH_FLAVOR_NGINX) {
        r->upstream->peer.get = ngx_http_upstream_chash_get_nginx;

        /* the ring is immutable: no lock, unlike nginx's rlock */
        if (chash_ring_walk(ccf->ring, hash, &hp->cursor) != CHASH_OK) {
            return NGX_ERROR;
        }

        hp->node = chash_cursor_next(&hp->cursor);

    } else {
        r->upstream->peer.get = ngx_http_upstream_chash_get_pingora;

        hp->walk = ngx_palloc(r->pool, sizeof(chash_distinct_walk));
        if (hp->walk == NULL) {
            return NGX_ERROR;
        }

        if (chash_ring_walk_distinct(ccf->ring, hash, hp->walk) != CHASH_OK) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* Mirrors ngx_http_upstream_get_chash_peer() of nginx 1.22.1, step for step. */
/*
 * Whether peer i may be tried now, by the rules nginx's hash balancer
 * applies to each candidate: not tried by this request, not down, not over
 * max_fails within fail_timeout, not at max_conns. Call with the peers
 * locked.
 */
static ngx_uint_t
ngx_http_upstream_chash_peer_usable(ngx_http_upstream_chash_peer_data_t *hp,
    ngx_uint_t i, ngx_http_upstream_rr_peer_t *peer, time_t now)
{
    uintptr_t   m;
    ngx_uint_t  n;

    n = i / (8 * sizeof(uintptr_t));
    m = (uintptr_t) 1 << i % (8 * sizeof(uintptr_t));

    if (hp->rrp.tried[n] & m) {
        return 0;
    }

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


static ngx_int_t
ngx_http_upstream_chash_get_nginx(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_upstream_chash_peer_data_t  *hp = data;

    time_t                               now;
    uintptr_t                            m;
    ngx_int_t                            total;
    ngx_uint_t                           i, j, n, best_i;
    ngx_http_upstream_rr_peer_t         *peer, *best;
    ngx_http_upstream_rr_peers_t        *peers;
    ngx_http_upstream_chash_srv_conf_t  *ccf;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, pc->log, 0,
                   "get chash peer, try: %ui", pc->tries);

    peers = hp->rrp.peers;
    ccf = hp->conf;

    ngx_http_upstream_rr_peers_wlock(peers);

    if (hp->tries > NGX_CHASH_MAX_TRIES || peers->single || hp->key.len == 0) {
        ngx_http_upstream_rr_peers_unlock(peers);
        return hp->get_rr_peer(pc, &hp->rrp);
    }

    if (ccf->mapped != peers
        && ngx_http_upstream_chash_map_peers(ccf, peers, pc->log) != NGX_OK)
    {
        ngx_http_upstream_rr_peers_unlock(peers);
        return NGX_ERROR;
    }

    pc->cached = 0;
    pc->connection = NULL;

    now = ngx_time();

    for ( ;; ) {

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, pc->log, 0,
                       "chash node:%uD", hp->node);

        best = NULL;
        best_i = 0;
        total = 0;

        /* the peers with this point's server text, in list order */

        for (j = ccf->node_first[hp->node];
             j < ccf->node_first[hp->node + 1];
             j++)
        {
            i = ccf->node_peers[j];
            peer = ccf->peer[i];

            if (!ngx_http_upstream_chash_peer_usable(hp, i, peer, now)) {
                continue;
            }

            peer->current_weight += peer->effective_weight;
            total += peer->effective_weight;

            if (peer->effective_weight < peer->weight) {
                peer->effective_weight++;
            }

            if (best == NULL || peer->current_weight > best->current_weight) {
                best = peer;
                best_i = i;
            }
        }

        if (best) {
            best->current_weight -= total;
            break;
        }

        hp->node = chash_cursor_next(&hp->cursor);   /* nginx: hp->hash++ */
        hp->tries++;

        if (hp->tries > NGX_CHASH_MAX_TRIES) {
            ngx_http_upstream_rr_peers_unlock(peers);
            return hp->get_rr_peer(pc, &hp->rrp);
        }
    }

    hp->rrp.current = best;

    pc->sockaddr = best->sockaddr;
    pc->socklen = best->socklen;
    pc->name = &best->name;

    best->conns++;

    if (now - best->checked > best->fail_timeout) {
        best->checked = now;
    }

    ngx_http_upstream_rr_peers_unlock(peers);

    n = best_i / (8 * sizeof(uintptr_t));
    m = (uintptr_t) 1 << best_i % (8 * sizeof(uintptr_t));

    hp->rrp.tried[n] |= m;

    return NGX_OK;
}


/*
 * pingora flavours: each node once, in ring order from the key's point; a
 * node is skipped when its peer was tried in this request, is down, has
 * failed max_fails times within fail_timeout, or is at max_conns. When the
 * walk has visited every node, no live peer is left: NGX_BUSY, as round
 * robin answers when every peer failed ("no live upstreams").
 */
static ngx_int_t
ngx_http_upstream_chash_get_pingora(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_upstream_chash_peer_data_t  *hp = data;

    time_t                               now;
    uint32_t                             node;
    uintptr_t                            m;
    ngx_uint_t                           i, n;
    ngx_http_upstream_rr_peer_t         *peer;
    ngx_http_upstream_rr_peers_t        *peers;
    ngx_http_upstream_chash_srv_conf_t  *ccf;

    peers = hp->rrp.peers;
    ccf = hp->conf;

    ngx_http_upstream_rr_peers_wlock(peers);

    if (ccf->mapped != peers
        && ngx_http_upstream_chash_map_peers(ccf, peers, pc->log) != NGX_OK)
    {
        ngx_http_upstream_rr_peers_unlock(peers);
        return NGX_ERROR;
    }

    pc->cached = 0;
    pc->connection = NULL;

    now = ngx_time();

    for ( ;; ) {
        node = chash_distinct_walk_next(hp->walk);

        if (node == CHASH_NO_NODE) {
            pc->name = peers->name;
            ngx_http_upstream_rr_peers_unlock(peers);
            return NGX_BUSY;
        }

        i = ccf->node_peers[ccf->node_first[node]];
        peer = ccf->peer[i];

        if (ngx_http_upstream_chash_peer_usable(hp, i, peer, now)) {
            break;
        }
    }

    n = i / (8 * sizeof(uintptr_t));
    m = (uintptr_t) 1 << i % (8 * sizeof(uintptr_t));

    hp->rrp.current = peer;

    pc->sockaddr = peer->sockaddr;
    pc->socklen = peer->socklen;
    pc->name = &peer->name;

    peer->conns++;

    if (now - peer->checked > peer->fail_timeout) {
        peer->checked = now;
    }

    ngx_http_upstream_rr_peers_unlock(peers);

    hp->rrp.tried[n] |= m;

    return NGX_OK;
}


static ngx_int_t
ngx_http_upstream_chash_ring_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_upstream_srv_conf_t        *uscf;
    ngx_http_upstream_chash_srv_conf_t  *ccf;

    if (r->upstream == NULL
        || r->upstream->upstream == NULL
        || r->upstream->upstream->srv_conf == NULL)
    {
        v->not_found = 1;
        return NGX_OK;
    }

    uscf = r->upstream->upstream;
    ccf = ngx_http_conf_upstream_srv_conf(uscf, ngx_http_upstream_chash_module);

    if (ccf == NULL || ccf->ring == NULL
        || uscf->peer.init != ngx_http_upstream_chash_init_peer)
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
ngx_http_upstream_chash_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var;
    static ngx_str_t      name = ngx_string("chash_ring");

    var = ngx_http_add_variable(cf, &name, NGX_HTTP_VAR_NOCACHEABLE);
    if (var == NULL) {
        return NGX_ERROR;
    }

    var->get_handler = ngx_http_upstream_chash_ring_variable;

    return NGX_OK;
}


static void *
ngx_http_upstream_chash_create_conf(ngx_conf_t *cf)
{
    ngx_http_upstream_chash_srv_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_upstream_chash_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->flavor = NGX_CONF_UNSET_UINT;

    return conf;
}


static char *
ngx_http_upstream_chash(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_upstream_chash_srv_conf_t  *ccf = conf;

    ngx_int_t                           multiple;
    ngx_str_t                          *value, s;
    ngx_uint_t                          i, f;
    ngx_http_upstream_srv_conf_t       *uscf;
    ngx_http_compile_complex_value_t    ccv;

    if (ccf->flavor != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = &value[1];
    ccv.complex_value = &ccf->key;

    if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
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
                if (s.len == ngx_strlen(ngx_http_upstream_chash_flavors[f])
                    && ngx_strncmp(s.data, ngx_http_upstream_chash_flavors[f],
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

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);

    if (uscf->peer.init_upstream) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "load balancing method redefined");
    }

    /* as `hash`: no backup servers */
    uscf->flags = NGX_HTTP_UPSTREAM_CREATE
                  |NGX_HTTP_UPSTREAM_WEIGHT
                  |NGX_HTTP_UPSTREAM_MAX_CONNS
                  |NGX_HTTP_UPSTREAM_MAX_FAILS
                  |NGX_HTTP_UPSTREAM_FAIL_TIMEOUT
                  |NGX_HTTP_UPSTREAM_DOWN;

    uscf->peer.init_upstream = ngx_http_upstream_chash_init;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\"", &value[i]);

    return NGX_CONF_ERROR;
}
