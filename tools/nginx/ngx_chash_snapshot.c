/*
 * Snapshot rings: generations (a loaded file and the peers built from it,
 * held by the requests that route through it), the source of an
 * upstream's ring (loaded with every check at configuration time, then
 * in each worker), and the hot swap (the poll, the load on a thread of the
 * pool, the switch on the event loop).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include <time.h>

#include "ngx_chash_core.h"


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


/* The name of the check a failed libchash load named. */
static const char *
ngx_chash_failed_check(int rc)
{
    uint32_t  check;

    check = chash_last_check();

    return check != CHASH_CHECK_NONE ? chash_check_name(check)
                                     : chash_strerror(rc);
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
    opt.size = sizeof(chash_snapshot_options);
    opt.mode = src->copy ? CHASH_LOAD_COPY : CHASH_LOAD_MAP;
    opt.min_config_version = src->min_version;
    opt.trusted_keys = src->trusted_keys;
    opt.n_trusted_keys = src->n_trusted_keys;

    if (served && served->info.config_version > opt.min_config_version) {
        opt.min_config_version = served->info.config_version;
    }

    rc = chash_snapshot_load((char *) src->path.data, &opt, &gen->snapshot);
    if (rc != CHASH_OK) {
        *check = ngx_chash_failed_check(rc);
        ngx_snprintf(err, len, "%s%Z", chash_last_error());
        goto failed;
    }

    gen->info.size = sizeof(chash_snapshot_info);

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
                       src->current->info.mode == CHASH_LOAD_COPY ? "copied" : "mapped");

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
