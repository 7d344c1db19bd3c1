/*
 * The options of the other programs' flavors on `chash` (flavor=haproxy,
 * ketama-md5, varnish-shard, envoy-ring, envoy-maglev): which parameter is
 * which option, their values, and the check of the whole set on a libchash
 * builder, so that libchash's own refusals are nginx -t errors.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <stddef.h>
#include <stdlib.h>

#include "ngx_chash_core.h"


/* Each option is read after the loop over the parameters, when the flavor
 * is known (ngx_chash_parse_directive). */

#define ngx_chash_fl(f)  ((ngx_uint_t) 1 << (f))

/* Words of enumerated options, in the order of their libchash values. */
static const char  *ngx_chash_haproxy_hashes[] = {
    "sdbm", "djb2", "wt6", "crc32", NULL
};
static const char  *ngx_chash_haproxy_keys[] = {
    "id", "id-unfixed-30", NULL
};
static const char  *ngx_chash_ketama_variants[] = {
    "libmemcached-weighted", "libmemcached-unweighted", "twemproxy",
    "libketama", "libmemcached-spy", "libmemcached-spy-weighted", NULL
};
static const char  *ngx_chash_ketama_hashes[] = {
    "default", "md5", "one_at_a_time", "fnv1a_64", "fnv1_64", "fnv1_32",
    "fnv1a_32", "crc32a", "crc32", "crc16", "hsieh", "murmur", "jenkins",
    "murmur3", NULL
};
static const char  *ngx_chash_envoy_hashes[] = {
    "xx_hash", "murmur_hash_2", NULL
};

#define NGX_CHASH_RO(field)                                                  \
    offsetof(chash_ring_options, field),                                     \
    sizeof(((chash_ring_options *) 0)->field)

#define NGX_CHASH_FL_HA      ngx_chash_fl(CHASH_FLAVOR_HAPROXY)
#define NGX_CHASH_FL_KETAMA  ngx_chash_fl(CHASH_FLAVOR_KETAMA_MD5)
#define NGX_CHASH_FL_RING    ngx_chash_fl(CHASH_FLAVOR_ENVOY_RING)

/*
 * Each option: its name (with its '=', or a bare word), the flavors taking
 * it, and its value: one of words (its index), or a number 1..max (0: any
 * 64-bit count), stored in the ring options' field at offset (size 0: read
 * by hand). hash_function= of envoy-ring is the last row
 * (NGX_CHASH_OPT_ENVOY_HASH), never matched by name.
 */
static const struct {
    const char    *name;
    ngx_uint_t     flavors;
    const char   **words;
    int64_t        max;
    size_t         offset;
    size_t         size;
} ngx_chash_opts[NGX_CHASH_NOPTS + 1] = {
    { "hash_function=", NGX_CHASH_FL_HA | NGX_CHASH_FL_RING,
      ngx_chash_haproxy_hashes, 0, NGX_CHASH_RO(haproxy_hash) },
    { "avalanche", NGX_CHASH_FL_HA, NULL, 0, 0, 0 },
    { "server_key=", NGX_CHASH_FL_HA, ngx_chash_haproxy_keys, 0,
      NGX_CHASH_RO(haproxy_server_key) },
    { "server_ids=", NGX_CHASH_FL_HA, NULL, 0, 0, 0 },
    { "variant=", NGX_CHASH_FL_KETAMA, ngx_chash_ketama_variants, 0,
      NGX_CHASH_RO(ketama_variant) },
    { "key_hash=", NGX_CHASH_FL_KETAMA, ngx_chash_ketama_hashes, 0,
      NGX_CHASH_RO(ketama_key_hash) },
    { "default_port=", NGX_CHASH_FL_KETAMA, NULL, 65535,
      NGX_CHASH_RO(ketama_default_port) },
    { "hash_tag=", NGX_CHASH_FL_KETAMA, NULL, 0, 0, 0 },
    { "replicas=", ngx_chash_fl(CHASH_FLAVOR_VARNISH_SHARD), NULL,
      0xffffffff, NGX_CHASH_RO(varnish_replicas) },
    { "min_ring_size=", NGX_CHASH_FL_RING, NULL, 0,
      NGX_CHASH_RO(envoy_minimum_ring_size) },
    { "max_ring_size=", NGX_CHASH_FL_RING, NULL, 0,
      NGX_CHASH_RO(envoy_maximum_ring_size) },
    { "table_size=", ngx_chash_fl(CHASH_FLAVOR_ENVOY_MAGLEV), NULL, 0,
      NGX_CHASH_RO(maglev_table_size) },
    { "hash_function=", NGX_CHASH_FL_RING, ngx_chash_envoy_hashes, 0,
      NGX_CHASH_RO(envoy_hash) },
};

#define NGX_CHASH_OPT_ENVOY_HASH  NGX_CHASH_NOPTS


/* The option a parameter of `chash` gives (NGX_CHASH_OPT_*), or
 * NGX_CHASH_NOPTS: not one of them. */
ngx_uint_t
ngx_chash_flavor_option(ngx_str_t *param)
{
    ngx_uint_t  k, len;

    for (k = 0; k < NGX_CHASH_NOPTS; k++) {
        len = ngx_strlen(ngx_chash_opts[k].name);

        if (ngx_chash_opts[k].name[len - 1] == '='
            ? param->len > len
              && ngx_strncmp(param->data, ngx_chash_opts[k].name, len) == 0
            : param->len == len
              && ngx_strcmp(param->data, ngx_chash_opts[k].name) == 0)
        {
            break;
        }
    }

    return k;
}


/* The index of value in words, or NGX_ERROR. */
static ngx_int_t
ngx_chash_word(ngx_str_t *value, const char **words)
{
    ngx_int_t  k;

    for (k = 0; words[k]; k++) {
        if (value->len == ngx_strlen(words[k])
            && ngx_strncmp(value->data, words[k], value->len) == 0)
        {
            return k;
        }
    }

    return NGX_ERROR;
}


/* server_ids=1,0,7: one id a server line, 0..2^31 - 1 (0: HAProxy's). */
static ngx_int_t
ngx_chash_server_ids(ngx_conf_t *cf, ngx_str_t *value,
    ngx_chash_flavor_options_t *o)
{
    u_char      *p, *last, *comma;
    ngx_int_t    id;
    ngx_uint_t   n;

    n = 1;

    for (p = value->data; p < value->data + value->len; p++) {
        n += *p == ',';
    }

    o->server_ids = ngx_palloc(cf->pool, n * sizeof(uint32_t));
    if (o->server_ids == NULL) {
        return NGX_ERROR;
    }

    o->nserver_ids = 0;
    p = value->data;
    last = value->data + value->len;

    while (o->nserver_ids < n) {
        comma = ngx_strlchr(p, last, ',');
        if (comma == NULL) {
            comma = last;
        }

        id = ngx_atoi(p, comma - p);
        if (id == NGX_ERROR || id > 0x7fffffff) {
            return NGX_ERROR;
        }

        o->server_ids[o->nserver_ids++] = (uint32_t) id;
        p = comma + 1;
    }

    return NGX_OK;
}


/* Reads option k's value into the ring options; NGX_ERROR: a bad value. */
static ngx_int_t
ngx_chash_option(ngx_conf_t *cf, ngx_uint_t k, ngx_str_t *value,
    ngx_chash_flavor_options_t *o)
{
    off_t    v;
    u_char  *field;

    if (k == NGX_CHASH_OPT_SERVER_IDS) {
        return ngx_chash_server_ids(cf, value, o);
    }

    if (k == NGX_CHASH_OPT_HASH_TAG) {
        if (value->len != 2) {
            return NGX_ERROR;
        }

        o->ring.ketama_hash_tag[0] = value->data[0];
        o->ring.ketama_hash_tag[1] = value->data[1];
        return NGX_OK;
    }

    if (ngx_chash_opts[k].words) {
        v = ngx_chash_word(value, ngx_chash_opts[k].words);

    } else {
        v = ngx_atoof(value->data, value->len);

        if (v < 1 || (ngx_chash_opts[k].max && v > ngx_chash_opts[k].max)) {
            v = NGX_ERROR;
        }
    }

    if (v == NGX_ERROR) {
        return NGX_ERROR;
    }

    field = (u_char *) &o->ring + ngx_chash_opts[k].offset;

    if (ngx_chash_opts[k].size == sizeof(uint64_t)) {
        *(uint64_t *) field = (uint64_t) v;

    } else {
        *(uint32_t *) field = (uint32_t) v;
    }

    return NGX_OK;
}


/*
 * The other programs' options of a directive of flavor d->flavor: opt[k]
 * the parameter that gave option k (NULL: not given). Each must be one of
 * the flavor's; the options are then tried on a builder, so that libchash's
 * own refusals (a table size that is not a prime, a minimum ring size over
 * the maximum) are nginx -t errors on the directive's line.
 */
char *
ngx_chash_parse_options(ngx_conf_t *cf, ngx_chash_directive_t *d,
    ngx_str_t **opt)
{
    ngx_str_t                    v;
    ngx_uint_t                   k, len;
    chash_builder               *b;
    ngx_chash_flavor_options_t  *o = &d->options;

    o->ring.size = sizeof(chash_ring_options);

    for (k = 0; k < NGX_CHASH_NOPTS; k++) {
        if (opt[k] == NULL) {
            continue;
        }

        if (!(ngx_chash_opts[k].flavors & ngx_chash_fl(d->flavor))) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"%V\" is not an option of flavor=%s",
                               opt[k], ngx_chash_flavor_name(d->flavor));
            return NGX_CONF_ERROR;
        }

        o->set = 1;

        if (k == NGX_CHASH_OPT_AVALANCHE) {
            continue;
        }

        len = ngx_strlen(ngx_chash_opts[k].name);
        v.data = opt[k]->data + len;
        v.len = opt[k]->len - len;

        if (ngx_chash_option(cf, k == NGX_CHASH_OPT_HASH_FUNCTION
                                 && d->flavor == CHASH_FLAVOR_ENVOY_RING
                                 ? NGX_CHASH_OPT_ENVOY_HASH : k, &v, o)
            != NGX_OK)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", opt[k]);
            return NGX_CONF_ERROR;
        }
    }

    if (d->flavor == CHASH_FLAVOR_HAPROXY) {
        /* `hash-type consistent` alone: sdbm with avalanche (0); a named
         * function: avalanche only with `avalanche` */
        o->ring.haproxy_avalanche = opt[NGX_CHASH_OPT_AVALANCHE] ? 1
                                    : opt[NGX_CHASH_OPT_HASH_FUNCTION] ? 2 : 0;
    }

    if (d->bounded_load > 0 && (d->flavor == CHASH_FLAVOR_ENVOY_RING
                                || d->flavor == CHASH_FLAVOR_ENVOY_MAGLEV))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"bounded_load=\" is not for flavor=%s (Envoy's "
                           "hash_balance_factor probes hosts in an order "
                           "libchash does not reproduce)",
                           ngx_chash_flavor_name(d->flavor));
        return NGX_CONF_ERROR;
    }

    if (!ngx_chash_flavor_other(d->flavor)) {
        return NGX_CONF_OK;
    }

    if (chash_builder_new_with_options((uint32_t) d->flavor, &o->ring, &b)
        != CHASH_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "flavor=%s: %s",
                           ngx_chash_flavor_name(d->flavor),
                           chash_last_error());
        return NGX_CONF_ERROR;
    }

    chash_builder_free(b);

    return NGX_CONF_OK;
}
