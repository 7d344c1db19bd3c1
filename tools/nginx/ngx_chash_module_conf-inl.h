/*
 * The configuration of both modules: the directives of an upstream block,
 * init_upstream (a ring from `server` lines, or a snapshot's source), the
 * peer lists built from a snapshot's nodes, each worker's start. Not
 * compiled alone: each module includes it after ngx_chash_module_peer-inl.h,
 * as ngx_chash_module.h explains.
 */


static ngx_int_t ngx_chash_module_init_snapshot(ngx_conf_t *cf,
    ngx_chash_up_srv_conf_t *us, ngx_chash_srv_conf_t *ccf,
    ngx_chash_upstream_t *up);


static ngx_int_t
ngx_chash_module_init(ngx_conf_t *cf, ngx_chash_up_srv_conf_t *us)
{
    ngx_uint_t               i, n, *weights;
    ngx_str_t              **texts;
    ngx_chash_upstream_t     up;
    ngx_chash_rr_peers_t    *peers;
    ngx_chash_srv_conf_t    *ccf;

    ccf = ngx_chash_srv_conf(us);

    up.name = &us->host;
    up.file_name = us->file_name;
    up.line = us->line;

    if (ccf->snap) {
        return ngx_chash_module_init_snapshot(cf, us, ccf, &up);
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

    if (ngx_chash_rr_init(cf, us) != NGX_OK) {
        return NGX_ERROR;
    }

    us->peer.init = ngx_chash_module_init_peer;

    peers = us->peer.data;

    n = peers->number;
    ccf->nodes.npeers = n;
    ccf->peer = ngx_palloc(cf->pool, n * sizeof(ngx_chash_rr_peer_t *));
    texts = ngx_palloc(cf->temp_pool, n * sizeof(ngx_str_t *));
    weights = ngx_palloc(cf->temp_pool, n * sizeof(ngx_uint_t));
    if (ccf->peer == NULL || texts == NULL || weights == NULL) {
        return NGX_ERROR;
    }

    if (ngx_chash_module_map_peers(ccf, peers, cf->log) != NGX_OK) {
        return NGX_ERROR;
    }

    for (i = 0; i < n; i++) {
        texts[i] = &ccf->peer[i]->server;
        weights[i] = (ngx_uint_t) ccf->peer[i]->weight;
    }

    return ngx_chash_build_from_servers(cf, &up, ccf->flavor,
                                        ccf->multiple, ccf->id_form,
                                        &ccf->options, texts,
                                        weights, n, &ccf->nodes, &ccf->ring,
                                        &ccf->ring_id);
}


/*
 * Runs on a thread of the pool (or at configuration time): the peers of a
 * snapshot as nginx's round robin builds them from `server` lines, from the
 * generation's pool only. No logging: a refusal goes into err.
 */
static ngx_int_t
ngx_chash_module_build_peers(ngx_chash_source_t *src, ngx_chash_gen_t *gen,
    u_char *err, size_t len)
{
    ngx_chash_srv_conf_t  *ccf = src->module_conf;

    ngx_uint_t                i, n;
    ngx_url_t                 u;
    ngx_conf_t                cf;
    ngx_chash_rr_peer_t      *peer;
    ngx_chash_up_server_t    *server;
    ngx_chash_gen_peers_t    *gp;
    ngx_chash_up_srv_conf_t   us;

    n = gen->nodes.npeers;

    ngx_memzero(&us, sizeof(ngx_chash_up_srv_conf_t));
    us.host = *src->upstream;
    us.servers = ngx_array_create(gen->pool, n,
                                  sizeof(ngx_chash_up_server_t));
    gp = ngx_palloc(gen->pool, sizeof(ngx_chash_gen_peers_t));
    if (us.servers == NULL || gp == NULL) {
        ngx_snprintf(err, len, "no memory%Z");
        return NGX_ERROR;
    }

    for (i = 0; i < n; i++) {
        ngx_memzero(&u, sizeof(ngx_url_t));
        u.url = gen->addresses[i];
        u.default_port = NGX_CHASH_DEFAULT_PORT;

        if (ngx_parse_url(gen->pool, &u) != NGX_OK || u.naddrs == 0) {
            ngx_snprintf(err, len, "node %ui \"%V\": %s%Z", i,
                         &gen->addresses[i], u.err ? u.err : "no address");
            return NGX_ERROR;
        }

        if (NGX_CHASH_DEFAULT_PORT == 0 && u.no_port && u.family != AF_UNIX) {
            /* as stream's own `server`: "no port in upstream" */
            ngx_snprintf(err, len, "node %ui \"%V\": no port (a stream "
                         "upstream's servers need one)%Z", i,
                         &gen->addresses[i]);
            return NGX_ERROR;
        }

        server = ngx_array_push(us.servers);
        ngx_memzero(server, sizeof(ngx_chash_up_server_t));
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

    if (ngx_chash_rr_init(&cf, &us) != NGX_OK) {
        ngx_snprintf(err, len, "the peer list could not be built%Z");
        return NGX_ERROR;
    }

    gp->peers = us.peer.data;
    gp->peers->name = src->upstream;     /* not the stack's copy */
    gp->peer = ngx_palloc(gen->pool, n * sizeof(ngx_chash_rr_peer_t *));
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


/*
 * What the round robin of a generation's peers keeps outside its pool: the
 * TLS session nginx saves in each peer without a zone (SSL_get1_session), a
 * reference that only freeing it releases. May run on a thread of the pool.
 */
static void
ngx_chash_module_free_peers(ngx_chash_gen_t *gen)
{
#if (NGX_CHASH_SSL)
    ngx_chash_rr_peer_t    *peer;
    ngx_chash_gen_peers_t  *gp = gen->peers;

    for (peer = gp->peers->peer; peer; peer = peer->next) {
        if (peer->ssl_session) {
            ngx_ssl_free_session(peer->ssl_session);
            peer->ssl_session = NULL;
        }
    }
#endif
}


static ngx_int_t
ngx_chash_module_init_snapshot(ngx_conf_t *cf, ngx_chash_up_srv_conf_t *us,
    ngx_chash_srv_conf_t *ccf, ngx_chash_upstream_t *up)
{
    ngx_chash_main_conf_t    *mcf;
    ngx_chash_policy_conf_t   pc;

    mcf = ngx_chash_conf_main_conf(cf);

    if (!mcf->state_ready) {
        if (ngx_chash_state_path(cf, &mcf->state_path, &mcf->state_dir)
            != NGX_CONF_OK)
        {
            return NGX_ERROR;
        }

        mcf->state_ready = 1;
    }

    ngx_memzero(&pc, sizeof(ngx_chash_policy_conf_t));
    pc.proto = NGX_CHASH_PROTO_NAME;
    pc.state_dir = mcf->state_dir.len ? &mcf->state_dir : NULL;
    pc.flavor = ccf->flavor_set ? (ngx_int_t) ccf->flavor : -1;
    pc.has_servers = us->servers->nelts != 1
                     || us->servers->elts != (void *) ccf->placeholder;
    pc.has_zone = us->shm_zone != NULL;
    pc.multiple = ccf->multiple;
    pc.id_set = ccf->id_set;
    pc.has_options = ccf->options.set;
    pc.bounded_load = ccf->bounded_load > 1;
    pc.module_conf = ccf;
    pc.build_peers = ngx_chash_module_build_peers;
    pc.free_peers = ngx_chash_module_free_peers;

    if (ngx_chash_policy_init_conf(cf, up, ccf->snap, ccf->next, &pc)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_chash_status_register(cf, &mcf->status, &us->host, ccf->snap,
                                  ccf->next, &ccf->rollout_text)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    us->peer.init = ngx_chash_module_init_peer;

    return NGX_OK;
}


static ngx_int_t
ngx_chash_module_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                  i;
    ngx_chash_up_srv_conf_t   **uscfp;
    ngx_chash_up_main_conf_t   *umcf;
    ngx_chash_srv_conf_t       *ccf;

    umcf = ngx_chash_cycle_upstreams(cycle);
    if (umcf == NULL) {
        return NGX_OK;
    }

    uscfp = umcf->upstreams.elts;

    for (i = 0; i < umcf->upstreams.nelts; i++) {
        if (uscfp[i]->srv_conf == NULL
            || uscfp[i]->peer.init_upstream != ngx_chash_module_init)
        {
            continue;
        }

        ccf = ngx_chash_srv_conf(uscfp[i]);

        /* the chash_snapshot source steps its migration partner too */
        if (ccf->snap
            && ngx_chash_source_init_worker(cycle, ccf->snap) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_chash_module_add_variables(ngx_conf_t *cf)
{
    ngx_uint_t             i;
    ngx_chash_variable_t  *var;

    static ngx_str_t       names[] = {
        ngx_string("chash_ring"),
        ngx_string("chash_ring_version"),
        ngx_string("chash_ring_choice"),
        ngx_string("chash_subset")
    };

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        var = ngx_chash_add_variable(cf, &names[i], NGX_CHASH_VAR_NOCACHEABLE);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = ngx_chash_module_variable;
        var->data = i;
    }

    return NGX_OK;
}


static void *
ngx_chash_module_create_conf(ngx_conf_t *cf)
{
    ngx_chash_srv_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_chash_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->flavor = NGX_CONF_UNSET_UINT;
    conf->pp.max_fails = 1;
    conf->pp.fail_timeout = 10;

    return conf;
}


static void *
ngx_chash_module_create_main_conf(ngx_conf_t *cf)
{
    return ngx_pcalloc(cf->pool, sizeof(ngx_chash_main_conf_t));
}


/* chash_state_path DIR | off (http{} or stream{}) */
static char *
ngx_chash_module_state_path(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_chash_main_conf_t  *mcf = conf;

    ngx_str_t  *value;

    if (mcf->state_path.data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 0) {
        return "takes a directory or off";
    }

    mcf->state_path = value[1];

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_chash_module_postconfiguration(ngx_conf_t *cf)
{
    ngx_chash_main_conf_t  *mcf;

    static ngx_str_t  zone_name = ngx_string(NGX_CHASH_STATUS_ZONE);

    /* after every upstream's init_upstream: the zone's size is known */
    mcf = ngx_chash_conf_main_conf(cf);

    return ngx_chash_status_add_zone(cf, &mcf->status, &zone_name,
                                     &ngx_chash_module);
}


/* value compiled into cv, a complex value of the protocol. */
static ngx_int_t
ngx_chash_module_compile(ngx_conf_t *cf, ngx_str_t *value, ngx_chash_cv_t *cv)
{
    ngx_chash_ccv_t  ccv;

    ngx_memzero(&ccv, sizeof(ngx_chash_ccv_t));
    ccv.cf = cf;
    ccv.value = value;
    ccv.complex_value = cv;

    return ngx_chash_compile_complex_value(&ccv);
}


/*
 * A parameter compiled only when set (given, or holding a variable): *cv is
 * then value's complex value, allocated; otherwise *cv is left as it is.
 */
static ngx_int_t
ngx_chash_module_cv(ngx_conf_t *cf, ngx_uint_t set, ngx_str_t *value,
    ngx_chash_cv_t **cv)
{
    if (!set) {
        return NGX_OK;
    }

    *cv = ngx_palloc(cf->pool, sizeof(ngx_chash_cv_t));
    if (*cv == NULL) {
        return NGX_ERROR;
    }

    return ngx_chash_module_compile(cf, value, *cv);
}


/*
 * chash KEY [flavor=nginx|pingora-v1|pingora-v2|resty|haproxy|ketama-md5|
 *     varnish-shard|envoy-ring|envoy-maglev] [multiple=K]
 *     [id=address|apisix] [bounded_load=F] [subset=VALUE] [the other
 *     programs' options: ngx_chash_parse_directive]
 */
static char *
ngx_chash_module_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_chash_srv_conf_t  *ccf = conf;

    ngx_str_t                *value;
    ngx_chash_directive_t     d;
    ngx_chash_up_srv_conf_t  *uscf;

    if (ccf->flavor != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_chash_module_compile(cf, &value[1], &ccf->key) != NGX_OK) {
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
    ccf->options = d.options;

    if (ngx_chash_module_cv(cf, d.has_subset, &d.subset, &ccf->subset)
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    uscf = ngx_chash_conf_upstream(cf);

    if (uscf->peer.init_upstream) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "load balancing method redefined");
    }

    uscf->flags = NGX_CHASH_UPSTREAM_FLAGS;
    uscf->peer.init_upstream = ngx_chash_module_init;

    return NGX_CONF_OK;
}


/* What chash_snapshot or chash_migrate reads past the common parameters. */
typedef char *(*ngx_chash_source_rest_pt)(ngx_conf_t *cf,
    ngx_chash_srv_conf_t *ccf, ngx_str_t *rest, ngx_uint_t nrest);


/*
 * chash_snapshot or chash_migrate: *srcp its file (a second one in an
 * upstream is a duplicate), its common parameters parsed; read_rest reads
 * the others (the directive's own).
 */
static char *
ngx_chash_module_source(ngx_conf_t *cf, ngx_chash_srv_conf_t *ccf,
    ngx_chash_source_t **srcp, ngx_chash_source_rest_pt read_rest)
{
    ngx_str_t           *value, *rest;
    ngx_uint_t           nrest;
    ngx_chash_source_t  *src;

    if (*srcp) {
        return "is duplicate";
    }

    value = cf->args->elts;

    rest = ngx_palloc(cf->pool, cf->args->nelts * sizeof(ngx_str_t));
    src = ngx_pcalloc(cf->pool, sizeof(ngx_chash_source_t));
    if (rest == NULL || src == NULL) {
        return NGX_CONF_ERROR;
    }

    src->directive = value[0];

    if (ngx_chash_source_parse(cf, src, value, cf->args->nelts, rest, &nrest)
        != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    *srcp = src;

    return read_rest(cf, ccf, rest, nrest);
}


/* chash_snapshot's own parameters: the peers' (max_fails=, ...) */
static char *
ngx_chash_module_snapshot_rest(ngx_conf_t *cf, ngx_chash_srv_conf_t *ccf,
    ngx_str_t *rest, ngx_uint_t nrest)
{
    ngx_chash_up_srv_conf_t  *uscf;

    /* nginx refuses an upstream block without servers: a placeholder that
     * only init_snapshot sees (and that tells it from `server` lines) */
    uscf = ngx_chash_conf_upstream(cf);
    ccf->placeholder = ngx_array_push(uscf->servers);
    if (ccf->placeholder == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(ccf->placeholder, sizeof(ngx_chash_up_server_t));
    ngx_str_set(&ccf->placeholder->name, "chash_snapshot");

    return ngx_chash_parse_peer_params(cf, rest, nrest, &ccf->pp);
}


/*
 * chash_snapshot FILE [trusted_key=PUB]... [min_version=N] [poll=T|off]
 *     [thread_pool=NAME] [threads=N] [max_size=SIZE] [copy|map] [state=off]
 *     [max_fails=N] [fail_timeout=T] [max_conns=N]
 */
static char *
ngx_chash_module_snapshot(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_chash_srv_conf_t  *ccf = conf;

    return ngx_chash_module_source(cf, ccf, &ccf->snap,
                                   ngx_chash_module_snapshot_rest);
}


/* chash_migrate's own parameters: rollout=, scope=, seed=, allow_mismatch */
static char *
ngx_chash_module_migrate_rest(ngx_conf_t *cf, ngx_chash_srv_conf_t *ccf,
    ngx_str_t *rest, ngx_uint_t nrest)
{
    ngx_chash_migrate_params_t  mp;

    ngx_memzero(&mp, sizeof(ngx_chash_migrate_params_t));

    if (ngx_chash_parse_migrate_params(cf, ccf->next, rest, nrest, &mp)
        != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    ccf->rollout_text = mp.rollout;
    ccf->rollout_ppm = mp.rollout_ppm;

    if (ngx_chash_module_cv(cf, mp.rollout_is_var, &mp.rollout, &ccf->rollout)
        != NGX_OK
        || ngx_chash_module_cv(cf, mp.has_scope, &mp.scope, &ccf->scope)
           != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * chash_migrate FILE rollout=VALUE [scope=VALUE] [seed=N] [allow_mismatch]
 *     [trusted_key=PUB]... [min_version=N] [poll=T|off] [thread_pool=NAME]
 *     [threads=N] [max_size=SIZE] [copy|map] [state=off]
 */
static char *
ngx_chash_module_migrate(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_chash_srv_conf_t  *ccf = conf;

    return ngx_chash_module_source(cf, ccf, &ccf->next,
                                   ngx_chash_module_migrate_rest);
}
