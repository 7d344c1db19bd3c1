//! The other programs' rings (HAProxy, libmemcached, twemproxy, libketama,
//! Varnish, Envoy): their options ([`RingOptions`]) and servers ([`Node`]),
//! built by a [`RingBuilder`] through `chash_builder_new_with_options` and
//! `chash_builder_add_node`. The library validates every option and names
//! the one it refuses; this module refuses only what the C API would read
//! as "the default" (a 0) and what it does not see (Envoy's hostnames).

use crate::owned::sized;
use crate::ring::{Flavor, Ring};
use crate::{ffi, Builder, Error, ErrorKind, NodeFields};

/// HAProxy's key hash (`hash-type consistent <function>`).
#[derive(Copy, Clone, Debug, Default, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum HaproxyHash {
    /// `sdbm`, and `hash-type consistent` alone (with avalanche).
    #[default]
    Sdbm,
    Djb2,
    Wt6,
    Crc32,
}

/// Which HAProxy computes a server's points from its id (`hash-key id`).
#[derive(Copy, Clone, Debug, Default, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum HaproxyServerKey {
    /// `full_hash(id × 4096 + j)`: HAProxy 2.x, 3.3 on, and 3.0-3.2 with
    /// commit 03e9a5a1e.
    #[default]
    Id,
    /// `full_hash(full_hash(id) + j)`: HAProxy 3.0-3.2 without that fix.
    IdUnfixed30,
}

/// The options of [`Flavor::Haproxy`]. The default is `hash-type
/// consistent` alone: sdbm with avalanche. Naming a function
/// (`hash-type consistent djb2`) drops the avalanche unless `avalanche`
/// follows it: `avalanche: false`.
#[derive(Copy, Clone, Debug, Eq, PartialEq, Hash)]
pub struct HaproxyOptions {
    pub hash_function: HaproxyHash,
    pub avalanche: bool,
    pub server_key: HaproxyServerKey,
}

impl Default for HaproxyOptions {
    fn default() -> Self {
        HaproxyOptions {
            hash_function: HaproxyHash::Sdbm,
            avalanche: true,
            server_key: HaproxyServerKey::Id,
        }
    }
}

/// Which program's MD5 ketama ring ([`Flavor::KetamaMd5`]).
#[derive(Copy, Clone, Debug, Default, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum KetamaVariant {
    /// libmemcached `MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED` (and `KETAMA` with
    /// a server of weight > 1): MD5 points of "label-k", keys MD5.
    #[default]
    LibmemcachedWeighted,
    /// libmemcached `MEMCACHED_BEHAVIOR_KETAMA`: 100 one-at-a-time points a
    /// server, keys one-at-a-time; weights 0 or 1 (a heavier server turns
    /// libmemcached's weighted ring on: `LibmemcachedWeighted` with
    /// [`KetamaKeyHash::OneAtATime`]).
    LibmemcachedUnweighted,
    /// twemproxy (nutcracker) `distribution: ketama`: labels from the
    /// server's name ([`Node::name`]) or address, keys fnv1a_64 by default.
    Twemproxy,
    /// libketama: MD5 points of "address-k", keys MD5.
    Libketama,
    /// libmemcached `CONSISTENT_KETAMA_SPY`: labels "/host:port-k"; weights
    /// 0 or 1.
    LibmemcachedSpy,
    /// `KETAMA_SPY` with a server of weight > 1: the weighted MD5 points of
    /// the spy labels, keys one-at-a-time by default.
    LibmemcachedSpyWeighted,
}

/// A ketama ring's key hash: twemproxy's `hash:` names (libmemcached's
/// functions of the same names agree with them).
#[derive(Copy, Clone, Debug, Default, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum KetamaKeyHash {
    /// The variant's: MD5, one-at-a-time (libmemcached unweighted and spy),
    /// fnv1a_64 (twemproxy).
    #[default]
    Default,
    Md5,
    OneAtATime,
    /// twemproxy's "fnv1a_64" (a 32-bit state).
    Fnv1a64,
    Fnv1_64,
    Fnv1_32,
    Fnv1a32,
    /// CRC-32/IEEE (twemproxy's "crc32a").
    Crc32a,
    /// libmemcached's "crc", twemproxy's "crc32": 15 bits of the CRC-32.
    Crc32,
    /// twemproxy's "crc16".
    Crc16,
    Hsieh,
    Murmur,
    Jenkins,
    /// libmemcached's "murmur3" (not in twemproxy).
    Murmur3,
}

// The C API numbers the key hashes in this enum's order (chash_c.h names
// the first and the last).
const _: () = assert!(KetamaKeyHash::Default as u32 == ffi::CHASH_KETAMA_HASH_DEFAULT);
const _: () = assert!(KetamaKeyHash::Murmur3 as u32 == ffi::CHASH_KETAMA_HASH_MURMUR3);

/// The options of [`Flavor::KetamaMd5`].
#[derive(Copy, Clone, Debug, Eq, PartialEq, Hash)]
pub struct KetamaOptions {
    pub variant: KetamaVariant,
    pub key_hash: KetamaKeyHash,
    /// The port of a server written without one, which libmemcached and
    /// twemproxy also leave out of its label: 11211 (1..65535).
    pub default_port: u16,
    /// twemproxy's `hash_tag: "XY"`: a key with X and, further on, Y hashes
    /// only the bytes between them. Two bytes, neither NUL; twemproxy only.
    pub hash_tag: Option<[u8; 2]>,
}

impl Default for KetamaOptions {
    fn default() -> Self {
        KetamaOptions {
            variant: KetamaVariant::LibmemcachedWeighted,
            key_hash: KetamaKeyHash::Default,
            default_port: 11211,
            hash_tag: None,
        }
    }
}

/// The options of [`Flavor::VarnishShard`].
#[derive(Copy, Clone, Debug, Eq, PartialEq, Hash)]
pub struct VarnishOptions {
    /// Points of a backend of weight 1 (vmod_directors' `replicas`, 67); a
    /// backend of weight w gets replicas × w; of a REAL weight
    /// ([`Node::real_weight`]) trunc(replicas × max(w, 1)).
    pub replicas: u32,
}

impl Default for VarnishOptions {
    fn default() -> Self {
        VarnishOptions { replicas: 67 }
    }
}

/// Envoy's `ring_hash_lb_config.hash_function`: how the ring's points are
/// hashed (keys are Envoy's XXH64 request hashes whatever it says).
#[derive(Copy, Clone, Debug, Default, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum EnvoyHash {
    #[default]
    XxHash,
    MurmurHash2,
}

/// The options of [`Flavor::EnvoyRing`].
#[derive(Copy, Clone, Debug, Eq, PartialEq, Hash)]
pub struct EnvoyRingOptions {
    /// 1..=8,388,608; Envoy's default 1024.
    pub minimum_ring_size: u64,
    /// minimum_ring_size..=8,388,608; Envoy's default 8,388,608.
    pub maximum_ring_size: u64,
    pub hash_function: EnvoyHash,
    /// `consistent_hashing_lb_config.use_hostname_for_hashing`: a node's
    /// [`Node::hostname`] is hashed instead of its address.
    pub use_hostname_for_hashing: bool,
}

impl Default for EnvoyRingOptions {
    fn default() -> Self {
        EnvoyRingOptions {
            minimum_ring_size: 1024,
            maximum_ring_size: 8_388_608,
            hash_function: EnvoyHash::XxHash,
            use_hostname_for_hashing: false,
        }
    }
}

/// The options of [`Flavor::EnvoyMaglev`].
#[derive(Copy, Clone, Debug, Eq, PartialEq, Hash)]
pub struct MaglevOptions {
    /// A prime, at least the number of hosts, at most 5,000,011; Envoy's
    /// default 65,537.
    pub table_size: u64,
    /// As [`EnvoyRingOptions::use_hostname_for_hashing`].
    pub use_hostname_for_hashing: bool,
}

impl Default for MaglevOptions {
    fn default() -> Self {
        MaglevOptions { table_size: 65_537, use_hostname_for_hashing: false }
    }
}

/// A ring's flavor and options (the C++ `RingOptions`). A flavor reads only
/// its own options: another flavor's changed from its default is an error
/// naming it. The default is an nginx ring.
///
/// ```
/// use chash::{Flavor, HaproxyHash, HaproxyOptions, RingOptions};
///
/// // hash-type consistent djb2 avalanche
/// let options = RingOptions {
///     haproxy: HaproxyOptions { hash_function: HaproxyHash::Djb2, ..Default::default() },
///     ..RingOptions::new(Flavor::Haproxy)
/// };
/// # let _ = options;
/// ```
#[derive(Copy, Clone, Debug, Eq, PartialEq, Hash)]
pub struct RingOptions {
    pub flavor: Flavor,
    /// Points a weight unit for pingora-v2 and resty (0 = 160); the other
    /// flavors take only 160 (or 0).
    pub point_multiple: u32,
    pub haproxy: HaproxyOptions,
    pub ketama: KetamaOptions,
    pub varnish: VarnishOptions,
    pub envoy_ring: EnvoyRingOptions,
    pub maglev: MaglevOptions,
}

impl Default for RingOptions {
    fn default() -> Self {
        RingOptions::new(Flavor::Nginx)
    }
}

impl RingOptions {
    /// `flavor` with every option at its program's default.
    pub fn new(flavor: Flavor) -> Self {
        RingOptions {
            flavor,
            point_multiple: crate::DEFAULT_POINT_MULTIPLE,
            haproxy: HaproxyOptions::default(),
            ketama: KetamaOptions::default(),
            varnish: VarnishOptions::default(),
            envoy_ring: EnvoyRingOptions::default(),
            maglev: MaglevOptions::default(),
        }
    }

    // The C struct. The C API reads 0 as "the default": a 0 here is refused
    // instead (the library's own range checks follow in the builder).
    fn raw(&self) -> Result<ffi::chash_ring_options, Error> {
        let zero = [
            (u64::from(self.ketama.default_port), "ketama default_port"),
            (u64::from(self.varnish.replicas), "varnish replicas"),
            (self.envoy_ring.minimum_ring_size, "envoy_ring minimum_ring_size"),
            (self.envoy_ring.maximum_ring_size, "envoy_ring maximum_ring_size"),
            (self.maglev.table_size, "maglev table_size"),
        ];
        if let Some((_, field)) = zero.iter().find(|(value, _)| *value == 0) {
            return Err(Error::new(ErrorKind::BadArgument, format!("{field} 0 is out of range")));
        }
        if self.ketama.hash_tag == Some([0, 0]) {
            return Err(Error::new(
                ErrorKind::BadArgument,
                "ketama hash_tag is two bytes, neither of them NUL (None: no tag)",
            ));
        }
        for (set, owner, field) in [
            (self.envoy_ring.use_hostname_for_hashing, Flavor::EnvoyRing, "envoy_ring"),
            (self.maglev.use_hostname_for_hashing, Flavor::EnvoyMaglev, "maglev"),
        ] {
            if set && self.flavor != owner {
                return Err(Error::new(
                    ErrorKind::BadArgument,
                    format!(
                        "{field} use_hostname_for_hashing is for {} rings; a {} ring leaves it \
                         false",
                        owner.name(),
                        self.flavor.name()
                    ),
                ));
            }
        }
        let mut raw: ffi::chash_ring_options = sized();
        raw.point_multiple = self.point_multiple;
        raw.haproxy_hash = match self.haproxy.hash_function {
            HaproxyHash::Sdbm => ffi::CHASH_HAPROXY_HASH_SDBM,
            HaproxyHash::Djb2 => ffi::CHASH_HAPROXY_HASH_DJB2,
            HaproxyHash::Wt6 => ffi::CHASH_HAPROXY_HASH_WT6,
            HaproxyHash::Crc32 => ffi::CHASH_HAPROXY_HASH_CRC32,
        };
        raw.haproxy_avalanche = if self.haproxy.avalanche { 1 } else { 2 };
        raw.haproxy_server_key = match self.haproxy.server_key {
            HaproxyServerKey::Id => 0,
            HaproxyServerKey::IdUnfixed30 => 1,
        };
        raw.ketama_variant = match self.ketama.variant {
            KetamaVariant::LibmemcachedWeighted => ffi::CHASH_KETAMA_LIBMEMCACHED_WEIGHTED,
            KetamaVariant::LibmemcachedUnweighted => ffi::CHASH_KETAMA_LIBMEMCACHED_UNWEIGHTED,
            KetamaVariant::Twemproxy => ffi::CHASH_KETAMA_TWEMPROXY,
            KetamaVariant::Libketama => ffi::CHASH_KETAMA_LIBKETAMA,
            KetamaVariant::LibmemcachedSpy => ffi::CHASH_KETAMA_LIBMEMCACHED_SPY,
            KetamaVariant::LibmemcachedSpyWeighted => ffi::CHASH_KETAMA_LIBMEMCACHED_SPY_WEIGHTED,
        };
        raw.ketama_key_hash = self.ketama.key_hash as u32;
        raw.ketama_default_port = u32::from(self.ketama.default_port);
        raw.ketama_hash_tag = self.ketama.hash_tag.unwrap_or([0, 0]);
        raw.varnish_replicas = self.varnish.replicas;
        raw.envoy_hash = match self.envoy_ring.hash_function {
            EnvoyHash::XxHash => 0,
            EnvoyHash::MurmurHash2 => 1,
        };
        raw.envoy_minimum_ring_size = self.envoy_ring.minimum_ring_size;
        raw.envoy_maximum_ring_size = self.envoy_ring.maximum_ring_size;
        raw.maglev_table_size = self.maglev.table_size;
        Ok(raw)
    }

    fn use_hostname_for_hashing(&self) -> bool {
        match self.flavor {
            Flavor::EnvoyRing => self.envoy_ring.use_hostname_for_hashing,
            Flavor::EnvoyMaglev => self.maglev.use_hostname_for_hashing,
            _ => false,
        }
    }
}

/// A server of a [`RingBuilder`]: its address and weight, and what its
/// flavor reads beside them.
///
/// What the ring hashes, and what [`Ring::address`] then answers, is the
/// library's rule (`chash_node_fields` in chash_c.h), not this crate's: the
/// address, except that varnish-shard hashes the backend's [`Node::name`]
/// (its `ident`, else its VCL name) when given, and Envoy's rings hash the
/// [`Node::hash_key`] (the `envoy.lb` metadata) when given, else with
/// `use_hostname_for_hashing` the [`Node::hostname`] (then required), else
/// the address as Envoy prints it (`[2001:db8::1]:80`). A field the flavor
/// does not read is refused. Bucket `i` is the i-th node added: keep your
/// own table for what to answer.
#[derive(Copy, Clone, Debug, Eq, PartialEq, Hash)]
pub struct Node<'a> {
    address: &'a str,
    weight: u32,
    server_id: Option<u32>,
    name: Option<&'a str>,
    hostname: Option<&'a str>,
    hash_key: Option<&'a str>,
    // f64::to_bits, so that a Node stays Eq and Hash.
    real_weight_bits: Option<u64>,
}

impl<'a> Node<'a> {
    /// A server of `weight` (0: drained, it keeps its bucket index).
    pub fn new(address: &'a str, weight: u32) -> Self {
        Node {
            address,
            weight,
            server_id: None,
            name: None,
            hostname: None,
            hash_key: None,
            real_weight_bits: None,
        }
    }

    /// HAProxy's server `id` (1..=2,147,483,647), which its points come
    /// from; without one, ids are numbered as HAProxy numbers them. HAProxy
    /// rings only.
    pub fn server_id(mut self, id: u32) -> Self {
        self.server_id = Some(id);
        self
    }

    /// twemproxy's server name (`host:port:weight name`), hashed instead of
    /// the address (1..=4,096 bytes); varnish-shard's backend ident or name,
    /// hashed instead of the address. Those rings only.
    pub fn name(mut self, name: &'a str) -> Self {
        self.name = Some(name);
        self
    }

    /// Envoy's host `hostname`, hashed with `use_hostname_for_hashing`.
    /// Envoy's rings only.
    pub fn hostname(mut self, hostname: &'a str) -> Self {
        self.hostname = Some(hostname);
        self
    }

    /// Envoy's `envoy.lb` `hash_key` metadata, hashed instead of the
    /// address and the hostname. Envoy's rings only.
    pub fn hash_key(mut self, key: &'a str) -> Self {
        self.hash_key = Some(key);
        self
    }

    /// Varnish's REAL weight (a finite number >= 0), instead of the
    /// integer weight given to [`Node::new`]. A ring with one counts every
    /// backend's points as Varnish does, trunc(replicas × max(w, 1)), the
    /// integer weights' too, and is built with replicas 1 and those counts
    /// as its weights. varnish-shard rings only.
    pub fn real_weight(mut self, weight: f64) -> Self {
        self.real_weight_bits = Some(weight.to_bits());
        self
    }
}

/// Builds a ring of any flavor with its options ([`RingOptions`]): nodes
/// in order (bucket `i` is the i-th added), then [`RingBuilder::build`].
/// Every error is the library's (its message names the node or the
/// option), but a node's option of another flavor, which the builder
/// refuses itself with a message in the same form.
///
/// ```
/// use chash::{Flavor, HaproxyHash, HaproxyOptions, MaglevOptions, Node, Ring, RingOptions};
///
/// // HAProxy: `hash-type consistent djb2 avalanche`, servers with `id`.
/// let haproxy = RingOptions {
///     haproxy: HaproxyOptions { hash_function: HaproxyHash::Djb2, avalanche: true, ..Default::default() },
///     ..RingOptions::new(Flavor::Haproxy)
/// };
/// let ring = Ring::build_with_options(
///     &haproxy,
///     [Node::new("10.0.0.1:80", 1).server_id(1), Node::new("10.0.0.2:80", 2).server_id(2)],
/// )?;
/// let server: Option<&str> = ring.node(b"/index.html"); // `balance uri`: the path
///
/// // Envoy MAGLEV (table_size 17): keys are 64-bit request hashes.
/// let maglev = RingOptions {
///     maglev: MaglevOptions { table_size: 17, ..Default::default() },
///     ..RingOptions::new(Flavor::EnvoyMaglev)
/// };
/// let hosts = Ring::build_with_options(
///     &maglev,
///     [Node::new("127.0.0.1:90", 1), Node::new("127.0.0.1:91", 2)],
/// )?;
/// let picks: Vec<Option<usize>> = (0..5).map(|hash| hosts.bucket_idx_by_hash64(hash)).collect();
/// assert_eq!(picks, [Some(1), Some(0), Some(0), Some(1), Some(0)]); // Envoy's own test
/// # let _ = server;
/// # Ok::<(), chash::Error>(())
/// ```
pub struct RingBuilder {
    builder: Builder,
    options: RingOptions,
    nodes: usize,
}

impl RingBuilder {
    /// A builder of `options.flavor` with its options; an error names an
    /// option out of range or of another flavor.
    pub fn new(options: &RingOptions) -> Result<RingBuilder, Error> {
        let builder = Builder::with_options(options.flavor.code(), &options.raw()?)?;
        Ok(RingBuilder { builder, options: *options, nodes: 0 })
    }

    /// Adds a server with only an address and a weight.
    pub fn add(&mut self, address: &str, weight: u32) -> Result<(), Error> {
        self.add_node(&Node::new(address, weight))
    }

    /// Adds `node`; an error (naming it) leaves the builder unchanged.
    pub fn add_node(&mut self, node: &Node<'_>) -> Result<(), Error> {
        // The C API reads 0 and "" as "not given"; this API refuses them.
        let given_empty = if node.server_id == Some(0) {
            Some("server id 0: an id is 1..2147483647")
        } else if [node.name, node.hostname, node.hash_key].contains(&Some("")) {
            Some("an empty name, hostname or hash_key")
        } else {
            None
        };
        if let Some(what) = given_empty {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!("node {} '{}': {what}", self.nodes, node.address),
            ));
        }
        let fields = NodeFields {
            server_id: node.server_id.unwrap_or(0),
            name: node.name,
            hostname: node.hostname,
            hash_key: node.hash_key,
            hash_hostname: self.options.use_hostname_for_hashing(),
            real_weight: node.real_weight_bits.map(f64::from_bits),
        };
        let weight = if node.real_weight_bits.is_some() { 0 } else { node.weight };
        self.builder.add_node(node.address, weight, &fields)?;
        self.nodes += 1;
        Ok(())
    }

    /// The nodes added so far.
    pub fn len(&self) -> usize {
        self.nodes
    }

    /// Whether no node was added yet.
    pub fn is_empty(&self) -> bool {
        self.nodes == 0
    }

    /// The ring; with no node, the empty ring.
    pub fn build(self) -> Result<Ring, Error> {
        self.builder.build()
    }
}

impl Ring {
    /// The ring of `nodes` (bucket `i` is the i-th) with `options`: a
    /// [`RingBuilder`] in one call.
    ///
    /// ```
    /// use chash::{Flavor, Node, Ring, RingOptions};
    ///
    /// let ring = Ring::build_with_options(
    ///     &RingOptions::new(Flavor::Haproxy),
    ///     [Node::new("10.0.0.1:80", 1).server_id(3), Node::new("10.0.0.2:80", 2)],
    /// )?;
    /// assert_eq!(ring.key_hash_bits(), 32);
    /// assert!(ring.bucket_idx(b"/index.html").is_some());
    /// # Ok::<(), chash::Error>(())
    /// ```
    pub fn build_with_options<'a, I>(options: &RingOptions, nodes: I) -> Result<Ring, Error>
    where
        I: IntoIterator<Item = Node<'a>>,
    {
        let mut builder = RingBuilder::new(options)?;
        for node in nodes {
            builder.add_node(&node)?;
        }
        builder.build()
    }
}
