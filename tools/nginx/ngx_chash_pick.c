/*
 * Walks and picks: a request's walk over a ring (the nginx flavor point
 * by point, the distinct flavors node by node, a subset's mask), the
 * flavors' rules for the next peer, and bounded loads.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_chash_core.h"


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
    uint64_t  retry;

    w->flavor = flavor;
    w->tries = 0;
    w->ring = ring;
    w->mask = mask;
    w->walk = NULL;
    w->started = 0;
    w->pool = pool;
    w->bounded_load = 0;
    w->passed = 0;
    w->attempt = 0;
    w->attempts = 0;
    w->removed = 0;

    /* the key hashed as the ring's flavor hashes it (CRC32 for nginx,
     * pingora and resty; Envoy's 64 bits). The way to a next server is the
     * flavor's retry rule in libchash's table: Envoy's retries are
     * attempts (one a ring entry or table slot at most), nginx's the next
     * point, the others' a distinct walk */
    w->hash64 = chash_ring_key_hash(ring, key->data, key->len);
    w->hash = (uint32_t) w->hash64;
    retry = ngx_chash_flavor_property(flavor, CHASH_PROPERTY_RETRY);
    w->point_walk = retry == CHASH_RETRY_POINT_WALK;

    if (retry == CHASH_RETRY_ATTEMPT) {
        w->attempts = (uint32_t) ngx_min(chash_ring_num_points(ring),
                                         0xffffffff);
    }

    if (!w->point_walk) {
        /* distinct: libchash's walk, started when a second node is needed */
        w->node = CHASH_NO_NODE;
        return NGX_OK;
    }

    /* the ring is immutable: no lock, unlike nginx's rlock */
    if (chash_ring_walk(ring, w->hash, &w->cursor) != CHASH_OK) {
        return NGX_ERROR;
    }

    w->left = chash_ring_num_points(ring) + 1;
    w->node = ngx_chash_walk_next_point(w);

    return NGX_OK;
}


/*
 * The distinct walk's next node (each node once, in the order of the ring
 * of the mask's nodes: libchash's chash_walk); CHASH_NO_NODE when every
 * node came, or with *failed set when the walk's memory could not be
 * allocated. The first node is a lookup: only a second one starts the
 * walk, in the request's pool (chash_walk_size bytes: a bit a node), so a
 * request whose first pick serves allocates nothing.
 */
static uint32_t
ngx_chash_walk_next_distinct(ngx_chash_walk_t *w, ngx_uint_t *failed)
{
    void      *mem;
    size_t     size;
    uint32_t   node;

    if (!w->started) {
        w->started = 1;
        w->node = w->mask ? chash_ring_find_available_hash(w->ring, w->mask,
                                                           w->hash)
                          : chash_ring_find_hash64(w->ring, w->hash64);
        return w->node;
    }

    if (w->attempts) {
        /* Envoy: retry attempt N, each a ring entry (or Maglev's mutated
         * hash); tried and unusable nodes are skipped by the pick */
        while (w->node != CHASH_NO_NODE && w->attempt < w->attempts) {
            node = chash_ring_find_attempt(w->ring, w->hash64, ++w->attempt);

            if (node != CHASH_NO_NODE) {
                return node;
            }
        }

        return CHASH_NO_NODE;
    }

    if (w->walk == NULL) {
        if (w->node == CHASH_NO_NODE) {
            return CHASH_NO_NODE;
        }

        size = chash_walk_size(w->ring);
        mem = ngx_palloc(w->pool, size);

        if (mem == NULL
            || chash_walk_start(mem, size, w->ring, w->mask, w->hash, &w->walk)
               != CHASH_OK)
        {
            *failed = 1;
            return CHASH_NO_NODE;
        }

        /* the walk's first node is the one the lookup answered */
        node = chash_walk_next(w->walk);

        if (node != w->node) {
            return node;
        }
    }

    return chash_walk_next(w->walk);
}


/*
 * Whether the flavor's program takes a down server out of its ring
 * (libchash's CHASH_PROPERTY_REMOVES_DOWN) and a mask of the live nodes
 * answers exactly that ring of the others (chash_ring_masks_exactly).
 * HAProxy dequeues a down server from its tree
 * (chash_dequeue_srv): its keys go to the nearest remaining point, either
 * side, and the other servers' points, keyed by their ids, stay. The
 * unweighted libmemcached ketamas leave a server's 100 points out of the
 * continuum, the others' unchanged. Not the weighted ketamas (libmemcached
 * weighted, twemproxy, libketama) nor Envoy: they rebuild and renormalise
 * the ring, which no mask reproduces (their rings mask inexactly), so the
 * pick skips their down nodes along the walk, which is not what those
 * programs do. Not varnish-shard either, although its ring masks exactly:
 * Varnish's shard director itself skips unhealthy backends along the ring
 * (idx, idx + 1, ...), which is the pick's skip. Nor pingora and resty,
 * whose skip along the walk is this module's own contract.
 */
static ngx_uint_t
ngx_chash_flavor_removes_down(ngx_uint_t flavor, const chash_ring *ring)
{
    return ngx_chash_flavor_property(flavor, CHASH_PROPERTY_REMOVES_DOWN)
           && chash_ring_masks_exactly(ring);
}


static void
ngx_chash_mask_cleanup(void *data)
{
    chash_node_mask_free(data);
}


/*
 * Takes the down nodes out of a distinct walk whose flavor's program
 * removes them (ngx_chash_flavor_removes_down): w->mask becomes the nodes
 * with a live peer now (within the subset's mask, if any) and the walk
 * starts again from the key over them, so its next node is the masked
 * lookup's (the nearest live node by the flavor's rule), then the walk of
 * the ring of the live nodes. Nodes already tried come again and are
 * skipped as tried. Once a request: a node that fails after this is skipped
 * along the reduced walk. The mask is libchash's own allocation (it has no
 * mask in caller memory), freed with the pool; a walk already started
 * leaves its bytes in the pool and the next node needed takes new ones.
 */
static ngx_int_t
ngx_chash_walk_remove_down(ngx_chash_walk_t *w, const ngx_chash_nodes_t *nodes,
    const ngx_chash_peer_ops_t *ops, void *data, time_t now)
{
    uint32_t             node, n;
    ngx_uint_t           j;
    chash_node_mask     *live;
    ngx_pool_cleanup_t  *cln;

    w->removed = 1;

    cln = ngx_pool_cleanup_add(w->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    n = chash_ring_num_nodes(w->ring);

    if (chash_node_mask_new(n, 0, &live) != CHASH_OK) {
        return NGX_ERROR;
    }

    cln->handler = ngx_chash_mask_cleanup;
    cln->data = live;

    for (node = 0; node < n && node < nodes->nnodes; node++) {
        if (w->mask && !chash_node_mask_get(w->mask, node)) {
            continue;
        }

        for (j = nodes->node_first[node]; j < nodes->node_first[node + 1]; j++)
        {
            if (ops->live(data, nodes->node_peers[j], now)) {
                (void) chash_node_mask_set(live, node, 1);
                break;
            }
        }
    }

    w->mask = live;
    w->started = 0;
    w->walk = NULL;

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

    if (node >= nodes->nnodes) {
        return 0;
    }

    for (j = nodes->node_first[node]; j < nodes->node_first[node + 1]; j++) {
        load += ops->conns(data, nodes->node_peers[j]);
    }

    return load;
}


/*
 * The bounded-load capacity now; UINT64_MAX when bounded_load is off. As
 * libchash's bounded-load lookup (chash_ring_find_bounded_load) defines it:
 * the average is over the available nodes that own points (with a subset,
 * those of the subset), not over every node of the ring: a down, failed
 * (max_fails) or drained node takes no load, so it must not shrink the
 * capacity of the others. A node is available when one of its peers is
 * live (not down, not failed within fail_timeout); its load is its peers'
 * connections.
 */
static uint64_t
ngx_chash_capacity(ngx_chash_walk_t *w, const ngx_chash_nodes_t *nodes,
    const ngx_chash_peer_ops_t *ops, void *data, time_t now)
{
    uint64_t    total;
    uint32_t    node, count;
    ngx_uint_t  j, live;

    if (w->bounded_load <= 1) {
        return UINT64_MAX;
    }

    total = 0;
    count = 0;

    for (node = 0; node < nodes->nnodes; node++) {
        if ((w->mask && !chash_node_mask_get(w->mask, node))
            || !chash_ring_owns_points(w->ring, node))
        {
            continue;
        }

        live = 0;

        for (j = nodes->node_first[node]; j < nodes->node_first[node + 1]; j++)
        {
            if (ops->live(data, nodes->node_peers[j], now)) {
                live = 1;
                break;
            }
        }

        if (live) {
            total += ngx_chash_node_load(nodes, node, ops, data);
            count++;
        }
    }

    if (count == 0) {
        return UINT64_MAX;
    }

    return chash_bounded_load_capacity(total, count, w->bounded_load);
}


/* Whether one of node's peers is usable: a node passed over at the
 * capacity is counted only if it could have served. */
static ngx_uint_t
ngx_chash_node_usable(const ngx_chash_nodes_t *nodes, uint32_t node,
    const ngx_chash_peer_ops_t *ops, void *data, time_t now)
{
    ngx_uint_t  j;

    for (j = nodes->node_first[node]; j < nodes->node_first[node + 1]; j++) {
        if (ops->usable(data, nodes->node_peers[j], now)) {
            return 1;
        }
    }

    return 0;
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

        /* a node id the ring answers indexes nothing unchecked */
        if (w->node >= nodes->nnodes) {
            goto next;
        }

        if (capacity != UINT64_MAX
            && ngx_chash_node_load(nodes, w->node, ops, data) >= capacity)
        {
            w->passed += ngx_chash_node_usable(nodes, w->node, ops, data, now);
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
 * The distinct flavors' step (pingora, resty, the other programs'): each
 * node once, in ring order from the key's point; a node is skipped when its
 * peer is not usable (or is at the bounded-load capacity), except that the
 * first down or failed node met on a flavor whose program removes down
 * servers restarts the walk over the ring of the live nodes
 * (ngx_chash_walk_remove_down). When the walk has visited every node, no
 * live peer is left (as round robin answers when every peer failed: "no
 * live upstreams").
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

        if (node >= nodes->nnodes) {
            continue;
        }

        i = nodes->node_peers[nodes->node_first[node]];

        if (!ops->usable(data, i, now)) {

            if (!w->removed
                && ngx_chash_flavor_removes_down(w->flavor, w->ring)
                && !ops->live(data, i, now))
            {
                if (ngx_chash_walk_remove_down(w, nodes, ops, data, now)
                    != NGX_OK)
                {
                    ngx_log_error(NGX_LOG_ALERT, log, 0,
                                  "chash: no memory for the retry walk");
                    return NGX_CHASH_EXHAUSTED;
                }

                ngx_log_debug2((NGX_LOG_DEBUG_HTTP|NGX_LOG_DEBUG_STREAM), log,
                               0, "chash node:%uD down: the ring of %uD live "
                               "nodes from the key", node,
                               chash_node_mask_count_available(w->mask));
            }

            continue;
        }

        if (capacity == UINT64_MAX || ops->conns(data, i) < capacity) {
            return (ngx_int_t) i;
        }

        w->passed++;
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

    if (w->point_walk && w->tries > NGX_CHASH_MAX_TRIES) {
        return NGX_CHASH_FALLBACK;
    }

    capacity = ngx_chash_capacity(w, nodes, ops, data, now);

    if (w->point_walk) {
        rc = ngx_chash_pick_nginx(w, nodes, ops, data, now, capacity, log);

    } else {
        rc = ngx_chash_pick_distinct(w, nodes, ops, data, now, capacity, log);
    }

    ngx_log_debug2((NGX_LOG_DEBUG_HTTP|NGX_LOG_DEBUG_STREAM), log, 0,
                   "chash flavor=%s pick:%i", ngx_chash_flavor_name(w->flavor),
                   rc);

    return rc;
}
