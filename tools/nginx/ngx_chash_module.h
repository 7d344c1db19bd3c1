/*
 * The upstream module of chash, written once for HTTP and for stream.
 *
 * nginx's HTTP and stream upstreams are twins: the same round robin peer
 * lists with the same fields (ngx_http_upstream_rr_peer_t and
 * ngx_stream_upstream_rr_peer_t, the *_rr_peers_t, the srv_conf), the same
 * calls, named ngx_http_* in one and ngx_stream_* in the other. So the
 * module's body (this file, ngx_chash_module_peer-inl.h and
 * ngx_chash_module_conf-inl.h, "-inl" because they are included, never
 * compiled alone) is written once over the names below, and each module's
 * own file defines its protocol and includes the body:
 *
 *     #define ngx_chash_proto(name)      ngx_http_ ## name
 *     #define NGX_CHASH_PROTO(name)      NGX_HTTP_ ## name
 *     #define ngx_chash_session_t        ngx_http_request_t
 *     #define ngx_chash_session_pool(r)  (r)->pool
 *     #define NGX_CHASH_LOG_DEBUG        NGX_LOG_DEBUG_HTTP
 *     #define NGX_CHASH_STATUS_ZONE      NGX_CHASH_HTTP_STATUS_ZONE
 *     #define NGX_CHASH_DEFAULT_PORT     80
 *     #define NGX_CHASH_PROTO_NAME       "http"
 *     #define NGX_CHASH_SSL              NGX_HTTP_SSL
 *     #define NGX_CHASH_LOCATION_CONF_ENTRIES  , NULL, NULL
 *
 *     #include "ngx_chash_module.h"
 *     #include "ngx_chash_module_peer-inl.h"
 *     #include "ngx_chash_module_conf-inl.h"
 *
 * then its command table (NGX_CHASH_MODULE_COMMANDS and what only its
 * protocol has: HTTP's chash_status location) and NGX_CHASH_MODULE_DEFINE,
 * which declares the module context and the ngx_module_t
 * (ngx_chash_proto(upstream_chash_module)) over the body's handlers. Compiled into each
 * module, the body is type-checked against that protocol's own structures:
 * no cast from one peer type to the other, no table of calls at run time.
 * Everything in the body is static: each .so has its own copy, as it has
 * its own copy of the core.
 *
 * NGX_CHASH_DEFAULT_PORT is the port of a snapshot node written without
 * one: HTTP's 80, or 0 where a server needs a port (stream's `server`
 * refuses "no port", so does a stream snapshot).
 */

#ifndef NGX_CHASH_MODULE_H_INCLUDED_
#define NGX_CHASH_MODULE_H_INCLUDED_


/* nginx's names in the including module's protocol */

#define ngx_chash_module            ngx_chash_proto(upstream_chash_module)

typedef ngx_chash_proto(upstream_srv_conf_t)      ngx_chash_up_srv_conf_t;
typedef ngx_chash_proto(upstream_main_conf_t)     ngx_chash_up_main_conf_t;
typedef ngx_chash_proto(upstream_server_t)        ngx_chash_up_server_t;
typedef ngx_chash_proto(upstream_rr_peer_t)       ngx_chash_rr_peer_t;
typedef ngx_chash_proto(upstream_rr_peers_t)      ngx_chash_rr_peers_t;
typedef ngx_chash_proto(upstream_rr_peer_data_t)  ngx_chash_rr_peer_data_t;
typedef ngx_chash_proto(complex_value_t)          ngx_chash_cv_t;
typedef ngx_chash_proto(compile_complex_value_t)  ngx_chash_ccv_t;
typedef ngx_chash_proto(variable_t)               ngx_chash_variable_t;
typedef ngx_chash_proto(variable_value_t)         ngx_chash_variable_value_t;

#define ngx_chash_rr_init           ngx_chash_proto(upstream_init_round_robin)
#define ngx_chash_rr_init_peer                                               \
    ngx_chash_proto(upstream_init_round_robin_peer)
#define ngx_chash_rr_get_peer                                                \
    ngx_chash_proto(upstream_get_round_robin_peer)
#define ngx_chash_rr_peers_wlock    ngx_chash_proto(upstream_rr_peers_wlock)
#define ngx_chash_rr_peers_unlock   ngx_chash_proto(upstream_rr_peers_unlock)

#define ngx_chash_complex_value     ngx_chash_proto(complex_value)
#define ngx_chash_compile_complex_value                                      \
    ngx_chash_proto(compile_complex_value)
#define ngx_chash_add_variable      ngx_chash_proto(add_variable)
#define NGX_CHASH_VAR_NOCACHEABLE   NGX_CHASH_PROTO(VAR_NOCACHEABLE)

#define ngx_chash_get_ctx(s)                                                 \
    ngx_chash_proto(get_module_ctx)(s, ngx_chash_module)
#define ngx_chash_set_ctx(s, c)                                              \
    ngx_chash_proto(set_ctx)(s, c, ngx_chash_module)
#define ngx_chash_srv_conf(us)                                               \
    ngx_chash_proto(conf_upstream_srv_conf)(us, ngx_chash_module)
#define ngx_chash_conf_main_conf(cf)                                         \
    ngx_chash_proto(conf_get_module_main_conf)(cf, ngx_chash_module)
#define ngx_chash_conf_upstream(cf)                                          \
    ngx_chash_proto(conf_get_module_srv_conf)(cf,                            \
                                              ngx_chash_proto(upstream_module))
#define ngx_chash_cycle_upstreams(cycle)                                     \
    ngx_chash_proto(cycle_get_module_main_conf)(cycle,                       \
                                              ngx_chash_proto(upstream_module))

/* as `hash`: no backup servers */
#define NGX_CHASH_UPSTREAM_FLAGS                                             \
    (NGX_CHASH_PROTO(UPSTREAM_CREATE)                                        \
     |NGX_CHASH_PROTO(UPSTREAM_WEIGHT)                                       \
     |NGX_CHASH_PROTO(UPSTREAM_MAX_CONNS)                                    \
     |NGX_CHASH_PROTO(UPSTREAM_MAX_FAILS)                                    \
     |NGX_CHASH_PROTO(UPSTREAM_FAIL_TIMEOUT)                                 \
     |NGX_CHASH_PROTO(UPSTREAM_DOWN))


/* The body's own types */

typedef struct {
    ngx_chash_cv_t                  key;
    ngx_uint_t                      flavor;      /* chash_flavor */
    ngx_uint_t                      multiple;    /* 0: the flavor's own */
    ngx_uint_t                      id_form;     /* resty: NGX_CHASH_ID_* */
    ngx_flag_t                      id_set;
    double                          bounded_load;   /* 0: off */
    ngx_chash_flavor_options_t      options;     /* haproxy .. envoy-maglev */

    chash_ring                     *ring;        /* freed with the cycle */
    ngx_chash_nodes_t               nodes;

    /*
     * peer[i] is the i-th peer of the list `mapped`. The list is the one
     * init_round_robin made, or the copy a `zone` made of it in shared memory
     * after init_upstream ran: a process remaps on its first request.
     */
    ngx_chash_rr_peers_t           *mapped;
    ngx_chash_rr_peer_t           **peer;

    ngx_str_t                       ring_id;     /* $chash_ring */

    /* chash_snapshot / chash_migrate: the rings and peers come from files */
    ngx_flag_t                      flavor_set;
    ngx_chash_source_t             *snap;
    ngx_chash_source_t             *next;
    ngx_chash_cv_t                 *subset;
    ngx_chash_cv_t                 *rollout;     /* NULL: rollout_ppm */
    ngx_int_t                       rollout_ppm;
    ngx_chash_cv_t                 *scope;       /* NULL: in */
    ngx_chash_peer_params_t         pp;          /* every snapshot peer's */
    ngx_chash_up_server_t          *placeholder;
    ngx_str_t                       rollout_text;
} ngx_chash_srv_conf_t;


typedef struct {
    ngx_chash_status_t              status;
    ngx_str_t                       state_path;  /* as configured */
    ngx_str_t                       state_dir;   /* resolved; "" off */
    ngx_uint_t                      state_ready;
} ngx_chash_main_conf_t;


/* A generation's peers (ngx_chash_gen_t.peers): nginx's round robin list,
 * built by the protocol's init_round_robin as for `server` lines. */
typedef struct {
    ngx_chash_rr_peers_t           *peers;
    ngx_chash_rr_peer_t           **peer;        /* by index */
} ngx_chash_gen_peers_t;


/* A request's (HTTP) or a session's (stream) */
typedef struct {
    /* the round robin data must be first: round robin's get and free use it */
    ngx_chash_rr_peer_data_t        rrp;
    ngx_chash_srv_conf_t           *conf;
    ngx_str_t                       key;
    ngx_chash_walk_t                walk;
    ngx_uint_t                      flavor;
    ngx_chash_rr_peer_t           **peer;
    ngx_chash_nodes_t              *nodes;
    ngx_chash_gen_t                *gen;       /* NULL: server lines */
    ngx_str_t                      *ring_id;
    ngx_str_t                       choice;    /* "", old, new */
    ngx_str_t                       subset;    /* "" for the whole ring */
} ngx_chash_peer_data_t;


/* Defined by the including file, after the body. */
extern ngx_module_t  ngx_chash_module;


/* The upstream block's directives, the same in both modules' tables. */
#define NGX_CHASH_MODULE_COMMANDS                                            \
                                                                             \
    { ngx_string("chash"),                                                   \
      NGX_CHASH_PROTO(UPS_CONF)|NGX_CONF_1MORE,                              \
      ngx_chash_module_directive,                                            \
      NGX_CHASH_PROTO(SRV_CONF_OFFSET),                                      \
      0,                                                                     \
      NULL },                                                                \
                                                                             \
    { ngx_string("chash_snapshot"),                                          \
      NGX_CHASH_PROTO(UPS_CONF)|NGX_CONF_1MORE,                              \
      ngx_chash_module_snapshot,                                             \
      NGX_CHASH_PROTO(SRV_CONF_OFFSET),                                      \
      0,                                                                     \
      NULL },                                                                \
                                                                             \
    { ngx_string("chash_migrate"),                                           \
      NGX_CHASH_PROTO(UPS_CONF)|NGX_CONF_1MORE,                              \
      ngx_chash_module_migrate,                                              \
      NGX_CHASH_PROTO(SRV_CONF_OFFSET),                                      \
      0,                                                                     \
      NULL },                                                                \
                                                                             \
    { ngx_string("chash_state_path"),                                        \
      NGX_CHASH_PROTO(MAIN_CONF)|NGX_CONF_TAKE1,                             \
      ngx_chash_module_state_path,                                           \
      NGX_CHASH_PROTO(MAIN_CONF_OFFSET),                                     \
      0,                                                                     \
      NULL },


/*
 * The module context and the module. NGX_CHASH_LOCATION_CONF_ENTRIES is
 * what the protocol's context has after the server configuration: HTTP's
 * two location-configuration NULLs (with their leading comma), nothing for
 * stream.
 */
#define NGX_CHASH_MODULE_DEFINE(commands)                                    \
                                                                             \
static ngx_chash_proto(module_t)  ngx_chash_module_ctx = {                   \
    ngx_chash_module_add_variables,        /* preconfiguration */            \
    ngx_chash_module_postconfiguration,    /* postconfiguration */           \
    ngx_chash_module_create_main_conf,     /* create main configuration */   \
    NULL,                                  /* init main configuration */     \
    ngx_chash_module_create_conf,          /* create server configuration */ \
    NULL                                   /* merge server configuration */  \
    NGX_CHASH_LOCATION_CONF_ENTRIES                                          \
};                                                                           \
                                                                             \
ngx_module_t  ngx_chash_module = {                                           \
    NGX_MODULE_V1,                                                           \
    &ngx_chash_module_ctx,                 /* module context */              \
    commands,                              /* module directives */           \
    NGX_CHASH_PROTO(MODULE),               /* module type */                 \
    NULL,                                  /* init master */                 \
    NULL,                                  /* init module */                 \
    ngx_chash_module_init_process,         /* init process */                \
    NULL,                                  /* init thread */                 \
    NULL,                                  /* exit thread */                 \
    NULL,                                  /* exit process */                \
    NULL,                                  /* exit master */                 \
    NGX_MODULE_V1_PADDING                                                    \
}


#endif /* NGX_CHASH_MODULE_H_INCLUDED_ */
