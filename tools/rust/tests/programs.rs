//! The other programs' rings built through the crate ([`RingBuilder`],
//! [`RingOptions`], [`Node`]) against the real programs' answers: every set
//! of tests/data/{haproxy,libmemcached,twemproxy,varnish,envoy} (recorded
//! from haproxy 2.6, libmemcached 1.1, nutcracker 0.5 and varnish 7.1, and
//! Envoy's own unit tests' expectations: tests/data/PROVENANCE.md). Each
//! set's row in its sets.txt names the servers file and the program's
//! options, mapped onto RingOptions as tests/program_golden_test.cc maps
//! them; each answer is `key,ADDR` (split at the last comma). Then the
//! errors, and snapshots written by `chash build` against the rings the
//! crate builds.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use chash::{
    EnvoyHash, EnvoyRingOptions, ErrorKind, Flavor, HaproxyHash, HaproxyOptions, KetamaKeyHash,
    KetamaOptions, KetamaVariant, LoadOptions, MaglevOptions, Node, Ring, RingBuilder, RingOptions,
    Snapshot, VarnishOptions,
};
use common::TempDir;

fn program_path(program: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data").join(program).join(name)
}

fn read(program: &str, name: &str) -> Vec<u8> {
    let path = program_path(program, name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// The lines of a file split at '\n' only (a key may hold any other byte).
fn lines(program: &str, name: &str) -> Vec<Vec<u8>> {
    let bytes = read(program, name);
    let mut lines: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    if lines.last().is_some_and(Vec::is_empty) {
        lines.pop();
    }
    lines
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("a text line")
}

struct Server {
    addr: String,
    weight: String,
    attrs: BTreeMap<String, String>,
}

impl Server {
    fn weight(&self) -> u32 {
        self.weight.parse().unwrap_or_else(|e| panic!("weight '{}': {e}", self.weight))
    }

    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).map(String::as_str)
    }
}

// `ADDR [WEIGHT] [key=value ...]`; '#' starts a comment.
fn read_servers(program: &str, name: &str) -> Vec<Server> {
    let mut servers = Vec::new();
    for line in lines(program, name) {
        let line = text(&line);
        let line = line.split('#').next().unwrap();
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some((&addr, rest)) = fields.split_first() else { continue };
        let mut rest = rest.iter().peekable();
        let weight = match rest.peek() {
            Some(w) if !w.contains('=') => rest.next().unwrap().to_string(),
            _ => "1".to_string(),
        };
        let attrs = rest
            .map(|f| {
                let (k, v) = f.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect();
        servers.push(Server { addr: addr.to_string(), weight, attrs });
    }
    assert!(!servers.is_empty(), "{program}/{name}: no servers");
    servers
}

// `key,ADDR` rows, split at the last comma; '#' lines are comments.
fn read_answers(program: &str, set: &str) -> Vec<(Vec<u8>, String)> {
    let name = format!("{set}.csv");
    let rows: Vec<(Vec<u8>, String)> = lines(program, &name)
        .into_iter()
        .filter(|line| !line.is_empty() && line[0] != b'#')
        .map(|line| {
            let comma = line.iter().rposition(|&b| b == b',').expect("a row with a comma");
            (line[..comma].to_vec(), text(&line[comma + 1..]))
        })
        .collect();
    assert!(!rows.is_empty(), "{program}/{name}: no answers");
    rows
}

struct Set {
    name: String,
    servers: String,
    keys: String,
    options: BTreeMap<String, String>, // "--x" -> value ("" for a flag)
}

impl Set {
    fn option(&self, name: &str) -> Option<&str> {
        self.options.get(name).map(String::as_str)
    }
}

// NAME<TAB>SERVERS<TAB>KEYS<TAB>OPTIONS<TAB>WHAT rows.
fn read_sets(program: &str) -> Vec<Set> {
    let mut sets = Vec::new();
    for line in lines(program, "sets.txt") {
        let line = text(&line);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let columns: Vec<&str> = line.split('\t').collect();
        assert!(columns.len() >= 4, "{program}/sets.txt: short row {line}");
        let words: Vec<&str> = columns[3].split_whitespace().collect();
        let mut options = BTreeMap::new();
        let mut i = 0;
        while i < words.len() {
            let value = words.get(i + 1).filter(|w| !w.starts_with("--"));
            options.insert(words[i].to_string(), value.map_or("", |v| v).to_string());
            i += 1 + usize::from(value.is_some());
        }
        sets.push(Set {
            name: columns[0].to_string(),
            servers: columns[1].to_string(),
            keys: columns[2].to_string(),
            options,
        });
    }
    assert!(!sets.is_empty(), "{program}/sets.txt: no sets");
    sets
}

// How a set is asked: the ring's options, its nodes (and the ADDR each
// answers as), and how a key becomes the bucket the ring answers.
struct Plan<'a> {
    options: RingOptions,
    nodes: Vec<(Node<'a>, &'a str)>,
    answer: Box<dyn Fn(&Ring, &[u8]) -> Option<usize> + 'a>,
    // For text keys: the bytes the program hashes of a key (check_key_paths).
    key_bytes: Option<Box<dyn Fn(&[u8]) -> Vec<u8> + 'a>>,
}

fn build(plan: &Plan<'_>, what: &str) -> Ring {
    Ring::build_with_options(&plan.options, plan.nodes.iter().map(|(node, _)| *node))
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

// Every answer of the set through the crate's ring; how many.
fn compare_set(program: &str, set: &Set, plan: &Plan<'_>) -> usize {
    let what = format!("{program}/{}", set.name);
    let ring = build(plan, &what);
    assert_eq!(ring.flavor(), Some(plan.options.flavor), "{what}");
    assert_eq!(ring.num_buckets(), plan.nodes.len(), "{what}");
    let answers = read_answers(program, &set.name);
    let mut wrong = Vec::new();
    for (key, expected) in &answers {
        let got = (plan.answer)(&ring, key).map_or("(none)", |i| plan.nodes[i].1);
        if got != expected {
            wrong.push(format!("'{}': {expected}, the crate {got}", String::from_utf8_lossy(key)));
        }
    }
    assert!(
        wrong.is_empty(),
        "{what}: {} of {} answers differ; first: {}",
        wrong.len(),
        answers.len(),
        wrong[0]
    );
    if let Some(key_bytes) = &plan.key_bytes {
        check_key_paths(&what, &ring, answers.iter().map(|(key, _)| key_bytes(key)).collect());
    }
    answers.len()
}

// Every key of a text-keyed set also answers alike by its key hash, in a
// batch, and as the first step of both walks (they start from the key's
// hash as the program computes it, not its CRC32).
fn check_key_paths(what: &str, ring: &Ring, keys: Vec<Vec<u8>>) {
    assert_eq!(ring.key_hash_bits(), 32, "{what}");
    let mut batch = vec![0u32; keys.len()];
    ring.bucket_idxs(&keys, &mut batch);
    for (key, &in_batch) in keys.iter().zip(&batch) {
        let one = ring.bucket_idx(key);
        let what = format!("{what} '{}'", String::from_utf8_lossy(key));
        let hash = ring.key_hash(key);
        assert!(hash <= u64::from(u32::MAX), "{what}");
        assert_eq!(ring.bucket_idx_by_hash(hash as u32), one, "{what}: by hash");
        assert_eq!(ring.bucket_idx_by_hash64(hash), one, "{what}: by hash64");
        assert_eq!(Some(in_batch as usize), one, "{what}: batch");
        assert_eq!(ring.distinct_iter(key).next(), one, "{what}: distinct walk");
        assert_eq!(ring.point_iter(key).next(), one, "{what}: point walk");
    }
}

// The servers files of `sets`, by name.
fn servers_of(program: &str, sets: &[Set]) -> BTreeMap<String, Vec<Server>> {
    sets.iter().map(|s| (s.servers.clone(), read_servers(program, &s.servers))).collect()
}

// Every set of `program` through `plan`; asserts that `expected` (sets,
// answers: tests/data/PROVENANCE.md's counts) were compared.
fn run_program<F>(program: &str, plan: F, expected: (usize, usize))
where
    F: for<'a> Fn(&'a Set, &'a [Server]) -> Plan<'a>,
{
    let sets = read_sets(program);
    let servers = servers_of(program, &sets);
    let answers: usize =
        sets.iter().map(|set| compare_set(program, set, &plan(set, &servers[&set.servers]))).sum();
    assert_eq!((sets.len(), answers), expected, "{program}: sets and answers compared");
}

// ---- HAProxy ------------------------------------------------------------------

// What haproxy hashes of a request: `balance uri` the path before the first
// '?', `uri whole` all of it, `hdr(X-Key)` the first comma-separated value,
// spaces and tabs trimmed.
fn haproxy_key(key: &[u8], balance: &str) -> Vec<u8> {
    match balance {
        "uri" => key.split(|&b| b == b'?').next().unwrap().to_vec(),
        "uri-whole" => key.to_vec(),
        "hdr" => {
            let value = key.split(|&b| b == b',').next().unwrap();
            let blank = |b: &u8| *b == b' ' || *b == b'\t';
            let start = value.iter().position(|b| !blank(b)).unwrap_or(value.len());
            let end = value.iter().rposition(|b| !blank(b)).map_or(start, |e| e + 1);
            value[start..end].to_vec()
        }
        other => panic!("balance '{other}'"),
    }
}

fn haproxy_plan<'a>(set: &'a Set, servers: &'a [Server]) -> Plan<'a> {
    let function = set.option("--function").unwrap();
    let hash_function = match function {
        "default" | "sdbm" => HaproxyHash::Sdbm,
        "djb2" => HaproxyHash::Djb2,
        "wt6" => HaproxyHash::Wt6,
        "crc32" => HaproxyHash::Crc32,
        other => panic!("function '{other}'"),
    };
    // `hash-type consistent` alone is sdbm with avalanche.
    let avalanche = function == "default" || set.option("--avalanche").is_some();
    let haproxy = HaproxyOptions { hash_function, avalanche, ..Default::default() };
    let nodes = servers
        .iter()
        .map(|s| {
            let node = Node::new(&s.addr, s.weight());
            let node = match s.attr("id") {
                Some(id) => node.server_id(id.parse().unwrap()),
                None => node,
            };
            (node, s.addr.as_str())
        })
        .collect();
    let balance = set.option("--balance").unwrap();
    Plan {
        options: RingOptions { haproxy, ..RingOptions::new(Flavor::Haproxy) },
        nodes,
        answer: Box::new(move |ring, key| ring.bucket_idx(&haproxy_key(key, balance))),
        key_bytes: Some(Box::new(move |key| haproxy_key(key, balance))),
    }
}

#[test]
fn haproxy_routes_as_the_real_haproxy() {
    run_program("haproxy", haproxy_plan, (15, 5_500));
}

// ---- libmemcached and twemproxy ---------------------------------------------------

fn ketama_hash(name: &str) -> KetamaKeyHash {
    match name {
        "md5" => KetamaKeyHash::Md5,
        "one_at_a_time" | "default" => KetamaKeyHash::OneAtATime,
        "crc" | "crc32" => KetamaKeyHash::Crc32, // the 15-bit "crc" / "crc32"
        "crc32a" => KetamaKeyHash::Crc32a,
        "crc16" => KetamaKeyHash::Crc16,
        "fnv1_64" => KetamaKeyHash::Fnv1_64,
        "fnv1a_64" => KetamaKeyHash::Fnv1a64,
        "fnv1_32" => KetamaKeyHash::Fnv1_32,
        "fnv1a_32" => KetamaKeyHash::Fnv1a32,
        "hsieh" => KetamaKeyHash::Hsieh,
        "murmur" => KetamaKeyHash::Murmur,
        "murmur3" => KetamaKeyHash::Murmur3,
        "jenkins" => KetamaKeyHash::Jenkins,
        other => panic!("key hash '{other}'"),
    }
}

// A ketama ring of `servers` (each with its name when `named`); keys are
// hashed as given.
fn ketama_plan(ketama: KetamaOptions, servers: &[Server], named: bool) -> Plan<'_> {
    let nodes = servers
        .iter()
        .map(|s| {
            let node = Node::new(&s.addr, s.weight());
            let name = s.attr("name").filter(|_| named);
            (name.map_or(node, |name| node.name(name)), s.addr.as_str())
        })
        .collect();
    Plan {
        options: RingOptions { ketama, ..RingOptions::new(Flavor::KetamaMd5) },
        nodes,
        answer: Box::new(|ring, key| ring.bucket_idx(key)),
        key_bytes: Some(Box::new(<[u8]>::to_vec)),
    }
}

fn libmemcached_plan<'a>(set: &'a Set, servers: &'a [Server]) -> Plan<'a> {
    let hash = set.option("--hash").unwrap_or("keep");
    // A server added with weight > 1 turns the weighted continuum on in
    // every consistent mode; the key hash stays the mode's.
    let heavy = servers.iter().any(|s| s.weight() > 1);
    let mut ketama = KetamaOptions::default();
    match set.option("--mode").unwrap() {
        "weighted" => ketama.variant = KetamaVariant::LibmemcachedWeighted,
        "ketama" if heavy => {
            ketama.variant = KetamaVariant::LibmemcachedWeighted;
            ketama.key_hash = KetamaKeyHash::OneAtATime;
        }
        "ketama" => ketama.variant = KetamaVariant::LibmemcachedUnweighted,
        "spy" if heavy => ketama.variant = KetamaVariant::LibmemcachedSpyWeighted,
        "spy" => ketama.variant = KetamaVariant::LibmemcachedSpy,
        other => panic!("mode '{other}'"),
    }
    if hash != "keep" {
        ketama.key_hash = ketama_hash(hash);
    }
    ketama_plan(ketama, servers, false)
}

#[test]
fn libmemcached_routes_as_the_real_libmemcached() {
    run_program("libmemcached", libmemcached_plan, (17, 6_500));
}

fn twemproxy_plan<'a>(set: &'a Set, servers: &'a [Server]) -> Plan<'a> {
    let hash_tag = set.option("--hash-tag").map(|tag| {
        let tag: [u8; 2] = tag.as_bytes().try_into().expect("a two-byte hash tag");
        tag
    });
    let ketama = KetamaOptions {
        variant: KetamaVariant::Twemproxy,
        key_hash: ketama_hash(set.option("--hash").unwrap_or("fnv1a_64")),
        hash_tag,
        ..Default::default()
    };
    ketama_plan(ketama, servers, true)
}

#[test]
fn twemproxy_routes_as_the_real_nutcracker() {
    run_program("twemproxy", twemproxy_plan, (16, 6_200));
}

// ---- Varnish ------------------------------------------------------------------------

fn varnish_plan<'a>(set: &'a Set, servers: &'a [Server]) -> Plan<'a> {
    let replicas: u32 = set.option("--replicas").unwrap().parse().unwrap();
    let nodes = servers
        .iter()
        .map(|s| {
            // The ring hashes the shard's ident, else the backend's name.
            let ident = s.attr("ident").or(s.attr("name")).expect("a backend name");
            // A REAL weight (`1.5`) goes to the library as it is.
            let node = match s.weight.contains('.') {
                true => Node::new(&s.addr, 0).real_weight(s.weight.parse().unwrap()),
                false => Node::new(&s.addr, s.weight()),
            }
            .name(ident);
            (node, s.addr.as_str())
        })
        .collect();
    let by_int = set.option("--by").unwrap() == "int";
    let alt: usize = set.option("--alt").map_or(0, |a| a.parse().unwrap());
    Plan {
        options: RingOptions {
            varnish: VarnishOptions { replicas },
            ..RingOptions::new(Flavor::VarnishShard)
        },
        nodes,
        answer: Box::new(move |ring, key| {
            // by=URL and by=KEY hash the text; by=KEY with an integer key
            // takes it as the hash.
            let hash = if by_int { text(key).parse().unwrap() } else { ring.key_hash(key) };
            let hash = u32::try_from(hash).expect("varnish's hashes are 32 bits");
            let first = ring.bucket_idx_by_hash(hash);
            let mut walk = ring.distinct_iter_by_hash(hash);
            assert_eq!(walk.next(), first, "the walk starts at the lookup's answer");
            // alt=k: the k-th other backend up the ring.
            if alt == 0 {
                first
            } else {
                walk.nth(alt - 1)
            }
        }),
        key_bytes: None,
    }
}

#[test]
fn varnish_routes_as_the_real_varnish() {
    // url_real_weights too: REAL weights as point counts.
    run_program("varnish", varnish_plan, (11, 4_171));
}

// ---- Envoy ----------------------------------------------------------------------------

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

// Envoy's hosts in the order Envoy walks them (locality by locality), each
// weight an integer proportional to Envoy's normalized weight (host weight
// / its locality's sum × locality weight), as program_golden_test.cc gives
// them; the key string: hash_key, else the hostname with
// use_hostname_for_hashing, else the address (the crate chooses).
fn envoy_plan<'a>(set: &'a Set, servers: &'a [Server]) -> Plan<'a> {
    let maglev = set.option("--lb") == Some("maglev");
    let use_hostname = set.option("--use-hostname").is_some();
    let size = |name: &str, default: u64| set.option(name).map_or(default, |v| v.parse().unwrap());
    let mut options =
        RingOptions::new(if maglev { Flavor::EnvoyMaglev } else { Flavor::EnvoyRing });
    if maglev {
        options.maglev = MaglevOptions {
            table_size: size("--table-size", 65_537),
            use_hostname_for_hashing: use_hostname,
        };
    } else {
        options.envoy_ring = EnvoyRingOptions {
            minimum_ring_size: size("--min-ring-size", 1024),
            maximum_ring_size: size("--max-ring-size", 8_388_608),
            hash_function: match set.option("--hash") {
                Some("murmur2") => EnvoyHash::MurmurHash2,
                None => EnvoyHash::XxHash,
                Some(other) => panic!("hash '{other}'"),
            },
            use_hostname_for_hashing: use_hostname,
        };
    }
    let locality_weights: Vec<u64> = set
        .option("--locality-weights")
        .map(|w| w.split(',').map(|w| w.parse().unwrap()).collect())
        .unwrap_or_default();
    let locality = |s: &Server| s.attr("locality").map_or(0, |l| l.parse::<usize>().unwrap());
    let mut weights: Vec<u64> = servers.iter().map(|s| u64::from(s.weight())).collect();
    let mut order: Vec<usize> = (0..servers.len()).collect();
    if !locality_weights.is_empty() {
        order.sort_by_key(|&i| locality(&servers[i])); // stable
        let mut sums = vec![0u64; locality_weights.len()];
        for (i, s) in servers.iter().enumerate() {
            sums[locality(s)] += weights[i];
        }
        let common = sums.iter().filter(|&&s| s != 0).fold(1, |l, &s| l / gcd(l, s) * s);
        for (i, s) in servers.iter().enumerate() {
            let l = locality(s);
            weights[i] = weights[i] * locality_weights[l] * (common / sums[l]);
        }
    }
    let nodes = order
        .into_iter()
        .map(|i| {
            let s = &servers[i];
            let mut node = Node::new(&s.addr, u32::try_from(weights[i]).unwrap());
            if let Some(hostname) = s.attr("hostname") {
                node = node.hostname(hostname);
            }
            if let Some(key) = s.attr("hash_key") {
                node = node.hash_key(key);
            }
            (node, s.addr.as_str())
        })
        .collect();
    Plan {
        options,
        nodes,
        // Each key is the request's hash (decimal u64).
        answer: Box::new(|ring, key| ring.bucket_idx_by_hash64(text(key).parse().unwrap())),
        key_bytes: None,
    }
}

// The .expect assertions of a set that the crate's API can ask: the ring's
// size, retries (`attempt`), the sweeps' counts and the points the tests'
// comments list (a lookup at a point's hash answers its host). Not asked:
// min/max_{hashes,entries}_per_host, which count a host's points (the
// crate has no walk over a 64-bit ring's points). How many were checked.
fn check_envoy_expect(set: &Set, plan: &Plan<'_>) -> (usize, usize) {
    let path = program_path("envoy", &format!("{}.expect", set.name));
    if !path.is_file() {
        return (0, 0);
    }
    let what = format!("envoy/{}.expect", set.name);
    let ring = build(plan, &what);
    let bucket_of = |addr: &str| plan.nodes.iter().position(|(_, a)| *a == addr).unwrap();
    let answer = |idx: Option<usize>| idx.map_or("(none)", |i| plan.nodes[i].1);
    let mut swept: BTreeMap<&str, u64> = BTreeMap::new();
    let (mut checked, mut not_asked) = (0, 0);
    for line in lines("envoy", &format!("{}.expect", set.name)) {
        let line = text(&line);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = line.split_whitespace().collect();
        let number = |i: usize| parts[i].parse::<u64>().unwrap();
        match parts[0] {
            "ring_size" => assert_eq!(ring.num_points() as u64, number(1), "{what}: {line}"),
            "point" => {
                let bucket = ring.bucket_idx_by_hash64(number(2));
                assert_eq!(bucket, Some(bucket_of(parts[1])), "{what}: {line}");
            }
            "attempt" => {
                let bucket = ring.bucket_idx_for_attempt(number(1), number(2) as u32);
                assert_eq!(answer(bucket), parts[3], "{what}: {line}");
                let nth = ring.attempt_iter_by_hash(number(1)).nth(number(2) as usize);
                assert_eq!(nth, bucket, "{what}: attempt_iter, {line}");
                assert_eq!(ring.distinct_iter_by_hash(number(1) as u32).count(), 0, "{what}");
            }
            "sweep_div" | "sweep_seq" => {
                let n = number(1);
                swept = plan.nodes.iter().map(|(_, a)| (*a, 0)).collect();
                for i in 0..n {
                    let hash = if parts[0] == "sweep_div" { i * (u64::MAX / n) } else { i };
                    if let Some(idx) = ring.bucket_idx_by_hash64(hash) {
                        *swept.get_mut(plan.nodes[idx].1).unwrap() += 1;
                    }
                }
            }
            "count" => assert_eq!(swept[parts[1]], number(2), "{what}: {line}"),
            "zero_count_hosts" => {
                let zeros = swept.values().filter(|&&c| c == 0).count() as u64;
                assert_eq!(zeros, number(1), "{what}: {line}");
            }
            "min_hashes_per_host"
            | "max_hashes_per_host"
            | "min_entries_per_host"
            | "max_entries_per_host" => {
                not_asked += 1;
                continue;
            }
            other => panic!("{what}: unknown line kind '{other}'"),
        }
        checked += 1;
    }
    (checked, not_asked)
}

#[test]
fn envoy_routes_as_envoys_tests() {
    let sets = read_sets("envoy");
    let servers = servers_of("envoy", &sets);
    let (mut answers, mut checked, mut not_asked, mut with_answers) = (0, 0, 0, 0);
    for set in &sets {
        let plan = envoy_plan(set, &servers[&set.servers]);
        if set.keys != "-" {
            answers += compare_set("envoy", set, &plan);
            with_answers += 1;
        }
        let (c, n) = check_envoy_expect(set, &plan);
        checked += c;
        not_asked += n;
    }
    // envoy/sets.txt: 24 sets, 18 with answers (287 rows); 1,167 .expect
    // lines, all asked but the 46 per-host point counts.
    assert_eq!((sets.len(), with_answers, answers), (24, 18, 287));
    assert_eq!((checked, not_asked), (1_121, 46));
}

// ---- Errors ---------------------------------------------------------------------------

fn refused(options: &RingOptions) -> chash::Error {
    match RingBuilder::new(options) {
        Ok(_) => panic!("{options:?} was accepted"),
        Err(e) => e,
    }
}

#[test]
fn options_of_another_flavor_are_refused_by_name() {
    let mut nginx = RingOptions::default();
    nginx.varnish.replicas = 10;
    let err = refused(&nginx);
    assert_eq!(err.kind(), ErrorKind::BadArgument);
    assert!(err.message().contains("varnish"), "{err}");

    let mut ketama = RingOptions::new(Flavor::KetamaMd5);
    ketama.haproxy.hash_function = HaproxyHash::Wt6;
    let err = refused(&ketama);
    assert_eq!(err.kind(), ErrorKind::BadArgument);
    assert!(err.message().contains("haproxy"), "{err}");

    let mut maglev = RingOptions::new(Flavor::EnvoyMaglev);
    maglev.envoy_ring.minimum_ring_size = 12;
    assert!(refused(&maglev).message().contains("envoy_ring"));

    // use_hostname_for_hashing of the other Envoy flavor.
    let mut ring = RingOptions::new(Flavor::EnvoyRing);
    ring.maglev.use_hostname_for_hashing = true;
    let err = refused(&ring);
    assert_eq!(err.kind(), ErrorKind::BadArgument);
    assert!(err.message().contains("use_hostname_for_hashing"), "{err}");

    // A hash tag is twemproxy's.
    let mut libmemcached = RingOptions::new(Flavor::KetamaMd5);
    libmemcached.ketama.hash_tag = Some(*b"{}");
    assert!(refused(&libmemcached).message().contains("hash_tag"));

    // The program flavors take no point multiple.
    let haproxy = RingOptions { point_multiple: 16, ..RingOptions::new(Flavor::Haproxy) };
    assert_eq!(refused(&haproxy).kind(), ErrorKind::BadMultiple);
}

#[test]
fn options_out_of_range_are_refused() {
    let check = |options: RingOptions, needle: &str| {
        let err = refused(&options);
        assert_eq!(err.kind(), ErrorKind::BadArgument, "{err}");
        assert!(err.message().contains(needle), "'{err}' does not name {needle}");
    };
    let maglev = |table_size| RingOptions {
        maglev: MaglevOptions { table_size, ..Default::default() },
        ..RingOptions::new(Flavor::EnvoyMaglev)
    };
    check(maglev(10), "10"); // not a prime
    check(maglev(5_000_077), "5000077"); // a prime past Envoy's bound
    check(maglev(0), "table_size");
    let envoy = |minimum_ring_size, maximum_ring_size| RingOptions {
        envoy_ring: EnvoyRingOptions { minimum_ring_size, maximum_ring_size, ..Default::default() },
        ..RingOptions::new(Flavor::EnvoyRing)
    };
    check(envoy(2048, 1024), "minimum_ring_size");
    check(envoy(1, 8_388_609), "8388608");
    check(envoy(0, 1024), "minimum_ring_size");
    let varnish = RingOptions {
        varnish: VarnishOptions { replicas: 0 },
        ..RingOptions::new(Flavor::VarnishShard)
    };
    check(varnish, "replicas");
    let ketama = |options: KetamaOptions| RingOptions {
        ketama: options,
        ..RingOptions::new(Flavor::KetamaMd5)
    };
    check(ketama(KetamaOptions { default_port: 0, ..Default::default() }), "port");
    let libketama = KetamaOptions {
        variant: KetamaVariant::Libketama,
        key_hash: KetamaKeyHash::Fnv1a64,
        ..Default::default()
    };
    check(ketama(libketama), "MD5");
    let twemproxy = |tag| KetamaOptions {
        variant: KetamaVariant::Twemproxy,
        hash_tag: Some(tag),
        ..Default::default()
    };
    check(ketama(twemproxy([b'{', 0])), "NUL");
    check(ketama(twemproxy([0, 0])), "NUL");
    // In range, the same options build.
    assert!(RingBuilder::new(&ketama(twemproxy(*b"{}"))).is_ok());
    assert!(RingBuilder::new(&maglev(7)).is_ok());
}

#[test]
fn node_options_of_another_flavor_are_refused_naming_the_node() {
    let add = |options: RingOptions, node: Node<'_>| {
        let mut builder = RingBuilder::new(&options).unwrap();
        builder.add("10.0.0.1:11211", 1).unwrap();
        let err = builder.add_node(&node).expect_err("refused");
        assert_eq!(builder.len(), 1, "a refused node is not added");
        assert!(err.message().contains("node 1"), "'{err}' does not name the node");
        // The builder still builds what it was given.
        assert_eq!(builder.build().unwrap().num_buckets(), 1);
        err
    };
    let haproxy = RingOptions::new(Flavor::Haproxy);
    let libmemcached = RingOptions::new(Flavor::KetamaMd5);
    let unweighted = RingOptions {
        ketama: KetamaOptions {
            variant: KetamaVariant::LibmemcachedUnweighted,
            ..Default::default()
        },
        ..libmemcached
    };
    // A server id is HAProxy's; a name twemproxy's (and Varnish's).
    let err = add(libmemcached, Node::new("10.0.0.2:11211", 1).server_id(7));
    assert_eq!(err.kind(), ErrorKind::BadArgument);
    let err = add(libmemcached, Node::new("10.0.0.2:11211", 1).name("cache-2"));
    assert_eq!(err.kind(), ErrorKind::BadArgument);
    let err = add(haproxy, Node::new("10.0.0.2:80", 1).name("web2"));
    assert_eq!(err.kind(), ErrorKind::BadArgument);
    let err = add(haproxy, Node::new("10.0.0.2:80", 1).hostname("web2"));
    assert!(err.message().contains("hostname"), "{err}");
    let err = add(haproxy, Node::new("10.0.0.2:80", 1).server_id(0));
    assert!(err.message().contains("server id 0"), "{err}");
    let err = add(haproxy, Node::new("10.0.0.2:80", 1).server_id(u32::MAX));
    assert_eq!(err.kind(), ErrorKind::BadArgument);
    // libmemcached's unweighted ring takes weights 0 and 1.
    let err = add(unweighted, Node::new("10.0.0.2:11211", 2));
    assert_eq!(err.kind(), ErrorKind::BadWeight);
    // Two servers with one id.
    let mut builder = RingBuilder::new(&haproxy).unwrap();
    builder.add_node(&Node::new("10.0.0.1:80", 1).server_id(3)).unwrap();
    assert!(builder.add_node(&Node::new("10.0.0.2:80", 1).server_id(3)).is_err());
}

#[test]
fn the_ring_hashes_what_its_program_hashes() {
    // Envoy: hash_key over hostname over address; the hostname only with
    // use_hostname_for_hashing.
    let nodes = [
        Node::new("127.0.0.1:90", 1).hostname("h90"),
        Node::new("127.0.0.1:91", 1).hostname("h91").hash_key("k91"),
        Node::new("127.0.0.1:92", 1).hostname("h92"),
    ];
    let mut options = RingOptions::new(Flavor::EnvoyMaglev);
    options.maglev = MaglevOptions { table_size: 7, use_hostname_for_hashing: true };
    let ring = Ring::build_with_options(&options, nodes).unwrap();
    let hashed: Vec<&str> = (0..3).map(|i| ring.address(i).unwrap()).collect();
    assert_eq!(hashed, ["h90", "k91", "h92"]);
    assert_eq!(ring.key_hash_bits(), 64);
    assert_eq!(ring.num_points(), 7);
    options.maglev.use_hostname_for_hashing = false;
    let ring = Ring::build_with_options(&options, nodes).unwrap();
    assert_eq!(ring.address(0), Some("127.0.0.1:90"));
    // An address is hashed as Envoy prints it (inet_ntop: lower case, the
    // longest run of zero groups as "::"), whichever way it was written.
    let printed =
        Ring::build_with_options(&options, [Node::new("[2001:DB8:0:0:0:0:0:1]:80", 1)]).unwrap();
    assert_eq!(printed.address(0), Some("[2001:db8::1]:80"));
    // With use_hostname_for_hashing a host needs a hostname (or hash_key).
    options.maglev.use_hostname_for_hashing = true;
    let err = Ring::build_with_options(&options, [Node::new("127.0.0.1:90", 1)]).unwrap_err();
    assert!(err.message().contains("empty hostname"), "{err}");
    // Varnish: the name; twemproxy keeps the address and hashes the name.
    let varnish = Ring::build_with_options(
        &RingOptions::new(Flavor::VarnishShard),
        [Node::new("10.0.0.1:80", 1).name("web1")],
    )
    .unwrap();
    assert_eq!(varnish.address(0), Some("web1"));
    let twemproxy = RingOptions {
        ketama: KetamaOptions { variant: KetamaVariant::Twemproxy, ..Default::default() },
        ..RingOptions::new(Flavor::KetamaMd5)
    };
    let named = Ring::build_with_options(
        &twemproxy,
        [Node::new("10.0.0.1:11211", 1).name("a"), Node::new("10.0.0.2:11211", 1).name("b")],
    )
    .unwrap();
    assert_eq!(named.address(0), Some("10.0.0.1:11211"));
    let renamed = Ring::build_with_options(
        &twemproxy,
        [Node::new("10.0.0.9:11211", 1).name("a"), Node::new("10.0.0.8:11211", 1).name("b")],
    )
    .unwrap();
    for key in [&b"k1"[..], b"k2", b"k3", b"some/key"] {
        assert_eq!(named.bucket_idx(key), renamed.bucket_idx(key), "the names place the keys");
    }
    // Flavors by name, as the CLI spells them.
    assert_eq!(Flavor::KetamaMd5.name(), "ketama-md5");
    assert_eq!(named.flavor(), Some(Flavor::KetamaMd5));
}

// ---- Snapshots of the CLI --------------------------------------------------------------

// `chash build --flavor F ...` of a golden set's servers file, loaded, is
// the ring the crate builds with the same options: the same fingerprint,
// and the real program's answers through both.
fn check_snapshot<F>(program: &str, set_name: &str, cli_options: &[&str], plan: F)
where
    F: for<'a> Fn(&'a Set, &'a [Server]) -> Plan<'a>,
{
    let sets = read_sets(program);
    let set = sets.iter().find(|s| s.name == set_name).unwrap();
    let servers = read_servers(program, &set.servers);
    let plan = plan(set, &servers);
    let dir = TempDir::new(&format!("programs-{set_name}"));
    let out = dir.path("ring.chash");
    let servers_file = program_path(program, &set.servers);
    let mut args = vec!["build", "--servers", servers_file.to_str().unwrap()];
    args.extend_from_slice(cli_options);
    args.extend_from_slice(&["--out", out.to_str().unwrap()]);
    common::run_cli(&args);
    let snapshot = Snapshot::load(&out, &LoadOptions::new()).unwrap();
    assert_eq!(snapshot.info().flavor, Some(plan.options.flavor));
    let loaded = snapshot.ring();
    let built = build(&plan, set_name);
    assert_eq!(loaded.fingerprint().unwrap(), built.fingerprint().unwrap(), "{set_name}");
    assert_eq!(loaded.num_points(), built.num_points());
    let answers = read_answers(program, set_name);
    for (key, expected) in &answers {
        let from_file = (plan.answer)(&loaded, key);
        assert_eq!(from_file, (plan.answer)(&built, key), "{set_name}");
        assert_eq!(from_file.map(|i| plan.nodes[i].1), Some(expected.as_str()), "{set_name}");
    }
}

#[test]
fn cli_snapshots_route_as_the_crates_rings() {
    check_snapshot(
        "haproxy",
        "djb2_avalanche_uri_whole_25",
        &["--flavor", "haproxy", "--hash-function", "djb2", "--avalanche"],
        haproxy_plan,
    );
    check_snapshot("haproxy", "ids_wrap_uri", &["--flavor", "haproxy"], haproxy_plan);
    check_snapshot(
        "twemproxy",
        "murmur_tag_colon",
        &[
            "--flavor",
            "ketama-md5",
            "--variant",
            "twemproxy",
            "--key-hash",
            "murmur",
            "--hash-tag",
            "::",
        ],
        twemproxy_plan,
    );
    check_snapshot(
        "envoy",
        "ring_hash_key",
        &["--flavor", "envoy-ring", "--min-ring-size", "12", "--use-hostname-for-hashing"],
        envoy_plan,
    );
    check_snapshot(
        "envoy",
        "maglev_weighted",
        &["--flavor", "envoy-maglev", "--table-size", "17"],
        envoy_plan,
    );
}

// README.md's example of these rings is RingBuilder's doctest (src/program.rs),
// which cargo test runs: the two stay one text.
#[test]
fn the_readme_example_is_the_doctest() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = &readme[readme.find("## The other programs' rings").expect("the section")..];
    let start = section.find("```rust\n").unwrap() + "```rust\n".len();
    let example = &section[start..start + section[start..].find("```").unwrap()];
    let source = std::fs::read_to_string(root.join("src/program.rs")).unwrap();
    let doc: String = source
        .lines()
        .map(str::trim_start)
        .filter_map(|l| l.strip_prefix("///"))
        .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
        .collect();
    assert!(example.lines().count() > 10, "{example}");
    assert!(doc.contains(example), "README.md's example is not src/program.rs's doctest");
}

#[test]
fn masked_lookups_refuse_rings_that_mask_inexactly() {
    // Weighted libmemcached ketama rebuilds without a server that is out:
    // skipping its points would be chash's answer, not libmemcached's.
    let servers = [("10.0.0.1:11211", 1), ("10.0.0.2:11211", 2), ("10.0.0.3:11211", 3)];
    let ketama = Ring::build_with_options(
        &RingOptions::new(Flavor::KetamaMd5),
        servers.iter().map(|&(addr, weight)| Node::new(addr, weight)),
    )
    .expect("ketama ring");
    assert!(!ketama.masks_exactly());
    let mut mask = chash::NodeMask::new(ketama.num_buckets(), true).expect("mask");
    mask.set(1, false).expect("set");
    assert_eq!(ketama.bucket_idx_available(b"some key", &mask), None);
    let mut out = [0u32; 2];
    ketama.bucket_idxs_available(&[b"a".as_slice(), b"b".as_slice()], &mask, &mut out);
    assert_eq!(out, [chash::MASK_REFUSED; 2]);

    // HAProxy skips a server that is down on the same tree: exact.
    let haproxy = Ring::build_with_options(
        &RingOptions::new(Flavor::Haproxy),
        servers.iter().map(|&(addr, weight)| Node::new(addr, weight)),
    )
    .expect("haproxy ring");
    assert!(haproxy.masks_exactly());
    let answer = haproxy.bucket_idx_available(b"some key", &mask).expect("an available bucket");
    assert_ne!(answer, 1);
}

#[test]
fn bounded_loads_on_the_programs_rings_walk_or_say_why_not() {
    let servers = [("10.0.0.1:80", 1), ("10.0.0.2:80", 2), ("10.0.0.3:80", 3)];
    let build = |flavor| {
        Ring::build_with_options(
            &RingOptions::new(flavor),
            servers.iter().map(|&(addr, weight)| Node::new(addr, weight)),
        )
        .expect("ring")
    };
    // HAProxy, Varnish, ketama: the key's bucket full, the next one in the
    // ring's distinct walk that is not.
    for flavor in [Flavor::Haproxy, Flavor::VarnishShard, Flavor::KetamaMd5] {
        let ring = build(flavor);
        for key in [b"a".as_slice(), b"/index.html", b"user-42"] {
            let walk: Vec<usize> = ring.distinct_iter(key).collect();
            assert_eq!(walk.len(), 3, "{flavor:?}");
            let mut loads = [0u64; 3];
            loads[walk[0]] = 100;
            let capacity = chash::bounded_load_capacity(100, 3, 1.25).expect("capacity");
            let got = ring.bucket_idx_under_capacity(key, &loads, capacity, None);
            assert_eq!(got, Ok(Some(walk[1])), "{flavor:?}");
            let one_call = ring.bucket_idx_bounded_load(key, &loads, 1.25, None);
            assert_eq!(one_call, Ok(Some(walk[1])), "{flavor:?}");
        }
    }
    // Envoy bounds loads its own way; weighted ketama rebuilds without a
    // masked bucket: errors that say so, never "every bucket is full".
    for flavor in [Flavor::EnvoyRing, Flavor::EnvoyMaglev] {
        let ring = build(flavor);
        let err = ring.bucket_idx_under_capacity(b"k", &[0; 3], 10, None).unwrap_err();
        assert_eq!(err.kind(), chash::ErrorKind::BadArgument);
        assert!(err.message().contains("Envoy"), "{err}");
        let err = ring.bucket_idx_bounded_load(b"k", &[0; 3], 1.25, None).unwrap_err();
        assert!(err.message().contains("Envoy"), "{err}");
    }
    let ketama = build(Flavor::KetamaMd5);
    let mask = chash::NodeMask::new(3, true).expect("mask");
    let err = ketama.bucket_idx_under_capacity(b"k", &[0; 3], 10, Some(&mask)).unwrap_err();
    assert!(err.message().contains("rebuilds"), "{err}");
}
