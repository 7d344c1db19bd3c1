/*
 * Rings from `server` lines: the node map of the nginx flavor (one node a
 * distinct server text) and of the others (one node a peer), the ring
 * built in init_upstream and its notice line.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <time.h>

#include "ngx_chash_core.h"


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


/* id: the node's id, server's text by default; errors name server. The
 * other programs' flavors add with chash_builder_add_node (haproxy: its
 * server id, 0 = as HAProxy assigns it). */
static ngx_int_t
ngx_chash_add(ngx_conf_t *cf, const ngx_chash_upstream_t *up,
    ngx_uint_t flavor, chash_builder *b, ngx_str_t *server, ngx_str_t *id,
    ngx_uint_t weight, uint32_t server_id)
{
    int  rc;

    if (id == NULL) {
        id = server;
    }

    rc = ngx_chash_flavor_other(flavor)
         ? chash_builder_add_node(b, (const char *) id->data, id->len,
                                  (uint32_t) weight, server_id, NULL, 0)
         : chash_builder_add(b, (const char *) id->data, id->len,
                             (uint32_t) weight);

    if (rc != CHASH_OK) {
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
                           NULL, weight, 0);
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
    ngx_uint_t flavor, ngx_uint_t id_form,
    const ngx_chash_flavor_options_t *options, ngx_str_t **texts,
    ngx_uint_t *weights, ngx_uint_t n, ngx_chash_nodes_t *nodes,
    chash_builder *b)
{
    uint32_t    server_id;
    ngx_str_t   apisix, *id;
    ngx_uint_t  i;

    if (options && options->server_ids && options->nserver_ids != n) {
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up,
                                 "flavor=%s: server_ids= names %ui ids for "
                                 "%ui servers (one a server line, in "
                                 "order; 0: as HAProxy numbers it)",
                                 ngx_chash_flavor_name(flavor),
                                 options->nserver_ids, n);
        return NGX_DECLINED;
    }

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
         * line. resty and the other programs: a node is one backend; the
         * peers of a name that resolves to several addresses share their
         * line's text.
         */
        if (flavor >= CHASH_FLAVOR_RESTY && i > 0
            && texts[i]->data == texts[i - 1]->data)
        {
            ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up,
                                     "flavor=%s: server \"%V\" resolves "
                                     "to several addresses; a %s node is "
                                     "one backend: write a server line for "
                                     "each address",
                                     ngx_chash_flavor_name(flavor), texts[i],
                                     ngx_chash_flavor_name(flavor));
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

        server_id = options && options->server_ids ? options->server_ids[i]
                                                   : 0;

        if (ngx_chash_add(cf, up, flavor, b, texts[i], id, weights[i],
                          server_id)
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
    const ngx_chash_flavor_options_t *options, ngx_str_t **texts,
    ngx_uint_t *weights, ngx_uint_t n, ngx_chash_nodes_t *nodes,
    chash_ring **ring, ngx_str_t *ring_id)
{
    int                  rc;
    uint8_t              fingerprint[CHASH_FINGERPRINT_SIZE];
    u_char               size[NGX_INT_T_LEN + 10], *size_end;
    uint64_t             start, build_us;
    ngx_int_t            grc;
    chash_builder       *b;
    ngx_pool_cleanup_t  *cln;
    chash_memory_usage   mem;

    nodes->npeers = n;

    start = ngx_chash_usec();

    rc = ngx_chash_flavor_other(flavor)
         ? chash_builder_new_with_options((uint32_t) flavor,
                                          options ? &options->ring : NULL, &b)
         : chash_builder_new((uint32_t) flavor, (uint32_t) multiple, &b);
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
        grc = ngx_chash_one_per_peer(cf, up, flavor, id_form, options,
                                     texts, weights, n, nodes, b);
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

    ngx_memzero(&mem, sizeof(chash_memory_usage));
    mem.size = sizeof(chash_memory_usage);

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

    /* the other programs' rings have their own sizes, not a multiple */
    size_end = ngx_chash_flavor_other(flavor)
                   ? size
                   : ngx_sprintf(size, " multiple=%uD",
                                 chash_ring_point_multiple(*ring));

    ngx_chash_upstream_error(cf, NGX_LOG_NOTICE, up,
                       "flavor=%s%s%*s, "
                       "%ui peers, %uD nodes, %uL points, %uL collisions, "
                       "%uL bytes (columns %uL, index %uL, collision table "
                       "%uL, nodes %uL), ring %V, built in %uL us",
                       ngx_chash_flavor_name(flavor),
                       flavor == CHASH_FLAVOR_RESTY
                       && id_form == NGX_CHASH_ID_APISIX ? " id=apisix" : "",
                       (size_t) (size_end - size), size, n,
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
