/*
 * chash_status's two documents, JSON and the Prometheus text format (0.0.4),
 * from the status zone's slots (ngx_chash_status.c): each worker's version,
 * its last refusal, a step in flight, the generations it holds; the
 * upstream's highest version ever served; the counters summed over the
 * slots. The answering worker's own generation gives the ring's details.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_chash_core.h"


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


/* An upstream's slots, read once for a document. */
typedef struct {
    ngx_chash_status_slot_t    *slot;      /* copies; nslots */
    ngx_uint_t                 *live;      /* readable and a live process */
    ngx_uint_t                  nslots;
    uint64_t                    loads_ok, loads_refused, requests[2];
    uint64_t                    unknown, passes;
    uint64_t                    subset[NGX_CHASH_STATUS_SUBSETS];
    uint64_t                    highest[2];
    ngx_uint_t                  versions[2];   /* distinct among the live */
    ngx_chash_status_slot_t    *newest;        /* the last refusal's slot */
} ngx_chash_status_view_t;


static ngx_int_t
ngx_chash_status_view(ngx_chash_status_t *st, ngx_uint_t i, ngx_pool_t *pool,
    ngx_chash_status_view_t *v)
{
    ngx_uint_t                w, k, j, seen;
    ngx_chash_status_shm_t   *shm;
    ngx_chash_status_slot_t  *s, *live;

    ngx_memzero(v, sizeof(ngx_chash_status_view_t));

    shm = ngx_chash_status_upstream(st, i);
    v->nslots = st->nslots;
    v->slot = ngx_pcalloc(pool, st->nslots * sizeof(ngx_chash_status_slot_t));
    v->live = ngx_pcalloc(pool, st->nslots * sizeof(ngx_uint_t));
    if (v->slot == NULL || v->live == NULL) {
        return NGX_ERROR;
    }

    for (w = 0; w < st->nslots; w++) {
        s = &shm->slot[w];

        /* counters: whatever the slot's state */
        v->loads_ok += s->loads_ok;
        v->loads_refused += s->loads_refused;
        v->requests[0] += s->requests[0];
        v->requests[1] += s->requests[1];
        v->unknown += s->unknown_subset;
        v->passes += s->bounded_passes;

        for (k = 0; k < NGX_CHASH_STATUS_SUBSETS; k++) {
            v->subset[k] += s->subset[k];
        }

        if (ngx_chash_status_read(s, &v->slot[w]) != NGX_OK) {
            continue;
        }

        s = &v->slot[w];

        for (k = 0; k < 2; k++) {
            v->highest[k] = ngx_max(v->highest[k], s->highest[k]);
        }

        if (s->refused_at
            && (v->newest == NULL || s->refused_at >= v->newest->refused_at))
        {
            v->newest = s;
        }

        v->live[w] = ngx_chash_status_live(s);
    }

    /* distinct versions among the live workers: 1 when they agree */
    for (k = 0; k < 2; k++) {
        for (w = 0; w < st->nslots; w++) {
            if (!v->live[w]) {
                continue;
            }

            live = &v->slot[w];
            seen = 0;

            for (j = 0; j < w; j++) {
                if (v->live[j] && v->slot[j].version[k] == live->version[k]) {
                    seen = 1;
                    break;
                }
            }

            v->versions[k] += !seen;
        }
    }

    return NGX_OK;
}


static const char *
ngx_chash_mode_name(uint32_t mode)
{
    return mode == CHASH_LOAD_SEALED ? "sealed"
           : mode == CHASH_LOAD_COPY ? "copy" : "map";
}


enum {
    NGX_CHASH_F_INFO = 0,
    NGX_CHASH_F_POINTS,
    NGX_CHASH_F_NODES,
    NGX_CHASH_F_LOADED_AT,
    NGX_CHASH_F_EXPIRES,
    NGX_CHASH_F_VERSION,
    NGX_CHASH_F_HIGHEST,
    NGX_CHASH_F_VERSIONS,
    NGX_CHASH_F_LOADS,
    NGX_CHASH_F_REFUSAL,
    NGX_CHASH_F_LOADING,
    NGX_CHASH_F_GENERATIONS,
    NGX_CHASH_F_RETIRED,
    NGX_CHASH_F_STATE,
    NGX_CHASH_F_REQUESTS,
    NGX_CHASH_F_PASSES,
    NGX_CHASH_F_SUBSET,
    NGX_CHASH_F_UNKNOWN,
    NGX_CHASH_F_MIGRATION,
    NGX_CHASH_F_COUNT
};


static const char  *ngx_chash_families[NGX_CHASH_F_COUNT][3] = {
    { "chash_snapshot_info", "gauge",
      "The snapshot an upstream serves in the answering worker (labels), 1." },
    { "chash_snapshot_points", "gauge", "Points of the ring served." },
    { "chash_snapshot_nodes", "gauge", "Nodes of the ring served." },
    { "chash_snapshot_loaded_at_seconds", "gauge",
      "When the answering worker made the generation it serves (Unix time)." },
    { "chash_snapshot_expires_timestamp_seconds", "gauge",
      "When the ring the answering worker serves expires (Unix time), 0 if "
      "never: past it, it is served only until a newer file passes." },
    { "chash_snapshot_config_version", "gauge",
      "The config version each live worker serves (ring old or new)." },
    { "chash_snapshot_highest_version", "gauge",
      "The highest config version ever served under this upstream's name "
      "(persisted in the state directory): older files are refused." },
    { "chash_snapshot_versions_served", "gauge",
      "Distinct config versions the live workers serve: 1 when they agree." },
    { "chash_snapshot_loads_total", "counter",
      "Files served (ok) or refused by the workers after start." },
    { "chash_worker_last_refusal_timestamp_seconds", "gauge",
      "When each worker last refused a file (Unix time), by check." },
    { "chash_worker_loading_seconds", "gauge",
      "Seconds each worker's look at its files (a load) has been in flight, "
      "0 if none." },
    { "chash_worker_generations", "gauge",
      "Generations (rings and their peers) each worker holds: the served "
      "ones and retired ones requests or sessions still use." },
    { "chash_worker_oldest_retired_generation_seconds", "gauge",
      "Seconds since each worker's oldest retired generation it still holds "
      "stopped being served, 0 if none." },
    { "chash_worker_state_error", "gauge",
      "1 when a worker could not write the state directory (the last good "
      "file, which keeps the version floor, not persisted)." },
    { "chash_requests_total", "counter",
      "Requests routed, by the ring that routed them (old without a "
      "migration)." },
    { "chash_bounded_load_passes_total", "counter",
      "Nodes passed over at the bounded-load capacity (not failures)." },
    { "chash_subset_requests_total", "counter",
      "Requests routed inside a named subset." },
    { "chash_unknown_subset_total", "counter",
      "Requests that named a subset the snapshot does not hold (502)." },
    { "chash_migration_info", "gauge",
      "The migration's new ring (labels), 1." }
};


/* Seconds since `since` (0: not since anything), never below 0 when the
 * clock steps back. */
#define ngx_chash_age(now, since)                                            \
    ((since) ? ngx_max((now) - (time_t) (since), 0) : 0)


#define ngx_chash_sample(p, f, set, u)                                       \
    p = ngx_sprintf(p, "%s{%supstream=\"", ngx_chash_families[f][0],         \
                    (set) ? "protocol=\"stream\"," : "");                    \
    p = ngx_chash_escape(p, (u)->name->data, (u)->name->len, 1)


/* A worker's one-number families: loading and retired (ages, seconds),
 * generations, state (1: its state file failed). */
static ngx_atomic_uint_t
ngx_chash_worker_number(ngx_uint_t f, ngx_chash_status_slot_t *s, time_t now)
{
    switch (f) {

    case NGX_CHASH_F_LOADING:
        return (ngx_atomic_uint_t) ngx_chash_age(now, s->loading_since);

    case NGX_CHASH_F_GENERATIONS:
        return s->generations;

    case NGX_CHASH_F_RETIRED:
        return (ngx_atomic_uint_t) ngx_chash_age(now, s->oldest_retired);

    default: /* NGX_CHASH_F_STATE */
        return s->state_error ? 1 : 0;
    }
}


/* The samples of family f for one upstream. */
static u_char *
ngx_chash_status_prom_upstream(u_char *p, ngx_uint_t f, ngx_uint_t set,
    ngx_chash_status_upstream_t *u, ngx_chash_status_view_t *v)
{
    time_t                    now;
    ngx_uint_t                w, k, sides;
    ngx_chash_gen_t          *g, *ng;
    ngx_chash_status_slot_t  *s;

    static const char  *ring[] = { "old", "new" };

    g = u->snap->current;
    ng = u->next ? u->next->current : NULL;
    sides = ng ? 2 : 1;
    now = ngx_time();

    switch (f) {

    case NGX_CHASH_F_INFO:
        ngx_chash_sample(p, f, set, u);
        p = ngx_sprintf(p, "\",file=\"");
        p = ngx_chash_escape(p, u->snap->path.data, u->snap->path.len, 1);
        p = ngx_sprintf(p, "\",fingerprint=\"%*s\",key_id=\"%s\",mode=\"%s\","
                        "label=\"", (size_t) 16, g->fingerprint, g->key_id,
                        ngx_chash_mode_name(g->info.mode));
        p = ngx_chash_esc(p, chash_snapshot_label(g->snapshot), 1);
        return ngx_sprintf(p, "\"} 1\n");

    case NGX_CHASH_F_POINTS:
        ngx_chash_sample(p, f, set, u);
        return ngx_sprintf(p, "\"} %uL\n", g->info.points);

    case NGX_CHASH_F_NODES:
        ngx_chash_sample(p, f, set, u);
        return ngx_sprintf(p, "\"} %uD\n", g->info.nodes);

    case NGX_CHASH_F_LOADED_AT:
        ngx_chash_sample(p, f, set, u);
        return ngx_sprintf(p, "\"} %T\n", g->loaded_at);

    case NGX_CHASH_F_EXPIRES:
        ngx_chash_sample(p, f, set, u);
        return ngx_sprintf(p, "\"} %L\n", g->info.expires_unix_seconds);

    case NGX_CHASH_F_HIGHEST:
    case NGX_CHASH_F_VERSIONS:
        for (k = 0; k < sides; k++) {
            ngx_chash_sample(p, f, set, u);
            p = ngx_sprintf(p, "\",ring=\"%s\"} %uL\n", ring[k],
                            f == NGX_CHASH_F_HIGHEST
                            ? v->highest[k] : (uint64_t) v->versions[k]);
        }
        return p;

    case NGX_CHASH_F_LOADS:
        ngx_chash_sample(p, f, set, u);
        p = ngx_sprintf(p, "\",result=\"ok\"} %uL\n", v->loads_ok);
        ngx_chash_sample(p, f, set, u);
        return ngx_sprintf(p, "\",result=\"refused\"} %uL\n",
                           v->loads_refused);

    case NGX_CHASH_F_REQUESTS:
        ngx_chash_sample(p, f, set, u);
        p = ngx_sprintf(p, "\",ring=\"old\"} %uL\n", v->requests[0]);
        ngx_chash_sample(p, f, set, u);
        return ngx_sprintf(p, "\",ring=\"new\"} %uL\n", v->requests[1]);

    case NGX_CHASH_F_PASSES:
        ngx_chash_sample(p, f, set, u);
        return ngx_sprintf(p, "\"} %uL\n", v->passes);

    case NGX_CHASH_F_SUBSET:
        for (k = 0; k < g->nsubsets && k < NGX_CHASH_STATUS_SUBSETS; k++) {
            ngx_chash_sample(p, f, set, u);
            p = ngx_sprintf(p, "\",subset=\"");
            p = ngx_chash_escape(p, g->subsets[k].name.data,
                                 g->subsets[k].name.len, 1);
            p = ngx_sprintf(p, "\"} %uL\n", v->subset[k]);
        }
        return p;

    case NGX_CHASH_F_UNKNOWN:
        ngx_chash_sample(p, f, set, u);
        return ngx_sprintf(p, "\"} %uL\n", v->unknown);

    case NGX_CHASH_F_MIGRATION:
        if (ng == NULL) {
            return p;
        }

        ngx_chash_sample(p, f, set, u);
        p = ngx_sprintf(p, "\",file=\"");
        p = ngx_chash_escape(p, u->next->path.data, u->next->path.len, 1);
        p = ngx_sprintf(p, "\",fingerprint=\"%*s\",rollout=\"", (size_t) 16,
                        ng->fingerprint);
        p = ngx_chash_escape(p, u->rollout.data, u->rollout.len, 1);
        return ngx_sprintf(p, "\",allow_mismatch=\"%s\"} 1\n",
                           u->next->allow_mismatch ? "true" : "false");
    }

    /* the families of each live worker */
    for (w = 0; w < v->nslots; w++) {
        if (!v->live[w]) {
            continue;
        }

        s = &v->slot[w];

        switch (f) {

        case NGX_CHASH_F_VERSION:
            for (k = 0; k < sides; k++) {
                ngx_chash_sample(p, f, set, u);
                p = ngx_sprintf(p, "\",worker=\"%uA\",ring=\"%s\"} %uA\n",
                                s->pid, ring[k], s->version[k]);
            }
            break;

        case NGX_CHASH_F_REFUSAL:
            if (s->refused_at) {
                ngx_chash_sample(p, f, set, u);
                p = ngx_sprintf(p, "\",worker=\"%uA\",ring=\"%s\",check=\"",
                                s->pid, ring[s->refused_side & 1]);
                p = ngx_chash_esc(p, s->refused_check, 1);
                p = ngx_sprintf(p, "\"} %uA\n", s->refused_at);
            }
            break;

        default:  /* one number a worker */
            ngx_chash_sample(p, f, set, u);
            p = ngx_sprintf(p, "\",worker=\"%uA\"} %uA\n", s->pid,
                            ngx_chash_worker_number(f, s, now));
            break;
        }
    }

    return p;
}


/*
 * The Prometheus text format (0.0.4): each family once, with HELP and TYPE,
 * its samples for every upstream together.
 */
static u_char *
ngx_chash_status_prometheus(ngx_chash_status_t **sets, u_char *p,
    ngx_pool_t *pool)
{
    ngx_uint_t                    i, f, set, n, base;
    ngx_chash_status_t           *st;
    ngx_chash_status_view_t      *views;
    ngx_chash_status_upstream_t  *u;

    n = 0;

    for (set = 0; set < 2; set++) {
        n += sets[set] ? sets[set]->upstreams.nelts : 0;
    }

    views = ngx_pcalloc(pool, (n + 1) * sizeof(ngx_chash_status_view_t));
    if (views == NULL) {
        return NULL;
    }

    base = 0;

    for (set = 0; set < 2; set++) {
        st = sets[set];

        if (st == NULL) {
            continue;
        }

        for (i = 0; i < st->upstreams.nelts; i++) {
            if (st->shm
                && ngx_chash_status_view(st, i, pool, &views[base + i])
                   != NGX_OK)
            {
                return NULL;
            }
        }

        base += st->upstreams.nelts;
    }

    for (f = 0; f < NGX_CHASH_F_COUNT; f++) {
        p = ngx_sprintf(p, "# HELP %s %s\n# TYPE %s %s\n",
                        ngx_chash_families[f][0], ngx_chash_families[f][2],
                        ngx_chash_families[f][0], ngx_chash_families[f][1]);

        /* sets[0] the HTTP upstreams, sets[1] the stream ones (or NULL) */
        base = 0;

        for (set = 0; set < 2; set++) {
            st = sets[set];

            if (st == NULL) {
                continue;
            }

            u = st->upstreams.elts;

            for (i = 0; i < st->upstreams.nelts; i++) {
                if (u[i].snap->current && st->shm) {
                    p = ngx_chash_status_prom_upstream(p, f, set, &u[i],
                                                       &views[base + i]);
                }
            }

            base += st->upstreams.nelts;
        }
    }

    return p;
}


static u_char *
ngx_chash_status_json_refusal(u_char *p, ngx_chash_status_slot_t *s)
{
    if (s == NULL || s->refused_at == 0) {
        return ngx_sprintf(p, "null");
    }

    p = ngx_sprintf(p, "{\"check\":\"");
    p = ngx_chash_esc(p, s->refused_check, 0);
    p = ngx_sprintf(p, "\",\"message\":\"");
    p = ngx_chash_esc(p, s->refused_message, 0);

    return ngx_sprintf(p, "\",\"at\":%uA,\"ring\":\"%s\"}", s->refused_at,
                       s->refused_side ? "new" : "old");
}


/* The JSON object of st's upstreams, by name, at p. */
static u_char *
ngx_chash_status_json(ngx_chash_status_t *st, u_char *p, ngx_pool_t *pool)
{
    ngx_uint_t                    i, w, k, first;
    ngx_chash_gen_t              *g, *ng;
    ngx_chash_status_view_t       v;
    ngx_chash_status_slot_t      *s;
    ngx_chash_status_upstream_t  *u;

    u = st->upstreams.elts;
    *p++ = '{';

    for (i = 0; i < st->upstreams.nelts; i++) {
        g = u[i].snap->current;
        ng = u[i].next ? u[i].next->current : NULL;

        if (g == NULL || st->shm == NULL) {
            continue;
        }

        if (ngx_chash_status_view(st, i, pool, &v) != NGX_OK) {
            return NULL;
        }

        if (p[-1] != '{') {
            *p++ = ',';
        }

        *p++ = '"';
        p = ngx_chash_escape(p, u[i].name->data, u[i].name->len, 0);
        p = ngx_sprintf(p, "\":{\"file\":\"");
        p = ngx_chash_escape(p, u[i].snap->path.data, u[i].snap->path.len, 0);
        p = ngx_sprintf(p, "\",\"config_version\":%uL,\"highest_version\":%uL,"
                        "\"fingerprint\":\"%*s\",\"label\":\"",
                        g->info.config_version, v.highest[0], (size_t) 16,
                        g->fingerprint);
        p = ngx_chash_esc(p, chash_snapshot_label(g->snapshot), 0);
        p = ngx_sprintf(p, "\",\"key_id\":\"%s\",\"flavor\":\"%s\","
                        "\"points\":%uL,\"nodes\":%uD,\"loaded_at\":%T,"
                        "\"mode\":\"%s\",\"mapped\":%s,\"state\":%s,"
                        "\"state_file\":\"",
                        g->key_id, ngx_chash_flavor_name(g->info.flavor),
                        g->info.points, g->info.nodes, g->loaded_at,
                        ngx_chash_mode_name(g->info.mode),
                        g->info.mode == CHASH_LOAD_MAP ? "true" : "false",
                        u[i].snap->state_dir.len ? "true" : "false");
        p = ngx_chash_escape(p, u[i].snap->state_file.data,
                             u[i].snap->state_file.len, 0);
        p = ngx_sprintf(p, "\",\"expires\":%L,\"expired\":%s,"
                        "\"workers_agree\":%s,\"workers\":[",
                        g->info.expires_unix_seconds,
                        g->info.expires_unix_seconds != 0
                        && ngx_time() >= (time_t) g->info.expires_unix_seconds
                        ? "true" : "false",
                        v.versions[0] <= 1 && v.versions[1] <= 1
                        ? "true" : "false");

        first = 1;

        for (w = 0; w < v.nslots; w++) {
            if (!v.live[w]) {
                continue;
            }

            s = &v.slot[w];

            p = ngx_sprintf(p, "%s{\"pid\":%uA,\"config_version\":%uA",
                            first ? "" : ",", s->pid, s->version[0]);
            if (ng) {
                p = ngx_sprintf(p, ",\"migration_config_version\":%uA",
                                s->version[1]);
            }

            p = ngx_sprintf(p, ",\"generations\":%uA,\"oldest_retired_at\":"
                            "%uA,\"loading_since\":%uA,\"state_error\":%s,"
                            "\"last_refusal\":", s->generations,
                            s->oldest_retired, s->loading_since,
                            s->state_error ? "true" : "false");
            p = ngx_chash_status_json_refusal(p, s);

            *p++ = '}';
            first = 0;
        }

        p = ngx_sprintf(p, "],\"loads\":{\"ok\":%uL,\"refused\":%uL},"
                        "\"last_refusal\":", v.loads_ok, v.loads_refused);
        p = ngx_chash_status_json_refusal(p, v.newest);

        p = ngx_sprintf(p, ",\"requests\":{\"old\":%uL,\"new\":%uL},"
                        "\"bounded_load_passes\":%uL,\"subsets\":{",
                        v.requests[0], v.requests[1], v.passes);

        for (k = 0; k < g->nsubsets && k < NGX_CHASH_STATUS_SUBSETS; k++) {
            p = ngx_sprintf(p, "%s\"", k ? "," : "");
            p = ngx_chash_escape(p, g->subsets[k].name.data,
                                 g->subsets[k].name.len, 0);
            p = ngx_sprintf(p, "\":%uL", v.subset[k]);
        }

        p = ngx_sprintf(p, "},\"unknown_subset\":%uL", v.unknown);

        if (ng) {
            p = ngx_sprintf(p, ",\"migration\":{\"file\":\"");
            p = ngx_chash_escape(p, u[i].next->path.data, u[i].next->path.len,
                                 0);
            p = ngx_sprintf(p, "\",\"config_version\":%uL,\"highest_version\":"
                            "%uL,\"fingerprint\":\"%*s\",\"rollout\":\"",
                            ng->info.config_version, v.highest[1],
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
    size_t                        size, strings, name;
    u_char                       *p;
    ngx_buf_t                    *b;
    ngx_uint_t                    i, set;
    ngx_chash_gen_t              *g;
    ngx_chash_status_t           *sets[2];
    ngx_chash_status_upstream_t  *u;

    sets[0] = st;
    sets[1] = stream;

    /*
     * An upper bound, each string escaped (at most 7 bytes a byte), with
     * 256 bytes a line for names and numbers: the upstream's lines (at
     * most 48, and one a subset) hold at most all of its strings each; a
     * worker's lines (at most 16) its upstream's name and a refusal.
     */
    size = 1024 + NGX_CHASH_F_COUNT * 512;

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

            name = u[i].name->len;
            strings = name + u[i].snap->path.len
                      + u[i].snap->state_file.len
                      + (u[i].next ? u[i].next->path.len : 0)
                      + ngx_strlen(chash_snapshot_label(g->snapshot))
                      + u[i].rollout.len + 64;

            size += (48 + ngx_min(g->nsubsets, NGX_CHASH_STATUS_SUBSETS))
                    * (256 + 7 * strings)
                    + sets[set]->nslots
                      * (16 * (256 + 7 * name)
                         + 7 * (NGX_CHASH_CHECK_LEN
                                + NGX_CHASH_STATUS_MESSAGE));
        }
    }

    b = ngx_create_temp_buf(pool, size);
    if (b == NULL) {
        return NULL;
    }

    if (prom) {
        p = ngx_chash_status_prometheus(sets, b->last, pool);
        if (p == NULL) {
            return NULL;
        }

        b->last = p;
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
