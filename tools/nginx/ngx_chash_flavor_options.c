/*
 * The options of the other programs' flavors on `chash` (flavor=haproxy,
 * ketama-md5, varnish-shard, envoy-ring, envoy-maglev). Their names, values
 * and checks are libchash's flavor table (chash_flavor_option_name,
 * chash_ring_options_set): this file only spells them nginx's way
 * (NAME=VALUE, a switch as its bare NAME) and reads server_ids=, which is
 * per server line and the module's own. The whole set is then tried on a
 * libchash builder, so that libchash's own refusals are nginx -t errors.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_chash_core.h"


#define NGX_CHASH_SERVER_IDS  "server_ids="

/* The longest option name + '=' + value the module passes to libchash. */
#define NGX_CHASH_OPTION_TEXT  256


/* The name of an option parameter: the text before '=', or all of a bare
 * word. */
static ngx_str_t
ngx_chash_option_name(ngx_str_t *param)
{
    u_char     *eq;
    ngx_str_t   name;

    eq = ngx_strlchr(param->data, param->data + param->len, '=');
    name.data = param->data;
    name.len = eq ? (size_t) (eq - param->data) : param->len;

    return name;
}


static ngx_uint_t
ngx_chash_str_is(ngx_str_t *s, const char *word)
{
    return s->len == ngx_strlen(word)
           && ngx_strncmp(s->data, word, s->len) == 0;
}


ngx_uint_t
ngx_chash_is_flavor_option(ngx_str_t *param)
{
    uint32_t     f, i;
    ngx_str_t    name;
    const char  *option, *alias;

    if (param->len > sizeof(NGX_CHASH_SERVER_IDS) - 1
        && ngx_strncmp(param->data, NGX_CHASH_SERVER_IDS,
                       sizeof(NGX_CHASH_SERVER_IDS) - 1) == 0)
    {
        return 1;
    }

    name = ngx_chash_option_name(param);

    for (f = 0; chash_flavor_name(f) != NULL; f++) {
        for (i = 0; (option = chash_flavor_option_name(f, i)) != NULL; i++) {
            alias = chash_flavor_option_alias(f, i);

            if (ngx_chash_str_is(&name, option)
                || (alias[0] != '\0' && ngx_chash_str_is(&name, alias)))
            {
                return 1;
            }
        }
    }

    return 0;
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


/*
 * Sets one ring option of the directive's flavor from its parameter through
 * libchash (chash_ring_options_set), which says what is wrong with it: an
 * option of other flavors, a value it does not take.
 */
static char *
ngx_chash_ring_option(ngx_conf_t *cf, ngx_chash_directive_t *d,
    ngx_str_t *param)
{
    u_char      text[NGX_CHASH_OPTION_TEXT];
    ngx_str_t   name;
    const char *value;

    name = ngx_chash_option_name(param);

    if (param->len >= sizeof(text)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\": longer than %uz bytes",
                           param, sizeof(text) - 1);
        return NGX_CONF_ERROR;
    }

    /* "NAME\0VALUE\0"; a bare NAME is a switch turned on */
    ngx_memcpy(text, param->data, param->len);
    text[param->len] = '\0';

    if (name.len == param->len) {
        value = "on";

    } else {
        text[name.len] = '\0';
        value = (const char *) text + name.len + 1;
    }

    if (chash_ring_options_set(&d->options.ring, (uint32_t) d->flavor,
                               (const char *) text, value)
        == CHASH_OK)
    {
        return NGX_CONF_OK;
    }

    if (ngx_strstr(chash_last_error(), "not of flavor") != NULL
        || ngx_strstr(chash_last_error(), "not an option of flavor") != NULL)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" is not an option of flavor=%s: %s",
                           param, ngx_chash_flavor_name(d->flavor),
                           chash_last_error());

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\": %s", param,
                           chash_last_error());
    }

    return NGX_CONF_ERROR;
}


/*
 * The other programs' options of a directive of flavor d->flavor: each one
 * of the flavor's and given once; then the set is tried on a builder, so
 * that libchash's checks of the whole set (a table size that is not a
 * prime, a minimum ring size over the maximum) are nginx -t errors on the
 * directive's line.
 */
char *
ngx_chash_parse_options(ngx_conf_t *cf, ngx_chash_directive_t *d,
    ngx_str_t **opt, ngx_uint_t nopt)
{
    ngx_str_t                    v, name, other;
    ngx_uint_t                   k, j;
    chash_builder               *b;
    ngx_chash_flavor_options_t  *o = &d->options;

    o->ring.size = sizeof(chash_ring_options);

    for (k = 0; k < nopt; k++) {
        name = ngx_chash_option_name(opt[k]);

        for (j = 0; j < k; j++) {
            other = ngx_chash_option_name(opt[j]);

            if (other.len == name.len
                && ngx_strncmp(other.data, name.data, name.len) == 0)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"%V\" is given twice", &name);
                return NGX_CONF_ERROR;
            }
        }

        o->set = 1;

        if (ngx_chash_str_is(&name, "server_ids")) {
            if ((ngx_chash_flavor_property(d->flavor, CHASH_PROPERTY_NODE_FIELD)
                 & CHASH_NODE_FIELD_SERVER_ID) == 0)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"%V\" is not an option of flavor=%s "
                                   "(its servers take no server id)",
                                   opt[k], ngx_chash_flavor_name(d->flavor));
                return NGX_CONF_ERROR;
            }

            v.data = opt[k]->data + name.len + 1;
            v.len = opt[k]->len - name.len - 1;

            if (ngx_chash_server_ids(cf, &v, o) != NGX_OK) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\"", opt[k]);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_chash_ring_option(cf, d, opt[k]) != NGX_CONF_OK) {
            return NGX_CONF_ERROR;
        }
    }

    if (d->bounded_load > 0 && ngx_chash_flavor_refuses_bounded_load(d->flavor))
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
