/*
 * The status of snapshot upstreams: counters in a shared zone, one slot a
 * worker, and their two renderings for chash_status (JSON and the
 * Prometheus text format).
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
    snap->side = 0;

    if (next) {
        next->status = st;
        next->status_index = snap->status_index;
        next->side = 1;
    }

    return NGX_OK;
}


/* Counters survive a reload for each upstream whose name keeps its place. */
static ngx_int_t
ngx_chash_status_init_zone(ngx_shm_zone_t *zone, void *data)
{
    ngx_chash_status_t  *st = zone->data;

    size_t                        size;
    ngx_uint_t                    i;
    ngx_slab_pool_t              *shpool;
    ngx_chash_status_shm_t       *shm;
    ngx_chash_status_upstream_t  *u;

    shpool = (ngx_slab_pool_t *) zone->shm.addr;

    if (data) {
        shm = ((ngx_chash_status_t *) data)->shm;

    } else {
        shm = shpool->data;     /* a zone nginx kept across a reload */
    }

    size = (st->upstreams.nelts + 1) * sizeof(ngx_chash_status_shm_t);

    if (shm == NULL) {
        shm = ngx_slab_alloc(shpool, size);
        if (shm == NULL) {
            return NGX_ERROR;
        }

        ngx_memzero(shm, size);
        shpool->data = shm;
    }

    u = st->upstreams.elts;

    for (i = 0; i < st->upstreams.nelts; i++) {
        if (shm[i].name_len != u[i].name->len
            || ngx_strncmp(shm[i].name, u[i].name->data, u[i].name->len) != 0)
        {
            ngx_memzero(&shm[i], sizeof(ngx_chash_status_shm_t));
            shm[i].name_len = ngx_min(u[i].name->len, sizeof(shm[i].name));
            ngx_memcpy(shm[i].name, u[i].name->data, shm[i].name_len);
        }
    }

    st->shm = shm;

    return NGX_OK;
}


ngx_int_t
ngx_chash_status_add_zone(ngx_conf_t *cf, ngx_chash_status_t *st,
    ngx_str_t *name, void *tag)
{
    size_t            size;

    if (st->upstreams.nelts == 0) {
        return NGX_OK;
    }

    /* the size follows the upstreams: a reload that changes their number
     * gets a new zone */
    size = 8 * ngx_pagesize
           + (st->upstreams.nelts + 1) * sizeof(ngx_chash_status_shm_t);

    st->zone = ngx_shared_memory_add(cf, name, size, tag);
    if (st->zone == NULL) {
        return NGX_ERROR;
    }

    st->abi = NGX_CHASH_STATUS_ABI;
    st->zone->init = ngx_chash_status_init_zone;
    st->zone->data = st;
    st->zone->noreuse = 0;

    return NGX_OK;
}


ngx_chash_status_slot_t *
ngx_chash_status_slot(ngx_chash_source_t *src)
{
    if (src->status == NULL || src->status->shm == NULL
        || (ngx_process != NGX_PROCESS_WORKER
            && ngx_process != NGX_PROCESS_SINGLE))
    {
        return NULL;
    }

    return &src->status->shm[src->status_index]
                .slot[ngx_worker % NGX_CHASH_STATUS_SLOTS];
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
ngx_chash_status_served(ngx_chash_source_t *src, ngx_uint_t loaded)
{
    ngx_chash_status_slot_t  *slot;

    slot = ngx_chash_status_slot(src);
    if (slot == NULL) {
        return;
    }

    slot->pid = ngx_pid;
    slot->version[src->side] = src->current->info.config_version;

    if (loaded) {
        (void) ngx_atomic_fetch_add(&slot->loads_ok, 1);
    }
}


void
ngx_chash_status_refused(ngx_chash_source_t *src, const char *check,
    u_char *err)
{
    ngx_chash_status_shm_t   *shm;
    ngx_chash_status_slot_t  *slot;

    slot = ngx_chash_status_slot(src);
    if (slot == NULL) {
        return;
    }

    (void) ngx_atomic_fetch_add(&slot->loads_refused, 1);

    shm = &src->status->shm[src->status_index];

    ngx_spinlock(&shm->lock, ngx_pid, 1024);
    ngx_cpystrn(shm->last_check, (u_char *) check, sizeof(shm->last_check));
    ngx_cpystrn(shm->last_message, err, sizeof(shm->last_message));
    shm->refused_at = ngx_time();
    ngx_unlock(&shm->lock);
}


/* JSON string contents, or a Prometheus label value: \ " and controls. */
static u_char *
ngx_chash_escape(u_char *p, u_char *s, size_t len, ngx_uint_t prometheus)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        if (s[i] == '"' || s[i] == '\\') {
            *p++ = '\\';
            *p++ = s[i];

        } else if (s[i] == '\n') {
            *p++ = '\\';
            *p++ = 'n';

        } else if (s[i] < 0x20) {
            if (!prometheus) {
                p = ngx_sprintf(p, "\\u%04xD", (uint32_t) s[i]);
            }

        } else {
            *p++ = s[i];
        }
    }

    return p;
}


#define ngx_chash_esc(p, str, prom)                                         \
    ngx_chash_escape(p, (u_char *) (str), ngx_strlen(str), prom)


typedef struct {
    uint64_t    loads_ok, loads_refused, requests[2], unknown;
    uint64_t    subset[NGX_CHASH_STATUS_SUBSETS];
} ngx_chash_status_sum_t;


static void
ngx_chash_status_sum(ngx_chash_status_shm_t *shm, ngx_chash_status_sum_t *sum)
{
    ngx_uint_t  w, k;

    ngx_memzero(sum, sizeof(ngx_chash_status_sum_t));

    for (w = 0; w < NGX_CHASH_STATUS_SLOTS; w++) {
        sum->loads_ok += shm->slot[w].loads_ok;
        sum->loads_refused += shm->slot[w].loads_refused;
        sum->requests[0] += shm->slot[w].requests[0];
        sum->requests[1] += shm->slot[w].requests[1];
        sum->unknown += shm->slot[w].unknown_subset;

        for (k = 0; k < NGX_CHASH_STATUS_SUBSETS; k++) {
            sum->subset[k] += shm->slot[w].subset[k];
        }
    }
}


/* Whether a slot belongs to a live worker (old slots of exited ones stay). */
static ngx_uint_t
ngx_chash_status_live(ngx_chash_status_slot_t *slot)
{
    return slot->pid != 0 && (slot->pid == (ngx_atomic_uint_t) ngx_pid
                              || kill((ngx_pid_t) slot->pid, 0) == 0);
}


/*
 * The Prometheus text format (0.0.4): each family once, with HELP and TYPE,
 * its samples for every upstream together.
 */
static u_char *
ngx_chash_status_prometheus(ngx_chash_status_t **sets, u_char *p)
{
    ngx_uint_t                    i, w, k, f, set;
    ngx_chash_status_t           *st;
    ngx_chash_gen_t              *g, *ng;
    ngx_chash_status_shm_t       *shm;
    ngx_chash_status_sum_t        sum;
    ngx_chash_status_upstream_t  *u;

    static const char  *families[][3] = {
        { "chash_snapshot_info", "gauge",
          "The snapshot an upstream serves in this worker (labels), 1." },
        { "chash_snapshot_points", "gauge", "Points of the ring served." },
        { "chash_snapshot_nodes", "gauge", "Nodes of the ring served." },
        { "chash_snapshot_loaded_at_seconds", "gauge",
          "When this worker loaded the ring it serves (Unix time)." },
        { "chash_snapshot_config_version", "gauge",
          "The config version each worker serves (ring old or new)." },
        { "chash_snapshot_loads_total", "counter",
          "Snapshot loads by the workers after start, by result." },
        { "chash_requests_total", "counter",
          "Requests routed, by the ring that routed them (old without a "
          "migration)." },
        { "chash_subset_requests_total", "counter",
          "Requests routed inside a named subset." },
        { "chash_unknown_subset_total", "counter",
          "Requests that named a subset the snapshot does not hold (502)." },
        { "chash_migration_info", "gauge",
          "The migration's new ring (labels), 1." }
    };

    for (f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
        p = ngx_sprintf(p, "# HELP %s %s\n# TYPE %s %s\n", families[f][0],
                        families[f][2], families[f][0], families[f][1]);

        /* sets[0] the HTTP upstreams, sets[1] the stream ones (or NULL) */
        for (set = 0; set < 2; set++) {
        st = sets[set];

        if (st == NULL) {
            continue;
        }

        u = st->upstreams.elts;

        for (i = 0; i < st->upstreams.nelts; i++) {
            g = u[i].snap->current;
            ng = u[i].next ? u[i].next->current : NULL;
            shm = st->shm ? &st->shm[i] : NULL;

            if (g == NULL || shm == NULL) {
                continue;
            }

            ngx_chash_status_sum(shm, &sum);

#define NGX_CHASH_U(p)                                                       \
    p = ngx_sprintf(p, "%s{%supstream=\"", families[f][0],                  \
                    set ? "protocol=\"stream\"," : "");                      \
    p = ngx_chash_escape(p, u[i].name->data, u[i].name->len, 1)

            switch (f) {
            case 0:
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\",file=\"");
                p = ngx_chash_escape(p, u[i].snap->path.data,
                                     u[i].snap->path.len, 1);
                p = ngx_sprintf(p, "\",fingerprint=\"%*s\",key_id=\"%s\","
                                "label=\"", (size_t) 16, g->fingerprint,
                                g->key_id);
                p = ngx_chash_esc(p, chash_snapshot_label(g->snapshot), 1);
                p = ngx_sprintf(p, "\"} 1\n");
                break;
            case 1:
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\"} %uL\n", g->info.points);
                break;
            case 2:
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\"} %uD\n", g->info.nodes);
                break;
            case 3:
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\"} %T\n", g->loaded_at);
                break;
            case 4:
                for (w = 0; w < NGX_CHASH_STATUS_SLOTS; w++) {
                    if (!ngx_chash_status_live(&shm->slot[w])) {
                        continue;
                    }

                    for (k = 0; k < (ng ? 2 : 1); k++) {
                        NGX_CHASH_U(p);
                        p = ngx_sprintf(p, "\",worker=\"%uA\",ring=\"%s\"} "
                                        "%uA\n", shm->slot[w].pid,
                                        k ? "new" : "old",
                                        shm->slot[w].version[k]);
                    }
                }
                break;
            case 5:
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\",result=\"ok\"} %uL\n", sum.loads_ok);
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\",result=\"refused\"} %uL\n",
                                sum.loads_refused);
                break;
            case 6:
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\",ring=\"old\"} %uL\n", sum.requests[0]);
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\",ring=\"new\"} %uL\n", sum.requests[1]);
                break;
            case 7:
                for (k = 0; k < g->nsubsets && k < NGX_CHASH_STATUS_SUBSETS;
                     k++)
                {
                    NGX_CHASH_U(p);
                    p = ngx_sprintf(p, "\",subset=\"");
                    p = ngx_chash_escape(p, g->subsets[k].name.data,
                                         g->subsets[k].name.len, 1);
                    p = ngx_sprintf(p, "\"} %uL\n", sum.subset[k]);
                }
                break;
            case 8:
                NGX_CHASH_U(p);
                p = ngx_sprintf(p, "\"} %uL\n", sum.unknown);
                break;
            default:
                if (ng) {
                    NGX_CHASH_U(p);
                    p = ngx_sprintf(p, "\",file=\"");
                    p = ngx_chash_escape(p, u[i].next->path.data,
                                         u[i].next->path.len, 1);
                    p = ngx_sprintf(p, "\",fingerprint=\"%*s\",rollout=\"",
                                    (size_t) 16, ng->fingerprint);
                    p = ngx_chash_escape(p, u[i].rollout.data,
                                         u[i].rollout.len, 1);
                    p = ngx_sprintf(p, "\",allow_mismatch=\"%s\"} 1\n",
                                    u[i].next->allow_mismatch ? "true"
                                                              : "false");
                }
                break;
            }
#undef NGX_CHASH_U
        }
        }
    }

    return p;
}


/* The JSON object of st's upstreams, by name, at p. */
static u_char *
ngx_chash_status_json(ngx_chash_status_t *st, u_char *p, ngx_pool_t *pool)
{
    u_char                       *name;
    ngx_uint_t                    i, w, k, first;
    ngx_chash_gen_t              *g, *ng;
    ngx_chash_status_shm_t       *shm;
    ngx_chash_status_sum_t        sum;
    ngx_chash_status_upstream_t  *u;

    u = st->upstreams.elts;
    *p++ = '{';

    for (i = 0; i < st->upstreams.nelts; i++) {
        g = u[i].snap->current;
        ng = u[i].next ? u[i].next->current : NULL;
        shm = st->shm ? &st->shm[i] : NULL;

        if (g == NULL || shm == NULL) {
            continue;
        }

        ngx_chash_status_sum(shm, &sum);
        name = ngx_pnalloc(pool, u[i].name->len + 1);
        if (name == NULL) {
            return NULL;
        }

        (void) ngx_cpystrn(name, u[i].name->data, u[i].name->len + 1);


        if (p[-1] != '{') {
            *p++ = ',';
        }

        *p++ = '"';
        p = ngx_chash_esc(p, name, 0);
        p = ngx_sprintf(p, "\":{\"file\":\"");
        p = ngx_chash_escape(p, u[i].snap->path.data, u[i].snap->path.len, 0);
        p = ngx_sprintf(p, "\",\"config_version\":%uL,\"fingerprint\":\"%*s\","
                        "\"label\":\"", g->info.config_version, (size_t) 16,
                        g->fingerprint);
        p = ngx_chash_esc(p, chash_snapshot_label(g->snapshot), 0);
        p = ngx_sprintf(p, "\",\"key_id\":\"%s\",\"flavor\":\"%s\","
                        "\"points\":%uL,\"nodes\":%uD,\"loaded_at\":%T,"
                        "\"mapped\":%s,\"workers\":[",
                        g->key_id, ngx_chash_flavor_name(g->info.flavor),
                        g->info.points, g->info.nodes, g->loaded_at,
                        g->info.mode == CHASH_LOAD_MAP ? "true" : "false");

        first = 1;

        for (w = 0; w < NGX_CHASH_STATUS_SLOTS; w++) {
            if (!ngx_chash_status_live(&shm->slot[w])) {
                continue;
            }

            p = ngx_sprintf(p, "%s{\"pid\":%uA,\"config_version\":%uA",
                            first ? "" : ",", shm->slot[w].pid,
                            shm->slot[w].version[0]);
            if (ng) {
                p = ngx_sprintf(p, ",\"migration_config_version\":%uA",
                                shm->slot[w].version[1]);
            }

            *p++ = '}';
            first = 0;
        }

        p = ngx_sprintf(p, "],\"loads\":{\"ok\":%uL,\"refused\":%uL},"
                        "\"last_refusal\":", sum.loads_ok, sum.loads_refused);

        if (shm->refused_at) {
            ngx_spinlock(&shm->lock, ngx_pid, 1024);
            p = ngx_sprintf(p, "{\"check\":\"");
            p = ngx_chash_esc(p, shm->last_check, 0);
            p = ngx_sprintf(p, "\",\"message\":\"");
            p = ngx_chash_esc(p, shm->last_message, 0);
            p = ngx_sprintf(p, "\",\"at\":%uA}", shm->refused_at);
            ngx_unlock(&shm->lock);

        } else {
            p = ngx_sprintf(p, "null");
        }

        p = ngx_sprintf(p, ",\"requests\":{\"old\":%uL,\"new\":%uL},"
                        "\"subsets\":{", sum.requests[0], sum.requests[1]);

        for (k = 0; k < g->nsubsets && k < NGX_CHASH_STATUS_SUBSETS; k++) {
            p = ngx_sprintf(p, "%s\"", k ? "," : "");
            p = ngx_chash_escape(p, g->subsets[k].name.data,
                                 g->subsets[k].name.len, 0);
            p = ngx_sprintf(p, "\":%uL", sum.subset[k]);
        }

        p = ngx_sprintf(p, "},\"unknown_subset\":%uL", sum.unknown);

        if (ng) {
            p = ngx_sprintf(p, ",\"migration\":{\"file\":\"");
            p = ngx_chash_escape(p, u[i].next->path.data, u[i].next->path.len,
                                 0);
            p = ngx_sprintf(p, "\",\"config_version\":%uL,\"fingerprint\":"
                            "\"%*s\",\"rollout\":\"", ng->info.config_version,
                            (size_t) 16, ng->fingerprint);
            p = ngx_chash_escape(p, u[i].rollout.data, u[i].rollout.len, 0);
            p = ngx_sprintf(p, "\",\"allow_mismatch\":%s}",
                            u[i].next->allow_mismatch ? "true" : "false");
        }

        *p++ = '}';
    }

    *p++ = '}';

    return p;
}


ngx_buf_t *
ngx_chash_status_render(ngx_chash_status_t *st, ngx_chash_status_t *stream,
    ngx_pool_t *pool, ngx_uint_t prom)
{
    size_t                        size;
    u_char                       *p;
    ngx_buf_t                    *b;
    ngx_uint_t                    i, set;
    ngx_chash_gen_t              *g;
    ngx_chash_status_t           *sets[2];
    ngx_chash_status_upstream_t  *u;

    sets[0] = st;
    sets[1] = stream;

    /*
     * An upper bound: every line (at most 24 + 2 a worker slot + one a
     * subset, in either format) holds at most every string of its upstream,
     * each escaped (at most 7 bytes a byte), and numbers.
     */
    size = 1024;

    for (set = 0; set < 2; set++) {
        if (sets[set] == NULL) {
            continue;
        }

        u = sets[set]->upstreams.elts;

        for (i = 0; i < sets[set]->upstreams.nelts; i++) {
            g = u[i].snap->current;

            if (g == NULL) {
                continue;
            }

            size += (24 + 2 * NGX_CHASH_STATUS_SLOTS
                     + ngx_min(g->nsubsets, NGX_CHASH_STATUS_SUBSETS))
                    * (512 + 7 * (u[i].name->len + u[i].snap->path.len
                                  + (u[i].next ? u[i].next->path.len : 0)
                                  + ngx_strlen(chash_snapshot_label(
                                                   g->snapshot))
                                  + u[i].rollout.len + 64
                                  + NGX_CHASH_CHECK_LEN
                                  + sizeof(((ngx_chash_status_shm_t *) 0)
                                           ->last_message)));
        }
    }

    b = ngx_create_temp_buf(pool, size);
    if (b == NULL) {
        return NULL;
    }

    if (prom) {
        b->last = ngx_chash_status_prometheus(sets, b->last);
        return b;
    }

    p = ngx_sprintf(b->last, "{\"upstreams\":");
    p = ngx_chash_status_json(st, p, pool);

    if (p == NULL) {
        return NULL;
    }

    if (stream) {
        p = ngx_sprintf(p, ",\"stream_upstreams\":");
        p = ngx_chash_status_json(stream, p, pool);

        if (p == NULL) {
            return NULL;
        }
    }

    p = ngx_sprintf(p, "}\n");

    b->last = p;

    return b;
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
