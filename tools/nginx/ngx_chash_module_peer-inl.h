/*
 * The balancer of both modules, per request (HTTP) or session (stream): its
 * ring, the core's pick over the protocol's round robin peers, the $chash_*
 * variables. Not compiled alone: each module includes it after
 * ngx_chash_module.h, which explains how.
 */


static ngx_int_t ngx_chash_module_get(ngx_peer_connection_t *pc, void *data);


/* Peer list order: nginx's `tried` bitmap is indexed by it. */
static ngx_int_t
ngx_chash_module_map_peers(ngx_chash_srv_conf_t *ccf,
    ngx_chash_rr_peers_t *peers, ngx_log_t *log)
{
    ngx_uint_t            i;
    ngx_chash_rr_peer_t  *peer;

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
ngx_chash_module_get_nowhere(ngx_peer_connection_t *pc, void *data)
{
    ngx_chash_peer_data_t  *hp = data;

    pc->name = hp->rrp.peers->name;

    return NGX_BUSY;
}


/*
 * The ring of a request on a snapshot upstream (old or new of a
 * migration), which it keeps for all its tries, held until its pool goes.
 */
static ngx_int_t
ngx_chash_module_choose(ngx_chash_session_t *s, ngx_chash_up_srv_conf_t *us,
    ngx_chash_srv_conf_t *ccf, ngx_chash_peer_data_t *hp, ngx_uint_t *side)
{
    ngx_int_t         ppm;
    ngx_str_t         v, ro;
    ngx_chash_gen_t  *gen;

    ppm = ccf->rollout_ppm;
    ngx_str_set(&v, "in");

    if (ccf->next && ccf->rollout) {
        if (ngx_chash_complex_value(s, ccf->rollout, &ro) != NGX_OK) {
            return NGX_ERROR;
        }

        ppm = ngx_chash_rollout_value(&ro, &us->host, s->connection->log);
    }

    if (ccf->next && ccf->scope
        && ngx_chash_complex_value(s, ccf->scope, &v) != NGX_OK)
    {
        return NGX_ERROR;
    }

    gen = ngx_chash_policy_choose(ccf->snap, ccf->next, &hp->key, ppm, &v,
                                  side);

    if (ccf->next) {
        if (*side) {
            ngx_str_set(&hp->choice, "new");

        } else {
            ngx_str_set(&hp->choice, "old");
        }
    }

    if (ngx_chash_gen_hold(gen, ngx_chash_session_pool(s)) != NGX_OK) {
        return NGX_ERROR;
    }

    hp->gen = gen;
    hp->flavor = gen->info.flavor;
    hp->peer = ((ngx_chash_gen_peers_t *) gen->peers)->peer;
    hp->nodes = &gen->nodes;
    hp->ring_id = &gen->ring_id;

    return NGX_OK;
}


/*
 * A request's start: its key, its ring and peers (the upstream's, or a
 * snapshot's generation and subset), nginx's round robin data over those
 * peers, and the walk of the key.
 */
static ngx_int_t
ngx_chash_module_init_peer(ngx_chash_session_t *s,
    ngx_chash_up_srv_conf_t *us)
{
    ngx_uint_t               side;
    const chash_ring        *ring;
    ngx_chash_subset_t      *sub;
    ngx_chash_srv_conf_t    *ccf;
    ngx_chash_peer_data_t   *hp;
    ngx_chash_up_srv_conf_t  fus;

    hp = ngx_palloc(ngx_chash_session_pool(s), sizeof(ngx_chash_peer_data_t));
    if (hp == NULL) {
        return NGX_ERROR;
    }

    s->upstream->peer.data = &hp->rrp;

    ccf = ngx_chash_srv_conf(us);

    if (ngx_chash_complex_value(s, &ccf->key, &hp->key) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_log_debug1(NGX_CHASH_LOG_DEBUG, s->connection->log, 0,
                   "upstream chash key:\"%V\"", &hp->key);

    hp->conf = ccf;
    side = 0;
    ngx_str_null(&hp->choice);
    ngx_str_null(&hp->subset);

    /* for the $chash_* variables, which other modules' data may hide */
    ngx_chash_set_ctx(s, hp);

    if (ccf->snap) {
        if (ngx_chash_module_choose(s, us, ccf, hp, &side) != NGX_OK) {
            return NGX_ERROR;
        }

        ring = hp->gen->ring;

        /* the generation's own peer list in place of the upstream's */
        fus = *us;
        fus.peer.data = ((ngx_chash_gen_peers_t *) hp->gen->peers)->peers;
        us = &fus;

    } else {
        hp->gen = NULL;
        hp->flavor = ccf->flavor;
        hp->peer = ccf->peer;
        hp->nodes = &ccf->nodes;
        hp->ring_id = &ccf->ring_id;
        ring = ccf->ring;
    }

    if (ngx_chash_rr_init_peer(s, us) != NGX_OK) {
        return NGX_ERROR;
    }

    s->upstream->peer.get = ngx_chash_module_get;

    sub = NULL;

    if (ccf->snap) {
        if (ccf->subset
            && ngx_chash_complex_value(s, ccf->subset, &hp->subset) != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (ngx_chash_policy_subset(ccf->snap, hp->gen, side, &hp->subset,
                                    &sub, s->connection->log)
            != NGX_OK)
        {
            s->upstream->peer.get = ngx_chash_module_get_nowhere;
            s->upstream->peer.tries = 1;
            return NGX_OK;
        }

        if (sub) {
            /* the peers outside the subset count as tried: nginx's round
             * robin after 20 tries stays inside it */
            ngx_memcpy(hp->rrp.tried, sub->outside,
                       ngx_chash_tried_words(hp->nodes->npeers)
                       * sizeof(uintptr_t));
            s->upstream->peer.tries = ngx_max(sub->live, 1);
        }
    }

    if (ngx_chash_walk_init_masked(&hp->walk, hp->flavor, ring,
                                   sub ? sub->mask : NULL, &hp->key,
                                   ngx_chash_session_pool(s))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    hp->walk.bounded_load = ccf->bounded_load;

    return NGX_OK;
}


/* Neither down nor failed: max_fails within fail_timeout. */
static ngx_uint_t
ngx_chash_module_live(void *data, ngx_uint_t i, time_t now)
{
    ngx_chash_peer_data_t  *hp = data;

    ngx_chash_rr_peer_t  *peer;

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

    return 1;
}


/* nginx's candidate test: not tried, live, not at max_conns. */
static ngx_uint_t
ngx_chash_module_usable(void *data, ngx_uint_t i, time_t now)
{
    ngx_chash_peer_data_t  *hp = data;

    ngx_chash_rr_peer_t  *peer;

    if (ngx_chash_tried(hp->rrp.tried, i)) {
        return 0;
    }

    if (!ngx_chash_module_live(data, i, now)) {
        return 0;
    }

    peer = hp->peer[i];

    if (peer->max_conns && peer->conns >= peer->max_conns) {
        return 0;
    }

    return 1;
}


static void
ngx_chash_module_weights(void *data, ngx_uint_t i, ngx_int_t **current,
    ngx_int_t **effective, ngx_int_t *weight)
{
    ngx_chash_peer_data_t  *hp = data;

    ngx_chash_rr_peer_t  *peer;

    peer = hp->peer[i];

    *current = &peer->current_weight;
    *effective = &peer->effective_weight;
    *weight = peer->weight;
}


static ngx_uint_t
ngx_chash_module_conns(void *data, ngx_uint_t i)
{
    ngx_chash_peer_data_t  *hp = data;

    return hp->peer[i]->conns;
}


static const ngx_chash_peer_ops_t  ngx_chash_module_peer_ops = {
    ngx_chash_module_usable,
    ngx_chash_module_weights,
    ngx_chash_module_conns,
    ngx_chash_module_live
};


/*
 * One try: the core's pick over this upstream's peers, then nginx's round
 * robin bookkeeping for the peer chosen, as `hash` does. nginx flavor: round
 * robin for a single peer, an empty key, or past 20 ring tries; pingora and
 * resty: NGX_BUSY when the walk has visited every node.
 */
static ngx_int_t
ngx_chash_module_get(ngx_peer_connection_t *pc, void *data)
{
    ngx_chash_peer_data_t  *hp = data;

    time_t                  now;
    ngx_int_t               i;
    ngx_uint_t              passed;
    ngx_chash_rr_peer_t    *peer;
    ngx_chash_rr_peers_t   *peers;
    ngx_chash_srv_conf_t   *ccf;

    ngx_log_debug1(NGX_CHASH_LOG_DEBUG, pc->log, 0,
                   "get chash peer, try: %ui", pc->tries);

    peers = hp->rrp.peers;
    ccf = hp->conf;

    ngx_chash_rr_peers_wlock(peers);

    if (hp->flavor == CHASH_FLAVOR_NGINX
        && (peers->single || hp->key.len == 0))
    {
        ngx_chash_rr_peers_unlock(peers);
        return ngx_chash_rr_get_peer(pc, &hp->rrp);
    }

    if (hp->gen == NULL && ccf->mapped != peers
        && ngx_chash_module_map_peers(ccf, peers, pc->log) != NGX_OK)
    {
        ngx_chash_rr_peers_unlock(peers);
        return NGX_ERROR;
    }

    /* not a connection of HTTP's keepalive cache (stream has none) */
    pc->cached = 0;
    pc->connection = NULL;

    now = ngx_time();
    passed = hp->walk.passed;

    i = ngx_chash_pick(&hp->walk, hp->nodes, &ngx_chash_module_peer_ops, hp,
                       now, pc->log);

    if (hp->gen) {
        /* nodes full at the bounded-load capacity: not failures */
        ngx_chash_status_passed(ccf->snap, hp->walk.passed - passed);
    }

    if (i == NGX_CHASH_FALLBACK) {
        ngx_chash_rr_peers_unlock(peers);
        return ngx_chash_rr_get_peer(pc, &hp->rrp);
    }

    if (i == NGX_CHASH_EXHAUSTED) {
        pc->name = peers->name;
        ngx_chash_rr_peers_unlock(peers);
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

    ngx_chash_rr_peers_unlock(peers);

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
 * the ring that routed this request (held by it until its pool goes). */
static ngx_int_t
ngx_chash_module_variable(ngx_chash_session_t *s,
    ngx_chash_variable_value_t *v, uintptr_t data)
{
    ngx_str_t              *str;
    ngx_chash_peer_data_t  *hp;

    hp = ngx_chash_get_ctx(s);

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
