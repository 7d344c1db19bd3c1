/*
 * The directives' parameters and the policy of an upstream: `chash`'s
 * parameters, chash_snapshot's and chash_migrate's, the checks of a
 * snapshot upstream at configuration time and, per request or session,
 * the ring a key takes (migration) and its subset.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "ngx_chash_core.h"


/*
 * Whether arg is the parameter "name=VALUE" (name given with its '='); if
 * so, VALUE is in *value.
 */
static ngx_uint_t
ngx_chash_param_value(ngx_str_t *arg, char *name, ngx_str_t *value)
{
    size_t  len;

    len = ngx_strlen(name);

    if (arg->len < len || ngx_strncmp(arg->data, name, len) != 0) {
        return 0;
    }

    value->data = arg->data + len;
    value->len = arg->len - len;

    return 1;
}


static char *
ngx_chash_invalid_param(ngx_conf_t *cf, ngx_str_t *arg)
{
    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"", arg);

    return NGX_CONF_ERROR;
}


static ngx_int_t
ngx_chash_parse_u64(ngx_str_t *value, uint64_t *out)
{
    off_t  n;

    n = ngx_atoof(value->data, value->len);
    if (n == NGX_ERROR) {
        return NGX_ERROR;
    }

    *out = (uint64_t) n;

    return NGX_OK;
}


ngx_int_t
ngx_chash_parse_bounded_load(ngx_str_t *value, double *factor)
{
    ngx_int_t  ppm;

    ppm = ngx_atofp(value->data, value->len, 6);

    /* over 1, and at most 10^6: a larger factor bounds nothing */
    if (ppm == NGX_ERROR || ppm <= 1000000
        || ppm > (ngx_int_t) 1000000 * 1000000)
    {
        return NGX_ERROR;
    }

    *factor = (double) ppm / 1000000;

    return NGX_OK;
}


char *
ngx_chash_parse_directive(ngx_conf_t *cf, ngx_str_t *value, ngx_uint_t n,
    ngx_chash_directive_t *d)
{
    u_char      takers[128];
    ngx_int_t   multiple;
    ngx_str_t   s, *opt[NGX_CHASH_MAX_OPTIONS];
    ngx_uint_t  i, f, nopt;

    ngx_memzero(d, sizeof(ngx_chash_directive_t));
    d->flavor = CHASH_FLAVOR_NGINX;
    multiple = 0;
    nopt = 0;

    for (i = 2; i < n; i++) {

        if (ngx_chash_is_flavor_option(&value[i])) {
            if (nopt == NGX_CHASH_MAX_OPTIONS) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "more than %d flavor options",
                                   NGX_CHASH_MAX_OPTIONS);
                return NGX_CONF_ERROR;
            }

            opt[nopt++] = &value[i];
            continue;
        }

        if (ngx_chash_param_value(&value[i], "flavor=", &s)) {
            if (ngx_chash_flavor_parse(&s, &f) != NGX_OK) {
                goto invalid;
            }

            d->flavor = f;
            d->flavor_set = 1;
            continue;
        }

        if (ngx_strncmp(value[i].data, "id=", 3) == 0) {
            if (value[i].len == sizeof("id=address") - 1
                && ngx_strcmp(value[i].data, "id=address") == 0)
            {
                d->id_form = NGX_CHASH_ID_ADDRESS;

            } else if (value[i].len == sizeof("id=apisix") - 1
                       && ngx_strcmp(value[i].data, "id=apisix") == 0)
            {
                d->id_form = NGX_CHASH_ID_APISIX;

            } else {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\": id= takes "
                                   "address (the server's text as written) "
                                   "or apisix (its host and port joined by "
                                   "a NUL byte)", &value[i]);
                return NGX_CONF_ERROR;
            }

            d->id_set = 1;
            continue;
        }

        if (ngx_chash_param_value(&value[i], "subset=", &d->subset)) {
            d->has_subset = 1;
            continue;
        }

        if (ngx_chash_param_value(&value[i], "bounded_load=", &s)) {
            if (ngx_chash_parse_bounded_load(&s, &d->bounded_load)
                != NGX_OK)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\": "
                                   "bounded_load= takes a factor over 1, "
                                   "such as 1.25", &value[i]);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_chash_param_value(&value[i], "multiple=", &s)) {
            multiple = ngx_atoi(s.data, s.len);

            if (multiple == NGX_ERROR || multiple == 0
                || multiple > 0xffffffff)
            {
                goto invalid;
            }

            continue;
        }

        goto invalid;
    }

    if (multiple) {
        if (!ngx_chash_flavor_property(d->flavor,
                                       CHASH_PROPERTY_TAKES_MULTIPLE))
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"multiple=\" is for %s only (flavor=%s "
                               "has its program's own point count)",
                               ngx_chash_flavors_with(
                                   CHASH_PROPERTY_TAKES_MULTIPLE, takers,
                                   sizeof(takers)),
                               ngx_chash_flavor_name(d->flavor));
            return NGX_CONF_ERROR;
        }

        d->multiple = multiple;
    }

    if (d->id_set && d->flavor != CHASH_FLAVOR_RESTY) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"id=\" is for flavor=resty only (the other "
                           "flavors hash the server's address)");
        return NGX_CONF_ERROR;
    }

    return ngx_chash_parse_options(cf, d, opt, nopt);

invalid:

    return ngx_chash_invalid_param(cf, &value[i]);
}


char *
ngx_chash_source_parse(ngx_conf_t *cf, ngx_chash_source_t *src,
    ngx_str_t *value, ngx_uint_t n, ngx_str_t *rest, ngx_uint_t *nrest)
{
    u_char      *keys;
    ngx_int_t    v;
    ngx_str_t    s, file;
    ngx_uint_t   i;

    src->path = value[1];

    if (ngx_conf_full_name(cf->cycle, &src->path, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    /* NUL-terminated for stat() and chash_snapshot_load() */
    {
        u_char  *p = ngx_pnalloc(cf->pool, src->path.len + 1);

        if (p == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_memcpy(p, src->path.data, src->path.len);
        p[src->path.len] = '\0';
        src->path.data = p;
    }

    src->poll = 1000;
    src->mode = CHASH_LOAD_SEALED;
    src->state = 1;
    ngx_str_set(&src->thread_pool, "default");
    *nrest = 0;

    for (i = 2; i < n; i++) {

        if (ngx_chash_param_value(&value[i], "trusted_key=", &file)) {
            if (ngx_conf_full_name(cf->cycle, &file, 1) != NGX_OK) {
                return NGX_CONF_ERROR;
            }

            keys = ngx_palloc(cf->pool,
                          (src->n_trusted_keys + 1) * CHASH_PUBLIC_KEY_SIZE);
            if (keys == NULL) {
                return NGX_CONF_ERROR;
            }

            if (src->n_trusted_keys) {
                ngx_memcpy(keys, src->trusted_keys,
                           src->n_trusted_keys * CHASH_PUBLIC_KEY_SIZE);
            }

            {
                u_char  *z = ngx_pnalloc(cf->pool, file.len + 1);

                if (z == NULL) {
                    return NGX_CONF_ERROR;
                }

                ngx_cpystrn(z, file.data, file.len + 1);

                if (chash_public_key_read((char *) z,
                                          keys + src->n_trusted_keys
                                                 * CHASH_PUBLIC_KEY_SIZE)
                    != CHASH_OK)
                {
                    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                       "%V: trusted_key \"%s\": %s",
                                       &value[0], z, chash_last_error());
                    return NGX_CONF_ERROR;
                }
            }

            src->trusted_keys = keys;
            src->n_trusted_keys++;
            continue;
        }

        if (ngx_chash_param_value(&value[i], "min_version=", &s)) {
            if (ngx_chash_parse_u64(&s, &src->min_version) != NGX_OK) {
                goto invalid;
            }

            continue;
        }

        if (ngx_chash_param_value(&value[i], "poll=", &s)) {
            if (s.len == 3 && ngx_strncmp(s.data, "off", 3) == 0) {
                src->poll = 0;
                continue;
            }

            src->poll = ngx_parse_time(&s, 0);
            if (src->poll == (ngx_msec_t) NGX_ERROR || src->poll == 0) {
                goto invalid;
            }

            continue;
        }

        if (ngx_chash_param_value(&value[i], "thread_pool=",
                                  &src->thread_pool))
        {
            continue;
        }

        if (value[i].len == 4 && ngx_strncmp(value[i].data, "copy", 4) == 0) {
            src->mode = CHASH_LOAD_COPY;
            continue;
        }

        if (value[i].len == 3 && ngx_strncmp(value[i].data, "map", 3) == 0) {
            src->mode = CHASH_LOAD_MAP;
            continue;
        }

        if (ngx_chash_param_value(&value[i], "threads=", &s)) {
            v = ngx_atoi(s.data, s.len);
            if (v == NGX_ERROR || v == 0 || v > 256) {
                goto invalid;
            }

            src->threads = (uint32_t) v;
            continue;
        }

        if (ngx_chash_param_value(&value[i], "max_size=", &s)) {
            v = ngx_parse_offset(&s);
            if (v == NGX_ERROR || v == 0) {
                goto invalid;
            }

            src->max_size = (uint64_t) v;
            continue;
        }

        if (value[i].len == 9
            && ngx_strncmp(value[i].data, "state=off", 9) == 0)
        {
            src->state = 0;
            continue;
        }

        rest[(*nrest)++] = value[i];
    }

#if (NGX_THREADS)
    if (src->poll && ngx_thread_pool_add(cf, &src->thread_pool) == NULL) {
        return NGX_CONF_ERROR;
    }
#else
    if (src->poll) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V: poll needs nginx built "
                           "--with-threads (or poll=off)", &value[0]);
        return NGX_CONF_ERROR;
    }
#endif

    return NGX_CONF_OK;

invalid:

    return ngx_chash_invalid_param(cf, &value[i]);
}


ngx_uint_t
ngx_chash_migration_new_side(ngx_str_t *key, uint64_t seed,
    uint32_t rollout_ppm)
{
    if (rollout_ppm == 0) {
        return 0;
    }

    if (rollout_ppm >= CHASH_ROLLOUT_SCALE) {
        return 1;
    }

    return chash_migration_bucket(chash_migration_key_hash(key->data, key->len,
                                                           seed))
           < rollout_ppm;
}


ngx_int_t
ngx_chash_parse_rollout(u_char *p, size_t len)
{
    char    buf[64], *end;
    double  value, scale;

    scale = 1;

    if (len && p[len - 1] == '%') {
        scale = 100;
        len--;
    }

    if (len == 0 || len >= sizeof(buf)) {
        return NGX_ERROR;
    }

    ngx_memcpy(buf, p, len);
    buf[len] = '\0';

    /* exactly as `chash route --rollout` and RingMigration::SetRollout:
     * strtod, divided by 100 for a percentage, floor(fraction * 10^6) */
    value = strtod(buf, &end) / scale;

    if (end != buf + len || !(value >= 0 && value <= 1)) {
        return NGX_ERROR;
    }

    return (ngx_int_t) floor(value * CHASH_ROLLOUT_SCALE);
}


ngx_uint_t
ngx_chash_scope_in(ngx_str_t *v)
{
    if (v->len == 0) {
        return 0;
    }

    if (v->len == 1 && v->data[0] == '0') {
        return 0;
    }

    if (v->len == 3 && ngx_strncasecmp(v->data, (u_char *) "off", 3) == 0) {
        return 0;
    }

    return 1;
}


/* ---- Policy: what both modules share about a snapshot upstream ----------- */

char *
ngx_chash_parse_peer_params(ngx_conf_t *cf, ngx_str_t *rest, ngx_uint_t nrest,
    ngx_chash_peer_params_t *pp)
{
    time_t       t;
    ngx_int_t    n;
    ngx_str_t    s;
    ngx_uint_t   i;
    ngx_uint_t  *count;

    for (i = 0; i < nrest; i++) {

        if (ngx_chash_param_value(&rest[i], "fail_timeout=", &s)) {
            t = ngx_parse_time(&s, 1);
            if (t == (time_t) NGX_ERROR) {
                goto invalid;
            }

            pp->fail_timeout = t;
            continue;
        }

        if (ngx_chash_param_value(&rest[i], "max_fails=", &s)) {
            count = &pp->max_fails;

        } else if (ngx_chash_param_value(&rest[i], "max_conns=", &s)) {
            count = &pp->max_conns;

        } else {
            goto invalid;
        }

        n = ngx_atoi(s.data, s.len);
        if (n == NGX_ERROR) {
            goto invalid;
        }

        *count = n;
    }

    return NGX_CONF_OK;

invalid:

    return ngx_chash_invalid_param(cf, &rest[i]);
}


char *
ngx_chash_parse_migrate_params(ngx_conf_t *cf, ngx_chash_source_t *next,
    ngx_str_t *rest, ngx_uint_t nrest, ngx_chash_migrate_params_t *mp)
{
    ngx_str_t   s;
    ngx_uint_t  i, has_rollout;

    has_rollout = 0;

    for (i = 0; i < nrest; i++) {

        if (ngx_chash_param_value(&rest[i], "rollout=", &mp->rollout)) {
            has_rollout = 1;

            if (ngx_strlchr(mp->rollout.data,
                            mp->rollout.data + mp->rollout.len, '$'))
            {
                mp->rollout_is_var = 1;
                continue;
            }

            mp->rollout_ppm = ngx_chash_parse_rollout(mp->rollout.data,
                                                      mp->rollout.len);
            if (mp->rollout_ppm == NGX_ERROR) {
                goto invalid;
            }

            continue;
        }

        if (ngx_chash_param_value(&rest[i], "scope=", &mp->scope)) {
            mp->has_scope = 1;
            continue;
        }

        if (ngx_chash_param_value(&rest[i], "seed=", &s)) {
            if (ngx_chash_parse_u64(&s, &next->seed) != NGX_OK) {
                goto invalid;
            }

            continue;
        }

        if (rest[i].len == 14
            && ngx_strncmp(rest[i].data, "allow_mismatch", 14) == 0)
        {
            next->allow_mismatch = 1;
            continue;
        }

        goto invalid;
    }

    if (!has_rollout) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "chash_migrate needs rollout=VALUE");
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;

invalid:

    return ngx_chash_invalid_param(cf, &rest[i]);
}


/* Why a snapshot upstream refuses what pc says it has, or NULL: the first
 * of the refusals, in the order the manual lists them. */
static const char *
ngx_chash_policy_refusal(const ngx_chash_policy_conf_t *pc)
{
    ngx_uint_t  i;

    const struct {
        ngx_uint_t   present;
        const char  *why;
    } refusals[] = {
        { pc->has_servers,
          "the upstream has chash_snapshot: its servers are the "
          "snapshot's nodes; remove its `server` lines" },
        { pc->has_zone,
          "the upstream has chash_snapshot: `zone` is not supported "
          "(its peers change with the file, per worker)" },
        { pc->multiple != 0,
          "\"multiple=\" comes from the snapshot with chash_snapshot" },
        { pc->id_set != 0,
          "\"id=\" is for server lines: with chash_snapshot, the ids "
          "are the snapshot's node addresses" },
        { pc->has_options,
          "the ring's options (hash_function=, replicas=, ...) come "
          "from the snapshot with chash_snapshot" },
    };

    for (i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        if (refusals[i].present) {
            return refusals[i].why;
        }
    }

    return NULL;
}


ngx_int_t
ngx_chash_policy_init_conf(ngx_conf_t *cf, const ngx_chash_upstream_t *up,
    ngx_chash_source_t *snap, ngx_chash_source_t *next,
    ngx_chash_policy_conf_t *pc)
{
    u_char               err[NGX_CHASH_ERR_LEN];
    ngx_uint_t           i;
    const char          *refusal;
    ngx_chash_source_t  *srcs[2];

    refusal = ngx_chash_policy_refusal(pc);

    if (refusal) {
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up, "%s", refusal);
        return NGX_ERROR;
    }

    srcs[0] = snap;
    srcs[1] = next;

    if (next) {
        snap->seed = next->seed;
        snap->allow_mismatch = next->allow_mismatch;
    }

    for (i = 0; i < 2 && srcs[i]; i++) {
        srcs[i]->upstream = up->name;
        srcs[i]->side = i;
        srcs[i]->flavor = pc->flavor;
        srcs[i]->bounded_load = pc->bounded_load;
        srcs[i]->module_conf = pc->module_conf;
        srcs[i]->build_peers = pc->build_peers;
        srcs[i]->free_peers = pc->free_peers;

        if (srcs[i]->state && pc->state_dir) {
            srcs[i]->state_dir = *pc->state_dir;
        }

        if (ngx_chash_source_name(srcs[i], pc->proto) != NGX_OK
            || ngx_chash_source_init_conf(cf, up, srcs[i]) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (next == NULL) {
        return NGX_OK;
    }

    /* the new file's backends must be the old one's: at every load of
     * either (ngx_chash_reload.c serves a matching pair together) */
    if (ngx_chash_gen_match(snap, snap->current, next->current, err,
                            sizeof(err))
        != NGX_OK)
    {
        ngx_chash_upstream_error(cf, NGX_LOG_EMERG, up, "%V \"%V\": check "
                                 "backend_mismatch failed: %s",
                                 &next->directive, &next->path, err);
        return NGX_ERROR;
    }

    next->partner = snap;
    snap->partner = next;

    return NGX_OK;
}


char *
ngx_chash_state_path(ngx_conf_t *cf, ngx_str_t *value, ngx_str_t *out)
{
    u_char      *p;
    ngx_str_t    name;
    ngx_path_t  *path;

    if (value->len == 3 && ngx_strncmp(value->data, "off", 3) == 0) {
        ngx_str_null(out);
        return NGX_CONF_OK;
    }

    if (value->len) {
        name = *value;

    } else {
        /*
         * Next to nginx's own temp paths (the client body's parent), one
         * directory an instance: "chash." and the CRC32 of the
         * configuration file's full name (with -p, the prefix's), so that
         * two nginx of one host never share records by default.
         */
        name.data = (u_char *) NGX_HTTP_CLIENT_TEMP_PATH;
        name.len = sizeof(NGX_HTTP_CLIENT_TEMP_PATH) - 1;

        while (name.len && name.data[name.len - 1] != '/') {
            name.len--;
        }

        p = ngx_pnalloc(cf->pool, name.len + sizeof("chash.01234567"));
        if (p == NULL) {
            return NGX_CONF_ERROR;
        }

        name.len = ngx_sprintf(p, "%Vchash.%08xD%Z", &name,
                               ngx_crc32_long(cf->cycle->conf_file.data,
                                              cf->cycle->conf_file.len))
                   - p - 1;
        name.data = p;
    }

    if (ngx_conf_full_name(cf->cycle, &name, 0) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    /* NUL-terminated (ngx_add_path compares names with strcmp) */
    p = ngx_pnalloc(cf->pool, name.len + 1);
    path = ngx_pcalloc(cf->pool, sizeof(ngx_path_t));
    if (p == NULL || path == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_cpystrn(p, name.data, name.len + 1);
    name.data = p;

    /* created by the master with nginx's other paths, owned by the worker
     * user: the workers write the state, the master only reads it; not
     * registered for a configuration test, which leaves no trace */
    path->name = name;

    if (cf->conf_file && cf->conf_file->file.name.data) {
        path->conf_file = cf->conf_file->file.name.data;
        path->line = cf->conf_file->line;
    }

    if (!ngx_test_config && ngx_add_path(cf, &path) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    *out = name;

    return NGX_CONF_OK;
}


ngx_int_t
ngx_chash_rollout_value(ngx_str_t *v, ngx_str_t *upstream, ngx_log_t *log)
{
    ngx_int_t  ppm;

    ppm = ngx_chash_parse_rollout(v->data, v->len);

    if (ppm == NGX_ERROR) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "chash_migrate in upstream \"%V\": rollout \"%V\" is "
                      "not 0..1 or 0%%..100%%: old ring", upstream, v);
        return 0;
    }

    return ppm;
}


ngx_chash_gen_t *
ngx_chash_policy_choose(ngx_chash_source_t *snap, ngx_chash_source_t *next,
    ngx_str_t *key, ngx_int_t ppm, ngx_str_t *scope, ngx_uint_t *side)
{
    *side = 0;

    if (next && ngx_chash_scope_in(scope)
        && ngx_chash_migration_new_side(key, next->seed, (uint32_t) ppm))
    {
        *side = 1;
        return next->current;
    }

    return snap->current;
}


ngx_int_t
ngx_chash_policy_subset(ngx_chash_source_t *snap, ngx_chash_gen_t *gen,
    ngx_uint_t side, ngx_str_t *name, ngx_chash_subset_t **sub,
    ngx_log_t *log)
{
    ngx_chash_subset_t  *s;

    *sub = NULL;

    if (name->len == 0) {
        ngx_chash_status_count(snap, side, -1, 0);
        return NGX_OK;
    }

    s = ngx_chash_gen_subset(gen, name);

    if (s == NULL || chash_node_mask_count_available(s->mask) == 0) {
        /* isolation over availability: never the whole ring */
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "chash upstream \"%V\": %s subset \"%V\" in config "
                      "version %V", snap->upstream, s ? "empty" : "no", name,
                      &gen->version);
        ngx_chash_status_count(snap, side, -1, 1);
        return NGX_DECLINED;
    }

    ngx_chash_status_count(snap, side, s - gen->subsets, 0);
    *sub = s;

    return NGX_OK;
}
