/*
 * The source of an upstream's ring (chash_snapshot, chash_migrate): its
 * reloader, libchash's one reload policy (chash_reloader: identities,
 * remembered refusals, versions that only go up and persist in the state
 * directory's last good file, one copy of the columns a host), made by the
 * master at configuration time and inherited by every worker; and the hot
 * swap: the poll timer posts a step to a thread of the pool, which does
 * everything that touches the file system (the reloader's check, the
 * generation's build with the embedder's checks, accept or refuse), and the
 * event loop only swaps the pointers, logs and counts.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include "ngx_chash_core.h"


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


/* A libchash message without the "check: " it starts with. */
static const char *
ngx_chash_message(uint32_t check, const char *message)
{
    size_t       n;
    const char  *name;

    name = chash_check_name(check);
    n = ngx_strlen(name);

    if (ngx_strncmp(message, name, n) == 0 && message[n] == ':'
        && message[n + 1] == ' ')
    {
        return message + n + 2;
    }

    return message;
}


static void
ngx_chash_step_message(ngx_chash_step_t *step, uint32_t check,
    const char *message)
{
    step->check = check;
    ngx_cpystrn(step->message, (u_char *) ngx_chash_message(check, message),
                sizeof(step->message));
}


static void
ngx_chash_step_refused(ngx_chash_source_t *src, uint32_t check,
    const char *message)
{
    src->step.refused = 1;
    ngx_chash_step_message(&src->step, check, message);
}


/*
 * What src offers now (off the event loop): a new generation in *cand, or
 * nothing. adopt: the newest ring the host verified instead of the path (a
 * worker's start). A parked candidate is offered again while the path
 * still names its file.
 */
static void
ngx_chash_step_look(ngx_chash_source_t *src, ngx_uint_t adopt,
    ngx_chash_gen_t **cand)
{
    int                   rc;
    u_char                err[NGX_CHASH_ERR_LEN];
    uint32_t              check;
    struct stat           st;
    ngx_chash_gen_t      *gen;
    ngx_chash_step_t     *step;
    ngx_chash_file_id_t   id;

    *cand = NULL;
    step = &src->step;
    ngx_memzero(&id, sizeof(ngx_chash_file_id_t));

    if (!adopt && stat((char *) src->path.data, &st) == 0) {
        ngx_chash_file_id(&st, &id);
    }

    if (step->parked) {
        if (!adopt && ngx_chash_file_id_eq(&id, &step->parked_id)) {
            *cand = step->parked;
            return;
        }

        /* the path changed: the reloader's next candidate supersedes it */
        ngx_chash_gen_free(step->parked);
        step->parked = NULL;
    }

    ngx_memzero(&step->result, sizeof(chash_reload_result));
    step->result.size = sizeof(chash_reload_result);

    rc = adopt ? chash_reloader_adopt_shared(src->reloader, &step->result)
               : chash_reloader_check(src->reloader, &step->result);

    if (rc != CHASH_OK) {
        check = chash_last_check();
        ngx_chash_step_refused(src, check != CHASH_CHECK_NONE
                                    ? check : CHASH_CHECK_EMBEDDER,
                               chash_last_error());
        return;
    }

    if (step->result.outcome == CHASH_RELOAD_REFUSED) {
        ngx_chash_step_refused(src, step->result.check, step->result.message);
        return;
    }

    if (step->result.outcome != CHASH_RELOAD_NEW) {
        return;
    }

    if (ngx_chash_gen_make(src, step->result.snapshot, &gen, &check, err,
                           sizeof(err))
        != NGX_OK)
    {
        (void) chash_reloader_refuse(src->reloader, &step->result, check,
                                     (char *) err);
        ngx_chash_step_refused(src, check, (char *) err);
        return;
    }

    gen->adopted = step->result.adopted;
    step->result_id = id;
    *cand = gen;
}


/* The reloader serves cand from now on; the event loop will. NGX_ERROR:
 * cand was not the reloader's candidate (freed, refused). */
static ngx_int_t
ngx_chash_step_accept(ngx_chash_source_t *src, ngx_chash_gen_t *cand)
{
    int                   rc;
    ngx_chash_step_t     *step;
    chash_reload_result  *r;

    step = &src->step;
    r = cand == step->parked ? &step->parked_result : &step->result;

    if (cand == step->parked) {
        step->parked = NULL;
    }

    /* CHASH_E_IO: the state could not be written; the ring is served
     * all the same (the reloader's report says so) */
    rc = chash_reloader_accept(src->reloader, r);

    if (rc != CHASH_OK && rc != CHASH_E_IO) {
        ngx_chash_step_refused(src, CHASH_CHECK_EMBEDDER, chash_last_error());
        ngx_chash_gen_free(cand);
        return NGX_ERROR;
    }

    step->gen = cand;

    return NGX_OK;
}


/* A migration's candidate waits for a partner of the same backends. */
static void
ngx_chash_step_park(ngx_chash_source_t *src, ngx_chash_gen_t *cand,
    u_char *why)
{
    u_char            *p;
    ngx_chash_step_t  *step;

    step = &src->step;

    if (cand == step->parked) {
        return;                 /* still waiting: said when it was parked */
    }

    step->parked = cand;
    step->parked_result = step->result;
    step->parked_id = step->result_id;
    step->waiting = 1;
    step->check = CHASH_CHECK_BACKEND_MISMATCH;

    p = ngx_snprintf(step->message, sizeof(step->message) - 1, "%s; waiting "
                     "for \"%V\" to hold a ring of the same backends, then "
                     "both are served together", why, &src->partner->path);
    *p = '\0';
}


static void
ngx_chash_step_report(ngx_chash_source_t *src)
{
    chash_reload_report  report;

    ngx_memzero(&report, sizeof(chash_reload_report));
    report.size = sizeof(chash_reload_report);

    if (chash_reloader_report(src->reloader, &report) == CHASH_OK) {
        src->step.highest = report.highest_version;
        src->step.state_error = report.state_error;
        src->step.serving_last_good = report.serving_last_good;
    }
}


/*
 * One step of a source and, with a migration, of its partner: off the event
 * loop (a thread of the pool, or init_process), the sources busy. A new
 * file of one side is served if its backends match the other side's ring;
 * else the other side's path is looked at in the same step, and a matching
 * pair is served as one unit; a candidate left without a match is parked
 * (neither served nor refused by the reloader) until the other file comes,
 * so either order of publication lands both files.
 */
static void
ngx_chash_step(ngx_chash_source_t *src, ngx_uint_t adopt)
{
    u_char               why[NGX_CHASH_ERR_LEN];
    ngx_chash_gen_t     *ca, *cb, *co, *cn, *old;
    ngx_chash_source_t  *o, *n;

    ngx_chash_step_look(src, adopt, &ca);

    if (src->partner == NULL) {
        if (ca) {
            (void) ngx_chash_step_accept(src, ca);
        }

        ngx_chash_step_report(src);
        return;
    }

    cb = NULL;

    if (ca || adopt) {
        ngx_chash_step_look(src->partner, adopt, &cb);
    }

    if (src->side == 0) {
        o = src;
        n = src->partner;
        co = ca;
        cn = cb;

    } else {
        o = src->partner;
        n = src;
        co = cb;
        cn = ca;
    }

    if (co && cn && ngx_chash_gen_match(o, co, cn, why, sizeof(why)) == NGX_OK)
    {
        if (ngx_chash_step_accept(o, co) == NGX_OK) {
            (void) ngx_chash_step_accept(n, cn);

        } else {
            ngx_cpystrn(why, (u_char *) "the old file was not served",
                        sizeof(why));
            ngx_chash_step_park(n, cn, why);
        }

        goto done;
    }

    /* the old side's ring once this step is applied */
    old = o->current;

    if (co) {
        if (ngx_chash_gen_match(o, co, n->current, why, sizeof(why))
            == NGX_OK)
        {
            if (ngx_chash_step_accept(o, co) == NGX_OK) {
                old = co;
            }

        } else {
            ngx_chash_step_park(o, co, why);
        }
    }

    if (cn) {
        if (ngx_chash_gen_match(o, old, cn, why, sizeof(why)) == NGX_OK)
        {
            (void) ngx_chash_step_accept(n, cn);

        } else {
            ngx_chash_step_park(n, cn, why);
        }
    }

done:

    ngx_chash_step_report(o);
    ngx_chash_step_report(n);
}


/* On the event loop: what a step found for src. */
static void
ngx_chash_step_apply(ngx_chash_source_t *src, ngx_log_t *log)
{
    ngx_chash_gen_t   *gen;
    ngx_chash_step_t  *step;

    step = &src->step;

    ngx_chash_status_report(src, step->highest, step->state_error);

    if (src->current->info.expires_unix_seconds != 0
        && ngx_time() >= (time_t) src->current->info.expires_unix_seconds)
    {
        if (!src->expired_said) {
            ngx_log_error(NGX_LOG_WARN, log, 0,
                          "%V \"%V\" in upstream \"%V\": config version %uL "
                          "expired at %L (Unix time): still served until a "
                          "newer file passes", &src->directive, &src->path,
                          src->upstream, src->current->info.config_version,
                          src->current->info.expires_unix_seconds);
            src->expired_said = 1;
        }

    } else {
        src->expired_said = 0;
    }

    if (step->refused || step->waiting) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "%V \"%V\" in upstream \"%V\": refused, check %s: %s; "
                      "still serving config version %uL",
                      &src->directive, &src->path, src->upstream,
                      chash_check_name(step->check), step->message,
                      src->current->info.config_version);

        ngx_chash_status_refused(src, step->check, step->message);
        step->refused = 0;
        step->waiting = 0;
    }

    gen = step->gen;

    if (gen == NULL) {
        ngx_chash_status_generations(src);
        return;
    }

    step->gen = NULL;

    if (ngx_exiting || ngx_quit || ngx_terminate) {
        ngx_chash_gen_free(gen);
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "%V \"%V\" in upstream \"%V\": serving config version %uL "
                  "(ring %V), was %uL%s", &src->directive, &src->path,
                  src->upstream, gen->info.config_version, &gen->ring_id,
                  src->current->info.config_version,
                  gen->adopted ? " (verified by another process of the host)"
                               : "");

    ngx_chash_gen_serve(src, gen);
    ngx_chash_status_served(src, 1);
    ngx_chash_status_generations(src);
}


#if (NGX_THREADS)

/* On a thread of the pool: everything that touches the file system. */
static void
ngx_chash_step_thread(void *data, ngx_log_t *log)
{
    ngx_chash_step(*(ngx_chash_source_t **) data, 0);
}


/* Back on the event loop: swaps, logs, counts. */
static void
ngx_chash_step_done(ngx_event_t *ev)
{
    ngx_thread_task_t   *task = ev->data;
    ngx_chash_source_t  *src = *(ngx_chash_source_t **) task->ctx;

    src->busy = 0;
    ngx_chash_status_loading(src, 0);
    ngx_chash_step_apply(src, ev->log);

    if (src->partner) {
        src->partner->busy = 0;
        ngx_chash_step_apply(src->partner, ev->log);
    }
}

#endif


static void
ngx_chash_poll_arm(ngx_chash_source_t *src)
{
    ngx_msec_t  jitter;

    /* up to a tenth of the interval (at most 1 s) of jitter: workers do not
     * look in lockstep (the first one verifies, the others adopt) */
    jitter = ngx_min(src->poll / 10, 1000);
    jitter = jitter ? (ngx_msec_t) ngx_random() % jitter : 0;
    ngx_add_timer(&src->poll_event, src->poll + jitter);
}


/* The poll timer: posts a step, nothing else (no stat on the loop). */
static void
ngx_chash_poll(ngx_event_t *ev)
{
    ngx_chash_source_t  *src = ev->data;
#if (NGX_THREADS)
    ngx_thread_pool_t   *tp;
    ngx_thread_task_t   *task;
#endif

    if (ngx_exiting || ngx_quit || ngx_terminate) {
        return;
    }

    if (src->busy) {
        goto next;
    }

    /* requests or sessions still hold the last NGX_CHASH_MAX_RETIRED rings:
     * a push loop must not make a worker hold more (the status shows them) */
    if (src->nretired >= NGX_CHASH_MAX_RETIRED
        || (src->partner && src->partner->nretired >= NGX_CHASH_MAX_RETIRED))
    {
        if (!src->step.waiting_retired) {
            ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                          "%V \"%V\" in upstream \"%V\": %ui retired "
                          "generations still in use: no new file is looked "
                          "at until requests release one", &src->directive,
                          &src->path, src->upstream, src->nretired);
            src->step.waiting_retired = 1;
        }

        goto next;
    }

    src->step.waiting_retired = 0;

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
                                     sizeof(ngx_chash_source_t *));
        if (task == NULL) {
            goto next;
        }

        *(ngx_chash_source_t **) task->ctx = src;
        task->handler = ngx_chash_step_thread;
        task->event.handler = ngx_chash_step_done;
        task->event.data = task;
        task->event.log = ngx_cycle->log;
        src->task = task;
    }

    if (ngx_thread_task_post(tp, task) != NGX_OK) {
        goto next;
    }

    src->busy = 1;

    if (src->partner) {
        src->partner->busy = 1;
    }

    ngx_chash_status_loading(src, ngx_time());

#endif

next:

    ngx_chash_poll_arm(src);
}


static void
ngx_chash_source_cycle_cleanup(void *data)
{
    ngx_chash_source_t  *src = data;

    ngx_chash_gen_free(src->step.parked);
    ngx_chash_gen_free(src->step.gen);
    src->step.parked = NULL;
    src->step.gen = NULL;

    ngx_chash_gen_unref(src->current);
    src->current = NULL;

    chash_reloader_free(src->reloader);
    src->reloader = NULL;
}


/* The state directory exists before nginx creates its paths: the reloader
 * reads it at configuration time. Made here by the master, as root, in a
 * parent only root may write (the default's, /var/lib/nginx); the master's
 * ngx_create_paths then gives it to the worker user, and from then on only
 * the workers write in it (libchash writes only in a directory its process
 * owns). A configuration test makes nothing: a state directory not made
 * yet is nothing to read. */
static ngx_int_t
ngx_chash_state_dir(ngx_conf_t *cf, const ngx_chash_upstream_t *up,
    ngx_chash_source_t *src)
{
    if (src->state_dir.len == 0 || ngx_test_config
        || ngx_process == NGX_PROCESS_SIGNALLER
        || ngx_create_dir(src->state_dir.data, 0700) != NGX_FILE_ERROR
        || ngx_errno == NGX_EEXIST)
    {
        return NGX_OK;
    }

    ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up, "chash_state_path "
                             "\"%V\": " ngx_create_dir_n " failed (%d: %s)",
                             &src->state_dir, ngx_errno, strerror(ngx_errno));
    return NGX_ERROR;
}


/* The configuration error of the library call that just failed on this
 * thread, named by its check (io when it names none). */
static void
ngx_chash_last_failure(ngx_conf_t *cf, const ngx_chash_upstream_t *up,
    ngx_chash_source_t *src)
{
    uint32_t  check;

    check = chash_last_check();
    check = check != CHASH_CHECK_NONE ? check : CHASH_CHECK_IO;
    ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up,
                             "%V \"%V\": check %s failed: %s",
                             &src->directive, &src->path,
                             chash_check_name(check),
                             ngx_chash_message(check, chash_last_error()));
}


/* The first generation of a deferred reloader: the path's file, or when
 * that is refused (by the library or by ngx_chash_gen_make) the last good
 * one. Accepted only once every check of this module passed. */
static ngx_int_t
ngx_chash_first_gen(ngx_conf_t *cf, const ngx_chash_upstream_t *up,
    ngx_chash_source_t *src, ngx_chash_gen_t **out)
{
    int                  rc;
    u_char               err[NGX_CHASH_ERR_LEN];
    uint32_t             check;
    ngx_uint_t           attempt;
    chash_reload_result  r;

    /* two candidates at most: the path's file, then the last good file */
    for (attempt = 0; attempt < 2; attempt++) {
        ngx_memzero(&r, sizeof(chash_reload_result));
        r.size = sizeof(chash_reload_result);

        rc = chash_reloader_check(src->reloader, &r);

        if (rc != CHASH_OK) {
            ngx_chash_last_failure(cf, up, src);
            return NGX_ERROR;
        }

        if (r.outcome == CHASH_RELOAD_REFUSED) {
            ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up,
                                     "%V \"%V\": check %s failed: %s",
                                     &src->directive, &src->path,
                                     chash_check_name(r.check),
                                     ngx_chash_message(r.check, r.message));
            return NGX_ERROR;
        }

        if (r.outcome != CHASH_RELOAD_NEW) {
            ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up,
                                     "%V \"%V\": no ring to serve (outcome "
                                     "%uD)", &src->directive, &src->path,
                                     r.outcome);
            return NGX_ERROR;
        }

        /* takes r.snapshot over, freed on failure */
        if (ngx_chash_gen_make(src, r.snapshot, out, &check, err,
                               sizeof(err))
            == NGX_OK)
        {
            /* CHASH_E_IO: served all the same, the state write is retried
             * at the next check and the report says so */
            rc = chash_reloader_accept(src->reloader, &r);

            if (rc == CHASH_OK || rc == CHASH_E_IO) {
                return NGX_OK;
            }

            ngx_chash_gen_free(*out);
            *out = NULL;
            ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up, "%V \"%V\": %s",
                                     &src->directive, &src->path,
                                     chash_last_error());
            return NGX_ERROR;
        }

        (void) chash_reloader_refuse(src->reloader, &r, check, (char *) err);

        if (attempt > 0 || src->state_dir.len == 0) {
            ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up,
                                     "%V \"%V\": check %s failed: %s",
                                     &src->directive, &src->path,
                                     chash_check_name(check), err);
            break;
        }

        ngx_chash_upstream_error(cf, NGX_LOG_WARN, up,
                                 "%V \"%V\": check %s failed: %s; trying "
                                 "the last good file", &src->directive,
                                 &src->path, chash_check_name(check), err);
    }

    return NGX_ERROR;
}


ngx_int_t
ngx_chash_source_init_conf(ngx_conf_t *cf, const ngx_chash_upstream_t *up,
    ngx_chash_source_t *src)
{
    ngx_chash_gen_t         *gen;
    ngx_pool_cleanup_t      *cln;
    chash_reload_report      report;
    chash_snapshot_options   load;
    chash_reloader_options   ro;

    ngx_queue_init(&src->retired);

    cln = ngx_pool_cleanup_add(cf->cycle->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    if (ngx_chash_state_dir(cf, up, src) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_memzero(&load, sizeof(chash_snapshot_options));
    load.size = sizeof(chash_snapshot_options);
    load.mode = src->mode;
    load.threads = src->threads;
    load.min_config_version = src->min_version;
    load.max_file_bytes = src->max_size;
    load.trusted_keys = src->trusted_keys;
    load.n_trusted_keys = src->n_trusted_keys;

    ngx_memzero(&ro, sizeof(chash_reloader_options));
    ro.size = sizeof(chash_reloader_options);
    ro.load = &load;

    if (src->state_dir.len) {
        ro.state_dir = (char *) src->state_dir.data;
        ro.name = (char *) src->state_name;
    }

    /* nginx -t and nginx -s parse the configuration too: they read the
     * state, never write it */
    if (ngx_test_config || ngx_process == NGX_PROCESS_SIGNALLER) {
        ro.flags |= CHASH_RELOAD_NO_WRITE;
    }

    /* Deferred: the first file is this module's candidate before anything
     * persists, so a file nginx refuses (another flavor, an address it
     * cannot use) never becomes the last good file (the version floor) */
    ro.flags |= CHASH_RELOAD_DEFER;

    if (chash_reloader_new((char *) src->path.data, &ro, &src->reloader)
        != CHASH_OK)
    {
        ngx_chash_last_failure(cf, up, src);
        return NGX_ERROR;
    }

    cln->handler = ngx_chash_source_cycle_cleanup;
    cln->data = src;

    if (ngx_chash_first_gen(cf, up, src, &gen) != NGX_OK) {
        return NGX_ERROR;
    }

    src->current = gen;

    ngx_memzero(&report, sizeof(chash_reload_report));
    report.size = sizeof(chash_reload_report);

    if (chash_reloader_report(src->reloader, &report) != CHASH_OK) {
        report.serving_last_good = 0;
        report.serving_expired = 0;
        report.state_file[0] = '\0';
    }

    src->state_file.len = ngx_strlen(report.state_file);
    src->state_file.data = ngx_pnalloc(cf->pool, src->state_file.len + 1);
    if (src->state_file.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(src->state_file.data, report.state_file,
               src->state_file.len + 1);

    if (report.serving_expired) {
        ngx_chash_upstream_error(cf, NGX_LOG_WARN, up,
                                 "%V \"%V\": config version %uL expired at "
                                 "%L (Unix time) and no newer file passes: "
                                 "served all the same", &src->directive,
                                 &src->path, gen->info.config_version,
                                 gen->info.expires_unix_seconds);
    }

    if (report.serving_last_good) {
        ngx_chash_upstream_error(cf, NGX_LOG_WARN, up,
                                 "%V \"%V\": refused, check %s: %s; serving "
                                 "the last good file of \"%s\" in \"%V\", "
                                 "config version %uL", &src->directive,
                                 &src->path,
                                 chash_check_name(report.last_check),
                                 ngx_chash_message(report.last_check,
                                                   report.last_message),
                                 src->state_name,
                                 &src->state_dir, gen->info.config_version);
    }

    ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0,
                       "%V \"%V\" in upstream \"%V\": flavor=%s, config "
                       "version %uL, %uD nodes, %uL points, %uD subsets, "
                       "ring %V, %s%s, %s%s", &src->directive, &src->path,
                       src->upstream, ngx_chash_flavor_name(gen->info.flavor),
                       gen->info.config_version, gen->info.nodes,
                       gen->info.points, gen->info.subsets, &gen->ring_id,
                       gen->info.is_signed ? "signed by key " : "unsigned",
                       gen->key_id,
                       gen->info.mode == CHASH_LOAD_SEALED ? "sealed"
                       : gen->info.mode == CHASH_LOAD_COPY ? "copied"
                       : "mapped",
                       src->state_dir.len ? "" : ", no state");

    return NGX_OK;
}


ngx_int_t
ngx_chash_source_init_worker(ngx_cycle_t *cycle, ngx_chash_source_t *src)
{
    ngx_uint_t           i;
    ngx_chash_source_t  *s;

    if (src->current == NULL) {
        return NGX_OK;
    }

    /* a worker the master (re)spawns serves the host's newest verified
     * ring before its first request: an adoption, O(nodes) */
    ngx_chash_step(src, 1);
    ngx_chash_step_apply(src, cycle->log);

    if (src->partner) {
        ngx_chash_step_apply(src->partner, cycle->log);
    }

    /* then the upstream's slot is this worker's, written whole: a reader
     * never sees the new pid with a version it did not serve */
    ngx_chash_status_takeover(src);

    for (i = 0; i < 2; i++) {
        s = i ? src->partner : src;

        if (s == NULL || s->poll == 0) {
            continue;
        }

        s->poll_event.handler = ngx_chash_poll;
        s->poll_event.data = s;
        s->poll_event.log = cycle->log;
        s->poll_event.cancelable = 1;

        ngx_chash_poll_arm(s);
    }

    return NGX_OK;
}


ngx_int_t
ngx_chash_source_name(ngx_chash_source_t *src, const char *proto)
{
    u_char      *p, *last, c;
    uint32_t     crc;
    ngx_uint_t   i, changed;

    last = src->state_name + sizeof(src->state_name) - 1;

    p = ngx_slprintf(src->state_name, last, "%s.%V.%s", proto,
                     src->upstream, src->side ? "migrate" : "snapshot");
    changed = p == last;

    for (i = 0; src->state_name + i < p; i++) {
        c = src->state_name[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
        {
            src->state_name[i] = '_';
            changed = 1;
        }
    }

    /* a name that had to change keeps apart from the one it became */
    if (changed) {
        crc = ngx_crc32_short(src->upstream->data, src->upstream->len);
        p = ngx_min(p, last - 9);
        p = ngx_sprintf(p, "-%08xD", crc);
    }

    *p = '\0';

    return NGX_OK;
}
