/*
 * ngx_chash_core: what every chash balancer module of nginx shares (the HTTP
 * and the stream upstream modules): building a ring from server lines, the
 * node -> peer map, and the peer-walk rules of every flavor over
 * an abstract peer list. Nothing here knows ngx_http_* or ngx_stream_*: a
 * module adapts its own round robin peers through ngx_chash_peer_ops_t.
 *
 * One header for the core's files, a section each, in the order of their
 * types: ngx_chash_core.c (the flavors' names, errors naming an upstream),
 * ngx_chash_ring.c (rings from server lines), ngx_chash_pick.c (walks,
 * picks, bounded loads), ngx_chash_snapshot.c (snapshot generations),
 * ngx_chash_reload.c (their sources, reloaders and hot swap),
 * ngx_chash_policy.c (the directives' parameters, the policy of a snapshot
 * upstream), ngx_chash_status.c and ngx_chash_status_render.c (the status
 * zone, its renderers).
 *
 * Threads: everything here runs on the event loop of one process unless a
 * function says otherwise.
 */

#ifndef NGX_CHASH_CORE_H_INCLUDED_
#define NGX_CHASH_CORE_H_INCLUDED_

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include <chash/chash_c.h>


/* ---- ngx_chash_core.c: flavors, errors, peer bitmaps --------------------- */

/* "nginx", "pingora-v1", "pingora-v2", "resty", then the other programs'
 * "haproxy", "ketama-md5", "varnish-shard", "envoy-ring", "envoy-maglev", by
 * chash_flavor; "unknown" for any other value (a snapshot's flavor is read
 * from a file). */
const char *ngx_chash_flavor_name(ngx_uint_t flavor);

/* The flavor named name (flavor=NAME): NGX_OK and *flavor, or NGX_ERROR. */
ngx_int_t ngx_chash_flavor_parse(ngx_str_t *name, ngx_uint_t *flavor);

/* The other programs' flavors (haproxy .. envoy-maglev): keys hashed by
 * the flavor (chash_ring_key_hash), nodes added with their options
 * (libchash's CHASH_PROPERTY_OTHER_PROGRAM). */
ngx_uint_t ngx_chash_flavor_other(ngx_uint_t flavor);

/* A CHASH_PROPERTY_* of a flavor from libchash's table; 0 for a flavor or
 * property it does not know. */
uint64_t ngx_chash_flavor_property(ngx_uint_t flavor, uint32_t property);

/* Whether libchash refuses bounded-load lookups on the flavor's rings: the
 * rings whose keys hash to 64 bits (CHASH_PROPERTY_KEY_HASH_BITS, Envoy's),
 * as chash_ring_find_bounded_load decides. */
ngx_uint_t ngx_chash_flavor_refuses_bounded_load(ngx_uint_t flavor);

/* Whether libchash's table has the flavor (a snapshot's flavor may be a
 * newer writer's). */
ngx_uint_t ngx_chash_flavor_known(ngx_uint_t flavor);

/* "flavor=A and flavor=B" (", " between the earlier ones): the flavors whose
 * CHASH_PROPERTY_* property is nonzero, for a message. Written into buf
 * (NUL-terminated, cut at len); returns buf. */
u_char *ngx_chash_flavors_with(uint32_t property, u_char *buf, size_t len);

/*
 * The options of the other programs' rings, from the `chash` directive:
 * libchash's ring options, and haproxy's server ids (server_ids=, one a
 * server line in order, 0: assigned as HAProxy assigns it), or NULL.
 */
typedef struct {
    chash_ring_options   ring;
    ngx_uint_t           set;         /* an option was given */
    uint32_t            *server_ids;
    ngx_uint_t           nserver_ids;
} ngx_chash_flavor_options_t;

/* id= of a resty upstream of server lines: what a node's id is. */
#define NGX_CHASH_ID_ADDRESS  0     /* the server's address text as written */
#define NGX_CHASH_ID_APISIX   1     /* that text, every ':' a NUL byte */


/*
 * An upstream as configuration-time errors name it, in nginx's words
 * ("in upstream "u" in FILE:LINE", the line of its `upstream` block), for
 * the errors found at init_upstream, when the parser's own line is no
 * longer the upstream's.
 */
typedef struct {
    ngx_str_t    *name;
    u_char       *file_name;
    ngx_uint_t    line;
} ngx_chash_upstream_t;

/* Logs "chash upstream "NAME" in FILE:LINE: MESSAGE" to cf->log. */
void ngx_cdecl ngx_chash_upstream_error(ngx_conf_t *cf, ngx_uint_t level,
    const ngx_chash_upstream_t *up, const char *fmt, ...);

/* Whether bit i of a tried bitmap is set / sets it. */
#define ngx_chash_tried(bits, i)                                             \
    ((bits)[(i) / (8 * sizeof(uintptr_t))]                                   \
     & ((uintptr_t) 1 << (i) % (8 * sizeof(uintptr_t))))
#define ngx_chash_set_tried(bits, i)                                         \
    ((bits)[(i) / (8 * sizeof(uintptr_t))]                                   \
     |= ((uintptr_t) 1 << (i) % (8 * sizeof(uintptr_t))))
#define ngx_chash_tried_words(npeers)                                        \
    (((npeers) + 8 * sizeof(uintptr_t) - 1) / (8 * sizeof(uintptr_t)))


/* ---- ngx_chash_ring.c: rings from server lines --------------------------- */

/*
 * Ring node k owns the peers peer[node_first[k] .. node_first[k + 1] - 1]
 * (indices in the module's peer list, ascending). nginx flavor: one node
 * per distinct server text (a name that resolves to N addresses is N peers
 * of one node); pingora, resty and snapshots: one node per peer.
 */
typedef struct {
    ngx_uint_t   nnodes;
    ngx_uint_t   npeers;
    ngx_uint_t  *node_first;
    ngx_uint_t  *node_peers;
} ngx_chash_nodes_t;

/*
 * Builds the ring of server lines: texts[i] with weights[i], i < n, in the
 * peer list's order. Fills nodes (from cf->pool) and *ring (freed with
 * cf->pool). Errors are logged with ngx_chash_upstream_error. resty: a
 * node's id is texts[i] (id_form NGX_CHASH_ID_ADDRESS) or APISIX's form of
 * it; peers that share one text pointer (a name with several addresses)
 * are refused, for the other programs' flavors too. options: the ring
 * options of the other programs' flavors (NULL for the others). NGX_OK,
 * NGX_ERROR.
 */
ngx_int_t ngx_chash_build_from_servers(ngx_conf_t *cf,
    const ngx_chash_upstream_t *up, ngx_uint_t flavor, ngx_uint_t multiple,
    ngx_uint_t id_form, const ngx_chash_flavor_options_t *options,
    ngx_str_t **texts,
    ngx_uint_t *weights, ngx_uint_t n, ngx_chash_nodes_t *nodes,
    chash_ring **ring, ngx_str_t *ring_id);


/* ---- ngx_chash_pick.c: walks, picks, bounded loads ----------------------- */

/* nginx's hash balancer gives up on the ring after this many tries. */
#define NGX_CHASH_MAX_TRIES  20

/* ngx_chash_pick answers a peer index >= 0, or one of these. */
#define NGX_CHASH_FALLBACK   (-2)    /* past the ring tries: round robin */
#define NGX_CHASH_EXHAUSTED  (-3)    /* no usable peer left: NGX_BUSY */

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
    /* peer i is neither down nor failed (max_fails within fail_timeout):
     * its node counts in the bounded-load capacity */
    ngx_uint_t  (*live)(void *data, ngx_uint_t i, time_t now);
} ngx_chash_peer_ops_t;


/*
 * One request's walk over one ring: its retries continue it. The nginx
 * flavor walks the points with a cursor; the distinct flavors (pingora,
 * resty) take libchash's walk over distinct nodes (chash_walk), whose first
 * node is a lookup: only a second node (a retry, or a first node passed
 * over) starts the walk, in chash_walk_size bytes of the request's pool.
 * Node ids from the ring are checked against the node map before they
 * index it. The other programs' flavors hash the key as their program
 * does; haproxy, ketama-md5 and varnish-shard walk with chash_walk (the
 * ring's own walk: HAProxy's next tree node, Varnish's idx + 1, ketama's
 * next point), envoy-ring and envoy-maglev with Envoy's retry attempts
 * (chash_ring_find_attempt: the next ring entry, Maglev's mutated hash),
 * skipping the nodes already answered by the pick's rules. On haproxy and
 * unweighted ketama-md5 rings, whose programs remove a down server, the
 * first down or failed node met turns the walk into one over the ring of
 * the live nodes (w->mask, allocated then; w->removed).
 */
typedef struct {
    ngx_uint_t            flavor;
    ngx_uint_t            point_walk; /* the flavor's retry rule is the next
                                         point (CHASH_RETRY_POINT_WALK:
                                         nginx's own, its tries limit) */
    ngx_uint_t            tries;    /* nginx: points tried */
    uint32_t              node;     /* nginx: the current point's;
                                       distinct: the first node */
    uint32_t              hash;     /* the key's */
    uint64_t              hash64;   /* other flavors: the key's, as the
                                       program hashes it */
    uint32_t              attempt;  /* Envoy's: the retry attempt */
    uint32_t              attempts; /* Envoy's: attempts at most */
    ngx_uint_t            started;  /* distinct: the first node answered */
    chash_cursor          cursor;   /* nginx: the next point */
    chash_walk           *walk;     /* distinct: NULL until a second node */
    ngx_pool_t           *pool;     /* where the walk comes from */
    const chash_ring     *ring;
    const chash_node_mask *mask;    /* a subset, or NULL: the whole ring;
                                       after removed, the live nodes */
    ngx_uint_t            removed;  /* distinct: the down nodes are out */
    uint64_t              left;     /* nginx with a mask: points to skip */
    double                bounded_load;  /* > 1: F of bounded_load=F; 0: off */
    ngx_uint_t            passed;   /* nodes passed over at the capacity */
} ngx_chash_walk_t;

/* Starts the walk of key on ring; a distinct walk's memory comes from
 * pool when a second node is needed. */
ngx_int_t ngx_chash_walk_init(ngx_chash_walk_t *w, ngx_uint_t flavor,
    const chash_ring *ring, ngx_str_t *key, ngx_pool_t *pool);

/* nginx walk over a masked ring: skips the points outside mask. */
ngx_int_t ngx_chash_walk_init_masked(ngx_chash_walk_t *w, ngx_uint_t flavor,
    const chash_ring *ring, const chash_node_mask *mask, ngx_str_t *key,
    ngx_pool_t *pool);

/*
 * The next peer of the walk, by the flavor's rules: nginx, point after
 * point (one try a point), the usable peer of largest current weight among
 * the point's node's peers (smooth weighted round robin), and
 * NGX_CHASH_FALLBACK past NGX_CHASH_MAX_TRIES points; the distinct
 * flavors, each node once in ring order (haproxy and unweighted ketama-md5:
 * of the ring of the live nodes once one is down), its peer if usable,
 * NGX_CHASH_EXHAUSTED when every node came (or the seen-set or the mask of
 * the live nodes could not be allocated: logged).
 * With w->bounded_load = F > 1, both walks also pass over a node
 * whose load (the active connections of its peers) is not below the
 * capacity ceil(F x (total load + 1) / nodes) of libchash's bounded-load
 * lookup (chash_bounded_load_capacity), where nodes and the total load are
 * those of the available nodes that own points (a node with a live peer:
 * not down, not failed), loads read at this pick: a node so passed costs
 * the nginx walk one of its 20 tries, as a point with no usable peer does,
 * and round robin past them ignores loads; w->passed counts the nodes so
 * passed that could have served. O(peers) more a pick to sum the loads.
 * Call with the peers locked.
 */
ngx_int_t ngx_chash_pick(ngx_chash_walk_t *w, const ngx_chash_nodes_t *nodes,
    const ngx_chash_peer_ops_t *ops, void *data, time_t now, ngx_log_t *log);


/* ---- ngx_chash_snapshot.c: generations --------------------------------- */

/* What identifies the file behind a path (the symlink followed). */
typedef struct {
    dev_t            dev;
    ino_t            ino;
    off_t            size;
    struct timespec  mtime;
} ngx_chash_file_id_t;


typedef struct {
    ngx_str_t          name;
    chash_node_mask   *mask;
    ngx_uint_t         live;       /* its peers that are not down */
    uintptr_t         *outside;    /* tried bitmap: the peers not in it */
} ngx_chash_subset_t;


typedef struct ngx_chash_source_s  ngx_chash_source_t;
typedef struct ngx_chash_status_s  ngx_chash_status_t;
typedef struct ngx_chash_gen_s     ngx_chash_gen_t;

/*
 * One snapshot served, with everything a request routes through: the ring,
 * the module's peers built from its node table, its subsets. Immutable once
 * published, except refs and the retirement fields. Lives in its own pool
 * (malloc'ed memory of the process that built it: the master at
 * configuration time, inherited by the workers' fork, or a worker after a
 * swap); the ring's columns are the snapshot's: by default a sealed memory
 * file that every process of the host maps (one copy a host), else a
 * private copy or the file's own pages (copy, map).
 *
 * refs counts the holders: the source while it serves this generation, and
 * every request that started on it (dropped by the request pool's cleanup).
 * A generation no longer served but still held is retired: it stays in its
 * source's list of retired generations (the status shows how many and for
 * how long). The last ngx_chash_gen_unref frees it, on a thread of the pool
 * in a worker (unmapping a large ring and freeing its peers takes
 * milliseconds the event loop should not wait), else at once. Event loop
 * only, but for ngx_chash_gen_make and the free.
 */
struct ngx_chash_gen_s {
    ngx_uint_t             refs;
    ngx_pool_t            *pool;
    ngx_chash_source_t    *source;
    chash_snapshot        *snapshot;
    chash_ring            *ring;
    chash_snapshot_info    info;
    ngx_chash_nodes_t      nodes;       /* one node a peer */
    ngx_str_t             *addresses;   /* node i's address, NUL-terminated,
                                           in the pool */
    ngx_uint_t            *weights;     /* 0: drained (a down peer) */
    ngx_uint_t             nsubsets;
    ngx_chash_subset_t    *subsets;
    void                  *peers;       /* the module's peer list */
    ngx_str_t              ring_id;     /* 16 hex digits of the fingerprint */
    ngx_str_t              version;     /* config version, decimal */
    u_char                 fingerprint[2 * CHASH_FINGERPRINT_SIZE + 1];
    u_char                 key_id[2 * CHASH_KEY_ID_SIZE + 1];  /* "" unsigned */
    time_t                 loaded_at;
    ngx_uint_t             adopted;     /* verified by another process */
    time_t                 retired_at;  /* 0 while served */
    ngx_queue_t            queue;       /* in the source's retired list */
};


/*
 * Builds gen->peers from gen->addresses and gen->weights, allocating from
 * gen->pool only. May run on a thread of the pool: no logging, no shared
 * state; a refusal writes its message into err (NUL-terminated).
 */
typedef ngx_int_t (*ngx_chash_build_peers_pt)(ngx_chash_source_t *src,
    ngx_chash_gen_t *gen, u_char *err, size_t len);

/* Releases what the module's peers hold outside the generation's pool (the
 * TLS sessions nginx's round robin keeps in each peer). May run on a
 * thread of the pool. */
typedef void (*ngx_chash_free_peers_pt)(ngx_chash_gen_t *gen);


#define NGX_CHASH_ERR_LEN    1024
/* Retired generations a source holds at most (each may be a whole ring:
 * 1.2 GB at 204.8M points): beyond it no new file is looked at until
 * requests release one (the status shows the generations held). */
#define NGX_CHASH_MAX_RETIRED  8
#define NGX_CHASH_CHECK_LEN  32

/*
 * A generation of the snapshot (taken over: freed on failure) with every
 * check of the embedder: the flavor the upstream routes with, numeric
 * addresses, the peers (build_peers), the subsets. Thread-safe, O(nodes).
 * NGX_OK and *out (refs 1), or NGX_DECLINED with the check (CHASH_CHECK_*)
 * in *check and its message in err.
 */
ngx_int_t ngx_chash_gen_make(ngx_chash_source_t *src, chash_snapshot *snapshot,
    ngx_chash_gen_t **out, uint32_t *check, u_char *err, size_t len);

/* Frees gen now (a generation never published, or off the event loop). */
void ngx_chash_gen_free(ngx_chash_gen_t *gen);

void ngx_chash_gen_unref(ngx_chash_gen_t *gen);

/* The request's hold on gen, dropped when pool is destroyed. */
ngx_int_t ngx_chash_gen_hold(ngx_chash_gen_t *gen, ngx_pool_t *pool);

/* The subset named name, or NULL. */
ngx_chash_subset_t *ngx_chash_gen_subset(ngx_chash_gen_t *gen,
    ngx_str_t *name);

/*
 * Whether a migration's old and new generations come from one backend
 * snapshot (the same servers and weights: chash_migration_new's check), or
 * allow_mismatch says they need not. Thread-safe. NGX_OK, or NGX_DECLINED
 * with the differences in err.
 */
ngx_int_t ngx_chash_gen_match(ngx_chash_source_t *snap, ngx_chash_gen_t *old,
    ngx_chash_gen_t *new, u_char *err, size_t len);

/* The source serves gen from now on (event loop): the generation it served
 * is retired, released when its last request ends. */
void ngx_chash_gen_serve(ngx_chash_source_t *src, ngx_chash_gen_t *gen);


/* ---- ngx_chash_reload.c: sources, their reloaders, the hot swap --------- */

/*
 * A step's results for one source: written off the event loop (a thread of
 * the pool, or init_process) while the source is busy, applied on it.
 */
typedef struct {
    ngx_chash_gen_t           *gen;          /* to serve */
    ngx_uint_t                 refused;      /* a refusal to log and count */
    ngx_uint_t                 waiting;      /* newly parked (below) */
    ngx_uint_t                 waiting_retired;  /* said: too many held */
    uint32_t                   check;        /* CHASH_CHECK_* */
    u_char                     message[NGX_CHASH_ERR_LEN];
    uint64_t                   highest;      /* the reloader's report */
    ngx_uint_t                 state_error;
    ngx_uint_t                 serving_last_good;

    /*
     * A migration's candidate whose backends do not match the partner's
     * ring: kept, neither accepted nor refused (its reloader's candidate
     * stays valid), until the partner's path holds a matching file (both
     * are then served as one unit) or this path changes.
     */
    ngx_chash_gen_t           *parked;
    chash_reload_result        parked_result;
    ngx_chash_file_id_t        parked_id;

    chash_reload_result        result;       /* the last candidate */
    ngx_chash_file_id_t        result_id;
} ngx_chash_step_t;


/* The file an upstream's ring comes from (chash_snapshot or chash_migrate). */
struct ngx_chash_source_s {
    ngx_str_t                  path;          /* NUL-terminated */
    ngx_str_t                 *upstream;
    ngx_str_t                  directive;
    ngx_int_t                  flavor;        /* -1: any */
    ngx_flag_t                 bounded_load;  /* the directive has it */
    uint32_t                   mode;          /* CHASH_LOAD_* */
    uint32_t                   threads;       /* 0: libchash's default */
    uint64_t                   max_size;      /* 0: libchash's default */
    uint64_t                   min_version;
    u_char                    *trusted_keys;  /* n x 32 bytes */
    ngx_uint_t                 n_trusted_keys;
    ngx_flag_t                 state;         /* 0: state=off */
    ngx_str_t                  state_dir;     /* "" without state */
    u_char                     state_name[129];
    ngx_str_t                  state_file;    /* its last good file's path
                                                 (libchash names it), or "" */
    ngx_msec_t                 poll;          /* 0: never */
    ngx_str_t                  thread_pool;
    void                      *module_conf;   /* for build_peers */
    ngx_chash_build_peers_pt   build_peers;
    ngx_chash_free_peers_pt    free_peers;

    /* migration: the other file's source, whose ring must match this one's
     * backends unless allow_mismatch */
    ngx_chash_source_t        *partner;
    uint64_t                   seed;
    ngx_flag_t                 allow_mismatch;

    ngx_chash_status_t        *status;        /* counters, or NULL */
    ngx_uint_t                 status_index;
    ngx_uint_t                 side;          /* 0 chash_snapshot, 1 migrate */

    /* made by the master at configuration time, inherited by the workers */
    chash_reloader            *reloader;

    /* process-local state */
    ngx_chash_gen_t           *current;
    ngx_queue_t                retired;
    ngx_uint_t                 nretired;      /* at most NGX_CHASH_MAX_RETIRED:
                                                 no step is posted beyond */
    ngx_uint_t                 expired_said;  /* the served ring's expiry is
                                                 logged once */
    ngx_event_t                poll_event;
    void                      *task;          /* one step in flight at most */
    ngx_uint_t                 busy;          /* its or its partner's */
    ngx_chash_step_t           step;
};


/*
 * At configuration time (master, nginx -t, nginx -s): the source's
 * reloader (its state directory and name, the checks), which serves the
 * path's file or, if it is refused, the last good one; the generation of
 * that snapshot. Errors with ngx_chash_upstream_error naming the check.
 * Under nginx -t and -s the reloader writes nothing. The reloader and the
 * generation are released with cf->cycle's pool.
 */
ngx_int_t ngx_chash_source_init_conf(ngx_conf_t *cf,
    const ngx_chash_upstream_t *up, ngx_chash_source_t *src);

/*
 * In each worker (init_process, a respawn too): serves the newest ring the
 * host verified (chash_reloader_adopt_shared: the state directory and
 * /proc only, never the watched path) before the first request, then
 * starts the poll timer. Call for the chash_snapshot source: it steps its
 * migration partner too.
 */
ngx_int_t ngx_chash_source_init_worker(ngx_cycle_t *cycle,
    ngx_chash_source_t *src);

/*
 * The source's name in the state directory: PROTO.UPSTREAM.snapshot or
 * .migrate, in [A-Za-z0-9._-] (any other byte becomes '_', and the name
 * then ends with the CRC32 of the upstream's name), at most 128 bytes.
 */
ngx_int_t ngx_chash_source_name(ngx_chash_source_t *src, const char *proto);


/* ---- ngx_chash_policy.c: the directives, an upstream's policy ------------ */

/*
 * The parameters of a `chash KEY [flavor=F] [multiple=K] [bounded_load=F]
 * [subset=VALUE]` directive, parsed by the core for both modules; the
 * module compiles KEY and subset's text as its own complex values.
 */
typedef struct {
    ngx_uint_t    flavor;         /* chash_flavor, nginx by default */
    ngx_flag_t    flavor_set;
    ngx_uint_t    multiple;       /* 0: the flavor's own */
    ngx_uint_t    id_form;        /* resty: NGX_CHASH_ID_* */
    ngx_flag_t    id_set;
    double        bounded_load;   /* 0: off */
    ngx_str_t     subset;         /* subset='s text when has_subset */
    ngx_uint_t    has_subset;
    ngx_chash_flavor_options_t  options;   /* the other programs' flavors */
} ngx_chash_directive_t;

/* value[2] .. value[n - 1]: the parameters after KEY; errors logged. */
char *ngx_chash_parse_directive(ngx_conf_t *cf, ngx_str_t *value,
    ngx_uint_t n, ngx_chash_directive_t *d);


/* ---- ngx_chash_flavor_options.c: the other programs' options ------------- */

/* The ring options of flavor=haproxy .. envoy-maglev are libchash's flavor
 * table's (chash_flavor_option_name), written nginx style: NAME=VALUE, a
 * switch as its bare NAME (avalanche). server_ids= is the module's own (one
 * id a server line). A directive takes at most this many of them: */
#define NGX_CHASH_MAX_OPTIONS  16

/* Whether a parameter of `chash` is a flavor option: server_ids=, or a
 * ring option of any flavor (by name or alias). */
ngx_uint_t ngx_chash_is_flavor_option(ngx_str_t *param);

/* The options of a directive of flavor d->flavor, opt[0..nopt): each must
 * be one of the flavor's (libchash names the flavors whose it is), its
 * value one the option takes (libchash says which), given once; the set is
 * then tried on a libchash builder. Errors logged on the directive. */
char *ngx_chash_parse_options(ngx_conf_t *cf, ngx_chash_directive_t *d,
    ngx_str_t **opt, ngx_uint_t nopt);

/*
 * bounded_load=F of a `chash` directive: value is the parameter's text after
 * "bounded_load=", F a decimal > 1 with at most 6 decimals (1.25). NGX_OK,
 * or NGX_ERROR for anything else (the caller names the parameter).
 */
ngx_int_t ngx_chash_parse_bounded_load(ngx_str_t *value, double *factor);

/* Parses the common parameters of chash_snapshot and chash_migrate. */
char *ngx_chash_source_parse(ngx_conf_t *cf, ngx_chash_source_t *src,
    ngx_str_t *value, ngx_uint_t n, ngx_str_t *rest, ngx_uint_t *nrest);

/* The migration's choice for key: 1 new, 0 old. */
ngx_uint_t ngx_chash_migration_new_side(ngx_str_t *key, uint64_t seed,
    uint32_t rollout_ppm);

/* "5%", "0.05", "1" -> ppm; NGX_ERROR if malformed or over 100%. */
ngx_int_t ngx_chash_parse_rollout(u_char *p, size_t len);

/* Whether a scope value is in: anything but "", "0" and "off". */
ngx_uint_t ngx_chash_scope_in(ngx_str_t *v);

/*
 * The policy of an upstream, shared by both modules: chash_snapshot's peer
 * parameters, chash_migrate's own, the configuration checks of a snapshot
 * upstream and, per request or session, the ring a key takes (migration)
 * and its subset: the modules only evaluate their complex values and adapt
 * nginx's peer lists.
 */
typedef struct {
    ngx_uint_t    max_fails;
    time_t        fail_timeout;
    ngx_uint_t    max_conns;
} ngx_chash_peer_params_t;

/* max_fails=N fail_timeout=T max_conns=N of chash_snapshot's rest. */
char *ngx_chash_parse_peer_params(ngx_conf_t *cf, ngx_str_t *rest,
    ngx_uint_t nrest, ngx_chash_peer_params_t *pp);

typedef struct {
    ngx_str_t     rollout;        /* as configured */
    ngx_uint_t    rollout_is_var; /* holds '$': the module compiles it */
    ngx_int_t     rollout_ppm;    /* otherwise */
    ngx_str_t     scope;          /* scope='s value when has_scope */
    ngx_uint_t    has_scope;
} ngx_chash_migrate_params_t;

/* rollout= scope= seed= allow_mismatch of chash_migrate's rest (seed and
 * allow_mismatch go into next). */
char *ngx_chash_parse_migrate_params(ngx_conf_t *cf, ngx_chash_source_t *next,
    ngx_str_t *rest, ngx_uint_t nrest, ngx_chash_migrate_params_t *mp);

/* What a module hands the policy of a snapshot upstream at init_upstream. */
typedef struct {
    const char                *proto;       /* "http", "stream" */
    ngx_str_t                 *state_dir;   /* chash_state_path, or NULL */
    ngx_int_t                  flavor;      /* -1: the file's */
    ngx_uint_t                 has_servers;
    ngx_uint_t                 has_zone;
    ngx_uint_t                 multiple;
    ngx_flag_t                 id_set;
    ngx_uint_t                 has_options; /* the other programs' */
    ngx_flag_t                 bounded_load;
    void                      *module_conf;
    ngx_chash_build_peers_pt   build_peers;
    ngx_chash_free_peers_pt    free_peers;
} ngx_chash_policy_conf_t;

/*
 * init_upstream of a snapshot upstream: refuses `server` lines (has_servers),
 * `zone`, multiple= and id= (id_set: a snapshot's ids are its nodes'), makes
 * both sources' reloaders (ngx_chash_source_init_conf), checks a
 * migration's two rings against each other and wires them.
 */
ngx_int_t ngx_chash_policy_init_conf(ngx_conf_t *cf,
    const ngx_chash_upstream_t *up, ngx_chash_source_t *snap,
    ngx_chash_source_t *next, ngx_chash_policy_conf_t *pc);

/*
 * chash_state_path's value (DIR, off, or empty: the default, the parent of
 * nginx's client body temp path and "chash": /var/lib/nginx/chash on
 * Debian): *out is the full name, NUL-terminated, registered as one of
 * nginx's paths (made by the master, owned by the worker user); empty for
 * off.
 */
char *ngx_chash_state_path(ngx_conf_t *cf, ngx_str_t *value, ngx_str_t *out);

/* A rollout value evaluated per request: its ppm, or 0 (logged) if bad. */
ngx_int_t ngx_chash_rollout_value(ngx_str_t *v, ngx_str_t *upstream,
    ngx_log_t *log);

/*
 * The ring key takes: snap's, or with a migration next's when scope is in
 * and the key's bucket falls below ppm. *side 0 old, 1 new.
 */
ngx_chash_gen_t *ngx_chash_policy_choose(ngx_chash_source_t *snap,
    ngx_chash_source_t *next, ngx_str_t *key, ngx_int_t ppm,
    ngx_str_t *scope, ngx_uint_t *side);

/*
 * The subset named name of gen for a request: NGX_OK with *sub (NULL for an
 * empty name: the whole ring), or NGX_DECLINED for a name gen does not hold
 * or a subset without live peers (logged at error, counted: the request
 * routes nowhere). words: the length of the tried bitmap for gen's peers.
 */
ngx_int_t ngx_chash_policy_subset(ngx_chash_source_t *snap,
    ngx_chash_gen_t *gen, ngx_uint_t side, ngx_str_t *name,
    ngx_chash_subset_t **sub, ngx_log_t *log);


/* ---- ngx_chash_status.c, ngx_chash_status_render.c: the status ---------- */

/* Each module's zone; the HTTP module's chash_status finds the stream
 * module's by its name (ngx_chash_status_find). */
#define NGX_CHASH_HTTP_STATUS_ZONE    "chash_status"
#define NGX_CHASH_STREAM_STATUS_ZONE  "chash_stream_status"

#define NGX_CHASH_STATUS_SUBSETS  64     /* subsets counted by index */
#define NGX_CHASH_STATUS_MESSAGE  512

/*
 * A worker's slot of one upstream, by ngx_worker: one slot a worker process
 * (worker_processes of them), no lock between processes. The fields up to
 * the counters are written by the slot's owner only (the worker whose pid
 * it holds: a worker takes its slot over when it starts, a respawned one
 * too), between two increments of seq: a reader copies them and retries
 * while seq is odd or changed, and skips a slot it cannot read whole (its
 * owner died writing; the next owner resets seq). The counters are atomic
 * additions of any worker of that index (an old one finishing its requests
 * after a reload too), never reset, so that their sums only grow.
 */
typedef struct {
    ngx_atomic_t   seq;
    ngx_atomic_t   pid;
    ngx_atomic_t   version[2];           /* served: old (chash_snapshot), new */
    ngx_atomic_t   highest[2];           /* ever served (the state's) */
    ngx_atomic_t   state_error;          /* bit a side: the last good file
                                            unwritten */
    ngx_atomic_t   loading_since;        /* a step in flight since, or 0 */
    ngx_atomic_t   generations;          /* held: served and retired */
    ngx_atomic_t   oldest_retired;       /* when the oldest held one was
                                            retired, or 0 */
    ngx_atomic_t   refused_at;           /* the last refusal's time, or 0 */
    ngx_atomic_t   refused_side;
    u_char         refused_check[NGX_CHASH_CHECK_LEN];
    u_char         refused_message[NGX_CHASH_STATUS_MESSAGE];

    ngx_atomic_t   loads_ok;
    ngx_atomic_t   loads_refused;
    ngx_atomic_t   requests[2];          /* old, new */
    ngx_atomic_t   unknown_subset;
    ngx_atomic_t   bounded_passes;       /* nodes passed over at capacity */
    ngx_atomic_t   subset[NGX_CHASH_STATUS_SUBSETS];
} ngx_chash_status_slot_t;


/* One upstream in the zone: its name, then nslots slots. */
typedef struct {
    u_char                   name[64];
    size_t                   name_len;
    ngx_chash_status_slot_t  slot[1];
} ngx_chash_status_shm_t;

#define ngx_chash_status_shm_size(nslots)                                    \
    (offsetof(ngx_chash_status_shm_t, slot)                                  \
     + (nslots) * sizeof(ngx_chash_status_slot_t))


/* One snapshot upstream as the status shows it (per cycle). */
typedef struct {
    ngx_str_t            *name;
    ngx_chash_source_t   *snap;
    ngx_chash_source_t   *next;
    ngx_str_t             rollout;       /* as configured */
} ngx_chash_status_upstream_t;


/*
 * What a module reads of the other module's status (both modules loaded:
 * each .so has its own copy of this core): only the same layout.
 */
#define NGX_CHASH_STATUS_ABI                                                 \
    (0x63690000 ^ sizeof(ngx_chash_status_t) ^ sizeof(ngx_chash_gen_t) << 4 \
     ^ sizeof(ngx_chash_source_t) << 8 ^ sizeof(ngx_chash_status_slot_t) << 12)

struct ngx_chash_status_s {
    ngx_uint_t               abi;        /* NGX_CHASH_STATUS_ABI */
    ngx_array_t              upstreams;  /* ngx_chash_status_upstream_t */
    ngx_uint_t               nslots;     /* worker_processes */
    ngx_cycle_t             *cycle;      /* whose configuration sized it */
    ngx_shm_zone_t          *zone;
    u_char                  *shm;        /* an upstream's every
                                            ngx_chash_status_shm_size */
};

/* Upstream i's part of st's zone. */
#define ngx_chash_status_upstream(st, i)                                     \
    ((ngx_chash_status_shm_t *)                                              \
     ((st)->shm + (i) * ngx_chash_status_shm_size((st)->nslots)))


/* Registers a snapshot upstream (configuration time); sets src->status. */
ngx_int_t ngx_chash_status_register(ngx_conf_t *cf, ngx_chash_status_t *st,
    ngx_str_t *name, ngx_chash_source_t *snap, ngx_chash_source_t *next,
    ngx_str_t *rollout);

/* Adds the shared zone once every upstream is registered: a slot for each
 * of worker_processes. */
ngx_int_t ngx_chash_status_add_zone(ngx_conf_t *cf, ngx_chash_status_t *st,
    ngx_str_t *name, void *tag);

/* This worker takes its slot of src's upstream over (its start). */
void ngx_chash_status_takeover(ngx_chash_source_t *src);

/* A request counted: side 0/1, the subset's index or -1, unknown. */
void ngx_chash_status_count(ngx_chash_source_t *src, ngx_uint_t side,
    ngx_int_t subset, ngx_uint_t unknown);

/* Nodes a request passed over at the bounded-load capacity. */
void ngx_chash_status_passed(ngx_chash_source_t *src, ngx_uint_t n);

/* The worker serves src->current now: its version, and a load counted if
 * loaded (not for the generation a worker inherits). */
void ngx_chash_status_served(ngx_chash_source_t *src, ngx_uint_t loaded);

/* A file refused (or waiting for its migration partner): counted, and
 * kept as this worker's last refusal. */
void ngx_chash_status_refused(ngx_chash_source_t *src, uint32_t check,
    u_char *message);

/* The reloader's report: the highest version, a state not written. */
void ngx_chash_status_report(ngx_chash_source_t *src, uint64_t highest,
    ngx_uint_t state_error);

/* A step in flight since (Unix time), or 0: none. */
void ngx_chash_status_loading(ngx_chash_source_t *src, time_t since);

/* The generations this worker holds for src's upstream, and the oldest
 * retired one's retirement. */
void ngx_chash_status_generations(ngx_chash_source_t *src);

/* A consistent copy of slot (NGX_OK), or NGX_DECLINED: torn (skip it). */
ngx_int_t ngx_chash_status_read(ngx_chash_status_slot_t *slot,
    ngx_chash_status_slot_t *copy);

/* Whether a slot's pid is a live process. */
ngx_uint_t ngx_chash_status_live(ngx_chash_status_slot_t *slot);

/*
 * The status document (JSON, or prometheus != 0) into a buffer of pool:
 * st's upstreams, and stream's (NULL: none) under "stream_upstreams" and
 * with a protocol="stream" label.
 */
ngx_buf_t *ngx_chash_status_render(ngx_chash_status_t *st,
    ngx_chash_status_t *stream, ngx_pool_t *pool, ngx_uint_t prometheus);

/* The status whose zone is named name in cycle (the stream module's, seen
 * from the HTTP module), or NULL: no such zone, or another layout. */
ngx_chash_status_t *ngx_chash_status_find(ngx_cycle_t *cycle,
    ngx_str_t *name);


#endif /* NGX_CHASH_CORE_H_INCLUDED_ */
