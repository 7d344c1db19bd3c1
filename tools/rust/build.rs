// Finds libchash and tells cargo how to link it, in this order:
//
// 1. CHASH_PREFIX=DIR: an installed chash (DIR/include/chash/chash_c.h and
//    DIR/lib*/pkgconfig/chash.pc, whose link line is used).
// 2. CHASH_LIB_DIR=DIR: a cmake build folder of this repository holding
//    libchash.a (tools/rust/test passes the one tools/dev/test builds).
// 3. `pkg-config chash`: a chash installed system-wide.
// 4. Otherwise: this repository (two folders up) built with cmake into
//    OUT_DIR, the library target only, Release.
//
// CHASH_NO_PKG_CONFIG=1 skips step 2 (to test the repository build).
// No registry crates: everything runs as commands (cmake, pkg-config).
//
// The crate's FFI declarations are then generated from the chash_c.h of
// the library linked (ffi_gen.rs), into OUT_DIR/chash_c.rs.

#[path = "ffi_gen.rs"]
mod ffi_gen;

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=ffi_gen.rs");
    for var in ["CHASH_PREFIX", "CHASH_LIB_DIR", "CHASH_NO_PKG_CONFIG", "PKG_CONFIG_PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }

    let include_dir = if let Some(prefix) = env::var_os("CHASH_PREFIX").filter(|p| !p.is_empty()) {
        link_prefix(Path::new(&prefix));
        Path::new(&prefix).join("include")
    } else if let Some(dir) = env::var_os("CHASH_LIB_DIR").filter(|p| !p.is_empty()) {
        link_build_dir(Path::new(&dir));
        source_dir_of_build(Path::new(&dir)).join("include")
    } else if env::var_os("CHASH_NO_PKG_CONFIG").is_none() && link_pkg_config("chash", None) {
        pkg_config_include_dir()
    } else {
        link_repository_build();
        repository_root().join("include")
    };
    write_ffi(&include_dir.join("chash/chash_c.h"));
}

fn write_ffi(header: &Path) {
    println!("cargo:rerun-if-changed={}", header.display());
    let text = std::fs::read_to_string(header)
        .unwrap_or_else(|err| fail(&format!("{}: {err}", header.display())));
    let rust = ffi_gen::generate(&text)
        .unwrap_or_else(|err| fail(&format!("{}: {err}", header.display())));
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap()).join("chash_c.rs");
    std::fs::write(&out, rust).unwrap_or_else(|err| fail(&format!("{}: {err}", out.display())));
}

fn repository_root() -> PathBuf {
    PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap()).join("../..")
}

// The source folder a cmake build folder was configured from (its
// CMakeCache.txt), whose include/ matches the library built there.
fn source_dir_of_build(dir: &Path) -> PathBuf {
    let cache = dir.join("CMakeCache.txt");
    let text = std::fs::read_to_string(&cache)
        .unwrap_or_else(|err| fail(&format!("CHASH_LIB_DIR: {}: {err}", cache.display())));
    text.lines()
        .find_map(|line| line.strip_prefix("CMAKE_HOME_DIRECTORY:INTERNAL="))
        .map(PathBuf::from)
        .unwrap_or_else(|| fail(&format!("{}: no CMAKE_HOME_DIRECTORY", cache.display())))
}

fn pkg_config_include_dir() -> PathBuf {
    let output = Command::new("pkg-config").args(["--variable=includedir", "chash"]).output();
    match output {
        Ok(output) if output.status.success() && !output.stdout.trim_ascii().is_empty() => {
            PathBuf::from(String::from_utf8_lossy(output.stdout.trim_ascii()).into_owned())
        }
        _ => fail("pkg-config chash names no includedir"),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("error: chash build.rs: {message}");
    std::process::exit(1);
}

// Emits the -L/-l flags of `pkg-config --libs --static NAME`; false when
// pkg-config or the package is missing.
fn link_pkg_config(name: &str, path: Option<&str>) -> bool {
    let mut command = Command::new("pkg-config");
    command.args(["--libs", "--static", name]);
    if let Some(path) = path {
        command.env("PKG_CONFIG_PATH", path);
    }
    let output = match command.output() {
        Ok(output) if output.status.success() => output,
        _ => return false,
    };
    let flags = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut linked_chash = false;
    for flag in flags.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
            // A shared libchash in that folder must be found at run time too.
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        } else if let Some(lib) = flag.strip_prefix("-l") {
            linked_chash |= lib.starts_with("chash");
            println!("cargo:rustc-link-lib={lib}");
        }
    }
    if !linked_chash {
        fail(&format!("pkg-config {name} names no chash library: '{}'", flags.trim()));
    }
    println!("cargo:rustc-link-lib=stdc++");
    true
}

fn link_prefix(prefix: &Path) {
    if !prefix.join("include/chash/chash_c.h").is_file() {
        fail(&format!("CHASH_PREFIX={}: no include/chash/chash_c.h there", prefix.display()));
    }
    let libdirs: Vec<PathBuf> = ["lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"]
        .iter()
        .map(|d| prefix.join(d))
        .filter(|d| d.is_dir())
        .collect();
    let pc_path: Vec<String> = libdirs
        .iter()
        .map(|d| d.join("pkgconfig"))
        .filter(|d| d.is_dir())
        .map(|d| d.display().to_string())
        .collect();
    if !pc_path.is_empty() && link_pkg_config("chash", Some(&pc_path.join(":"))) {
        return;
    }
    // Every install has chash.pc (shared or static-only): its link line is
    // the one source of libchash's dependencies.
    fail(&format!(
        "CHASH_PREFIX={}: no lib*/pkgconfig/chash.pc there (cmake --install writes it)",
        prefix.display()
    ));
}

fn has_library(dir: &Path, name: &str) -> bool {
    ["a", "so"].iter().any(|ext| dir.join(format!("lib{name}.{ext}")).exists())
}

// What libchash.a needs from the system (Highway, libsodium, libcrypto,
// xxHash, the C++ runtime, threads), as CMake wrote it beside the archive:
// chash-link-deps.txt holds the line chash.pc gives, so it is stated once.
fn link_dependencies(dir: &Path) {
    let file = dir.join("chash-link-deps.txt");
    println!("cargo:rerun-if-changed={}", file.display());
    let line = std::fs::read_to_string(&file).unwrap_or_else(|err| {
        fail(&format!("{}: {err} (reconfigure that build folder with cmake)", file.display()))
    });
    for flag in line.split_whitespace() {
        if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib={lib}");
        } else if flag == "-pthread" {
            println!("cargo:rustc-link-lib=pthread");
        } else {
            fail(&format!("{}: unexpected flag '{flag}'", file.display()));
        }
    }
}

fn link_build_dir(dir: &Path) {
    let library = dir.join("libchash.a");
    if !library.is_file() {
        fail(&format!("CHASH_LIB_DIR={}: no libchash.a there", dir.display()));
    }
    // Relink when the library is rebuilt.
    println!("cargo:rerun-if-changed={}", library.display());
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static=chash");
    link_dependencies(dir);
}

fn run(command: &mut Command, what: &str) {
    eprintln!("chash build.rs: running {command:?}");
    match command.status() {
        Ok(status) if status.success() => {}
        Ok(status) => fail(&format!("{what} failed ({status}); see the output above")),
        Err(err) => fail(&format!("{what}: cannot run {:?}: {err}", command.get_program())),
    }
}

fn link_repository_build() {
    let root = repository_root();
    if !root.join("CMakeLists.txt").is_file() || !root.join("include/chash/chash_c.h").is_file() {
        fail(&format!(
            "no chash source tree at {} and no installed chash: set CHASH_PREFIX to an installed \
             chash, or install chash.pc for pkg-config",
            root.display()
        ));
    }
    for dir in ["CMakeLists.txt", "cmake", "engine", "include"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let build = out.join("chash-build");
    let ninja = Command::new("ninja").arg("--version").output().is_ok_and(|o| o.status.success());
    if !build.join("CMakeCache.txt").is_file() {
        let mut configure = Command::new("cmake");
        configure.arg("-S").arg(&root).arg("-B").arg(&build);
        if ninja {
            configure.args(["-G", "Ninja"]);
        }
        configure.args([
            "-DCMAKE_BUILD_TYPE=Release",
            "-DCHASH_BUILD_TESTS=OFF",
            "-DCHASH_BUILD_TOOLS=OFF",
            "-DCHASH_BUILD_BENCH=OFF",
            "-DCHASH_BUILD_FUZZ=OFF",
        ]);
        run(&mut configure, "cmake configure");
    }
    let jobs = env::var("NUM_JOBS").unwrap_or_else(|_| "2".to_string());
    run(
        Command::new("cmake").arg("--build").arg(&build).args([
            "--target",
            "chash",
            "--parallel",
            &jobs,
        ]),
        "cmake --build (libchash)",
    );
    if !has_library(&build, "chash") {
        fail(&format!("the cmake build made no libchash in {}", build.display()));
    }
    println!("cargo:rustc-link-search=native={}", build.display());
    println!("cargo:rustc-link-lib=static=chash");
    link_dependencies(&build);
}
