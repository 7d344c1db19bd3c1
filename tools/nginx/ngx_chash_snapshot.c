/*
 * Snapshot generations: a snapshot a reloader accepted and the peers built
 * from it, held by the requests that route through it, retired when a
 * newer one is served and released (on a thread of the pool) when its last
 * request ends.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include <time.h>

#include "ngx_chash_core.h"


void
ngx_chash_gen_free(ngx_chash_gen_t *gen)
{
    ngx_uint_t  i;

    if (gen == NULL) {
        return;
    }

    if (gen->peers && gen->source && gen->source->free_peers) {
        gen->source->free_peers(gen);
    }

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

    if (gen->retired_at) {
        ngx_queue_remove(&gen->queue);
        gen->source->nretired--;
    }

#if (NGX_THREADS)

    /* the task is not in gen's pool: the pool goes before the task ends */
    /* only in a worker: elsewhere (nginx -t, the master, a cycle that
     * failed to load) there may be no thread pool to look up */
    if (gen->source->poll && ngx_process == NGX_PROCESS_WORKER
        && !ngx_exiting && !ngx_terminate && !ngx_quit)
    {
        tp = ngx_thread_pool_get((ngx_cycle_t *) ngx_cycle,
                                 &gen->source->thread_pool);
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


void
ngx_chash_gen_serve(ngx_chash_source_t *src, ngx_chash_gen_t *gen)
{
    ngx_chash_gen_t  *old;

    old = src->current;
    src->current = gen;

    if (old == NULL) {
        return;
    }

    /* requests that started on old keep it until their pools go */
    if (old->refs > 1) {
        old->retired_at = ngx_time();
        ngx_queue_insert_tail(&src->retired, &old->queue);
        src->nretired++;
    }

    ngx_chash_gen_unref(old);
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


/* The node map, addresses and weights of gen's ring: one node a peer. */
static ngx_int_t
ngx_chash_gen_nodes(ngx_chash_gen_t *gen, uint32_t *check, u_char *err,
    size_t len)
{
    size_t       alen;
    uint32_t     i, n;
    const char  *addr;

    n = chash_ring_num_nodes(gen->ring);

    if (n == 0) {
        *check = CHASH_CHECK_EMBEDDER;
        ngx_snprintf(err, len, "the snapshot has no nodes%Z");
        return NGX_DECLINED;
    }

    gen->addresses = ngx_palloc(gen->pool, n * sizeof(ngx_str_t));
    gen->weights = ngx_palloc(gen->pool, n * sizeof(ngx_uint_t));
    gen->nodes.node_first = ngx_palloc(gen->pool, (n + 1) * sizeof(ngx_uint_t));
    gen->nodes.node_peers = ngx_palloc(gen->pool, n * sizeof(ngx_uint_t));

    if (gen->addresses == NULL || gen->weights == NULL
        || gen->nodes.node_first == NULL || gen->nodes.node_peers == NULL)
    {
        *check = CHASH_CHECK_OUT_OF_MEMORY;
        ngx_snprintf(err, len, "no memory%Z");
        return NGX_DECLINED;
    }

    gen->nodes.nnodes = n;
    gen->nodes.npeers = n;

    for (i = 0; i < n; i++) {
        addr = chash_ring_node_address(gen->ring, i, &alen);

        if (addr == NULL || !ngx_chash_numeric((u_char *) addr, alen)) {
            *check = CHASH_CHECK_ADDRESS;
            ngx_snprintf(err, len, "node %uD \"%s\" is not a numeric address "
                         "(IPv4:port, [IPv6]:port or unix:path): resolve "
                         "names when building the snapshot%Z", i,
                         addr ? addr : "");
            return NGX_DECLINED;
        }

        /* the generation's own copy: a mapped file's node table may be
         * rewritten in place under it (map mode) */
        gen->addresses[i].data = ngx_pnalloc(gen->pool, alen + 1);
        if (gen->addresses[i].data == NULL) {
            *check = CHASH_CHECK_OUT_OF_MEMORY;
            ngx_snprintf(err, len, "no memory%Z");
            return NGX_DECLINED;
        }

        ngx_memcpy(gen->addresses[i].data, addr, alen);
        gen->addresses[i].data[alen] = '\0';
        gen->addresses[i].len = alen;
        gen->weights[i] = chash_ring_node_weight(gen->ring, i);
        gen->nodes.node_first[i] = i;
        gen->nodes.node_peers[i] = i;
    }

    gen->nodes.node_first[n] = n;

    return NGX_OK;
}


/* The snapshot's subsets: a mask each and the tried bitmap of the peers
 * outside it. */
static ngx_int_t
ngx_chash_gen_subsets(ngx_chash_gen_t *gen, uint32_t *check, u_char *err,
    size_t len)
{
    uint32_t             i, k, n;
    const char          *name;
    ngx_chash_subset_t  *sub;

    n = gen->nodes.nnodes;

    if (gen->info.subsets == 0) {
        return NGX_OK;
    }

    /* a subset is a mask: on a ring whose program rebuilds it without the
     * servers left out (weighted ketama, Envoy), a mask would answer what
     * no such program does */
    if (!chash_ring_masks_exactly(gen->ring)) {
        *check = CHASH_CHECK_SUBSETS;
        ngx_snprintf(err, len, "the snapshot has subsets, which a "
                     "flavor=%s ring cannot answer exactly (its program "
                     "rebuilds the ring without the other servers)%Z",
                     ngx_chash_flavor_name(gen->info.flavor));
        return NGX_DECLINED;
    }

    gen->subsets = ngx_pcalloc(gen->pool,
                               gen->info.subsets * sizeof(ngx_chash_subset_t));
    if (gen->subsets == NULL) {
        *check = CHASH_CHECK_OUT_OF_MEMORY;
        ngx_snprintf(err, len, "no memory%Z");
        return NGX_DECLINED;
    }

    for (k = 0; k < gen->info.subsets; k++) {
        sub = &gen->subsets[k];
        name = chash_snapshot_subset_name(gen->snapshot, k);

        if (name == NULL
            || chash_snapshot_subset(gen->snapshot, name, &sub->mask)
               != CHASH_OK)
        {
            *check = CHASH_CHECK_SUBSETS;
            ngx_snprintf(err, len, "subset %uD: %s%Z", k, chash_last_error());
            return NGX_DECLINED;
        }

        gen->nsubsets = k + 1;
        sub->name.data = (u_char *) name;
        sub->name.len = ngx_strlen(name);

        sub->outside = ngx_pcalloc(gen->pool, ngx_chash_tried_words(n)
                                              * sizeof(uintptr_t));
        if (sub->outside == NULL) {
            *check = CHASH_CHECK_OUT_OF_MEMORY;
            ngx_snprintf(err, len, "no memory%Z");
            return NGX_DECLINED;
        }

        for (i = 0; i < n; i++) {
            if (!chash_node_mask_get(sub->mask, i)) {
                ngx_chash_set_tried(sub->outside, i);

            } else if (gen->weights[i]) {
                sub->live++;
            }
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_chash_gen_make(ngx_chash_source_t *src, chash_snapshot *snapshot,
    ngx_chash_gen_t **out, uint32_t *check, u_char *err, size_t len)
{
    uint8_t           fp[CHASH_FINGERPRINT_SIZE];
    ngx_pool_t       *pool;
    ngx_chash_gen_t  *gen;

    *out = NULL;

    pool = ngx_create_pool(16384, ngx_cycle->log);
    gen = pool ? ngx_pcalloc(pool, sizeof(ngx_chash_gen_t)) : NULL;

    if (gen == NULL) {
        if (pool) {
            ngx_destroy_pool(pool);
        }

        chash_snapshot_free(snapshot);
        *check = CHASH_CHECK_OUT_OF_MEMORY;
        ngx_snprintf(err, len, "no memory%Z");
        return NGX_DECLINED;
    }

    gen->pool = pool;
    gen->refs = 1;
    gen->source = src;
    gen->snapshot = snapshot;
    gen->loaded_at = time(NULL);
    gen->info.size = sizeof(chash_snapshot_info);

    if (chash_snapshot_get_info(gen->snapshot, &gen->info) != CHASH_OK
        || chash_snapshot_ring(gen->snapshot, &gen->ring) != CHASH_OK
        || chash_ring_fingerprint(gen->ring, fp) != CHASH_OK
        || chash_fingerprint_hex(fp, (char *) gen->fingerprint) != CHASH_OK)
    {
        *check = CHASH_CHECK_EMBEDDER;
        ngx_snprintf(err, len, "%s%Z", chash_last_error());
        goto failed;
    }

    /* a flavor this build does not know (a newer writer's) */
    if (!ngx_chash_flavor_known(gen->info.flavor)) {
        *check = CHASH_CHECK_FLAVOR;
        ngx_snprintf(err, len, "the snapshot's flavor %uD is not one this "
                     "module knows%Z", gen->info.flavor);
        goto failed;
    }

    /* as on server lines (ngx_chash_parse_options): Envoy's own bounded
     * load probes hosts in an order libchash does not reproduce */
    if (src->bounded_load
        && ngx_chash_flavor_refuses_bounded_load(gen->info.flavor))
    {
        *check = CHASH_CHECK_FLAVOR;
        ngx_snprintf(err, len, "the snapshot is flavor=%s, which "
                     "bounded_load= is not for%Z",
                     ngx_chash_flavor_name(gen->info.flavor));
        goto failed;
    }

    if (src->flavor >= 0 && gen->info.flavor != (uint32_t) src->flavor) {
        *check = CHASH_CHECK_FLAVOR;
        ngx_snprintf(err, len, "the snapshot is flavor=%s, the chash "
                     "directive says flavor=%s%Z",
                     ngx_chash_flavor_name(gen->info.flavor),
                     ngx_chash_flavor_name(src->flavor));
        goto failed;
    }

    if (ngx_chash_gen_nodes(gen, check, err, len) != NGX_OK) {
        goto failed;
    }

    if (src->build_peers(src, gen, err, len) != NGX_OK) {
        *check = CHASH_CHECK_ADDRESS;
        goto failed;
    }

    if (ngx_chash_gen_subsets(gen, check, err, len) != NGX_OK) {
        goto failed;
    }

    gen->ring_id.data = gen->fingerprint;
    gen->ring_id.len = 16;

    gen->version.data = ngx_pnalloc(gen->pool, NGX_INT64_LEN);
    if (gen->version.data == NULL) {
        *check = CHASH_CHECK_OUT_OF_MEMORY;
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


ngx_int_t
ngx_chash_gen_match(ngx_chash_source_t *snap, ngx_chash_gen_t *old,
    ngx_chash_gen_t *new, u_char *err, size_t len)
{
    chash_migration  *m;

    if (snap->allow_mismatch || old == NULL || new == NULL) {
        return NGX_OK;
    }

    if (chash_migration_new(old->ring, new->ring, snap->seed, 0, &m)
        != CHASH_OK)
    {
        ngx_snprintf(err, len, "the old ring (config version %uL) and the "
                     "new one (config version %uL) do not come from one "
                     "backend snapshot (allow_mismatch permits it): %s%Z",
                     old->info.config_version, new->info.config_version,
                     chash_last_error());
        return NGX_DECLINED;
    }

    chash_migration_free(m);

    return NGX_OK;
}
