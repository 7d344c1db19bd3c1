/*
 * The status of snapshot upstreams: a shared zone, for each upstream a slot
 * a worker process (worker_processes of them). Each worker writes only its
 * own slot, so no lock is shared between processes (a killed worker leaves
 * nothing held); readers take a consistent copy by the slot's sequence
 * counter. The renderers are in ngx_chash_status_render.c.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_chash_core.h"


ngx_int_t
ngx_chash_status_register(ngx_conf_t *cf, ngx_chash_status_t *st,
    ngx_str_t *name, ngx_chash_source_t *snap, ngx_chash_source_t *next,
    ngx_str_t *rollout)
{
    ngx_chash_status_upstream_t  *u;

    if (st->upstreams.elts == NULL
        && ngx_array_init(&st->upstreams, cf->pool, 4,
                          sizeof(ngx_chash_status_upstream_t))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    u = ngx_array_push(&st->upstreams);
    if (u == NULL) {
        return NGX_ERROR;
    }

    u->name = name;
    u->snap = snap;
    u->next = next;
    u->rollout = *rollout;

    snap->status = st;
    snap->status_index = st->upstreams.nelts - 1;

    if (next) {
        next->status = st;
        next->status_index = snap->status_index;
    }

    return NGX_OK;
}


/* Counters survive a reload for each upstream whose name keeps its place. */
static ngx_int_t
ngx_chash_status_init_zone(ngx_shm_zone_t *zone, void *data)
{
    ngx_chash_status_t  *st = zone->data;

    u_char                       *shm;
    size_t                        size;
    ngx_uint_t                    i;
    ngx_slab_pool_t              *shpool;
    ngx_core_conf_t              *ccf;
    ngx_chash_status_shm_t       *one;
    ngx_chash_status_upstream_t  *u;

    /* the zone was sized while the main context was parsed: a
     * worker_processes after this block may ask for more workers */
    ccf = (ngx_core_conf_t *) ngx_get_conf(st->cycle->conf_ctx,
                                           ngx_core_module);

    if (ccf->worker_processes > 0
        && (ngx_uint_t) ccf->worker_processes > st->nslots)
    {
        ngx_log_error(NGX_LOG_EMERG, zone->shm.log, 0, "chash: the status "
                      "zone \"%V\" has slots for %ui workers, not %i: set "
                      "worker_processes before the block of the chash "
                      "upstreams", &zone->shm.name, st->nslots,
                      ccf->worker_processes);
        return NGX_ERROR;
    }

    shpool = (ngx_slab_pool_t *) zone->shm.addr;

    if (data) {
        shm = ((ngx_chash_status_t *) data)->shm;

    } else {
        shm = shpool->data;     /* a zone nginx kept across a reload */
    }

    size = st->upstreams.nelts * ngx_chash_status_shm_size(st->nslots);

    if (shm == NULL) {
        shm = ngx_slab_alloc(shpool, size);
        if (shm == NULL) {
            return NGX_ERROR;
        }

        ngx_memzero(shm, size);
        shpool->data = shm;
    }

    st->shm = shm;
    u = st->upstreams.elts;

    for (i = 0; i < st->upstreams.nelts; i++) {
        one = ngx_chash_status_upstream(st, i);

        if (one->name_len != ngx_min(u[i].name->len, sizeof(one->name))
            || ngx_strncmp(one->name, u[i].name->data, one->name_len) != 0)
        {
            ngx_memzero(one, ngx_chash_status_shm_size(st->nslots));
            one->name_len = ngx_min(u[i].name->len, sizeof(one->name));
            ngx_memcpy(one->name, u[i].name->data, one->name_len);
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_chash_status_add_zone(ngx_conf_t *cf, ngx_chash_status_t *st,
    ngx_str_t *name, void *tag)
{
    size_t            size;
    ngx_core_conf_t  *ccf;

    if (st->upstreams.nelts == 0) {
        return NGX_OK;
    }

    /* a slot a worker: worker_processes if the main context set it before
     * this block, else the CPUs (the default of "auto"); a reload that
     * changes either gets a new zone */
    ccf = (ngx_core_conf_t *) ngx_get_conf(cf->cycle->conf_ctx,
                                           ngx_core_module);

    if (ccf->worker_processes != NGX_CONF_UNSET && ccf->worker_processes > 0)
    {
        st->nslots = ccf->worker_processes;

    } else {
        st->nslots = ngx_max(ngx_ncpu, 1);
    }

    size = 8 * ngx_pagesize
           + st->upstreams.nelts * ngx_chash_status_shm_size(st->nslots);

    st->zone = ngx_shared_memory_add(cf, name, size, tag);
    if (st->zone == NULL) {
        return NGX_ERROR;
    }

    st->abi = NGX_CHASH_STATUS_ABI;
    st->cycle = cf->cycle;
    st->zone->init = ngx_chash_status_init_zone;
    st->zone->data = st;
    st->zone->noreuse = 0;

    return NGX_OK;
}


/* This worker's slot of a source's upstream, or NULL (no zone, not a
 * worker, or more workers than slots). */
static ngx_chash_status_slot_t *
ngx_chash_status_slot(ngx_chash_source_t *src)
{
    ngx_chash_status_t  *st;

    st = src->status;

    if (st == NULL || st->shm == NULL
        || (ngx_process != NGX_PROCESS_WORKER
            && ngx_process != NGX_PROCESS_SINGLE)
        || (ngx_uint_t) ngx_worker >= st->nslots)
    {
        return NULL;
    }

    return &ngx_chash_status_upstream(st, src->status_index)->slot[ngx_worker];
}


/* The slot if this worker owns it: its fields are written by it only. */
static ngx_chash_status_slot_t *
ngx_chash_status_own(ngx_chash_source_t *src)
{
    ngx_chash_status_slot_t  *slot;

    slot = ngx_chash_status_slot(src);

    if (slot == NULL || slot->pid != (ngx_atomic_uint_t) ngx_pid) {
        return NULL;
    }

    slot->seq++;
    ngx_memory_barrier();

    return slot;
}


static void
ngx_chash_status_done(ngx_chash_status_slot_t *slot)
{
    ngx_memory_barrier();
    slot->seq++;
}


void
ngx_chash_status_takeover(ngx_chash_source_t *src)
{
    ngx_uint_t                i;
    ngx_chash_source_t       *s;
    ngx_chash_status_slot_t  *slot;

    slot = ngx_chash_status_slot(src);
    if (slot == NULL) {
        return;
    }

    /* the previous owner may have died between two increments */
    slot->seq = 1;
    ngx_memory_barrier();

    slot->pid = ngx_pid;
    slot->version[1] = 0;
    slot->highest[1] = 0;
    slot->state_error = 0;
    slot->loading_since = 0;
    slot->refused_at = 0;
    slot->refused_side = 0;
    slot->refused_check[0] = '\0';
    slot->refused_message[0] = '\0';

    for (i = 0; i < 2; i++) {
        s = i ? src->partner : src;

        if (s == NULL || s->current == NULL) {
            continue;
        }

        slot->version[s->side] = s->current->info.config_version;
        slot->highest[s->side] = s->step.highest;

        if (s->step.state_error) {
            slot->state_error |= (ngx_atomic_uint_t) 1 << s->side;
        }
    }

    ngx_chash_status_done(slot);

    ngx_chash_status_generations(src);
}


void
ngx_chash_status_count(ngx_chash_source_t *src, ngx_uint_t side,
    ngx_int_t subset, ngx_uint_t unknown)
{
    ngx_chash_status_slot_t  *slot;

    slot = ngx_chash_status_slot(src);
    if (slot == NULL) {
        return;
    }

    (void) ngx_atomic_fetch_add(&slot->requests[side], 1);

    if (unknown) {
        (void) ngx_atomic_fetch_add(&slot->unknown_subset, 1);

    } else if (subset >= 0 && subset < NGX_CHASH_STATUS_SUBSETS) {
        (void) ngx_atomic_fetch_add(&slot->subset[subset], 1);
    }
}


void
ngx_chash_status_passed(ngx_chash_source_t *src, ngx_uint_t n)
{
    ngx_chash_status_slot_t  *slot;

    slot = ngx_chash_status_slot(src);

    if (slot && n) {
        (void) ngx_atomic_fetch_add(&slot->bounded_passes, n);
    }
}


void
ngx_chash_status_served(ngx_chash_source_t *src, ngx_uint_t loaded)
{
    ngx_chash_status_slot_t  *slot;

    slot = ngx_chash_status_slot(src);

    if (slot && loaded) {
        (void) ngx_atomic_fetch_add(&slot->loads_ok, 1);
    }

    slot = ngx_chash_status_own(src);
    if (slot == NULL) {
        return;
    }

    slot->version[src->side] = src->current->info.config_version;

    ngx_chash_status_done(slot);
}


void
ngx_chash_status_refused(ngx_chash_source_t *src, uint32_t check,
    u_char *message)
{
    ngx_chash_status_slot_t  *slot;

    slot = ngx_chash_status_slot(src);
    if (slot == NULL) {
        return;
    }

    (void) ngx_atomic_fetch_add(&slot->loads_refused, 1);

    slot = ngx_chash_status_own(src);
    if (slot == NULL) {
        return;
    }

    slot->refused_at = ngx_time();
    slot->refused_side = src->side;
    ngx_cpystrn(slot->refused_check, (u_char *) chash_check_name(check),
                sizeof(slot->refused_check));
    ngx_cpystrn(slot->refused_message, message,
                sizeof(slot->refused_message));

    ngx_chash_status_done(slot);
}


void
ngx_chash_status_report(ngx_chash_source_t *src, uint64_t highest,
    ngx_uint_t state_error)
{
    ngx_chash_status_slot_t  *slot;

    slot = ngx_chash_status_own(src);
    if (slot == NULL) {
        return;
    }

    if (highest > slot->highest[src->side]) {
        slot->highest[src->side] = highest;
    }

    if (state_error) {
        slot->state_error |= (ngx_atomic_uint_t) 1 << src->side;

    } else {
        slot->state_error &= ~((ngx_atomic_uint_t) 1 << src->side);
    }

    ngx_chash_status_done(slot);
}


void
ngx_chash_status_loading(ngx_chash_source_t *src, time_t since)
{
    ngx_chash_status_slot_t  *slot;

    slot = ngx_chash_status_own(src);
    if (slot == NULL) {
        return;
    }

    slot->loading_since = since;

    ngx_chash_status_done(slot);
}


void
ngx_chash_status_generations(ngx_chash_source_t *src)
{
    time_t                    oldest;
    ngx_uint_t                i, held;
    ngx_chash_gen_t          *gen;
    ngx_chash_source_t       *s;
    ngx_chash_status_slot_t  *slot;

    held = 0;
    oldest = 0;

    for (i = 0; i < 2; i++) {
        s = i ? src->partner : src;

        if (s == NULL) {
            continue;
        }

        held += (s->current != NULL) + s->nretired;

        if (!ngx_queue_empty(&s->retired)) {
            gen = ngx_queue_data(ngx_queue_head(&s->retired), ngx_chash_gen_t,
                                 queue);

            if (oldest == 0 || gen->retired_at < oldest) {
                oldest = gen->retired_at;
            }
        }
    }

    slot = ngx_chash_status_own(src);
    if (slot == NULL) {
        return;
    }

    slot->generations = held;
    slot->oldest_retired = oldest;

    ngx_chash_status_done(slot);
}


ngx_int_t
ngx_chash_status_read(ngx_chash_status_slot_t *slot,
    ngx_chash_status_slot_t *copy)
{
    ngx_uint_t          tries;
    ngx_atomic_uint_t   seq;

    for (tries = 0; tries < 64; tries++) {
        seq = slot->seq;
        ngx_memory_barrier();

        if (seq & 1) {
            ngx_cpu_pause();
            continue;
        }

        ngx_memcpy(copy, slot, sizeof(ngx_chash_status_slot_t));
        ngx_memory_barrier();

        if (slot->seq == seq) {
            copy->refused_check[sizeof(copy->refused_check) - 1] = '\0';
            copy->refused_message[sizeof(copy->refused_message) - 1] = '\0';
            return NGX_OK;
        }
    }

    return NGX_DECLINED;
}


ngx_uint_t
ngx_chash_status_live(ngx_chash_status_slot_t *slot)
{
    ngx_pid_t  pid;

    pid = (ngx_pid_t) slot->pid;

    if (pid == 0) {
        return 0;
    }

    /* EPERM: alive, another user's */
    return pid == ngx_pid || kill(pid, 0) == 0 || ngx_errno == NGX_EPERM;
}


ngx_chash_status_t *
ngx_chash_status_find(ngx_cycle_t *cycle, ngx_str_t *name)
{
    ngx_uint_t           i;
    ngx_list_part_t     *part;
    ngx_shm_zone_t      *zone;
    ngx_chash_status_t  *st;

    part = &cycle->shared_memory.part;
    zone = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return NULL;
            }

            part = part->next;
            zone = part->elts;
            i = 0;
        }

        if (zone[i].shm.name.len != name->len
            || ngx_strncmp(zone[i].shm.name.data, name->data, name->len) != 0)
        {
            continue;
        }

        st = zone[i].data;

        /* the other module's copy of this core: the same layout only */
        if (st == NULL || st->abi != NGX_CHASH_STATUS_ABI || st->shm == NULL) {
            return NULL;
        }

        return st;
    }
}
