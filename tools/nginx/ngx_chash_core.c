/*
 * ngx_chash_core: see ngx_chash_core.h. libchash is C++; every call below is
 * through its C API, which never throws.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <time.h>

#include "ngx_chash_core.h"


const char  *ngx_chash_flavors[] = {
    "nginx", "pingora-v1", "pingora-v2"
};


typedef struct {
    ngx_str_t   *server;
    ngx_uint_t   index;      /* in the peer list */
} ngx_chash_text_t;


typedef struct {
    ngx_uint_t   start;      /* in the sorted texts */
    ngx_uint_t   end;
    ngx_uint_t   index;      /* the run's first peer */
} ngx_chash_run_t;


static int ngx_libc_cdecl
ngx_chash_cmp_text(const void *one, const void *two)
{
    const ngx_chash_text_t  *a = one, *b = two;

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
ngx_chash_cmp_run(const void *one, const void *two)
{
    const ngx_chash_run_t  *a = one, *b = two;

    return a->index < b->index ? -1 : (a->index > b->index);
}


static ngx_int_t
ngx_chash_add(ngx_conf_t *cf, ngx_uint_t flavor, chash_builder *b,
    ngx_str_t *server, ngx_uint_t weight)
{
    if (chash_builder_add(b, (const char *) server->data, server->len,
                          (uint32_t) weight)
        != CHASH_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "chash flavor=%s: server \"%V\": %s",
                           ngx_chash_flavors[flavor], server,
                           chash_builder_error(b));
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
ngx_chash_group(ngx_conf_t *cf, ngx_uint_t flavor, ngx_str_t **texts,
    ngx_uint_t *weights, ngx_uint_t n, ngx_chash_nodes_t *nodes,
    chash_builder *b)
{
    ngx_int_t          rc;
    ngx_uint_t         i, j, k, weight, nruns;
    ngx_chash_run_t   *runs;
    ngx_chash_text_t  *text;

    text = ngx_alloc(n * sizeof(ngx_chash_text_t), cf->log);
    runs = ngx_alloc(n * sizeof(ngx_chash_run_t), cf->log);

    if (text == NULL || runs == NULL) {
        rc = NGX_ERROR;
        goto done;
    }

    for (i = 0; i < n; i++) {
        text[i].server = texts[i];
        text[i].index = i;
    }

    ngx_qsort(text, n, sizeof(ngx_chash_text_t), ngx_chash_cmp_text);

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

    ngx_qsort(runs, nruns, sizeof(ngx_chash_run_t), ngx_chash_cmp_run);

    nodes->nnodes = nruns;
    nodes->node_first = ngx_palloc(cf->pool, (nruns + 1) * sizeof(ngx_uint_t));
    nodes->node_peers = ngx_palloc(cf->pool, n * sizeof(ngx_uint_t));

    if (nodes->node_first == NULL || nodes->node_peers == NULL) {
        rc = NGX_ERROR;
        goto done;
    }

    rc = NGX_OK;

    for (k = 0, j = 0; k < nruns; k++) {
        nodes->node_first[k] = j;
        weight = 0;

        for (i = runs[k].start; i < runs[k].end; i++) {
            nodes->node_peers[j++] = text[i].index;
            weight = ngx_max(weight, weights[text[i].index]);
        }

        rc = ngx_chash_add(cf, flavor, b, text[runs[k].start].server, weight);
        if (rc != NGX_OK) {
            goto done;
        }
    }

    nodes->node_first[nruns] = j;

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
ngx_chash_one_per_peer(ngx_conf_t *cf, ngx_uint_t flavor, ngx_str_t **texts,
    ngx_uint_t *weights, ngx_uint_t n, ngx_chash_nodes_t *nodes,
    chash_builder *b)
{
    ngx_uint_t  i;

    nodes->nnodes = n;
    nodes->node_first = ngx_palloc(cf->pool, (n + 1) * sizeof(ngx_uint_t));
    nodes->node_peers = ngx_palloc(cf->pool, n * sizeof(ngx_uint_t));

    if (nodes->node_first == NULL || nodes->node_peers == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < n; i++) {
        nodes->node_first[i] = i;
        nodes->node_peers[i] = i;

        /* the builder refuses anything but IP:port: one peer a line */
        if (ngx_chash_add(cf, flavor, b, texts[i], weights[i]) != NGX_OK) {
            return NGX_DECLINED;
        }
    }

    nodes->node_first[n] = n;

    return NGX_OK;
}


static void
ngx_chash_ring_cleanup(void *data)
{
    chash_ring  **ring = data;

    chash_ring_free(*ring);
    *ring = NULL;
}


static uint64_t
ngx_chash_usec(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}


ngx_int_t
ngx_chash_build_from_servers(ngx_conf_t *cf, ngx_str_t *upstream,
    ngx_uint_t flavor, ngx_uint_t multiple, ngx_str_t **texts,
    ngx_uint_t *weights, ngx_uint_t n, ngx_chash_nodes_t *nodes,
    chash_ring **ring, ngx_str_t *ring_id)
{
    int                  rc;
    uint8_t              fingerprint[CHASH_FINGERPRINT_SIZE];
    uint64_t             start, build_us;
    ngx_int_t            grc;
    chash_builder       *b;
    ngx_pool_cleanup_t  *cln;
    chash_memory_usage   mem;

    nodes->npeers = n;

    start = ngx_chash_usec();

    rc = chash_builder_new((chash_flavor) flavor, (uint32_t) multiple, &b);
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

    if (flavor == CHASH_FLAVOR_NGINX) {
        grc = ngx_chash_group(cf, flavor, texts, weights, n, nodes, b);

    } else {
        grc = ngx_chash_one_per_peer(cf, flavor, texts, weights, n, nodes, b);
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

    rc = chash_builder_build(b, ring);     /* consumes b */
    if (rc != CHASH_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "chash in upstream \"%V\": %s", upstream,
                           chash_last_error());
        return NGX_ERROR;
    }

    cln->handler = ngx_chash_ring_cleanup;
    cln->data = ring;

    build_us = ngx_chash_usec() - start;

    if (chash_ring_memory_usage(*ring, &mem) != CHASH_OK
        || chash_ring_fingerprint(*ring, fingerprint) != CHASH_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "chash: %s",
                           chash_last_error());
        return NGX_ERROR;
    }

    /* $chash_ring: the first 8 bytes of the routing fingerprint, in hex */
    ring_id->len = 16;
    ring_id->data = ngx_pnalloc(cf->pool, ring_id->len);
    if (ring_id->data == NULL) {
        return NGX_ERROR;
    }

    ngx_hex_dump(ring_id->data, fingerprint, ring_id->len / 2);

    ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0,
                       "chash upstream \"%V\": flavor=%s multiple=%uD, "
                       "%ui peers, %uD nodes, %uL points, %uL collisions, "
                       "%uL bytes (columns %uL, index %uL, collision table "
                       "%uL, nodes %uL), ring %V, built in %uL us",
                       upstream, ngx_chash_flavors[flavor],
                       chash_ring_point_multiple(*ring), n,
                       chash_ring_num_nodes(*ring),
                       chash_ring_num_points(*ring),
                       chash_ring_points_generated(*ring)
                       - chash_ring_num_points(*ring),
                       mem.column_bytes + mem.index_bytes
                       + mem.collision_table_bytes + mem.other_bytes,
                       mem.column_bytes, mem.index_bytes,
                       mem.collision_table_bytes, mem.other_bytes,
                       ring_id, build_us);

    return NGX_OK;
}


ngx_int_t
ngx_chash_walk_init(ngx_chash_walk_t *w, ngx_uint_t flavor,
    const chash_ring *ring, ngx_str_t *key, ngx_pool_t *pool)
{
    uint32_t  hash;

    w->flavor = flavor;
    w->tries = 0;
    w->bounded_load = 0;

    hash = ngx_crc32_long(key->data, key->len);

    if (flavor == CHASH_FLAVOR_NGINX) {
        /* the ring is immutable: no lock, unlike nginx's rlock */
        if (chash_ring_walk(ring, hash, &w->cursor) != CHASH_OK) {
            return NGX_ERROR;
        }

        w->node = chash_cursor_next(&w->cursor);
        w->walk = NULL;

        return NGX_OK;
    }

    w->walk = ngx_palloc(pool, sizeof(chash_distinct_walk));
    if (w->walk == NULL) {
        return NGX_ERROR;
    }

    if (chash_ring_walk_distinct(ring, hash, w->walk) != CHASH_OK) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


ngx_int_t
ngx_chash_parse_bounded_load(ngx_str_t *value, double *factor)
{
    ngx_int_t  ppm;

    ppm = ngx_atofp(value->data, value->len, 6);

    /* over 1, and at most 10^6: a larger factor bounds nothing */
    if (ppm == NGX_ERROR || ppm <= 1000000
        || ppm > (ngx_int_t) 1000000 * 1000000)
    {
        return NGX_ERROR;
    }

    *factor = (double) ppm / 1000000;

    return NGX_OK;
}


/* The load of node: the active connections of its peers. */
static uint64_t
ngx_chash_node_load(const ngx_chash_nodes_t *nodes, uint32_t node,
    const ngx_chash_peer_ops_t *ops, void *data)
{
    uint64_t    load;
    ngx_uint_t  j;

    load = 0;

    for (j = nodes->node_first[node]; j < nodes->node_first[node + 1]; j++) {
        load += ops->conns(data, nodes->node_peers[j]);
    }

    return load;
}


/* The bounded-load capacity now; UINT64_MAX when bounded_load is off. */
static uint64_t
ngx_chash_capacity(ngx_chash_walk_t *w, const ngx_chash_nodes_t *nodes,
    const ngx_chash_peer_ops_t *ops, void *data)
{
    uint64_t    total;
    ngx_uint_t  i;

    if (w->bounded_load <= 1) {
        return UINT64_MAX;
    }

    total = 0;

    for (i = 0; i < nodes->npeers; i++) {
        total += ops->conns(data, i);
    }

    /* every node owns points: nginx refuses weight=0 */
    return chash_bounded_load_capacity(total, (uint32_t) nodes->nnodes,
                                       w->bounded_load);
}


/* Mirrors ngx_http_upstream_get_chash_peer() of nginx 1.22.1, step for step. */
static ngx_int_t
ngx_chash_pick_nginx(ngx_chash_walk_t *w, const ngx_chash_nodes_t *nodes,
    const ngx_chash_peer_ops_t *ops, void *data, time_t now, ngx_log_t *log)
{
    uint64_t     capacity;
    ngx_int_t    total, *current, *effective, weight;
    ngx_int_t    best_i, *best_current;
    ngx_uint_t   i, j;

    if (w->tries > NGX_CHASH_MAX_TRIES) {
        return NGX_CHASH_FALLBACK;
    }

    capacity = ngx_chash_capacity(w, nodes, ops, data);

    for ( ;; ) {

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, log, 0, "chash node:%uD", w->node);

        if (capacity != UINT64_MAX
            && ngx_chash_node_load(nodes, w->node, ops, data) >= capacity)
        {
            goto next;
        }

        best_i = -1;
        best_current = NULL;
        total = 0;

        /* the peers with this point's server text, in list order */

        for (j = nodes->node_first[w->node];
             j < nodes->node_first[w->node + 1];
             j++)
        {
            i = nodes->node_peers[j];

            if (!ops->usable(data, i, now)) {
                continue;
            }

            ops->weights(data, i, &current, &effective, &weight);

            *current += *effective;
            total += *effective;

            if (*effective < weight) {
                (*effective)++;
            }

            if (best_current == NULL || *current > *best_current) {
                best_current = current;
                best_i = (ngx_int_t) i;
            }
        }

        if (best_current) {
            *best_current -= total;
            return best_i;
        }

    next:

        w->node = chash_cursor_next(&w->cursor);   /* nginx: hp->hash++ */
        w->tries++;

        if (w->tries > NGX_CHASH_MAX_TRIES) {
            return NGX_CHASH_FALLBACK;
        }
    }
}


/*
 * pingora flavours: each node once, in ring order from the key's point; a
 * node is skipped when its peer is not usable (or is at the bounded-load
 * capacity). When the walk has visited every node, no live peer is left (as
 * round robin answers when every peer failed: "no live upstreams").
 */
static ngx_int_t
ngx_chash_pick_pingora(ngx_chash_walk_t *w, const ngx_chash_nodes_t *nodes,
    const ngx_chash_peer_ops_t *ops, void *data, time_t now)
{
    uint32_t    node;
    uint64_t    capacity;
    ngx_uint_t  i;

    capacity = ngx_chash_capacity(w, nodes, ops, data);

    for ( ;; ) {
        node = chash_distinct_walk_next(w->walk);

        if (node == CHASH_NO_NODE) {
            return NGX_CHASH_EXHAUSTED;
        }

        i = nodes->node_peers[nodes->node_first[node]];

        if (ops->usable(data, i, now)
            && (capacity == UINT64_MAX || ops->conns(data, i) < capacity))
        {
            return (ngx_int_t) i;
        }
    }
}


ngx_int_t
ngx_chash_pick(ngx_chash_walk_t *w, const ngx_chash_nodes_t *nodes,
    const ngx_chash_peer_ops_t *ops, void *data, time_t now, ngx_log_t *log)
{
    if (w->flavor == CHASH_FLAVOR_NGINX) {
        return ngx_chash_pick_nginx(w, nodes, ops, data, now, log);
    }

    return ngx_chash_pick_pingora(w, nodes, ops, data, now);
}
