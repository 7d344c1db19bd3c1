/*
 * ngx_chash_core: what the other files of the core share (see
 * ngx_chash_core.h): the flavors' names (libchash's table's) and the
 * configuration error that
 * names an upstream. libchash is C++; every call to it, here and in the
 * core's other files, is through its C API, which never throws.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_chash_core.h"


/* The flavors' names are libchash's flavor table's. */
const char *
ngx_chash_flavor_name(ngx_uint_t flavor)
{
    const char  *name;

    name = flavor <= 0xffffffff ? chash_flavor_name((uint32_t) flavor) : NULL;

    return name ? name : "unknown";
}


ngx_int_t
ngx_chash_flavor_parse(ngx_str_t *name, ngx_uint_t *flavor)
{
    uint32_t  f;

    if (chash_flavor_from_name((const char *) name->data, name->len, &f)
        != CHASH_OK)
    {
        return NGX_ERROR;
    }

    *flavor = f;
    return NGX_OK;
}


uint64_t
ngx_chash_flavor_property(ngx_uint_t flavor, uint32_t property)
{
    uint64_t  value;

    if (flavor > 0xffffffff
        || chash_flavor_property((uint32_t) flavor, property, &value)
           != CHASH_OK)
    {
        return 0;
    }

    return value;
}


ngx_uint_t
ngx_chash_flavor_refuses_bounded_load(ngx_uint_t flavor)
{
    return ngx_chash_flavor_property(flavor, CHASH_PROPERTY_KEY_HASH_BITS)
           == 64;
}


ngx_uint_t
ngx_chash_flavor_known(ngx_uint_t flavor)
{
    return flavor <= 0xffffffff && chash_flavor_name((uint32_t) flavor) != NULL;
}


u_char *
ngx_chash_flavors_with(uint32_t property, u_char *buf, size_t len)
{
    u_char      *p, *last;
    uint32_t     f;
    ngx_uint_t   n, written;

    n = 0;

    for (f = 0; chash_flavor_name(f) != NULL; f++) {
        n += ngx_chash_flavor_property(f, property) != 0;
    }

    p = buf;
    last = buf + len - 1;
    written = 0;

    for (f = 0; chash_flavor_name(f) != NULL; f++) {
        if (ngx_chash_flavor_property(f, property) == 0) {
            continue;
        }

        if (written > 0) {
            p = ngx_slprintf(p, last, written + 1 == n ? " and " : ", ");
        }

        p = ngx_slprintf(p, last, "flavor=%s", chash_flavor_name(f));
        written++;
    }

    *p = '\0';

    return buf;
}


ngx_uint_t
ngx_chash_flavor_other(ngx_uint_t flavor)
{
    return ngx_chash_flavor_property(flavor, CHASH_PROPERTY_OTHER_PROGRAM)
           != 0;
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
