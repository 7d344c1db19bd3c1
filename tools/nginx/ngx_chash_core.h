/*
 * ngx_chash_core: what every chash balancer module of nginx shares (the HTTP
 * upstream module here, a stream module later): building a ring from server
 * lines, the node -> peer map, and the peer-walk rules of both flavours over
 * an abstract peer list. Nothing here knows ngx_http_* or ngx_stream_*: a
 * module adapts its own round robin peers through ngx_chash_peer_ops_t.
 *
 * Threads: everything here runs on the event loop of one process unless a
 * function says otherwise.
 */

#ifndef NGX_CHASH_CORE_H_INCLUDED_
#define NGX_CHASH_CORE_H_INCLUDED_

#include <ngx_config.h>
#include <ngx_core.h>

#include <chash/chash_c.h>


/* nginx's hash balancer gives up on the ring after this many tries. */
#define NGX_CHASH_MAX_TRIES  20

/* ngx_chash_pick answers a peer index >= 0, or one of these. */
#define NGX_CHASH_FALLBACK   (-2)    /* past the ring tries: round robin */
#define NGX_CHASH_EXHAUSTED  (-3)    /* no usable peer left: NGX_BUSY */


extern const char  *ngx_chash_flavors[];


/*
 * Ring node k owns the peers peer[node_first[k] .. node_first[k + 1] - 1]
 * (indices in the module's peer list, ascending). nginx flavour: one node
 * per distinct server text (a name that resolves to N addresses is N peers
 * of one node); pingora and snapshots: one node per peer.
 */
typedef struct {
    ngx_uint_t   nnodes;
    ngx_uint_t   npeers;
    ngx_uint_t  *node_first;
    ngx_uint_t  *node_peers;
} ngx_chash_nodes_t;


/*
 * The module's view of its peers, by index in its peer list. usable() is
 * nginx's candidate test (not tried by this request, not down, not over
 * max_fails within fail_timeout, not at max_conns); weights() hands out the
 * smooth weighted round robin fields of one peer. Called with the peers
 * locked.
 */
typedef struct {
    ngx_uint_t  (*usable)(void *data, ngx_uint_t i, time_t now);
    void        (*weights)(void *data, ngx_uint_t i, ngx_int_t **current,
                           ngx_int_t **effective, ngx_int_t *weight);
    /* peer i's active connections (nginx's peer->conns), for bounded_load */
    ngx_uint_t  (*conns)(void *data, ngx_uint_t i);
} ngx_chash_peer_ops_t;


/* One request's walk over one ring: its retries continue it. */
typedef struct {
    ngx_uint_t            flavor;
    ngx_uint_t            tries;    /* nginx: points tried */
    uint32_t              node;     /* nginx: the current point's */
    chash_cursor          cursor;   /* nginx: the next point */
    chash_distinct_walk  *walk;     /* pingora: 8 KiB, from the pool */
    double                bounded_load;  /* > 1: F of bounded_load=F; 0: off */
} ngx_chash_walk_t;


/*
 * Builds the ring of server lines: texts[i] with weights[i], i < n, in the
 * peer list's order. Fills nodes (from cf->pool) and *ring (freed with
 * cf->pool). Errors are logged with ngx_conf_log_error, naming upstream.
 * NGX_OK, NGX_ERROR.
 */
ngx_int_t ngx_chash_build_from_servers(ngx_conf_t *cf, ngx_str_t *upstream,
    ngx_uint_t flavor, ngx_uint_t multiple, ngx_str_t **texts,
    ngx_uint_t *weights, ngx_uint_t n, ngx_chash_nodes_t *nodes,
    chash_ring **ring, ngx_str_t *ring_id);

/* Starts the walk of key on ring; the pingora walk is allocated from pool. */
ngx_int_t ngx_chash_walk_init(ngx_chash_walk_t *w, ngx_uint_t flavor,
    const chash_ring *ring, ngx_str_t *key, ngx_pool_t *pool);

/*
 * bounded_load=F of a `chash` directive: value is the parameter's text after
 * "bounded_load=", F a decimal > 1 with at most 6 decimals (1.25). NGX_OK,
 * or NGX_ERROR for anything else (the caller names the parameter).
 */
ngx_int_t ngx_chash_parse_bounded_load(ngx_str_t *value, double *factor);

/*
 * The next peer of the walk, by the flavour's rules: nginx, point after
 * point (one try a point), the usable peer of largest current weight among
 * the point's node's peers (smooth weighted round robin), and
 * NGX_CHASH_FALLBACK past NGX_CHASH_MAX_TRIES points; pingora, each node
 * once in ring order, its peer if usable, NGX_CHASH_EXHAUSTED when every
 * node came. With w->bounded_load = F > 1, both walks also pass over a node
 * whose load (the active connections of its peers) is not below the
 * capacity ceil(F x (total load + 1) / nodes) of libchash's bounded-load
 * lookup (chash_bounded_load_capacity), loads read at this pick: a node so
 * passed costs the nginx walk one of its 20 tries, as a point with no
 * usable peer does, and round robin past them ignores loads. O(peers) more
 * a pick to sum the loads. Call with the peers locked.
 */
ngx_int_t ngx_chash_pick(ngx_chash_walk_t *w, const ngx_chash_nodes_t *nodes,
    const ngx_chash_peer_ops_t *ops, void *data, time_t now, ngx_log_t *log);

/* Whether bit i of a tried bitmap is set / sets it. */
#define ngx_chash_tried(bits, i)                                             \
    ((bits)[(i) / (8 * sizeof(uintptr_t))]                                   \
     & ((uintptr_t) 1 << (i) % (8 * sizeof(uintptr_t))))
#define ngx_chash_set_tried(bits, i)                                         \
    ((bits)[(i) / (8 * sizeof(uintptr_t))]                                   \
     |= ((uintptr_t) 1 << (i) % (8 * sizeof(uintptr_t))))

#endif /* NGX_CHASH_CORE_H_INCLUDED_ */
