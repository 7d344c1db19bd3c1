/*
 * ngx_stream_upstream_chash_module: the `chash` balancer for stream (TCP and
 * UDP) upstreams, in a `stream { upstream {} }` block in place of `hash`:
 *
 *     chash KEY [flavor=nginx|pingora-v1|pingora-v2|resty] [multiple=K]
 *           [id=address|apisix] [bounded_load=F] [subset=VALUE];
 *     chash_snapshot FILE ...;     chash_migrate FILE rollout=VALUE ...;
 *
 * The stream twin of ngx_http_upstream_chash_module: the ring, the node map
 * and the peer walks are ngx_chash_core's, shared with the HTTP module; this
 * file only adapts ngx_stream_upstream_rr_* peers to the core. Snapshot
 * upstreams, their hot swap, subsets and migration are the core's too
 * (ngx_chash_source_*, ngx_chash_policy_*): this file evaluates the stream
 * complex values and builds stream peer lists from a snapshot's nodes.
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
 * The pingora flavors route as pingora-ketama does (IP:port servers only),
 * flavor=resty as resty.chash does; both fail over along the ring's walk
 * over distinct nodes.
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
    ngx_uint_t                        multiple;    /* 0: the flavor's own */
    ngx_uint_t                        id_form;     /* resty: NGX_CHASH_ID_* */
    ngx_flag_t                        id_set;
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

    /* chash_snapshot / chash_migrate: the rings and peers come from files */
    ngx_flag_t                        flavor_set;
    ngx_chash_source_t               *snap;
    ngx_chash_source_t               *next;
    ngx_stream_complex_value_t       *subset;
    ngx_stream_complex_value_t       *rollout;     /* NULL: rollout_ppm */
    ngx_int_t                         rollout_ppm;
    ngx_stream_complex_value_t       *scope;       /* NULL: in */
    ngx_chash_peer_params_t           pp;          /* every snapshot peer's */
    ngx_stream_upstream_server_t     *placeholder;
    ngx_str_t                         rollout_text;
} ngx_stream_upstream_chash_srv_conf_t;


typedef struct {
    ngx_chash_status_t                status;
} ngx_stream_upstream_chash_main_conf_t;


/* A generation's peers (ngx_chash_gen_t.peers): nginx's round robin list,
 * built by ngx_stream_upstream_init_round_robin as for `server` lines. */
typedef struct {
    ngx_stream_upstream_rr_peers_t   *peers;
    ngx_stream_upstream_rr_peer_t   **peer;        /* by index */
} ngx_stream_upstream_chash_gen_peers_t;


typedef struct {
    /* the round robin data must be first: round robin's get and free use it */
    ngx_stream_upstream_rr_peer_data_t     rrp;
    ngx_stream_upstream_chash_srv_conf_t  *conf;
    ngx_str_t                              key;
    ngx_chash_walk_t                       walk;
    ngx_uint_t                             flavor;
    ngx_stream_upstream_rr_peer_t        **peer;
    ngx_chash_nodes_t                     *nodes;
    ngx_chash_gen_t                       *gen;       /* NULL: server lines */
    ngx_str_t                             *ring_id;
    ngx_str_t                              choice;    /* "", old, new */
    ngx_str_t                              subset;    /* "" for the whole ring */
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
static char *ngx_stream_upstream_chash_snapshot(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_stream_upstream_chash_migrate(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static ngx_int_t ngx_stream_upstream_chash_init_process(ngx_cycle_t *cycle);
static void *ngx_stream_upstream_chash_create_main_conf(ngx_conf_t *cf);
static ngx_int_t ngx_stream_upstream_chash_postconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_stream_upstream_chash_init_snapshot(ngx_conf_t *cf,
    ngx_stream_upstream_srv_conf_t *us,
    ngx_stream_upstream_chash_srv_conf_t *ccf, ngx_chash_upstream_t *up);


static ngx_command_t  ngx_stream_upstream_chash_commands[] = {

    { ngx_string("chash"),
      NGX_STREAM_UPS_CONF|NGX_CONF_1MORE,
      ngx_stream_upstream_chash,
      NGX_STREAM_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("chash_snapshot"),
      NGX_STREAM_UPS_CONF|NGX_CONF_1MORE,
      ngx_stream_upstream_chash_snapshot,
      NGX_STREAM_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("chash_migrate"),
      NGX_STREAM_UPS_CONF|NGX_CONF_1MORE,
      ngx_stream_upstream_chash_migrate,
      NGX_STREAM_SRV_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_stream_module_t  ngx_stream_upstream_chash_module_ctx = {
    ngx_stream_upstream_chash_add_variables, /* preconfiguration */
    ngx_stream_upstream_chash_postconfiguration, /* postconfiguration */

    ngx_stream_upstream_chash_create_main_conf, /* create main configuration */
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
    ngx_stream_upstream_chash_init_process,  /* init process */
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
    ngx_chash_upstream_t                    up;
    ngx_uint_t                              i, n, *weights;
    ngx_str_t                             **texts;
    ngx_stream_upstream_rr_peers_t         *peers;
    ngx_stream_upstream_chash_srv_conf_t   *ccf;

    ccf = ngx_stream_conf_upstream_srv_conf(us,
                                            ngx_stream_upstream_chash_module);

    up.name = &us->host;
    up.file_name = us->file_name;
    up.line = us->line;

    if (ccf->snap) {
        return ngx_stream_upstream_chash_init_snapshot(cf, us, ccf, &up);
    }

    if (ccf->next) {
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, &up, "chash_migrate "
                                 "needs chash_snapshot");
        return NGX_ERROR;
    }

    if (ccf->subset) {
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, &up, "chash subset= "
                                 "needs chash_snapshot (subsets are stored "
                                 "in snapshots)");
        return NGX_ERROR;
    }

    if (ngx_stream_upstream_init_round_robin(cf, us) != NGX_OK) {
        return NGX_ERROR;
    }

    us->peer.init = ngx_stream_upstream_chash_init_peer;

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

    return ngx_chash_build_from_servers(cf, &up, ccf->flavor,
                                        ccf->multiple, ccf->id_form, texts,
                                        weights, n, &ccf->nodes, &ccf->ring,
                                        &ccf->ring_id);
}


/*
 * Runs on a thread of the pool (or at configuration time): the peers of a
 * snapshot as nginx's stream round robin builds them from `server` lines,
 * from the generation's pool only. No logging: a refusal goes into err.
 */
static ngx_int_t
ngx_stream_upstream_chash_build_peers(ngx_chash_source_t *src,
    ngx_chash_gen_t *gen, u_char *err, size_t len)
{
    ngx_stream_upstream_chash_srv_conf_t  *ccf = src->module_conf;

    ngx_uint_t                              i, n;
    ngx_url_t                               u;
    ngx_conf_t                              cf;
    ngx_stream_upstream_server_t           *server;
    ngx_stream_upstream_rr_peer_t          *peer;
    ngx_stream_upstream_srv_conf_t          us;
    ngx_stream_upstream_chash_gen_peers_t  *gp;

    n = gen->nodes.npeers;

    ngx_memzero(&us, sizeof(ngx_stream_upstream_srv_conf_t));
    us.host = *src->upstream;
    us.servers = ngx_array_create(gen->pool, n,
                                  sizeof(ngx_stream_upstream_server_t));
    gp = ngx_palloc(gen->pool, sizeof(ngx_stream_upstream_chash_gen_peers_t));
    if (us.servers == NULL || gp == NULL) {
        ngx_snprintf(err, len, "no memory%Z");
        return NGX_ERROR;
    }

    for (i = 0; i < n; i++) {
        ngx_memzero(&u, sizeof(ngx_url_t));
        u.url = gen->addresses[i];

        if (ngx_parse_url(gen->pool, &u) != NGX_OK || u.naddrs == 0) {
            ngx_snprintf(err, len, "node %ui \"%V\": %s%Z", i,
                         &gen->addresses[i], u.err ? u.err : "no address");
            return NGX_ERROR;
        }

        if (u.no_port && u.family != AF_UNIX) {
            /* as stream's own `server`: "no port in upstream" */
            ngx_snprintf(err, len, "node %ui \"%V\": no port (a stream "
                         "upstream's servers need one)%Z", i,
                         &gen->addresses[i]);
            return NGX_ERROR;
        }

        server = ngx_array_push(us.servers);
        ngx_memzero(server, sizeof(ngx_stream_upstream_server_t));
        server->name = gen->addresses[i];
        server->addrs = u.addrs;
        server->naddrs = 1;
        /* a drained node (weight 0) owns no points: a down peer */
        server->weight = gen->weights[i] ? gen->weights[i] : 1;
        server->down = gen->weights[i] == 0;
        server->max_fails = ccf->pp.max_fails;
        server->fail_timeout = ccf->pp.fail_timeout;
        server->max_conns = ccf->pp.max_conns;
    }

    ngx_memzero(&cf, sizeof(ngx_conf_t));
    cf.pool = gen->pool;
    cf.temp_pool = gen->pool;
    cf.log = ngx_cycle->log;
    cf.cycle = (ngx_cycle_t *) ngx_cycle;

    if (ngx_stream_upstream_init_round_robin(&cf, &us) != NGX_OK) {
        ngx_snprintf(err, len, "the peer list could not be built%Z");
        return NGX_ERROR;
    }

    gp->peers = us.peer.data;
    gp->peers->name = src->upstream;     /* not the stack's copy */
    gp->peer = ngx_palloc(gen->pool,
                          n * sizeof(ngx_stream_upstream_rr_peer_t *));
    if (gp->peer == NULL) {
        ngx_snprintf(err, len, "no memory%Z");
        return NGX_ERROR;
    }

    for (peer = gp->peers->peer, i = 0; peer && i < n; peer = peer->next, i++) {
        gp->peer[i] = peer;
    }

    if (i != n || peer != NULL) {
        ngx_snprintf(err, len, "%ui peers for %ui nodes%Z", i, n);
        return NGX_ERROR;
    }

    gen->peers = gp;

    return NGX_OK;
}


static ngx_int_t
ngx_stream_upstream_chash_init_snapshot(ngx_conf_t *cf,
    ngx_stream_upstream_srv_conf_t *us, ngx_stream_upstream_chash_srv_conf_t *ccf,
    ngx_chash_upstream_t *up)
{
    ngx_stream_upstream_chash_main_conf_t  *mcf;

    if (ngx_chash_policy_init_conf(cf, up, ccf->snap, ccf->next,
            ccf->flavor_set ? (ngx_int_t) ccf->flavor : -1,
            us->servers->nelts != 1
            || us->servers->elts != (void *) ccf->placeholder,
            us->shm_zone != NULL, ccf->multiple, ccf->id_set, ccf,
            ngx_stream_upstream_chash_build_peers)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    mcf = ngx_stream_conf_get_module_main_conf(cf,
                                            ngx_stream_upstream_chash_module);

    if (ngx_chash_status_register(cf, &mcf->status, &us->host, ccf->snap,
                                  ccf->next, &ccf->rollout_text)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    us->peer.init = ngx_stream_upstream_chash_init_peer;

    return NGX_OK;
}


static ngx_int_t
ngx_stream_upstream_chash_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                              i;
    ngx_stream_upstream_srv_conf_t        **uscfp;
    ngx_stream_upstream_main_conf_t        *umcf;
    ngx_stream_upstream_chash_srv_conf_t   *ccf;

    umcf = ngx_stream_cycle_get_module_main_conf(cycle,
                                                 ngx_stream_upstream_module);
    if (umcf == NULL) {
        return NGX_OK;
    }

    uscfp = umcf->upstreams.elts;

    for (i = 0; i < umcf->upstreams.nelts; i++) {
        if (uscfp[i]->srv_conf == NULL
            || uscfp[i]->peer.init_upstream != ngx_stream_upstream_chash_init)
        {
            continue;
        }

        ccf = ngx_stream_conf_upstream_srv_conf(uscfp[i],
                                            ngx_stream_upstream_chash_module);

        if (ccf->snap
            && ngx_chash_source_init_worker(cycle, ccf->snap) != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (ccf->next
            && ngx_chash_source_init_worker(cycle, ccf->next) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_stream_upstream_chash_get_nowhere(ngx_peer_connection_t *pc, void *data)
{
    ngx_stream_upstream_chash_peer_data_t  *hp = data;

    pc->name = hp->rrp.peers->name;

    return NGX_BUSY;
}


/*
 * A session on a snapshot upstream: the ring (old or new of a migration) it
 * keeps for all its tries, held until its pool goes; its subset's mask.
 */
static ngx_int_t
ngx_stream_upstream_chash_init_snapshot_peer(ngx_stream_session_t *s,
    ngx_stream_upstream_srv_conf_t *us,
    ngx_stream_upstream_chash_srv_conf_t *ccf,
    ngx_stream_upstream_chash_peer_data_t *hp)
{
    ngx_int_t                               ppm;
    ngx_str_t                               v, ro;
    ngx_uint_t                              side;
    ngx_chash_gen_t                        *gen;
    ngx_chash_subset_t                     *sub;
    ngx_stream_upstream_srv_conf_t          fus;
    ngx_stream_upstream_chash_gen_peers_t  *gp;

    ppm = ccf->rollout_ppm;
    ngx_str_set(&v, "in");

    if (ccf->next && ccf->rollout) {
        if (ngx_stream_complex_value(s, ccf->rollout, &ro) != NGX_OK) {
            return NGX_ERROR;
        }

        ppm = ngx_chash_rollout_value(&ro, &us->host, s->connection->log);
    }

    if (ccf->next && ccf->scope
        && ngx_stream_complex_value(s, ccf->scope, &v) != NGX_OK)
    {
        return NGX_ERROR;
    }

    gen = ngx_chash_policy_choose(ccf->snap, ccf->next, &hp->key, ppm, &v,
                                  &side);

    ngx_str_null(&hp->choice);

    if (ccf->next) {
        if (side) {
            ngx_str_set(&hp->choice, "new");

        } else {
            ngx_str_set(&hp->choice, "old");
        }
    }

    if (ngx_chash_gen_hold(gen, s->connection->pool) != NGX_OK) {
        return NGX_ERROR;
    }

    gp = gen->peers;
    hp->gen = gen;
    hp->flavor = gen->info.flavor;
    hp->peer = gp->peer;
    hp->nodes = &gen->nodes;
    hp->ring_id = &gen->ring_id;

    fus = *us;
    fus.peer.data = gp->peers;

    if (ngx_stream_upstream_init_round_robin_peer(s, &fus) != NGX_OK) {
        return NGX_ERROR;
    }

    s->upstream->peer.get = ngx_stream_upstream_chash_get;

    ngx_str_null(&hp->subset);

    if (ccf->subset
        && ngx_stream_complex_value(s, ccf->subset, &hp->subset) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_chash_policy_subset(ccf->snap, gen, side, &hp->subset, &sub,
                                s->connection->log)
        != NGX_OK)
    {
        s->upstream->peer.get = ngx_stream_upstream_chash_get_nowhere;
        s->upstream->peer.tries = 1;
        return NGX_OK;
    }

    if (sub) {
        /* the peers outside the subset count as tried: nginx's round robin
         * after 20 tries stays inside it */
        ngx_memcpy(hp->rrp.tried, sub->outside,
                   ngx_chash_tried_words(gen->nodes.npeers)
                   * sizeof(uintptr_t));
        s->upstream->peer.tries = ngx_max(sub->live, 1);
    }

    if (ngx_chash_walk_init_masked(&hp->walk, hp->flavor, gen->ring,
                                   sub ? sub->mask : NULL, &hp->key,
                                   s->connection->pool)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    hp->walk.bounded_load = ccf->bounded_load;

    return NGX_OK;
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

    ccf = ngx_stream_conf_upstream_srv_conf(us,
                                            ngx_stream_upstream_chash_module);

    if (ngx_stream_complex_value(s, &ccf->key, &hp->key) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_STREAM, s->connection->log, 0,
                   "upstream chash key:\"%V\"", &hp->key);

    hp->conf = ccf;

    /* for the $chash_* variables */
    ngx_stream_set_ctx(s, hp, ngx_stream_upstream_chash_module);

    if (ccf->snap) {
        return ngx_stream_upstream_chash_init_snapshot_peer(s, us, ccf, hp);
    }

    if (ngx_stream_upstream_init_round_robin_peer(s, us) != NGX_OK) {
        return NGX_ERROR;
    }

    hp->gen = NULL;
    hp->flavor = ccf->flavor;
    hp->peer = ccf->peer;
    hp->nodes = &ccf->nodes;
    hp->ring_id = &ccf->ring_id;
    ngx_str_null(&hp->choice);
    ngx_str_null(&hp->subset);

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

    peer = hp->peer[i];

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

    peer = hp->peer[i];

    *current = &peer->current_weight;
    *effective = &peer->effective_weight;
    *weight = peer->weight;
}


static ngx_uint_t
ngx_stream_upstream_chash_conns(void *data, ngx_uint_t i)
{
    ngx_stream_upstream_chash_peer_data_t  *hp = data;

    return hp->peer[i]->conns;
}


static const ngx_chash_peer_ops_t  ngx_stream_upstream_chash_peer_ops = {
    ngx_stream_upstream_chash_usable,
    ngx_stream_upstream_chash_weights,
    ngx_stream_upstream_chash_conns
};


/*
 * One try: the core's pick over this upstream's peers, then nginx's round
 * robin bookkeeping for the peer chosen, as `hash` does. nginx flavor: round
 * robin for a single peer, an empty key, or past 20 ring tries; pingora and
 * resty: NGX_BUSY when the walk has visited every node.
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

    if (hp->flavor == CHASH_FLAVOR_NGINX
        && (peers->single || hp->key.len == 0))
    {
        ngx_stream_upstream_rr_peers_unlock(peers);
        return ngx_stream_upstream_get_round_robin_peer(pc, &hp->rrp);
    }

    if (hp->gen == NULL && ccf->mapped != peers
        && ngx_stream_upstream_chash_map_peers(ccf, peers, pc->log) != NGX_OK)
    {
        ngx_stream_upstream_rr_peers_unlock(peers);
        return NGX_ERROR;
    }

    pc->connection = NULL;

    now = ngx_time();

    i = ngx_chash_pick(&hp->walk, hp->nodes,
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

    peer = hp->peer[i];

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


enum {
    NGX_CHASH_VAR_RING = 0,
    NGX_CHASH_VAR_VERSION,
    NGX_CHASH_VAR_CHOICE,
    NGX_CHASH_VAR_SUBSET
};


/* $chash_ring, $chash_ring_version, $chash_ring_choice, $chash_subset: of
 * the ring that routed this session (held by it until its pool goes). */
static ngx_int_t
ngx_stream_upstream_chash_variable(ngx_stream_session_t *s,
    ngx_stream_variable_value_t *v, uintptr_t data)
{
    ngx_str_t                              *str;
    ngx_stream_upstream_chash_peer_data_t  *hp;

    hp = ngx_stream_get_module_ctx(s, ngx_stream_upstream_chash_module);

    if (hp == NULL || hp->ring_id == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    switch (data) {
    case NGX_CHASH_VAR_RING:
        str = hp->ring_id;
        break;
    case NGX_CHASH_VAR_VERSION:
        if (hp->gen == NULL) {
            v->not_found = 1;
            return NGX_OK;
        }
        str = &hp->gen->version;
        break;
    case NGX_CHASH_VAR_CHOICE:
        str = &hp->choice;
        break;
    default:
        str = &hp->subset;
        break;
    }

    v->len = str->len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->data = str->data;

    return NGX_OK;
}


static ngx_int_t
ngx_stream_upstream_chash_add_variables(ngx_conf_t *cf)
{
    ngx_uint_t              i;
    ngx_stream_variable_t  *var;

    static ngx_str_t        names[] = {
        ngx_string("chash_ring"),
        ngx_string("chash_ring_version"),
        ngx_string("chash_ring_choice"),
        ngx_string("chash_subset")
    };

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        var = ngx_stream_add_variable(cf, &names[i],
                                      NGX_STREAM_VAR_NOCACHEABLE);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = ngx_stream_upstream_chash_variable;
        var->data = i;
    }

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
    conf->pp.max_fails = 1;
    conf->pp.fail_timeout = 10;

    return conf;
}


static char *
ngx_stream_upstream_chash(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_stream_upstream_chash_srv_conf_t  *ccf = conf;

    ngx_chash_directive_t                d;
    ngx_str_t                           *value;
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

    if (ngx_chash_parse_directive(cf, value, cf->args->nelts, &d)
        != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    ccf->flavor = d.flavor;
    ccf->flavor_set = d.flavor_set;
    ccf->multiple = d.multiple;
    ccf->id_form = d.id_form;
    ccf->id_set = d.id_set;
    ccf->bounded_load = d.bounded_load;

    if (d.has_subset) {
        ccf->subset = ngx_palloc(cf->pool,
                                 sizeof(ngx_stream_complex_value_t));
        if (ccf->subset == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_memzero(&ccv, sizeof(ngx_stream_compile_complex_value_t));
        ccv.cf = cf;
        ccv.value = &d.subset;
        ccv.complex_value = ccf->subset;

        if (ngx_stream_compile_complex_value(&ccv) != NGX_OK) {
            return NGX_CONF_ERROR;
        }
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
}


static ngx_stream_complex_value_t *
ngx_stream_upstream_chash_cv(ngx_conf_t *cf, ngx_str_t *value)
{
    ngx_stream_complex_value_t          *cv;
    ngx_stream_compile_complex_value_t   ccv;

    cv = ngx_palloc(cf->pool, sizeof(ngx_stream_complex_value_t));
    if (cv == NULL) {
        return NULL;
    }

    ngx_memzero(&ccv, sizeof(ngx_stream_compile_complex_value_t));
    ccv.cf = cf;
    ccv.value = value;
    ccv.complex_value = cv;

    if (ngx_stream_compile_complex_value(&ccv) != NGX_OK) {
        return NULL;
    }

    return cv;
}


static ngx_chash_source_t *
ngx_stream_upstream_chash_source(ngx_conf_t *cf, ngx_str_t *value,
    ngx_str_t *rest, ngx_uint_t *nrest)
{
    ngx_chash_source_t  *src;

    src = ngx_pcalloc(cf->pool, sizeof(ngx_chash_source_t));
    if (src == NULL) {
        return NULL;
    }

    src->directive = value[0];

    if (ngx_chash_source_parse(cf, src, value, cf->args->nelts, rest, nrest)
        != NGX_CONF_OK)
    {
        return NULL;
    }

    return src;
}


/*
 * chash_snapshot FILE [trusted_key=PUB]... [min_version=N] [poll=T|off]
 *     [thread_pool=NAME] [copy] [max_fails=N] [fail_timeout=T] [max_conns=N]
 */
static char *
ngx_stream_upstream_chash_snapshot(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_stream_upstream_chash_srv_conf_t  *ccf = conf;

    ngx_str_t                       *value, *rest;
    ngx_uint_t                       nrest;
    ngx_stream_upstream_srv_conf_t  *uscf;

    if (ccf->snap) {
        return "is duplicate";
    }

    value = cf->args->elts;
    rest = ngx_palloc(cf->pool, cf->args->nelts * sizeof(ngx_str_t));
    if (rest == NULL) {
        return NGX_CONF_ERROR;
    }

    ccf->snap = ngx_stream_upstream_chash_source(cf, value, rest, &nrest);
    if (ccf->snap == NULL) {
        return NGX_CONF_ERROR;
    }

    /* nginx refuses an upstream block without servers: a placeholder that
     * only init_snapshot sees (and that tells it from `server` lines) */
    uscf = ngx_stream_conf_get_module_srv_conf(cf, ngx_stream_upstream_module);
    ccf->placeholder = ngx_array_push(uscf->servers);
    if (ccf->placeholder == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(ccf->placeholder, sizeof(ngx_stream_upstream_server_t));
    ngx_str_set(&ccf->placeholder->name, "chash_snapshot");

    return ngx_chash_parse_peer_params(cf, rest, nrest, &ccf->pp);
}


/*
 * chash_migrate FILE rollout=VALUE [scope=VALUE] [seed=N] [allow_mismatch]
 *     [trusted_key=PUB]... [min_version=N] [poll=T|off] [thread_pool=NAME]
 *     [copy]
 */
static char *
ngx_stream_upstream_chash_migrate(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_stream_upstream_chash_srv_conf_t  *ccf = conf;

    ngx_str_t                   *value, *rest;
    ngx_uint_t                   nrest;
    ngx_chash_migrate_params_t   mp;

    if (ccf->next) {
        return "is duplicate";
    }

    value = cf->args->elts;
    rest = ngx_palloc(cf->pool, cf->args->nelts * sizeof(ngx_str_t));
    if (rest == NULL) {
        return NGX_CONF_ERROR;
    }

    ccf->next = ngx_stream_upstream_chash_source(cf, value, rest, &nrest);
    if (ccf->next == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&mp, sizeof(ngx_chash_migrate_params_t));

    if (ngx_chash_parse_migrate_params(cf, ccf->next, rest, nrest, &mp)
        != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    ccf->rollout_text = mp.rollout;
    ccf->rollout_ppm = mp.rollout_ppm;

    if (mp.rollout_is_var) {
        ccf->rollout = ngx_stream_upstream_chash_cv(cf, &mp.rollout);
        if (ccf->rollout == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    if (mp.has_scope) {
        ccf->scope = ngx_stream_upstream_chash_cv(cf, &mp.scope);
        if (ccf->scope == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


static void *
ngx_stream_upstream_chash_create_main_conf(ngx_conf_t *cf)
{
    return ngx_pcalloc(cf->pool,
                       sizeof(ngx_stream_upstream_chash_main_conf_t));
}


static ngx_int_t
ngx_stream_upstream_chash_postconfiguration(ngx_conf_t *cf)
{
    ngx_stream_upstream_chash_main_conf_t  *mcf;

    /* its own zone: the HTTP module's is "chash_status" */
    static ngx_str_t  zone_name = ngx_string("chash_stream_status");

    /* after every upstream's init_upstream: the zone's size is known */
    mcf = ngx_stream_conf_get_module_main_conf(cf,
                                            ngx_stream_upstream_chash_module);

    return ngx_chash_status_add_zone(cf, &mcf->status, &zone_name,
                                     &ngx_stream_upstream_chash_module);
}
