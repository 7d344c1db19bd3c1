/*
 * ngx_chash_core: see ngx_chash_core.h. libchash is C++; every call below is
 * through its C API, which never throws.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "ngx_chash_core.h"


static void ngx_chash_status_refused(ngx_chash_source_t *src,
    const char *check, u_char *err);
static void ngx_chash_status_served(ngx_chash_source_t *src,
    ngx_uint_t loaded);


static const char  *ngx_chash_flavors[] = {
    "nginx", "pingora-v1", "pingora-v2", "resty"
};

#define ngx_chash_nflavors                                                   \
    (sizeof(ngx_chash_flavors) / sizeof(ngx_chash_flavors[0]))


const char *
ngx_chash_flavor_name(ngx_uint_t flavor)
{
    return flavor < ngx_chash_nflavors ? ngx_chash_flavors[flavor]
                                       : "unknown";
}


ngx_int_t
ngx_chash_flavor_parse(ngx_str_t *name, ngx_uint_t *flavor)
{
    ngx_uint_t  f;

    for (f = 0; f < ngx_chash_nflavors; f++) {
        if (name->len == ngx_strlen(ngx_chash_flavors[f])
            && ngx_strncmp(name->data, ngx_chash_flavors[f], name->len) == 0)
        {
            *flavor = f;
            return NGX_OK;
        }
    }

    return NGX_ERROR;
}


void ngx_cdecl
ngx_chash_upstream_error(ngx_conf_t *cf, ngx_uint_t level,
    const ngx_chash_upstream_t *up, const char *fmt, ...)
{
    u_char   *p, *last;
    va_list   args;
    u_char    msg[NGX_MAX_CONF_ERRSTR];

    last = msg + sizeof(msg);

    va_start(args, fmt);
    p = ngx_vslprintf(msg, last, fmt, args);
    va_end(args);

    ngx_log_error(level, cf->log, 0, "chash upstream \"%V\" in %s:%ui: %*s",
                  up->name, up->file_name, up->line, (size_t) (p - msg), msg);
}


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


/* id: the node's id, server's text by default; errors name server. */
static ngx_int_t
ngx_chash_add(ngx_conf_t *cf, const ngx_chash_upstream_t *up,
    ngx_uint_t flavor, chash_builder *b, ngx_str_t *server, ngx_str_t *id,
    ngx_uint_t weight)
{
    if (id == NULL) {
        id = server;
    }

    if (chash_builder_add(b, (const char *) id->data, id->len,
                          (uint32_t) weight)
        != CHASH_OK)
    {
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up,
                                 "flavor=%s: server \"%V\": %s",
                                 ngx_chash_flavor_name(flavor), server,
                                 chash_builder_error(b));
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * Nodes of the nginx flavor: peers with one server text share one chain of
 * points in nginx (the chain of the largest weight among them, since the
 * chain of weight w is a prefix of the chain of any larger weight), and
 * nginx picks among them by server text. Node ids follow the first peer of
 * each text, so chash's "first listed wins" tie-break is nginx's.
 * Returns NGX_OK, NGX_ERROR (no memory) or NGX_DECLINED (logged).
 */
static ngx_int_t
ngx_chash_group(ngx_conf_t *cf, const ngx_chash_upstream_t *up,
    ngx_uint_t flavor, ngx_str_t **texts,
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

        rc = ngx_chash_add(cf, up, flavor, b, text[runs[k].start].server,
                           NULL, weight);
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


/* APISIX's id of a server text (apisix/balancer/chash.lua): every ':' a
 * NUL byte, so "10.0.0.1:80" hashes nginx's own "10.0.0.1\0" "80". */
static ngx_int_t
ngx_chash_apisix_id(ngx_pool_t *pool, ngx_str_t *server, ngx_str_t *id)
{
    ngx_uint_t  i;

    id->len = server->len;
    id->data = ngx_pnalloc(pool, server->len);
    if (id->data == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < server->len; i++) {
        id->data[i] = server->data[i] == ':' ? '\0' : server->data[i];
    }

    return NGX_OK;
}


static ngx_int_t
ngx_chash_one_per_peer(ngx_conf_t *cf, const ngx_chash_upstream_t *up,
    ngx_uint_t flavor, ngx_uint_t id_form, ngx_str_t **texts,
    ngx_uint_t *weights, ngx_uint_t n, ngx_chash_nodes_t *nodes,
    chash_builder *b)
{
    ngx_str_t   apisix, *id;
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

        /*
         * pingora: the builder refuses anything but IP:port, one peer a
         * line. resty: an id is one backend; the peers of a name that
         * resolves to several addresses share their line's text.
         */
        if (flavor == CHASH_FLAVOR_RESTY && i > 0
            && texts[i]->data == texts[i - 1]->data)
        {
            ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up,
                                     "flavor=resty: server \"%V\" resolves "
                                     "to several addresses; a resty id is "
                                     "one backend: write a server line for "
                                     "each address", texts[i]);
            return NGX_DECLINED;
        }

        id = NULL;

        if (flavor == CHASH_FLAVOR_RESTY && id_form == NGX_CHASH_ID_APISIX) {
            if (ngx_chash_apisix_id(cf->temp_pool, texts[i], &apisix)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

            id = &apisix;
        }

        if (ngx_chash_add(cf, up, flavor, b, texts[i], id, weights[i])
            != NGX_OK)
        {
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
ngx_chash_build_from_servers(ngx_conf_t *cf, const ngx_chash_upstream_t *up,
    ngx_uint_t flavor, ngx_uint_t multiple, ngx_uint_t id_form,
    ngx_str_t **texts,
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
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up, "%s",
                                 chash_last_error());
        return NGX_ERROR;
    }

    /* refuse only what libchash cannot hold (2^31 - 1 points, 12 GiB of
     * columns), not its 2^30 default: nginx's own hash has no limit */
    rc = chash_builder_set_max_points(b, 0x7fffffff);
    if (rc != CHASH_OK) {
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up, "%s",
                                 chash_last_error());
        chash_builder_free(b);
        return NGX_ERROR;
    }

    if (flavor == CHASH_FLAVOR_NGINX) {
        grc = ngx_chash_group(cf, up, flavor, texts, weights, n, nodes, b);

    } else {
        grc = ngx_chash_one_per_peer(cf, up, flavor, id_form, texts, weights,
                                     n, nodes, b);
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
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up, "%s",
                                 chash_last_error());
        return NGX_ERROR;
    }

    cln->handler = ngx_chash_ring_cleanup;
    cln->data = ring;

    build_us = ngx_chash_usec() - start;

    if (chash_ring_memory_usage(*ring, &mem) != CHASH_OK
        || chash_ring_fingerprint(*ring, fingerprint) != CHASH_OK)
    {
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up, "%s",
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

    ngx_chash_upstream_error(cf, NGX_LOG_NOTICE, up,
                       "flavor=%s%s multiple=%uD, "
                       "%ui peers, %uD nodes, %uL points, %uL collisions, "
                       "%uL bytes (columns %uL, index %uL, collision table "
                       "%uL, nodes %uL), ring %V, built in %uL us",
                       ngx_chash_flavor_name(flavor),
                       flavor == CHASH_FLAVOR_RESTY
                       && id_form == NGX_CHASH_ID_APISIX ? " id=apisix" : "",
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


/* The next point's node of the nginx walk, skipping the points outside the
 * mask (at most one lap of the ring in all); CHASH_NO_NODE past that. */
static uint32_t
ngx_chash_walk_next_point(ngx_chash_walk_t *w)
{
    uint32_t  node;

    for ( ;; ) {
        node = chash_cursor_next(&w->cursor);

        if (w->mask == NULL || node == CHASH_NO_NODE
            || chash_node_mask_get(w->mask, node))
        {
            return node;
        }

        if (--w->left == 0) {
            return CHASH_NO_NODE;
        }
    }
}


ngx_int_t
ngx_chash_walk_init(ngx_chash_walk_t *w, ngx_uint_t flavor,
    const chash_ring *ring, ngx_str_t *key, ngx_pool_t *pool)
{
    return ngx_chash_walk_init_masked(w, flavor, ring, NULL, key, pool);
}


ngx_int_t
ngx_chash_walk_init_masked(ngx_chash_walk_t *w, ngx_uint_t flavor,
    const chash_ring *ring, const chash_node_mask *mask, ngx_str_t *key,
    ngx_pool_t *pool)
{
    uint32_t  hash;

    w->flavor = flavor;
    w->tries = 0;
    w->ring = ring;
    w->mask = mask;
    w->seen = NULL;
    w->pool = pool;
    w->bounded_load = 0;

    hash = ngx_crc32_long(key->data, key->len);

    /* the ring is immutable: no lock, unlike nginx's rlock */
    if (chash_ring_walk(ring, hash, &w->cursor) != CHASH_OK) {
        return NGX_ERROR;
    }

    if (flavor == CHASH_FLAVOR_NGINX) {
        w->left = chash_ring_num_points(ring) + 1;
        w->node = ngx_chash_walk_next_point(w);

        return NGX_OK;
    }

    /* distinct: each point once at most, the first node not yet taken */
    w->left = chash_ring_num_points(ring);
    w->node = CHASH_NO_NODE;

    return NGX_OK;
}


/*
 * The distinct walk's next node not yet returned; CHASH_NO_NODE when every
 * point has been passed, or with *failed set when the seen-set could not
 * be allocated. O(1) amortized a point; the seen-set (one bit a ring node)
 * only from the second node on: a request whose first pick serves never
 * allocates.
 */
static uint32_t
ngx_chash_walk_next_distinct(ngx_chash_walk_t *w, ngx_uint_t *failed)
{
    uint32_t  node;

    if (w->seen == NULL) {
        if (w->node == CHASH_NO_NODE) {
            if (w->left == 0) {
                return CHASH_NO_NODE;
            }

            w->left--;
            w->node = chash_cursor_next(&w->cursor);

            return w->node;
        }

        w->seen = ngx_pcalloc(w->pool,
                      ngx_chash_tried_words(chash_ring_num_nodes(w->ring))
                      * sizeof(uintptr_t));
        if (w->seen == NULL) {
            *failed = 1;
            return CHASH_NO_NODE;
        }

        ngx_chash_set_tried(w->seen, w->node);
    }

    while (w->left) {
        w->left--;
        node = chash_cursor_next(&w->cursor);

        if (node == CHASH_NO_NODE) {
            return node;
        }

        if (!ngx_chash_tried(w->seen, node)) {
            ngx_chash_set_tried(w->seen, node);
            return node;
        }
    }

    return CHASH_NO_NODE;
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


char *
ngx_chash_parse_directive(ngx_conf_t *cf, ngx_str_t *value, ngx_uint_t n,
    ngx_chash_directive_t *d)
{
    ngx_int_t   multiple;
    ngx_str_t   s;
    ngx_uint_t  i, f;

    ngx_memzero(d, sizeof(ngx_chash_directive_t));
    d->flavor = CHASH_FLAVOR_NGINX;
    multiple = 0;

    for (i = 2; i < n; i++) {

        if (ngx_strncmp(value[i].data, "flavor=", 7) == 0) {
            s.data = value[i].data + 7;
            s.len = value[i].len - 7;

            if (ngx_chash_flavor_parse(&s, &f) != NGX_OK) {
                goto invalid;
            }

            d->flavor = f;
            d->flavor_set = 1;
            continue;
        }

        if (ngx_strncmp(value[i].data, "id=", 3) == 0) {
            if (value[i].len == sizeof("id=address") - 1
                && ngx_strcmp(value[i].data, "id=address") == 0)
            {
                d->id_form = NGX_CHASH_ID_ADDRESS;

            } else if (value[i].len == sizeof("id=apisix") - 1
                       && ngx_strcmp(value[i].data, "id=apisix") == 0)
            {
                d->id_form = NGX_CHASH_ID_APISIX;

            } else {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\": id= takes "
                                   "address (the server's text as written) "
                                   "or apisix (its host and port joined by "
                                   "a NUL byte)", &value[i]);
                return NGX_CONF_ERROR;
            }

            d->id_set = 1;
            continue;
        }

        if (ngx_strncmp(value[i].data, "subset=", 7) == 0) {
            d->subset.data = value[i].data + 7;
            d->subset.len = value[i].len - 7;
            d->has_subset = 1;
            continue;
        }

        if (ngx_strncmp(value[i].data, "bounded_load=", 13) == 0) {
            s.data = value[i].data + 13;
            s.len = value[i].len - 13;

            if (ngx_chash_parse_bounded_load(&s, &d->bounded_load)
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
        if (d->flavor != CHASH_FLAVOR_PINGORA_V2
            && d->flavor != CHASH_FLAVOR_RESTY)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"multiple=\" is for flavor=pingora-v2 and "
                               "flavor=resty only (nginx and pingora-v1 "
                               "rings have 160 points a weight unit)");
            return NGX_CONF_ERROR;
        }

        d->multiple = multiple;
    }

    if (d->id_set && d->flavor != CHASH_FLAVOR_RESTY) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"id=\" is for flavor=resty only (the other "
                           "flavors hash the server's address)");
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\"", &value[i]);

    return NGX_CONF_ERROR;
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


/*
 * The bounded-load capacity now; UINT64_MAX when bounded_load is off. With
 * a subset, the average is over the subset's nodes and their loads (the
 * request routes as a ring of only the subset's servers would).
 */
static uint64_t
ngx_chash_capacity(ngx_chash_walk_t *w, const ngx_chash_nodes_t *nodes,
    const ngx_chash_peer_ops_t *ops, void *data)
{
    uint64_t    total;
    uint32_t    node, count;
    ngx_uint_t  i;

    if (w->bounded_load <= 1) {
        return UINT64_MAX;
    }

    total = 0;

    if (w->mask) {
        count = 0;

        for (node = 0; node < nodes->nnodes; node++) {
            if (chash_node_mask_get(w->mask, node)) {
                total += ngx_chash_node_load(nodes, node, ops, data);
                count++;
            }
        }

        if (count == 0) {
            return UINT64_MAX;
        }

        return chash_bounded_load_capacity(total, count, w->bounded_load);
    }

    for (i = 0; i < nodes->npeers; i++) {
        total += ops->conns(data, i);
    }

    /* every node owns points: nginx refuses weight=0 */
    return chash_bounded_load_capacity(total, (uint32_t) nodes->nnodes,
                                       w->bounded_load);
}


/*
 * The nginx flavor's step: mirrors ngx_http_upstream_get_chash_peer() of
 * nginx 1.22.1, step for step: the usable peer of largest current weight
 * among the point's node's peers, one try a point.
 */
static ngx_int_t
ngx_chash_pick_nginx(ngx_chash_walk_t *w, const ngx_chash_nodes_t *nodes,
    const ngx_chash_peer_ops_t *ops, void *data, time_t now,
    uint64_t capacity, ngx_log_t *log)
{
    ngx_int_t    total, *current, *effective, weight;
    ngx_int_t    best_i, *best_current;
    ngx_uint_t   i, j;

    for ( ;; ) {

        /* shown by debug_http or debug_stream: the core serves both */
        ngx_log_debug1((NGX_LOG_DEBUG_HTTP|NGX_LOG_DEBUG_STREAM), log, 0,
                       "chash node:%uD", w->node);

        if (w->node == CHASH_NO_NODE) {
            /* an empty ring, or no point of the subset */
            return NGX_CHASH_FALLBACK;
        }

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

        w->node = ngx_chash_walk_next_point(w);    /* nginx: hp->hash++ */
        w->tries++;

        if (w->tries > NGX_CHASH_MAX_TRIES) {
            return NGX_CHASH_FALLBACK;
        }
    }
}


/*
 * The distinct flavors' step (pingora, resty): each node once, in ring
 * order from the key's point; a node is skipped when its peer is not
 * usable (or is at the bounded-load capacity). When the walk has visited
 * every node, no live peer is left (as round robin answers when every peer
 * failed: "no live upstreams").
 */
static ngx_int_t
ngx_chash_pick_distinct(ngx_chash_walk_t *w, const ngx_chash_nodes_t *nodes,
    const ngx_chash_peer_ops_t *ops, void *data, time_t now,
    uint64_t capacity, ngx_log_t *log)
{
    uint32_t    node;
    ngx_uint_t  i, failed;

    failed = 0;

    for ( ;; ) {
        node = ngx_chash_walk_next_distinct(w, &failed);

        ngx_log_debug1((NGX_LOG_DEBUG_HTTP|NGX_LOG_DEBUG_STREAM), log, 0,
                       "chash node:%uD", node);

        if (node == CHASH_NO_NODE) {
            if (failed) {
                ngx_log_error(NGX_LOG_ALERT, log, 0,
                              "chash: no memory for the retry walk");
            }

            return NGX_CHASH_EXHAUSTED;
        }

        if (w->mask && !chash_node_mask_get(w->mask, node)) {
            continue;
        }

        i = nodes->node_peers[nodes->node_first[node]];

        if (ops->usable(data, i, now)
            && (capacity == UINT64_MAX || ops->conns(data, i) < capacity))
        {
            return (ngx_int_t) i;
        }
    }
}


/*
 * One opening for every flavor (the tries limit, the bounded-load capacity
 * read once a pick), the flavor's step, one closing (the pick's debug
 * line).
 */
ngx_int_t
ngx_chash_pick(ngx_chash_walk_t *w, const ngx_chash_nodes_t *nodes,
    const ngx_chash_peer_ops_t *ops, void *data, time_t now, ngx_log_t *log)
{
    uint64_t   capacity;
    ngx_int_t  rc;

    if (w->flavor == CHASH_FLAVOR_NGINX && w->tries > NGX_CHASH_MAX_TRIES) {
        return NGX_CHASH_FALLBACK;
    }

    capacity = ngx_chash_capacity(w, nodes, ops, data);

    if (w->flavor == CHASH_FLAVOR_NGINX) {
        rc = ngx_chash_pick_nginx(w, nodes, ops, data, now, capacity, log);

    } else {
        rc = ngx_chash_pick_distinct(w, nodes, ops, data, now, capacity, log);
    }

    ngx_log_debug2((NGX_LOG_DEBUG_HTTP|NGX_LOG_DEBUG_STREAM), log, 0,
                   "chash flavor=%s pick:%i", ngx_chash_flavor_name(w->flavor),
                   rc);

    return rc;
}


/* ---- Snapshot rings ------------------------------------------------------- */

static void
ngx_chash_gen_free(ngx_chash_gen_t *gen)
{
    ngx_uint_t  i;

    for (i = 0; i < gen->nsubsets; i++) {
        chash_node_mask_free(gen->subsets[i].mask);
    }

    chash_ring_free(gen->ring);
    chash_snapshot_free(gen->snapshot);
    ngx_destroy_pool(gen->pool);
}


#if (NGX_THREADS)

static void
ngx_chash_gen_free_thread(void *data, ngx_log_t *log)
{
    ngx_chash_gen_free(*(ngx_chash_gen_t **) data);
}


static void
ngx_chash_gen_freed(ngx_event_t *ev)
{
    ngx_free(ev->data);     /* the task */
}

#endif


void
ngx_chash_gen_unref(ngx_chash_gen_t *gen)
{
#if (NGX_THREADS)
    ngx_thread_pool_t  *tp;
    ngx_thread_task_t  *task;
#endif

    if (gen == NULL || --gen->refs != 0) {
        return;
    }

#if (NGX_THREADS)

    /* the task is not in gen's pool: the pool goes before the task ends */
    /* only in a worker: elsewhere (nginx -t, the master, a cycle that
     * failed to load) there may be no thread pool to look up */
    if (gen->thread_pool && ngx_process == NGX_PROCESS_WORKER
        && !ngx_exiting && !ngx_terminate && !ngx_quit)
    {
        tp = ngx_thread_pool_get((ngx_cycle_t *) ngx_cycle, gen->thread_pool);
        task = tp ? ngx_calloc(sizeof(ngx_thread_task_t)
                               + sizeof(ngx_chash_gen_t *), ngx_cycle->log)
                  : NULL;

        if (task) {
            task->ctx = task + 1;
            *(ngx_chash_gen_t **) task->ctx = gen;
            task->handler = ngx_chash_gen_free_thread;
            task->event.handler = ngx_chash_gen_freed;
            task->event.data = task;
            task->event.log = ngx_cycle->log;

            if (ngx_thread_task_post(tp, task) == NGX_OK) {
                return;
            }

            ngx_free(task);
        }
    }

#endif

    ngx_chash_gen_free(gen);
}


static void
ngx_chash_gen_release(void *data)
{
    ngx_chash_gen_unref(data);
}


ngx_int_t
ngx_chash_gen_hold(ngx_chash_gen_t *gen, ngx_pool_t *pool)
{
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    gen->refs++;
    cln->handler = ngx_chash_gen_release;
    cln->data = gen;

    return NGX_OK;
}


ngx_chash_subset_t *
ngx_chash_gen_subset(ngx_chash_gen_t *gen, ngx_str_t *name)
{
    ngx_uint_t  i;

    for (i = 0; i < gen->nsubsets; i++) {
        if (gen->subsets[i].name.len == name->len
            && ngx_strncmp(gen->subsets[i].name.data, name->data, name->len)
               == 0)
        {
            return &gen->subsets[i];
        }
    }

    return NULL;
}


static void
ngx_chash_file_id(struct stat *st, ngx_chash_file_id_t *id)
{
    ngx_memzero(id, sizeof(ngx_chash_file_id_t));
    id->dev = st->st_dev;
    id->ino = st->st_ino;
    id->size = st->st_size;
    id->mtime = st->st_mtim;
}


static ngx_uint_t
ngx_chash_file_id_eq(ngx_chash_file_id_t *a, ngx_chash_file_id_t *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size
           && a->mtime.tv_sec == b->mtime.tv_sec
           && a->mtime.tv_nsec == b->mtime.tv_nsec;
}


/* Whether an address is numeric (IPv4[:port], [IPv6][:port], unix:path):
 * names would make a worker resolve them on its event loop. */
static ngx_uint_t
ngx_chash_numeric(u_char *p, size_t len)
{
    u_char  *colon;

    if (len >= 5 && ngx_strncmp(p, "unix:", 5) == 0) {
        return 1;
    }

    if (len && p[0] == '[') {
        return 1;       /* the parser refuses what is not IPv6 */
    }

    colon = ngx_strlchr(p, p + len, ':');

    if (colon) {
        len = colon - p;
    }

    return ngx_inet_addr(p, len) != INADDR_NONE;
}


/* The name of the check a chash_last_error() message starts with. */
static const char *
ngx_chash_check_name(int rc, const char *message, u_char *buf, size_t len)
{
    const char  *colon;

    colon = strchr(message, ':');

    if (rc == CHASH_E_BAD_SNAPSHOT && colon && (size_t) (colon - message) < len
        && strchr(message, ' ') > colon)
    {
        ngx_cpystrn(buf, (u_char *) message, colon - message + 1);
        return (const char *) buf;
    }

    if (rc == CHASH_E_UNTRUSTED) {
        if (ngx_strstr(message, "version")) {
            return "min_version";
        }

        return "signature";
    }

    return chash_strerror(rc);
}


ngx_int_t
ngx_chash_gen_load(ngx_chash_source_t *src, ngx_chash_gen_t *served,
    ngx_chash_gen_t *partner, ngx_chash_gen_t **out, const char **check,
    u_char *checkbuf, u_char *err, size_t len)
{
    int                      rc;
    size_t                   alen;
    uint8_t                  fp[CHASH_FINGERPRINT_SIZE];
    uint32_t                 i, k, n;
    ngx_log_t               *log;
    const char              *addr, *name;
    struct stat              st;
    chash_migration         *m;
    ngx_chash_gen_t         *gen;
    ngx_chash_subset_t      *sub;
    chash_snapshot_options   opt;

    *out = NULL;
    *check = "io";

    log = ngx_cycle->log;

    if (stat((char *) src->path.data, &st) == -1) {
        ngx_snprintf(err, len, "stat \"%V\" failed: %s%Z", &src->path,
                     strerror(errno));
        return NGX_DECLINED;
    }

    gen = NULL;

    {
        ngx_pool_t  *pool = ngx_create_pool(16384, log);

        if (pool == NULL) {
            *check = "out_of_memory";
            ngx_snprintf(err, len, "no memory%Z");
            return NGX_DECLINED;
        }

        gen = ngx_pcalloc(pool, sizeof(ngx_chash_gen_t));
        if (gen == NULL) {
            ngx_destroy_pool(pool);
            *check = "out_of_memory";
            ngx_snprintf(err, len, "no memory%Z");
            return NGX_DECLINED;
        }

        gen->pool = pool;
        gen->refs = 1;
        gen->thread_pool = src->poll ? &src->thread_pool : NULL;
    }

    ngx_chash_file_id(&st, &gen->file);
    gen->loaded_at = time(NULL);

    ngx_memzero(&opt, sizeof(chash_snapshot_options));
    opt.copy = src->copy ? 1 : 0;
    opt.min_config_version = src->min_version;
    opt.trusted_keys = src->trusted_keys;
    opt.n_trusted_keys = src->n_trusted_keys;

    if (served && served->info.config_version > opt.min_config_version) {
        opt.min_config_version = served->info.config_version;
    }

    rc = chash_snapshot_load((char *) src->path.data, &opt, &gen->snapshot);
    if (rc != CHASH_OK) {
        *check = ngx_chash_check_name(rc, chash_last_error(), checkbuf,
                                      NGX_CHASH_CHECK_LEN);
        ngx_snprintf(err, len, "%s%Z", chash_last_error());
        goto failed;
    }

    if (chash_snapshot_get_info(gen->snapshot, &gen->info) != CHASH_OK
        || chash_snapshot_ring(gen->snapshot, &gen->ring) != CHASH_OK
        || chash_ring_fingerprint(gen->ring, fp) != CHASH_OK
        || chash_fingerprint_hex(fp, (char *) gen->fingerprint) != CHASH_OK)
    {
        *check = "internal";
        ngx_snprintf(err, len, "%s%Z", chash_last_error());
        goto failed;
    }

    if (served && served->info.config_version == gen->info.config_version
        && ngx_strcmp(served->fingerprint, gen->fingerprint) != 0)
    {
        *check = "same_version";
        ngx_snprintf(err, len, "config version %uL is served with ring %s; "
                     "this file has that version and ring %s: a new ring "
                     "needs a higher version%Z", gen->info.config_version,
                     served->fingerprint, gen->fingerprint);
        goto failed;
    }

    if (src->flavor >= 0 && gen->info.flavor != src->flavor) {
        *check = "flavor";
        ngx_snprintf(err, len, "the snapshot is flavor=%s, the chash "
                     "directive says flavor=%s%Z",
                     ngx_chash_flavor_name(gen->info.flavor),
                     ngx_chash_flavor_name(src->flavor));
        goto failed;
    }

    n = chash_ring_num_nodes(gen->ring);

    if (n == 0) {
        *check = "nodes";
        ngx_snprintf(err, len, "the snapshot has no nodes%Z");
        goto failed;
    }

    gen->addresses = ngx_palloc(gen->pool, n * sizeof(ngx_str_t));
    gen->weights = ngx_palloc(gen->pool, n * sizeof(ngx_uint_t));
    gen->nodes.node_first = ngx_palloc(gen->pool, (n + 1) * sizeof(ngx_uint_t));
    gen->nodes.node_peers = ngx_palloc(gen->pool, n * sizeof(ngx_uint_t));

    if (gen->addresses == NULL || gen->weights == NULL
        || gen->nodes.node_first == NULL || gen->nodes.node_peers == NULL)
    {
        *check = "out_of_memory";
        ngx_snprintf(err, len, "no memory%Z");
        goto failed;
    }

    gen->nodes.nnodes = n;
    gen->nodes.npeers = n;

    for (i = 0; i < n; i++) {
        addr = chash_ring_node_address(gen->ring, i, &alen);

        if (addr == NULL || !ngx_chash_numeric((u_char *) addr, alen)) {
            *check = "address";
            ngx_snprintf(err, len, "node %uD \"%s\" is not a numeric address "
                         "(IPv4:port, [IPv6]:port or unix:path): resolve "
                         "names when building the snapshot%Z", i,
                         addr ? addr : "");
            goto failed;
        }

        gen->addresses[i].data = (u_char *) addr;     /* NUL-terminated */
        gen->addresses[i].len = alen;
        gen->weights[i] = chash_ring_node_weight(gen->ring, i);
        gen->nodes.node_first[i] = i;
        gen->nodes.node_peers[i] = i;
    }

    gen->nodes.node_first[n] = n;

    if (partner && !src->allow_mismatch) {
        rc = chash_migration_new(partner->ring, gen->ring, src->seed, 0, &m);
        if (rc != CHASH_OK) {
            *check = "backend_mismatch";
            ngx_snprintf(err, len, "the rings of \"%V\" and of the other "
                         "file do not come from one backend snapshot "
                         "(allow_mismatch permits it): %s%Z", &src->path,
                         chash_last_error());
            goto failed;
        }

        chash_migration_free(m);
    }

    if (src->build_peers(src, gen, err, len) != NGX_OK) {
        *check = "peers";
        goto failed;
    }

    gen->nsubsets = gen->info.subsets;

    if (gen->nsubsets) {
        gen->subsets = ngx_pcalloc(gen->pool,
                                   gen->nsubsets * sizeof(ngx_chash_subset_t));
        if (gen->subsets == NULL) {
            *check = "out_of_memory";
            ngx_snprintf(err, len, "no memory%Z");
            goto failed;
        }
    }

    for (k = 0; k < gen->nsubsets; k++) {
        sub = &gen->subsets[k];
        name = chash_snapshot_subset_name(gen->snapshot, k);

        if (name == NULL
            || chash_snapshot_subset(gen->snapshot, name, &sub->mask)
               != CHASH_OK)
        {
            gen->nsubsets = k;
            *check = "subset";
            ngx_snprintf(err, len, "subset %uD: %s%Z", k, chash_last_error());
            goto failed;
        }

        sub->name.data = (u_char *) name;
        sub->name.len = ngx_strlen(name);

        sub->outside = ngx_pcalloc(gen->pool,
                            ((n + 8 * sizeof(uintptr_t) - 1)
                             / (8 * sizeof(uintptr_t))) * sizeof(uintptr_t));
        if (sub->outside == NULL) {
            gen->nsubsets = k + 1;
            *check = "out_of_memory";
            ngx_snprintf(err, len, "no memory%Z");
            goto failed;
        }

        for (i = 0; i < n; i++) {
            if (!chash_node_mask_get(sub->mask, i)) {
                ngx_chash_set_tried(sub->outside, i);

            } else if (gen->weights[i]) {
                sub->live++;
            }
        }
    }

    gen->ring_id.data = gen->fingerprint;
    gen->ring_id.len = 16;

    gen->version.data = ngx_pnalloc(gen->pool, NGX_INT64_LEN);
    if (gen->version.data == NULL) {
        *check = "out_of_memory";
        ngx_snprintf(err, len, "no memory%Z");
        goto failed;
    }

    gen->version.len = ngx_sprintf(gen->version.data, "%uL",
                                   gen->info.config_version)
                       - gen->version.data;

    if (gen->info.is_signed) {
        ngx_hex_dump(gen->key_id, gen->info.key_id, CHASH_KEY_ID_SIZE);
    }

    *out = gen;

    return NGX_OK;

failed:

    ngx_chash_gen_free(gen);

    return NGX_DECLINED;
}


static void
ngx_chash_source_cycle_cleanup(void *data)
{
    ngx_chash_source_t  *src = data;

    ngx_chash_gen_unref(src->current);
    src->current = NULL;
}


ngx_int_t
ngx_chash_source_init_conf(ngx_conf_t *cf, const ngx_chash_upstream_t *up,
    ngx_chash_source_t *src)
{
    u_char               err[NGX_CHASH_ERR_LEN];
    u_char               checkbuf[NGX_CHASH_CHECK_LEN];
    ngx_int_t            rc;
    const char          *check;
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(cf->cycle->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_chash_gen_load(src, NULL,
                            src->partner ? src->partner->current : NULL,
                            &src->current, &check, checkbuf, err,
                            sizeof(err));
    if (rc != NGX_OK) {
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up,
                                 "%V \"%V\": check %s failed: %s",
                                 &src->directive, &src->path, check, err);
        return NGX_ERROR;
    }

    cln->handler = ngx_chash_source_cycle_cleanup;
    cln->data = src;

    ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0,
                       "%V \"%V\" in upstream \"%V\": flavor=%s, config "
                       "version %uL, %uD nodes, %uL points, %uD subsets, "
                       "ring %V, %s%s, %s", &src->directive, &src->path,
                       src->upstream, ngx_chash_flavor_name(src->current->info.flavor),
                       src->current->info.config_version,
                       src->current->info.nodes, src->current->info.points,
                       src->current->info.subsets, &src->current->ring_id,
                       src->current->info.is_signed ? "signed by key " :
                       "unsigned", src->current->key_id,
                       src->current->info.mapped ? "mapped" : "copied");

    if (src->loaded) {
        src->loaded(src, src->current, NULL, NULL);
    }

    return NGX_OK;
}


static void
ngx_chash_refuse(ngx_chash_source_t *src, ngx_chash_file_id_t *id,
    const char *check, u_char *err, ngx_log_t *log)
{
    if (!src->refused_valid || !ngx_chash_file_id_eq(&src->refused, id)) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "%V \"%V\" in upstream \"%V\": refused, check %s: %s; "
                      "still serving config version %uL",
                      &src->directive, &src->path, src->upstream, check, err,
                      src->current->info.config_version);
        src->refused = *id;
        src->refused_valid = 1;

        ngx_chash_status_refused(src, check, err);
    }

    if (src->loaded) {
        src->loaded(src, NULL, check, err);
    }
}


static void
ngx_chash_serve(ngx_chash_source_t *src, ngx_chash_gen_t *gen, ngx_log_t *log)
{
    ngx_chash_gen_t  *old;

    old = src->current;

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "%V \"%V\" in upstream \"%V\": serving config version %uL "
                  "(ring %V), was %uL", &src->directive, &src->path,
                  src->upstream, gen->info.config_version, &gen->ring_id,
                  old ? old->info.config_version : 0);

    src->current = gen;
    src->refused_valid = 0;

    ngx_chash_status_served(src, 1);

    if (src->loaded) {
        src->loaded(src, gen, NULL, NULL);
    }

    /* requests that started on old keep it until their pools go */
    ngx_chash_gen_unref(old);
}


#if (NGX_THREADS)

typedef struct {
    ngx_chash_source_t    *src;
    ngx_chash_gen_t       *served;     /* held while the thread runs */
    ngx_chash_gen_t       *partner;    /* held while the thread runs */
    ngx_chash_gen_t       *gen;        /* the result */
    ngx_chash_file_id_t    id;
    const char            *check;
    u_char                 checkbuf[NGX_CHASH_CHECK_LEN];
    u_char                 err[NGX_CHASH_ERR_LEN];
} ngx_chash_load_ctx_t;


/* On a thread of the pool: the whole load and verification. */
static void
ngx_chash_load_thread(void *data, ngx_log_t *log)
{
    ngx_chash_load_ctx_t  *ctx = data;

    ngx_chash_gen_load(ctx->src, ctx->served, ctx->partner, &ctx->gen,
                       &ctx->check, ctx->checkbuf, ctx->err,
                       sizeof(ctx->err));
}


/* Back on the event loop. */
static void
ngx_chash_load_done(ngx_event_t *ev)
{
    ngx_thread_task_t     *task = ev->data;
    ngx_chash_load_ctx_t  *ctx = task->ctx;
    ngx_chash_source_t    *src = ctx->src;

    src->busy = 0;

    ngx_chash_gen_unref(ctx->served);
    ngx_chash_gen_unref(ctx->partner);

    if (ngx_exiting || ngx_quit || ngx_terminate) {
        ngx_chash_gen_unref(ctx->gen);
        return;
    }

    if (ctx->gen == NULL) {
        ngx_chash_refuse(src, &ctx->id, ctx->check, ctx->err, ev->log);
        return;
    }

    if (ngx_strcmp(ctx->gen->fingerprint, src->current->fingerprint) == 0
        && ctx->gen->info.config_version == src->current->info.config_version)
    {
        /* the same ring in another file (a copy, a touch): keep serving
         * the one requests already hold, remember the new identity */
        src->current->file = ctx->gen->file;
        ngx_chash_gen_unref(ctx->gen);
        return;
    }

    ngx_chash_serve(src, ctx->gen, ev->log);
}

#endif


static void
ngx_chash_poll_arm(ngx_chash_source_t *src)
{
    ngx_msec_t  jitter;

    /* up to a tenth of the interval (at most 1 s) of jitter: workers do not
     * stat and load in lockstep */
    jitter = ngx_min(src->poll / 10, 1000);
    ngx_add_timer(&src->poll_event,
                  src->poll + (jitter ? (ngx_msec_t) ngx_random() % jitter : 0));
}


static void
ngx_chash_poll(ngx_event_t *ev)
{
    ngx_chash_source_t    *src = ev->data;
    struct stat            st;
    ngx_chash_file_id_t    id;
#if (NGX_THREADS)
    ngx_thread_pool_t     *tp;
    ngx_thread_task_t     *task;
    ngx_chash_load_ctx_t  *ctx;
#endif

    if (ngx_exiting || ngx_quit || ngx_terminate) {
        return;
    }

    if (src->busy || stat((char *) src->path.data, &st) == -1) {
        /* a missing file: keep serving; the next poll looks again */
        goto next;
    }

    ngx_chash_file_id(&st, &id);

    if (ngx_chash_file_id_eq(&id, &src->current->file)
        || (src->refused_valid && ngx_chash_file_id_eq(&id, &src->refused)))
    {
        goto next;
    }

#if (NGX_THREADS)

    tp = ngx_thread_pool_get((ngx_cycle_t *) ngx_cycle, &src->thread_pool);
    if (tp == NULL) {
        ngx_log_error(NGX_LOG_ALERT, ev->log, 0, "chash: no thread pool "
                      "\"%V\"", &src->thread_pool);
        goto next;
    }

    task = src->task;

    if (task == NULL) {
        task = ngx_thread_task_alloc(ngx_cycle->pool,
                                     sizeof(ngx_chash_load_ctx_t));
        if (task == NULL) {
            goto next;
        }

        task->handler = ngx_chash_load_thread;
        task->event.handler = ngx_chash_load_done;
        task->event.data = task;
        task->event.log = ngx_cycle->log;
        src->task = task;
    }

    ctx = task->ctx;
    ctx->src = src;
    ctx->gen = NULL;
    ctx->id = id;
    ctx->check = NULL;
    ctx->served = src->current;
    ctx->served->refs++;
    ctx->partner = src->partner ? src->partner->current : NULL;

    if (ctx->partner) {
        ctx->partner->refs++;
    }

    if (ngx_thread_task_post(tp, task) != NGX_OK) {
        ngx_chash_gen_unref(ctx->served);
        ngx_chash_gen_unref(ctx->partner);
        goto next;
    }

    src->busy = 1;

#endif

next:

    ngx_chash_poll_arm(src);
}


ngx_int_t
ngx_chash_source_init_worker(ngx_cycle_t *cycle, ngx_chash_source_t *src)
{
    u_char               err[NGX_CHASH_ERR_LEN];
    u_char               checkbuf[NGX_CHASH_CHECK_LEN];
    struct stat          st;
    const char          *check;
    ngx_chash_gen_t     *gen;
    ngx_chash_file_id_t  id;

    if (src->current == NULL) {
        return NGX_OK;
    }

    ngx_chash_status_served(src, 0);

    /* a worker the master (re)spawns after the file changed serves the
     * file's ring before its first request: this load blocks only it */
    if (stat((char *) src->path.data, &st) == 0) {
        ngx_chash_file_id(&st, &id);

        if (!ngx_chash_file_id_eq(&id, &src->current->file)) {
            if (ngx_chash_gen_load(src, src->current,
                                   src->partner ? src->partner->current
                                                : NULL,
                                   &gen, &check, checkbuf, err,
                                   sizeof(err))
                == NGX_OK)
            {
                /* as the poll's rule: the same ring at the same version
                 * in another file keeps the inherited generation; the
                 * same ring at a new version is served (its version is
                 * what $chash_ring_version and the status report) */
                if (ngx_strcmp(gen->fingerprint, src->current->fingerprint)
                    == 0
                    && gen->info.config_version
                       == src->current->info.config_version)
                {
                    src->current->file = gen->file;
                    ngx_chash_gen_unref(gen);

                } else {
                    ngx_chash_serve(src, gen, cycle->log);
                }

            } else {
                ngx_chash_refuse(src, &id, check, err, cycle->log);
            }
        }
    }

    if (src->poll == 0) {
        return NGX_OK;
    }

    src->poll_event.handler = ngx_chash_poll;
    src->poll_event.data = src;
    src->poll_event.log = cycle->log;
    src->poll_event.cancelable = 1;

    ngx_chash_poll_arm(src);

    return NGX_OK;
}


static ngx_int_t
ngx_chash_parse_time_param(ngx_str_t *v, size_t skip, ngx_msec_t *out)
{
    ngx_str_t  s;

    s.data = v->data + skip;
    s.len = v->len - skip;

    *out = ngx_parse_time(&s, 0);

    return *out == (ngx_msec_t) NGX_ERROR ? NGX_ERROR : NGX_OK;
}


char *
ngx_chash_source_parse(ngx_conf_t *cf, ngx_chash_source_t *src,
    ngx_str_t *value, ngx_uint_t n, ngx_str_t *rest, ngx_uint_t *nrest)
{
    u_char      *keys;
    ngx_int_t    v;
    ngx_str_t    file;
    ngx_uint_t   i;

    src->path = value[1];

    if (ngx_conf_full_name(cf->cycle, &src->path, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    /* NUL-terminated for stat() and chash_snapshot_load() */
    {
        u_char  *p = ngx_pnalloc(cf->pool, src->path.len + 1);

        if (p == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_memcpy(p, src->path.data, src->path.len);
        p[src->path.len] = '\0';
        src->path.data = p;
    }

    src->poll = 1000;
    ngx_str_set(&src->thread_pool, "default");
    *nrest = 0;

    for (i = 2; i < n; i++) {

        if (ngx_strncmp(value[i].data, "trusted_key=", 12) == 0) {
            file.data = value[i].data + 12;
            file.len = value[i].len - 12;

            if (ngx_conf_full_name(cf->cycle, &file, 1) != NGX_OK) {
                return NGX_CONF_ERROR;
            }

            keys = ngx_palloc(cf->pool,
                              (src->n_trusted_keys + 1) * CHASH_PUBLIC_KEY_SIZE);
            if (keys == NULL) {
                return NGX_CONF_ERROR;
            }

            if (src->n_trusted_keys) {
                ngx_memcpy(keys, src->trusted_keys,
                           src->n_trusted_keys * CHASH_PUBLIC_KEY_SIZE);
            }

            {
                u_char  *z = ngx_pnalloc(cf->pool, file.len + 1);

                if (z == NULL) {
                    return NGX_CONF_ERROR;
                }

                ngx_cpystrn(z, file.data, file.len + 1);

                if (chash_public_key_read((char *) z,
                                          keys + src->n_trusted_keys
                                                 * CHASH_PUBLIC_KEY_SIZE)
                    != CHASH_OK)
                {
                    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                       "%V: trusted_key \"%s\": %s",
                                       &value[0], z, chash_last_error());
                    return NGX_CONF_ERROR;
                }
            }

            src->trusted_keys = keys;
            src->n_trusted_keys++;
            continue;
        }

        if (ngx_strncmp(value[i].data, "min_version=", 12) == 0) {
            v = ngx_atoof(value[i].data + 12, value[i].len - 12);
            if (v == NGX_ERROR) {
                goto invalid;
            }

            src->min_version = (uint64_t) v;
            continue;
        }

        if (ngx_strncmp(value[i].data, "poll=", 5) == 0) {
            if (value[i].len == 8 && ngx_strncmp(value[i].data, "poll=off", 8)
                                     == 0)
            {
                src->poll = 0;
                continue;
            }

            if (ngx_chash_parse_time_param(&value[i], 5, &src->poll)
                != NGX_OK || src->poll == 0)
            {
                goto invalid;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "thread_pool=", 12) == 0) {
            src->thread_pool.data = value[i].data + 12;
            src->thread_pool.len = value[i].len - 12;
            continue;
        }

        if (value[i].len == 4 && ngx_strncmp(value[i].data, "copy", 4) == 0) {
            src->copy = 1;
            continue;
        }

        rest[(*nrest)++] = value[i];
    }

#if (NGX_THREADS)
    if (src->poll && ngx_thread_pool_add(cf, &src->thread_pool) == NULL) {
        return NGX_CONF_ERROR;
    }
#else
    if (src->poll) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V: poll needs nginx built "
                           "--with-threads (or poll=off)", &value[0]);
        return NGX_CONF_ERROR;
    }
#endif

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"",
                       &value[i]);
    return NGX_CONF_ERROR;
}


ngx_uint_t
ngx_chash_migration_new_side(ngx_str_t *key, uint64_t seed,
    uint32_t rollout_ppm)
{
    if (rollout_ppm == 0) {
        return 0;
    }

    if (rollout_ppm >= CHASH_ROLLOUT_SCALE) {
        return 1;
    }

    return chash_migration_bucket(chash_migration_key_hash(key->data, key->len,
                                                           seed))
           < rollout_ppm;
}


ngx_int_t
ngx_chash_parse_rollout(u_char *p, size_t len)
{
    char    buf[64], *end;
    double  value, scale;

    scale = 1;

    if (len && p[len - 1] == '%') {
        scale = 100;
        len--;
    }

    if (len == 0 || len >= sizeof(buf)) {
        return NGX_ERROR;
    }

    ngx_memcpy(buf, p, len);
    buf[len] = '\0';

    /* exactly as `chash route --rollout` and RingMigration::SetRollout:
     * strtod, divided by 100 for a percentage, floor(fraction * 10^6) */
    value = strtod(buf, &end) / scale;

    if (end != buf + len || !(value >= 0 && value <= 1)) {
        return NGX_ERROR;
    }

    return (ngx_int_t) floor(value * CHASH_ROLLOUT_SCALE);
}


ngx_uint_t
ngx_chash_scope_in(ngx_str_t *v)
{
    if (v->len == 0) {
        return 0;
    }

    if (v->len == 1 && v->data[0] == '0') {
        return 0;
    }

    if (v->len == 3 && ngx_strncasecmp(v->data, (u_char *) "off", 3) == 0) {
        return 0;
    }

    return 1;
}



/* ---- Policy: what both modules share about a snapshot upstream ----------- */

char *
ngx_chash_parse_peer_params(ngx_conf_t *cf, ngx_str_t *rest, ngx_uint_t nrest,
    ngx_chash_peer_params_t *pp)
{
    time_t      t;
    ngx_int_t   n;
    ngx_str_t   s;
    ngx_uint_t  i;

    for (i = 0; i < nrest; i++) {

        if (ngx_strncmp(rest[i].data, "max_fails=", 10) == 0) {
            n = ngx_atoi(rest[i].data + 10, rest[i].len - 10);
            if (n == NGX_ERROR) {
                goto invalid;
            }

            pp->max_fails = n;
            continue;
        }

        if (ngx_strncmp(rest[i].data, "max_conns=", 10) == 0) {
            n = ngx_atoi(rest[i].data + 10, rest[i].len - 10);
            if (n == NGX_ERROR) {
                goto invalid;
            }

            pp->max_conns = n;
            continue;
        }

        if (ngx_strncmp(rest[i].data, "fail_timeout=", 13) == 0) {
            s.data = rest[i].data + 13;
            s.len = rest[i].len - 13;
            t = ngx_parse_time(&s, 1);
            if (t == (time_t) NGX_ERROR) {
                goto invalid;
            }

            pp->fail_timeout = t;
            continue;
        }

        goto invalid;
    }

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"",
                       &rest[i]);
    return NGX_CONF_ERROR;
}


char *
ngx_chash_parse_migrate_params(ngx_conf_t *cf, ngx_chash_source_t *next,
    ngx_str_t *rest, ngx_uint_t nrest, ngx_chash_migrate_params_t *mp)
{
    off_t       seed;
    ngx_uint_t  i, has_rollout;

    has_rollout = 0;

    for (i = 0; i < nrest; i++) {

        if (ngx_strncmp(rest[i].data, "rollout=", 8) == 0) {
            has_rollout = 1;
            mp->rollout.data = rest[i].data + 8;
            mp->rollout.len = rest[i].len - 8;

            if (ngx_strlchr(rest[i].data + 8, rest[i].data + rest[i].len, '$'))
            {
                mp->rollout_is_var = 1;
                continue;
            }

            mp->rollout_ppm = ngx_chash_parse_rollout(mp->rollout.data,
                                                      mp->rollout.len);
            if (mp->rollout_ppm == NGX_ERROR) {
                goto invalid;
            }

            continue;
        }

        if (ngx_strncmp(rest[i].data, "scope=", 6) == 0) {
            mp->scope.data = rest[i].data + 6;
            mp->scope.len = rest[i].len - 6;
            mp->has_scope = 1;
            continue;
        }

        if (ngx_strncmp(rest[i].data, "seed=", 5) == 0) {
            seed = ngx_atoof(rest[i].data + 5, rest[i].len - 5);
            if (seed == NGX_ERROR) {
                goto invalid;
            }

            next->seed = (uint64_t) seed;
            continue;
        }

        if (rest[i].len == 14
            && ngx_strncmp(rest[i].data, "allow_mismatch", 14) == 0)
        {
            next->allow_mismatch = 1;
            continue;
        }

        goto invalid;
    }

    if (!has_rollout) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "chash_migrate needs rollout=VALUE");
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"",
                       &rest[i]);
    return NGX_CONF_ERROR;
}


ngx_int_t
ngx_chash_policy_init_conf(ngx_conf_t *cf, const ngx_chash_upstream_t *up,
    ngx_chash_source_t *snap, ngx_chash_source_t *next, ngx_int_t flavor,
    ngx_uint_t has_servers, ngx_uint_t has_zone, ngx_uint_t multiple,
    ngx_flag_t id_set, void *module_conf,
    ngx_chash_build_peers_pt build_peers)
{
    ngx_uint_t           i;
    ngx_chash_source_t  *srcs[2];

    if (has_servers) {
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up, "the upstream has "
                                 "chash_snapshot: its servers are the "
                                 "snapshot's nodes; remove its `server` "
                                 "lines");
        return NGX_ERROR;
    }

    if (has_zone) {
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up, "the upstream has "
                                 "chash_snapshot: `zone` is not supported "
                                 "(its peers change with the file, per "
                                 "worker)");
        return NGX_ERROR;
    }

    if (multiple) {
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up, "\"multiple=\" "
                                 "comes from the snapshot with "
                                 "chash_snapshot");
        return NGX_ERROR;
    }

    if (id_set) {
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up, "\"id=\" is for "
                                 "server lines: with chash_snapshot, the "
                                 "ids are the snapshot's node addresses");
        return NGX_ERROR;
    }

    srcs[0] = snap;
    srcs[1] = next;

    if (next) {
        /* the new file's backends are checked against the old one's */
        next->partner = snap;
        snap->seed = next->seed;
        snap->allow_mismatch = next->allow_mismatch;
    }

    for (i = 0; i < 2 && srcs[i]; i++) {
        srcs[i]->upstream = up->name;
        srcs[i]->flavor = flavor;
        srcs[i]->module_conf = module_conf;
        srcs[i]->build_peers = build_peers;

        if (ngx_chash_source_init_conf(cf, up, srcs[i]) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    if (next) {
        snap->partner = next;
    }

    return NGX_OK;
}


ngx_int_t
ngx_chash_rollout_value(ngx_str_t *v, ngx_str_t *upstream, ngx_log_t *log)
{
    ngx_int_t  ppm;

    ppm = ngx_chash_parse_rollout(v->data, v->len);

    if (ppm == NGX_ERROR) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "chash_migrate in upstream \"%V\": rollout \"%V\" is "
                      "not 0..1 or 0%%..100%%: old ring", upstream, v);
        return 0;
    }

    return ppm;
}


ngx_chash_gen_t *
ngx_chash_policy_choose(ngx_chash_source_t *snap, ngx_chash_source_t *next,
    ngx_str_t *key, ngx_int_t ppm, ngx_str_t *scope, ngx_uint_t *side)
{
    *side = 0;

    if (next && ngx_chash_scope_in(scope)
        && ngx_chash_migration_new_side(key, next->seed, (uint32_t) ppm))
    {
        *side = 1;
        return next->current;
    }

    return snap->current;
}


ngx_int_t
ngx_chash_policy_subset(ngx_chash_source_t *snap, ngx_chash_gen_t *gen,
    ngx_uint_t side, ngx_str_t *name, ngx_chash_subset_t **sub,
    ngx_log_t *log)
{
    ngx_chash_subset_t  *s;

    *sub = NULL;

    if (name->len == 0) {
        ngx_chash_status_count(snap, side, -1, 0);
        return NGX_OK;
    }

    s = ngx_chash_gen_subset(gen, name);

    if (s == NULL || chash_node_mask_count_available(s->mask) == 0) {
        /* isolation over availability: never the whole ring */
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "chash upstream \"%V\": %s subset \"%V\" in config "
                      "version %V", snap->upstream, s ? "empty" : "no", name,
                      &gen->version);
        ngx_chash_status_count(snap, side, -1, 1);
        return NGX_DECLINED;
    }

    ngx_chash_status_count(snap, side, s - gen->subsets, 0);
    *sub = s;

    return NGX_OK;
}

/* ---- Status --------------------------------------------------------------- */

ngx_int_t
ngx_chash_status_register(ngx_conf_t *cf, ngx_chash_status_t *st,
    ngx_str_t *name, ngx_chash_source_t *snap, ngx_chash_source_t *next,
    ngx_str_t *rollout)
{
    ngx_chash_status_upstream_t  *u;

    if (st->upstreams.elts == NULL
        && ngx_array_init(&st->upstreams, cf->pool, 4,
                          sizeof(ngx_chash_status_upstream_t))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    u = ngx_array_push(&st->upstreams);
    if (u == NULL) {
        return NGX_ERROR;
    }

    u->name = name;
    u->snap = snap;
    u->next = next;
    u->rollout = *rollout;

    snap->status = st;
    snap->status_index = st->upstreams.nelts - 1;
    snap->side = 0;

    if (next) {
        next->status = st;
        next->status_index = snap->status_index;
        next->side = 1;
    }

    return NGX_OK;
}


/* Counters survive a reload for each upstream whose name keeps its place. */
static ngx_int_t
ngx_chash_status_init_zone(ngx_shm_zone_t *zone, void *data)
{
    ngx_chash_status_t  *st = zone->data;

    size_t                        size;
    ngx_uint_t                    i;
    ngx_slab_pool_t              *shpool;
    ngx_chash_status_shm_t       *shm;
    ngx_chash_status_upstream_t  *u;

    shpool = (ngx_slab_pool_t *) zone->shm.addr;

    if (data) {
        shm = ((ngx_chash_status_t *) data)->shm;

    } else {
        shm = shpool->data;     /* a zone nginx kept across a reload */
    }

    size = (st->upstreams.nelts + 1) * sizeof(ngx_chash_status_shm_t);

    if (shm == NULL) {
        shm = ngx_slab_alloc(shpool, size);
        if (shm == NULL) {
            return NGX_ERROR;
        }

        ngx_memzero(shm, size);
        shpool->data = shm;
    }

    u = st->upstreams.elts;

    for (i = 0; i < st->upstreams.nelts; i++) {
        if (shm[i].name_len != u[i].name->len
            || ngx_strncmp(shm[i].name, u[i].name->data, u[i].name->len) != 0)
        {
            ngx_memzero(&shm[i], sizeof(ngx_chash_status_shm_t));
            shm[i].name_len = ngx_min(u[i].name->len, sizeof(shm[i].name));
            ngx_memcpy(shm[i].name, u[i].name->data, shm[i].name_len);
        }
    }

    st->shm = shm;

    return NGX_OK;
}


ngx_int_t
ngx_chash_status_add_zone(ngx_conf_t *cf, ngx_chash_status_t *st,
    ngx_str_t *name, void *tag)
{
    size_t            size;

    if (st->upstreams.nelts == 0) {
        return NGX_OK;
    }

    /* the size follows the upstreams: a reload that changes their number
     * gets a new zone */
    size = 8 * ngx_pagesize
           + (st->upstreams.nelts + 1) * sizeof(ngx_chash_status_shm_t);

    st->zone = ngx_shared_memory_add(cf, name, size, tag);
    if (st->zone == NULL) {
        return NGX_ERROR;
    }

    st->abi = NGX_CHASH_STATUS_ABI;
    st->zone->init = ngx_chash_status_init_zone;
    st->zone->data = st;
    st->zone->noreuse = 0;

    return NGX_OK;
}


ngx_chash_status_slot_t *
ngx_chash_status_slot(ngx_chash_source_t *src)
{
    if (src->status == NULL || src->status->shm == NULL
        || (ngx_process != NGX_PROCESS_WORKER
            && ngx_process != NGX_PROCESS_SINGLE))
    {
        return NULL;
    }

    return &src->status->shm[src->status_index]
                .slot[ngx_worker % NGX_CHASH_STATUS_SLOTS];
}


void
ngx_chash_status_count(ngx_chash_source_t *src, ngx_uint_t side,
    ngx_int_t subset, ngx_uint_t unknown)
{
    ngx_chash_status_slot_t  *slot;

    slot = ngx_chash_status_slot(src);
    if (slot == NULL) {
        return;
    }

    (void) ngx_atomic_fetch_add(&slot->requests[side], 1);

    if (unknown) {
        (void) ngx_atomic_fetch_add(&slot->unknown_subset, 1);

    } else if (subset >= 0 && subset < NGX_CHASH_STATUS_SUBSETS) {
        (void) ngx_atomic_fetch_add(&slot->subset[subset], 1);
    }
}


static void
ngx_chash_status_served(ngx_chash_source_t *src, ngx_uint_t loaded)
{
    ngx_chash_status_slot_t  *slot;

    slot = ngx_chash_status_slot(src);
    if (slot == NULL) {
        return;
    }

    slot->pid = ngx_pid;
    slot->version[src->side] = src->current->info.config_version;

    if (loaded) {
        (void) ngx_atomic_fetch_add(&slot->loads_ok, 1);
    }
}


static void
ngx_chash_status_refused(ngx_chash_source_t *src, const char *check,
    u_char *err)
{
    ngx_chash_status_shm_t   *shm;
    ngx_chash_status_slot_t  *slot;

    slot = ngx_chash_status_slot(src);
    if (slot == NULL) {
        return;
    }

    (void) ngx_atomic_fetch_add(&slot->loads_refused, 1);

    shm = &src->status->shm[src->status_index];

    ngx_spinlock(&shm->lock, ngx_pid, 1024);
    ngx_cpystrn(shm->last_check, (u_char *) check, sizeof(shm->last_check));
    ngx_cpystrn(shm->last_message, err, sizeof(shm->last_message));
    shm->refused_at = ngx_time();
    ngx_unlock(&shm->lock);
}


/* JSON string contents, or a Prometheus label value: \ " and controls. */
static u_char *
ngx_chash_escape(u_char *p, u_char *s, size_t len, ngx_uint_t prometheus)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        if (s[i] == '"' || s[i] == '\\') {
            *p++ = '\\';
            *p++ = s[i];

        } else if (s[i] == '\n') {
            *p++ = '\\';
            *p++ = 'n';

        } else if (s[i] < 0x20) {
            if (!prometheus) {
                p = ngx_sprintf(p, "\\u%04xD", (uint32_t) s[i]);
            }

        } else {
            *p++ = s[i];
        }
    }

    return p;
}


#define ngx_chash_esc(p, str, prom)                                         \
    ngx_chash_escape(p, (u_char *) (str), ngx_strlen(str), prom)


typedef struct {
    uint64_t    loads_ok, loads_refused, requests[2], unknown;
    uint64_t    subset[NGX_CHASH_STATUS_SUBSETS];
} ngx_chash_status_sum_t;


static void
ngx_chash_status_sum(ngx_chash_status_shm_t *shm, ngx_chash_status_sum_t *sum)
{
    ngx_uint_t  w, k;

    ngx_memzero(sum, sizeof(ngx_chash_status_sum_t));

    for (w = 0; w < NGX_CHASH_STATUS_SLOTS; w++) {
        sum->loads_ok += shm->slot[w].loads_ok;
        sum->loads_refused += shm->slot[w].loads_refused;
        sum->requests[0] += shm->slot[w].requests[0];
        sum->requests[1] += shm->slot[w].requests[1];
        sum->unknown += shm->slot[w].unknown_subset;

        for (k = 0; k < NGX_CHASH_STATUS_SUBSETS; k++) {
            sum->subset[k] += shm->slot[w].subset[k];
        }
    }
}


/* Whether a slot belongs to a live worker (old slots of exited ones stay). */
static ngx_uint_t
ngx_chash_status_live(ngx_chash_status_slot_t *slot)
{
    return slot->pid != 0 && (slot->pid == (ngx_atomic_uint_t) ngx_pid
                              || kill((ngx_pid_t) slot->pid, 0) == 0);
}


/*
 * The Prometheus text format (0.0.4): each family once, with HELP and TYPE,
 * its samples for every upstream together.
 */
static u_char *
ngx_chash_status_prometheus(ngx_chash_status_t **sets, u_char *p)
{
    ngx_uint_t                    i, w, k, f, set;
    ngx_chash_status_t           *st;
    ngx_chash_gen_t              *g, *ng;
    ngx_chash_status_shm_t       *shm;
    ngx_chash_status_sum_t        sum;
    ngx_chash_status_upstream_t  *u;

    static const char  *families[][3] = {
        { "chash_snapshot_info", "gauge",
          "The snapshot an upstream serves in this worker (labels), 1." },
        { "chash_snapshot_points", "gauge", "Points of the ring served." },
        { "chash_snapshot_nodes", "gauge", "Nodes of the ring served." },
        { "chash_snapshot_loaded_at_seconds", "gauge",
          "When this worker loaded the ring it serves (Unix time)." },
        { "chash_snapshot_config_version", "gauge",
          "The config version each worker serves (ring old or new)." },
        { "chash_snapshot_loads_total", "counter",
          "Snapshot loads by the workers after start, by result." },
        { "chash_requests_total", "counter",
          "Requests routed, by the ring that routed them (old without a "
          "migration)." },
        { "chash_subset_requests_total", "counter",
          "Requests routed inside a named subset." },
        { "chash_unknown_subset_total", "counter",
          "Requests that named a subset the snapshot does not hold (502)." },
        { "chash_migration_info", "gauge",
          "The migration's new ring (labels), 1." }
    };

    for (f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
        p = ngx_sprintf(p, "# HELP %s %s\n# TYPE %s %s\n", families[f][0],
                        families[f][2], families[f][0], families[f][1]);

        /* sets[0] the HTTP upstreams, sets[1] the stream ones (or NULL) */
        for (set = 0; set < 2; set++) {
        st = sets[set];

        if (st == NULL) {
            continue;
        }

        u = st->upstreams.elts;

        for (i = 0; i < st->upstreams.nelts; i++) {
            g = u[i].snap->current;
            ng = u[i].next ? u[i].next->current : NULL;
            shm = st->shm ? &st->shm[i] : NULL;

            if (g == NULL || shm == NULL) {
                continue;
            }

            ngx_chash_status_sum(shm, &sum);

#define NGX_CHASH_U(p)                                                       \
    p = ngx_sprintf(p, "%s{%supstream=\"", families[f][0],                  \
                    set ? "protocol=\"stream\"," : "");                      \
    p = ngx_chash_escape(p, u[i].name->data, u[i].name->len, 1)

            switch (f) {
            case 0:
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\",file=\"");
                p = ngx_chash_escape(p, u[i].snap->path.data,
                                     u[i].snap->path.len, 1);
                p = ngx_sprintf(p, "\",fingerprint=\"%*s\",key_id=\"%s\","
                                "label=\"", (size_t) 16, g->fingerprint,
                                g->key_id);
                p = ngx_chash_esc(p, chash_snapshot_label(g->snapshot), 1);
                p = ngx_sprintf(p, "\"} 1\n");
                break;
            case 1:
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\"} %uL\n", g->info.points);
                break;
            case 2:
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\"} %uD\n", g->info.nodes);
                break;
            case 3:
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\"} %T\n", g->loaded_at);
                break;
            case 4:
                for (w = 0; w < NGX_CHASH_STATUS_SLOTS; w++) {
                    if (!ngx_chash_status_live(&shm->slot[w])) {
                        continue;
                    }

                    for (k = 0; k < (ng ? 2 : 1); k++) {
                        NGX_CHASH_U(p);
                        p = ngx_sprintf(p, "\",worker=\"%uA\",ring=\"%s\"} "
                                        "%uA\n", shm->slot[w].pid,
                                        k ? "new" : "old",
                                        shm->slot[w].version[k]);
                    }
                }
                break;
            case 5:
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\",result=\"ok\"} %uL\n", sum.loads_ok);
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\",result=\"refused\"} %uL\n",
                                sum.loads_refused);
                break;
            case 6:
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\",ring=\"old\"} %uL\n", sum.requests[0]);
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\",ring=\"new\"} %uL\n", sum.requests[1]);
                break;
            case 7:
                for (k = 0; k < g->nsubsets && k < NGX_CHASH_STATUS_SUBSETS;
                     k++)
                {
                    NGX_CHASH_U(p);
                    p = ngx_sprintf(p, "\",subset=\"");
                    p = ngx_chash_escape(p, g->subsets[k].name.data,
                                         g->subsets[k].name.len, 1);
                    p = ngx_sprintf(p, "\"} %uL\n", sum.subset[k]);
                }
                break;
            case 8:
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\"} %uL\n", sum.unknown);
                break;
            default:
                if (ng) {
                    NGX_CHASH_U(p);
                    p = ngx_sprintf(p, "\",file=\"");
                    p = ngx_chash_escape(p, u[i].next->path.data,
                                         u[i].next->path.len, 1);
                    p = ngx_sprintf(p, "\",fingerprint=\"%*s\",rollout=\"",
                                    (size_t) 16, ng->fingerprint);
                    p = ngx_chash_escape(p, u[i].rollout.data,
                                         u[i].rollout.len, 1);
                    p = ngx_sprintf(p, "\",allow_mismatch=\"%s\"} 1\n",
                                    u[i].next->allow_mismatch ? "true"
                                                              : "false");
                }
                break;
            }
#undef NGX_CHASH_U
        }
        }
    }

    return p;
}


/* The JSON object of st's upstreams, by name, at p. */
static u_char *
ngx_chash_status_json(ngx_chash_status_t *st, u_char *p, ngx_pool_t *pool)
{
    u_char                       *name;
    ngx_uint_t                    i, w, k, first;
    ngx_chash_gen_t              *g, *ng;
    ngx_chash_status_shm_t       *shm;
    ngx_chash_status_sum_t        sum;
    ngx_chash_status_upstream_t  *u;

    u = st->upstreams.elts;
    *p++ = '{';

    for (i = 0; i < st->upstreams.nelts; i++) {
        g = u[i].snap->current;
        ng = u[i].next ? u[i].next->current : NULL;
        shm = st->shm ? &st->shm[i] : NULL;

        if (g == NULL || shm == NULL) {
            continue;
        }

        ngx_chash_status_sum(shm, &sum);
        name = ngx_pnalloc(pool, u[i].name->len + 1);
        if (name == NULL) {
            return NULL;
        }

        (void) ngx_cpystrn(name, u[i].name->data, u[i].name->len + 1);


        if (p[-1] != '{') {
            *p++ = ',';
        }

        *p++ = '"';
        p = ngx_chash_esc(p, name, 0);
        p = ngx_sprintf(p, "\":{\"file\":\"");
        p = ngx_chash_escape(p, u[i].snap->path.data, u[i].snap->path.len, 0);
        p = ngx_sprintf(p, "\",\"config_version\":%uL,\"fingerprint\":\"%*s\","
                        "\"label\":\"", g->info.config_version, (size_t) 16,
                        g->fingerprint);
        p = ngx_chash_esc(p, chash_snapshot_label(g->snapshot), 0);
        p = ngx_sprintf(p, "\",\"key_id\":\"%s\",\"flavor\":\"%s\","
                        "\"points\":%uL,\"nodes\":%uD,\"loaded_at\":%T,"
                        "\"mapped\":%s,\"workers\":[",
                        g->key_id, ngx_chash_flavor_name(g->info.flavor),
                        g->info.points, g->info.nodes, g->loaded_at,
                        g->info.mapped ? "true" : "false");

        first = 1;

        for (w = 0; w < NGX_CHASH_STATUS_SLOTS; w++) {
            if (!ngx_chash_status_live(&shm->slot[w])) {
                continue;
            }

            p = ngx_sprintf(p, "%s{\"pid\":%uA,\"config_version\":%uA",
                            first ? "" : ",", shm->slot[w].pid,
                            shm->slot[w].version[0]);
            if (ng) {
                p = ngx_sprintf(p, ",\"migration_config_version\":%uA",
                                shm->slot[w].version[1]);
            }

            *p++ = '}';
            first = 0;
        }

        p = ngx_sprintf(p, "],\"loads\":{\"ok\":%uL,\"refused\":%uL},"
                        "\"last_refusal\":", sum.loads_ok, sum.loads_refused);

        if (shm->refused_at) {
            ngx_spinlock(&shm->lock, ngx_pid, 1024);
            p = ngx_sprintf(p, "{\"check\":\"");
            p = ngx_chash_esc(p, shm->last_check, 0);
            p = ngx_sprintf(p, "\",\"message\":\"");
            p = ngx_chash_esc(p, shm->last_message, 0);
            p = ngx_sprintf(p, "\",\"at\":%uA}", shm->refused_at);
            ngx_unlock(&shm->lock);

        } else {
            p = ngx_sprintf(p, "null");
        }

        p = ngx_sprintf(p, ",\"requests\":{\"old\":%uL,\"new\":%uL},"
                        "\"subsets\":{", sum.requests[0], sum.requests[1]);

        for (k = 0; k < g->nsubsets && k < NGX_CHASH_STATUS_SUBSETS; k++) {
            p = ngx_sprintf(p, "%s\"", k ? "," : "");
            p = ngx_chash_escape(p, g->subsets[k].name.data,
                                 g->subsets[k].name.len, 0);
            p = ngx_sprintf(p, "\":%uL", sum.subset[k]);
        }

        p = ngx_sprintf(p, "},\"unknown_subset\":%uL", sum.unknown);

        if (ng) {
            p = ngx_sprintf(p, ",\"migration\":{\"file\":\"");
            p = ngx_chash_escape(p, u[i].next->path.data, u[i].next->path.len,
                                 0);
            p = ngx_sprintf(p, "\",\"config_version\":%uL,\"fingerprint\":"
                            "\"%*s\",\"rollout\":\"", ng->info.config_version,
                            (size_t) 16, ng->fingerprint);
            p = ngx_chash_escape(p, u[i].rollout.data, u[i].rollout.len, 0);
            p = ngx_sprintf(p, "\",\"allow_mismatch\":%s}",
                            u[i].next->allow_mismatch ? "true" : "false");
        }

        *p++ = '}';
    }

    *p++ = '}';

    return p;
}


ngx_buf_t *
ngx_chash_status_render(ngx_chash_status_t *st, ngx_chash_status_t *stream,
    ngx_pool_t *pool, ngx_uint_t prom)
{
    size_t                        size;
    u_char                       *p;
    ngx_buf_t                    *b;
    ngx_uint_t                    i, set;
    ngx_chash_gen_t              *g;
    ngx_chash_status_t           *sets[2];
    ngx_chash_status_upstream_t  *u;

    sets[0] = st;
    sets[1] = stream;

    /*
     * An upper bound: every line (at most 24 + 2 a worker slot + one a
     * subset, in either format) holds at most every string of its upstream,
     * each escaped (at most 7 bytes a byte), and numbers.
     */
    size = 1024;

    for (set = 0; set < 2; set++) {
        if (sets[set] == NULL) {
            continue;
        }

        u = sets[set]->upstreams.elts;

        for (i = 0; i < sets[set]->upstreams.nelts; i++) {
            g = u[i].snap->current;

            if (g == NULL) {
                continue;
            }

            size += (24 + 2 * NGX_CHASH_STATUS_SLOTS
                     + ngx_min(g->nsubsets, NGX_CHASH_STATUS_SUBSETS))
                    * (512 + 7 * (u[i].name->len + u[i].snap->path.len
                                  + (u[i].next ? u[i].next->path.len : 0)
                                  + ngx_strlen(chash_snapshot_label(
                                                   g->snapshot))
                                  + u[i].rollout.len + 64
                                  + NGX_CHASH_CHECK_LEN
                                  + sizeof(((ngx_chash_status_shm_t *) 0)
                                           ->last_message)));
        }
    }

    b = ngx_create_temp_buf(pool, size);
    if (b == NULL) {
        return NULL;
    }

    if (prom) {
        b->last = ngx_chash_status_prometheus(sets, b->last);
        return b;
    }

    p = ngx_sprintf(b->last, "{\"upstreams\":");
    p = ngx_chash_status_json(st, p, pool);

    if (p == NULL) {
        return NULL;
    }

    if (stream) {
        p = ngx_sprintf(p, ",\"stream_upstreams\":");
        p = ngx_chash_status_json(stream, p, pool);

        if (p == NULL) {
            return NULL;
        }
    }

    p = ngx_sprintf(p, "}\n");

    b->last = p;

    return b;
}


ngx_chash_status_t *
ngx_chash_status_find(ngx_cycle_t *cycle, ngx_str_t *name)
{
    ngx_uint_t           i;
    ngx_list_part_t     *part;
    ngx_shm_zone_t      *zone;
    ngx_chash_status_t  *st;

    part = &cycle->shared_memory.part;
    zone = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return NULL;
            }

            part = part->next;
            zone = part->elts;
            i = 0;
        }

        if (zone[i].shm.name.len != name->len
            || ngx_strncmp(zone[i].shm.name.data, name->data, name->len) != 0)
        {
            continue;
        }

        st = zone[i].data;

        /* the other module's copy of this core: the same layout only */
        if (st == NULL || st->abi != NGX_CHASH_STATUS_ABI || st->shm == NULL) {
            return NULL;
        }

        return st;
    }
}
