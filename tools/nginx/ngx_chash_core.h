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
 * picks, bounded loads), ngx_chash_snapshot.c (snapshot generations, their
 * sources and hot swap), ngx_chash_policy.c (the directives' parameters, the
 * policy of a snapshot upstream), ngx_chash_status.c (the status zone and its
 * renderers).
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

/* "nginx", "pingora-v1", "pingora-v2", "resty" by chash_flavor; "unknown"
 * for any other value (a snapshot's flavor is read from a file). */
const char *ngx_chash_flavor_name(ngx_uint_t flavor);

/* The flavor named name (flavor=NAME): NGX_OK and *flavor, or NGX_ERROR. */
ngx_int_t ngx_chash_flavor_parse(ngx_str_t *name, ngx_uint_t *flavor);

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
 * are refused. NGX_OK, NGX_ERROR.
 */
ngx_int_t ngx_chash_build_from_servers(ngx_conf_t *cf,
    const ngx_chash_upstream_t *up, ngx_uint_t flavor, ngx_uint_t multiple,
    ngx_uint_t id_form, ngx_str_t **texts,
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
 * index it.
 */
typedef struct {
    ngx_uint_t            flavor;
    ngx_uint_t            tries;    /* nginx: points tried */
    uint32_t              node;     /* nginx: the current point's;
                                       distinct: the first node */
    uint32_t              hash;     /* the key's */
    ngx_uint_t            started;  /* distinct: the first node answered */
    chash_cursor          cursor;   /* nginx: the next point */
    chash_walk           *walk;     /* distinct: NULL until a second node */
    ngx_pool_t           *pool;     /* where the walk comes from */
    const chash_ring     *ring;
    const chash_node_mask *mask;    /* a subset, or NULL: the whole ring */
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
 * NGX_CHASH_FALLBACK past NGX_CHASH_MAX_TRIES points; pingora and resty,
 * each node once in ring order, its peer if usable, NGX_CHASH_EXHAUSTED
 * when every node came (or the seen-set could not be allocated: logged).
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


/* ---- ngx_chash_snapshot.c: generations, sources, hot swap ---------------- */

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


/*
 * One loaded snapshot with everything a request routes through: the ring,
 * the module's peers built from its node table, its subsets. Immutable once
 * published, except refs. Lives in its own pool (malloc'ed memory of the
 * process that loaded it: the master at configuration time, inherited by the
 * workers' fork, or a worker after a swap); the ring's columns are the
 * file's pages (mapped, shared through the page cache) or a private copy.
 *
 * refs counts the holders: the source while it serves this generation, and
 * every request that started on it (dropped by the request pool's cleanup).
 * The last ngx_chash_gen_unref frees it, on a thread of the pool when the
 * worker has one (unmapping or freeing a large ring takes milliseconds the
 * event loop should not wait), else at once. Event loop only.
 */
typedef struct {
    ngx_uint_t             refs;
    ngx_pool_t            *pool;
    chash_snapshot        *snapshot;
    chash_ring            *ring;
    chash_snapshot_info    info;
    ngx_chash_nodes_t      nodes;       /* one node a peer */
    ngx_str_t             *addresses;   /* node i's address, NUL-terminated */
    ngx_uint_t            *weights;     /* 0: drained (a down peer) */
    ngx_uint_t             nsubsets;
    ngx_chash_subset_t    *subsets;
    void                  *peers;       /* the module's peer list */
    ngx_str_t              ring_id;     /* 16 hex digits of the fingerprint */
    ngx_str_t              version;     /* config version, decimal */
    u_char                 fingerprint[2 * CHASH_FINGERPRINT_SIZE + 1];
    u_char                 key_id[2 * CHASH_KEY_ID_SIZE + 1];  /* "" unsigned */
    ngx_chash_file_id_t    file;
    time_t                 loaded_at;
    ngx_str_t             *thread_pool;  /* where it is freed, or NULL */
} ngx_chash_gen_t;


typedef struct ngx_chash_source_s  ngx_chash_source_t;
typedef struct ngx_chash_status_s  ngx_chash_status_t;

/*
 * Builds gen->peers from gen->addresses and gen->weights, allocating from
 * gen->pool only. May run on a thread of the pool: no logging, no shared
 * state; a refusal writes its message into err (NUL-terminated).
 */
typedef ngx_int_t (*ngx_chash_build_peers_pt)(ngx_chash_source_t *src,
    ngx_chash_gen_t *gen, u_char *err, size_t len);

/* Told of each load a worker finished: gen on success, else check/message. */
typedef void (*ngx_chash_loaded_pt)(ngx_chash_source_t *src,
    ngx_chash_gen_t *gen, const char *check, const u_char *message);


#define NGX_CHASH_ERR_LEN  1024

/* The file an upstream's ring comes from (chash_snapshot or chash_migrate). */
struct ngx_chash_source_s {
    ngx_str_t                  path;          /* NUL-terminated */
    ngx_str_t                 *upstream;
    ngx_str_t                  directive;
    ngx_int_t                  flavor;        /* -1: any */
    ngx_flag_t                 copy;
    uint64_t                   min_version;
    u_char                    *trusted_keys;  /* n x 32 bytes */
    ngx_uint_t                 n_trusted_keys;
    ngx_msec_t                 poll;          /* 0: never */
    ngx_str_t                  thread_pool;
    void                      *module_conf;   /* for build_peers */
    ngx_chash_build_peers_pt   build_peers;
    ngx_chash_loaded_pt        loaded;

    /* migration: the other file's source, whose ring must match this one's
     * backends unless allow_mismatch (checked at every load) */
    ngx_chash_source_t        *partner;
    uint64_t                   seed;
    ngx_flag_t                 allow_mismatch;

    ngx_chash_status_t        *status;        /* counters, or NULL */
    ngx_uint_t                 status_index;
    ngx_uint_t                 side;          /* 0 chash_snapshot, 1 migrate */

    /* process-local state */
    ngx_chash_gen_t           *current;
    ngx_chash_file_id_t        refused;       /* logged once per identity */
    ngx_uint_t                 refused_valid;
    ngx_event_t                poll_event;
    void                      *task;          /* one load in flight at most */
    ngx_uint_t                 busy;
};


/*
 * Loads and verifies src->path with every check (signature against each
 * trusted key, min_version, the version served: lower is refused, equal
 * with another fingerprint too; the flavor; numeric addresses; the
 * partner's backends). Blocking, O(file); thread-safe given that served and
 * partner stay referenced by the caller. NGX_OK and *out (refs 1), or
 * NGX_DECLINED with the check's name in *check (static, or in checkbuf of
 * NGX_CHASH_CHECK_LEN bytes) and its message in err.
 */
#define NGX_CHASH_CHECK_LEN  64

ngx_int_t ngx_chash_gen_load(ngx_chash_source_t *src, ngx_chash_gen_t *served,
    ngx_chash_gen_t *partner, ngx_chash_gen_t **out, const char **check,
    u_char *checkbuf, u_char *err, size_t len);

void ngx_chash_gen_unref(ngx_chash_gen_t *gen);

/* The request's hold on gen, dropped when pool is destroyed. */
ngx_int_t ngx_chash_gen_hold(ngx_chash_gen_t *gen, ngx_pool_t *pool);

/* The subset named name, or NULL. */
ngx_chash_subset_t *ngx_chash_gen_subset(ngx_chash_gen_t *gen,
    ngx_str_t *name);

/*
 * At configuration time (master, nginx -t): loads src->path with every check
 * and serves it; errors with ngx_chash_upstream_error naming the check. The
 * generation is released with cf->cycle's pool.
 */
ngx_int_t ngx_chash_source_init_conf(ngx_conf_t *cf,
    const ngx_chash_upstream_t *up, ngx_chash_source_t *src);

/*
 * In each worker (init_process): serves the file as it is now (loading it
 * synchronously, before the first request, if it changed since the master
 * loaded it) and starts the poll timer.
 */
ngx_int_t ngx_chash_source_init_worker(ngx_cycle_t *cycle,
    ngx_chash_source_t *src);


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
} ngx_chash_directive_t;

/* value[2] .. value[n - 1]: the parameters after KEY; errors logged. */
char *ngx_chash_parse_directive(ngx_conf_t *cf, ngx_str_t *value,
    ngx_uint_t n, ngx_chash_directive_t *d);

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

/*
 * init_upstream of a snapshot upstream: refuses `server` lines (has_servers),
 * `zone`, multiple= and id= (id_set: a snapshot's ids are its nodes'), wires
 * a migration's two sources, loads both files with every check
 * (ngx_chash_source_init_conf).
 */
ngx_int_t ngx_chash_policy_init_conf(ngx_conf_t *cf,
    const ngx_chash_upstream_t *up, ngx_chash_source_t *snap,
    ngx_chash_source_t *next, ngx_int_t flavor, ngx_uint_t has_servers,
    ngx_uint_t has_zone, ngx_uint_t multiple, ngx_flag_t id_set,
    void *module_conf, ngx_chash_build_peers_pt build_peers);

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


/* ---- ngx_chash_status.c: the status zone, its renderers ------------------ */

/* Each module's zone; the HTTP module's chash_status finds the stream
 * module's by its name (ngx_chash_status_find). */
#define NGX_CHASH_HTTP_STATUS_ZONE    "chash_status"
#define NGX_CHASH_STREAM_STATUS_ZONE  "chash_stream_status"

#define NGX_CHASH_STATUS_SLOTS    64     /* workers by ngx_worker, modulo */
#define NGX_CHASH_STATUS_SUBSETS  64     /* subsets counted by index */

typedef struct {
    ngx_atomic_t   pid;
    ngx_atomic_t   version[2];           /* served: old (chash_snapshot), new */
    ngx_atomic_t   loads_ok;
    ngx_atomic_t   loads_refused;
    ngx_atomic_t   requests[2];          /* old, new */
    ngx_atomic_t   unknown_subset;
    ngx_atomic_t   subset[NGX_CHASH_STATUS_SUBSETS];
} ngx_chash_status_slot_t;


typedef struct {
    u_char                   name[64];
    size_t                   name_len;
    ngx_atomic_t             lock;       /* of the last refusal's text */
    ngx_atomic_t             refused_at;
    u_char                   last_check[NGX_CHASH_CHECK_LEN];
    u_char                   last_message[512];
    ngx_chash_status_slot_t  slot[NGX_CHASH_STATUS_SLOTS];
} ngx_chash_status_shm_t;


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
    (0x63680000 ^ sizeof(ngx_chash_status_t) ^ sizeof(ngx_chash_gen_t) << 4 \
     ^ sizeof(ngx_chash_source_t) << 8 ^ sizeof(ngx_chash_status_shm_t) << 12)

struct ngx_chash_status_s {
    ngx_uint_t               abi;        /* NGX_CHASH_STATUS_ABI */
    ngx_array_t              upstreams;  /* ngx_chash_status_upstream_t */
    ngx_shm_zone_t          *zone;
    ngx_chash_status_shm_t  *shm;        /* one per upstream, in order */
};


/* Registers a snapshot upstream (configuration time); sets src->status. */
ngx_int_t ngx_chash_status_register(ngx_conf_t *cf, ngx_chash_status_t *st,
    ngx_str_t *name, ngx_chash_source_t *snap, ngx_chash_source_t *next,
    ngx_str_t *rollout);

/* Adds the shared zone once every upstream is registered. */
ngx_int_t ngx_chash_status_add_zone(ngx_conf_t *cf, ngx_chash_status_t *st,
    ngx_str_t *name, void *tag);

/* This worker's slot of a source's upstream, or NULL (no zone yet). */
ngx_chash_status_slot_t *ngx_chash_status_slot(ngx_chash_source_t *src);

/* A request counted: side 0/1, the subset's index or -1, unknown. */
void ngx_chash_status_count(ngx_chash_source_t *src, ngx_uint_t side,
    ngx_int_t subset, ngx_uint_t unknown);

/*
 * The status document (JSON, or prometheus != 0) into a buffer of pool:
 * st's upstreams, and stream's (NULL: none) under "stream_upstreams" and
 * with a protocol="stream" label.
 */
ngx_buf_t *ngx_chash_status_render(ngx_chash_status_t *st,
    ngx_chash_status_t *stream, ngx_pool_t *pool, ngx_uint_t prometheus);

/* The worker serves src->current now: its version, and a load counted if
 * loaded (not for the generation a worker inherits). */
void ngx_chash_status_served(ngx_chash_source_t *src, ngx_uint_t loaded);

/* A load refused: counted, and check and err kept as the last refusal. */
void ngx_chash_status_refused(ngx_chash_source_t *src, const char *check,
    u_char *err);

/* The status whose zone is named name in cycle (the stream module's, seen
 * from the HTTP module), or NULL: no such zone, or another layout. */
ngx_chash_status_t *ngx_chash_status_find(ngx_cycle_t *cycle,
    ngx_str_t *name);


#endif /* NGX_CHASH_CORE_H_INCLUDED_ */
