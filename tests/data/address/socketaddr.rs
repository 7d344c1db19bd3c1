// Asks Rust's standard library which spellings `SocketAddr::from_str`
// accepts, and how it prints what it parsed (pingora-ketama hashes the
// Display of the IP and the port). std only, no crates:
//
//     rustc -O -o socketaddr socketaddr.rs
//     ./socketaddr < spellings.txt > rust-socketaddr.tsv
//
// One spelling a line on stdin; prints
//     SPELLING<TAB>ok<TAB>SocketAddr Display<TAB>ip() Display<TAB>port()
// or  SPELLING<TAB>err
use std::io::{self, BufRead, Write};
use std::net::SocketAddr;

fn main() {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    for line in stdin.lock().split(b'\n') {
        let bytes = line.expect("read stdin");
        let text = String::from_utf8(bytes).expect("spellings are ASCII");
        match text.parse::<SocketAddr>() {
            Ok(addr) => writeln!(out, "{}\tok\t{}\t{}\t{}", text, addr, addr.ip(), addr.port()),
            Err(_) => writeln!(out, "{}\terr", text),
        }
        .expect("write stdout");
    }
}
