/*
 * ngx_chash_core: what the other files of the core share (see
 * ngx_chash_core.h): the flavors' names and the configuration error that
 * names an upstream. libchash is C++; every call to it, here and in the
 * core's other files, is through its C API, which never throws.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_chash_core.h"


static const char  *ngx_chash_flavors[] = {
    "nginx", "pingora-v1", "pingora-v2", "resty",
    "haproxy", "ketama-md5", "varnish-shard", "envoy-ring", "envoy-maglev"
};

#define ngx_chash_nflavors                                                   \
    (sizeof(ngx_chash_flavors) / sizeof(ngx_chash_flavors[0]))


const char *
ngx_chash_flavor_name(ngx_uint_t flavor)
{
    return flavor < ngx_chash_nflavors ? ngx_chash_flavors[flavor]
                                       : "unknown";
}


ngx_int_t
ngx_chash_flavor_parse(ngx_str_t *name, ngx_uint_t *flavor)
{
    ngx_uint_t  f;

    for (f = 0; f < ngx_chash_nflavors; f++) {
        if (name->len == ngx_strlen(ngx_chash_flavors[f])
            && ngx_strncmp(name->data, ngx_chash_flavors[f], name->len) == 0)
        {
            *flavor = f;
            return NGX_OK;
        }
    }

    return NGX_ERROR;
}


void ngx_cdecl
ngx_chash_upstream_error(ngx_conf_t *cf, ngx_uint_t level,
    const ngx_chash_upstream_t *up, const char *fmt, ...)
{
    u_char   *p, *last;
    va_list   args;
    u_char    msg[NGX_MAX_CONF_ERRSTR];

    last = msg + sizeof(msg);

    va_start(args, fmt);
    p = ngx_vslprintf(msg, last, fmt, args);
    va_end(args);

    ngx_log_error(level, cf->log, 0, "chash upstream \"%V\" in %s:%ui: %*s",
                  up->name, up->file_name, up->line, (size_t) (p - msg), msg);
}
