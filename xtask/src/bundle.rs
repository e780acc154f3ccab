//! The browser bundle: the wasm build, its split into one chunk per screen, wasm-bindgen,
//! wasm-opt, and the size limits the test command holds it to.
//!
//! The order is the one Leptos's lazy routes need (what `cargo leptos --split` does): the raw
//! `.wasm`, linked with `--emit-relocs` (`.cargo/config.toml`), is split first; wasm-bindgen
//! then runs on the main module only, keeping the linker's exports the chunks import
//! (`--keep-lld-exports`) under their mangled names (`--no-demangle`); wasm-opt runs on the
//! main module and on every chunk. `__wasm_split_manifest.json` tells the server which chunks
//! a page needs, so server-side rendering adds their preload links.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{OUTPUT_NAME, Profile, Result, WASM_TARGET, lints, root, sh, step, target_dir};

/// The most the first load of any page may weigh, gzipped: the main module plus the chunks
/// that page preloads (the limit set when the bundle was split; the heaviest, the rules form,
/// 367,018 B with both languages: its regexp check and the rule page's traffic shift load in
/// chunks of their own).
const FIRST_LOAD_LIMIT: u64 = 380_000;
/// The most one chunk may weigh, gzipped (the largest: 36,380 B).
const CHUNK_LIMIT: u64 = 60_000;
/// The most all the wasm together may weigh, gzipped. NB: the aim is 700,000 B, not met. The
/// split itself costs it: the same code unsplit is 576,914 B, and fewer, larger chunks bring the sum
/// down only by breaking the first-load or chunk limit (20,000 B below: 733,866 B with a 75 KB
/// chunk; 30,000 B: 720,826 B with a 403 KB first load; docs/perf.md, "What 700,000 B would
/// take"). Held at 760,000 B until every word became a dictionary key (the two languages) and
/// the rules pages split two chunks more to keep their first load under its limit: 775,801 B
/// (docs/perf.md, "What the two languages cost"); 773,999 B since clippy's driver compiles it.
const TOTAL_LIMIT: u64 = 780_000;
/// Shared chunks with less function code than this (bytes, before wasm-opt) are merged into
/// larger ones (`xtask/vendor/README.md`): each of ~200 chunks cost a request and its own
/// imports, types and gzip framing, and most were under 1 KB. Measured (docs/perf.md): 4,000 B
/// gives 41 chunks, 10,000 B 20, 12,000 B 19 with the lightest heaviest first load, 14,000 B
/// 14 but a 58 KB chunk, 25,000 B a chunk twice the limit. With the two languages' code and the
/// rules' two split points more: 8,000 B 36 modules and 778,811 B in all, 10,000 B 35 and
/// 777,998 B, 12,000 B a 62,352 B chunk every page loads (over the chunk limit).
const MERGE_CHUNKS_BELOW: usize = 10_000;
/// Modules smaller than this (bytes, before wasm-opt) are optimised by wasm-opt running on V8's
/// baseline compiler alone (`optimise`): every chunk; not the main module (about 1 MB).
const BASELINE_ONLY_BELOW: u64 = 500_000;
/// The module the split loader imports; Leptos's `HydrationScripts` asks for this name.
const SPLIT_LINK: &str = "./__wasm_split.______________________.js";
/// Where SSR reads which chunks each lazy route needs.
const MANIFEST: &str = "__wasm_split_manifest.json";

/// A built browser bundle in its `pkg` directory.
pub struct Bundle {
    /// The main module, loaded by every page.
    pub main: PathBuf,
    /// The lazily loaded chunks.
    pub chunks: Vec<PathBuf>,
    /// Each split point (a lazy route or function) and the chunk file stems it loads.
    pub manifest: BTreeMap<String, Vec<String>>,
}

/// The cargo profile of the bundle that ships (`Cargo.toml`).
const RELEASE_PROFILE: &str = "wasm-release";

/// Builds the browser bundle into `pkg`: script, main module, chunks and manifest.
pub fn build(profile: Profile, pkg: &Path) -> Result<Bundle> {
    let root = root();
    let (cargo_profile, dir) = match profile {
        Profile::Debug => ("dev", "debug"),
        Profile::Release => (RELEASE_PROFILE, RELEASE_PROFILE),
    };
    step("building the browser bundle (wasm), its code linted as it compiles");
    // NB: through clippy's driver, which lints the workspace's crates as it compiles them: a
    // `cargo clippy` of its own checked every dependency for wasm again, 70 s more on an empty
    // target directory (docs/perf.md). The bundle that ships is built the same way, so what ships is
    // what is tested; the driver turns MIR optimisations off in `app` and `frontend` (LLVM's
    // remain), which made the bundle smaller, not larger (docs/perf.md).
    let lints = lints()?;
    sh(
        &root,
        "cargo",
        &["build", "-p", "frontend", "--lib", "--target", WASM_TARGET, "--profile", cargo_profile],
        &lints,
    )?;
    let raw = target_dir().join(WASM_TARGET).join(dir).join("frontend.wasm");
    let _ = std::fs::remove_dir_all(pkg);
    std::fs::create_dir_all(pkg).map_err(|e| format!("could not create {}: {e}", pkg.display()))?;

    let input = std::fs::read(&raw).map_err(|e| format!("could not read {}: {e}", raw.display()))?;
    let key = (profile == Profile::Release).then(|| cache_key(&input)).transpose()?;
    if let Some(bundle) = key.as_deref().map(|k| from_cache(k, pkg)).transpose()?.flatten() {
        step("the browser build is unchanged: the bundle made from it before is reused");
        return Ok(bundle);
    }

    step("splitting the bundle into per-screen chunks");
    let split_main = raw.with_file_name("frontend_split.wasm");
    let main_module = format!("./{OUTPUT_NAME}.js");
    let split = wasm_split_cli_support::transform({
        let mut options = wasm_split_cli_support::Options::new(&input);
        options.output_dir = pkg;
        options.main_out_path = &split_main;
        options.main_module = &main_module;
        options.link_name = SPLIT_LINK;
        options.merge_chunks_below = MERGE_CHUNKS_BELOW;
        options
    })
    .map_err(|e| format!("could not split {}: {e:#}", raw.display()))?;

    let split_arg = split_main.to_string_lossy().into_owned();
    let pkg_arg = pkg.to_string_lossy().into_owned();
    sh(
        &root,
        "wasm-bindgen",
        &[
            "--target",
            "web",
            "--keep-lld-exports",
            "--no-demangle",
            "--out-dir",
            &pkg_arg,
            "--out-name",
            OUTPUT_NAME,
            &split_arg,
        ],
        &[],
    )?;
    let main = pkg.join(format!("{OUTPUT_NAME}.wasm"));
    std::fs::rename(pkg.join(format!("{OUTPUT_NAME}_bg.wasm")), &main)
        .map_err(|e| format!("could not rename the wasm: {e}"))?;
    let chunks = split.split_modules;

    if profile == Profile::Release {
        step("optimising the main module and every chunk (wasm-opt -Oz, one per core)");
        let modules: Vec<&PathBuf> = std::iter::once(&main).chain(&chunks).collect();
        optimise(&root.join("end2end/node_modules/.bin/wasm-opt"), &modules)?;
    }

    let manifest: BTreeMap<String, Vec<String>> = split.prefetch_map.into_iter().collect();
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| format!("could not write the manifest: {e}"))?;
    std::fs::write(pkg.join(MANIFEST), text).map_err(|e| format!("could not write the manifest: {e}"))?;
    compress(pkg, profile)?;
    let bundle = Bundle { main, chunks, manifest };
    if let Some(key) = key {
        to_cache(&key, pkg, &bundle)?;
    }
    Ok(bundle)
}

/// Where the release bundle made from one raw module is kept: splitting and wasm-opt take two
/// minutes, and most test runs change nothing in the browser build. One entry, the last.
fn cache_dir() -> PathBuf {
    target_dir().join("bundle-cache")
}

/// What a bundle is made from: the raw module and the xtask that makes it (its tools' flags).
fn cache_key(raw: &[u8]) -> Result<String> {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let exe = std::env::current_exe().and_then(std::fs::read).map_err(|e| format!("could not read the xtask: {e}"))?;
    let mut hasher = DefaultHasher::new();
    (raw, exe.as_slice(), crate::WASM_BINDGEN).hash(&mut hasher);
    Ok(format!("{:016x}", hasher.finish()))
}

/// The bundle kept under `key`, copied into `pkg`, if there is one.
fn from_cache(key: &str, pkg: &Path) -> Result<Option<Bundle>> {
    let dir = cache_dir().join(key);
    let Ok(index) = std::fs::read_to_string(dir.join("chunks.json")) else { return Ok(None) };
    let names: Vec<String> = serde_json::from_str(&index).map_err(|e| format!("a broken bundle cache: {e}"))?;
    for entry in std::fs::read_dir(&dir).map_err(|e| format!("could not read {}: {e}", dir.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        crate::copy(&entry.path(), &pkg.join(entry.file_name()))?;
    }
    let _ = std::fs::remove_file(pkg.join("chunks.json"));
    let manifest =
        std::fs::read_to_string(pkg.join(MANIFEST)).map_err(|e| format!("could not read the manifest: {e}"))?;
    let manifest = serde_json::from_str(&manifest).map_err(|e| format!("a broken manifest: {e}"))?;
    let chunks = names.iter().map(|n| pkg.join(n)).collect();
    Ok(Some(Bundle { main: pkg.join(format!("{OUTPUT_NAME}.wasm")), chunks, manifest }))
}

/// Keeps `bundle` (in `pkg`) under `key`, in place of any other.
fn to_cache(key: &str, pkg: &Path, bundle: &Bundle) -> Result {
    let _ = std::fs::remove_dir_all(cache_dir());
    let dir = cache_dir().join(key);
    std::fs::create_dir_all(&dir).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    for entry in std::fs::read_dir(pkg).map_err(|e| format!("could not read {}: {e}", pkg.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        crate::copy(&entry.path(), &dir.join(entry.file_name()))?;
    }
    let names: Vec<String> =
        bundle.chunks.iter().filter_map(|c| c.file_name().map(|n| n.to_string_lossy().into_owned())).collect();
    let index = serde_json::to_string(&names).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("chunks.json"), index).map_err(|e| format!("could not write the bundle cache: {e}"))
}

/// Runs `wasm_opt` on every module, in place, as many at once as the machine has cores, the
/// largest first (the main module takes longest). NB: Debian's native binaryen (version 108)
/// was 11 s instead of 2 min on the unmerged bundle but 5.5 KB larger, and `-Oz` without
/// `--converge` 633 B larger (docs/perf.md): the npm binaryen 132 it is.
fn optimise(wasm_opt: &Path, modules: &[&PathBuf]) -> Result {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut queue: Vec<&PathBuf> = modules.to_vec();
    // NB: popped from the end, so the smallest go last and no core idles behind a large one.
    queue.sort_by_key(|m| std::fs::metadata(m).map_or(0, |meta| meta.len()));
    let queue = std::sync::Mutex::new(queue);
    let run = |module: &PathBuf| -> Result {
        // NB: this wasm-opt is binaryen built to wasm, run by Node, which compiles its 10 MB of
        // wasm again at every start. V8's optimising tier costs more there than it saves on a
        // chunk (a 7 KB one: 2.2 s, 3.2 CPU-s; baseline only: 0.8 s) and saves more than it costs
        // on the main module (21 s; baseline only: 28 s). The output is the same either way.
        let small = std::fs::metadata(module).is_ok_and(|m| m.len() < BASELINE_ONLY_BELOW);
        let status = Command::new("node")
            .args(small.then_some("--liftoff-only"))
            .arg(wasm_opt)
            .args([
                "-Oz",
                "--converge",
                // NB: metadata for toolchains, never read by a browser; in every module it costs
                // some bytes gzipped.
                "--strip-debug",
                "--strip-producers",
                "--strip-target-features",
                "--enable-bulk-memory",
                "--enable-nontrapping-float-to-int",
            ])
            .arg(module)
            .arg("-o")
            .arg(module)
            .status()
            .map_err(|e| format!("could not start node for {}: {e}", wasm_opt.display()))?;
        if status.success() { Ok(()) } else { Err(format!("wasm-opt failed on {} ({status})", module.display())) }
    };
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..cores)
            .map(|_| {
                scope.spawn(|| -> Result {
                    loop {
                        let next = queue.lock().map_err(|_| "a wasm-opt worker failed".to_string())?.pop();
                        let Some(module) = next else { return Ok(()) };
                        run(module)?;
                    }
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| w.join().map_err(|_| "a wasm-opt worker panicked".to_string())?)
    })
}

/// Writes `<file>.br` and `<file>.gz` beside every script, module and stylesheet of `pkg` that
/// has none yet, for the server to send to browsers that accept them (`Content-Encoding`), so
/// nothing is compressed per request. Release files get the strongest settings; debug ones (only the
/// end-to-end run uses them) quicker ones. Returns how many files were compressed.
pub fn compress(pkg: &Path, profile: Profile) -> Result<usize> {
    use std::io::Write;
    step("compressing the bundle (brotli and gzip, beside each file)");
    let (quality, level) = match profile {
        Profile::Release => (11, 9),
        Profile::Debug => (5, 6),
    };
    let mut done = 0;
    for entry in std::fs::read_dir(pkg).map_err(|e| format!("could not read {}: {e}", pkg.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if !path.extension().is_some_and(|e| e == "wasm" || e == "js" || e == "css") {
            continue;
        }
        let with = |ext: &str| PathBuf::from(format!("{}.{ext}", path.display()));
        // NB: `build` compresses what it makes and keeps the copies in its cache; only what
        // was added beside it since (the stylesheet) is left.
        if with("br").exists() && with("gz").exists() {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| format!("could not read {}: {e}", path.display()))?;
        let mut br = Vec::new();
        let params = brotli::enc::BrotliEncoderParams { quality, lgwin: 22, ..Default::default() };
        brotli::BrotliCompress(&mut bytes.as_slice(), &mut br, &params)
            .map_err(|e| format!("could not compress {}: {e}", path.display()))?;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
        gz.write_all(&bytes).map_err(|e| format!("could not compress {}: {e}", path.display()))?;
        let gz = gz.finish().map_err(|e| format!("could not compress {}: {e}", path.display()))?;
        for (file, data) in [(with("br"), br), (with("gz"), gz)] {
            std::fs::write(&file, data).map_err(|e| format!("could not write {}: {e}", file.display()))?;
        }
        done += 1;
    }
    Ok(done)
}

/// Bytes of a file gzipped at the highest level, as a server would send it.
fn gzipped(path: &Path) -> Result<u64> {
    let out = Command::new("gzip").args(["-9", "-c"]).arg(path).output();
    match out {
        Ok(out) if out.status.success() => Ok(out.stdout.len() as u64),
        Ok(out) => Err(format!("gzip failed on {} ({})", path.display(), out.status)),
        Err(e) => Err(format!("could not start gzip: {e}")),
    }
}

fn stem(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// A split point's name without the hash the `#[lazy]` macro appends (`tickets_view_1234…`).
fn split_name(key: &str) -> &str {
    key.rsplit_once('_').filter(|(_, hash)| hash.bytes().all(|b| b.is_ascii_digit())).map_or(key, |(name, _)| name)
}

/// Prints the gzipped size of the first load of every lazy route, of every chunk and of all the
/// wasm together, and fails when one is over its limit.
pub fn check_sizes(bundle: &Bundle) -> Result {
    let main = gzipped(&bundle.main)?;
    let mut chunks = BTreeMap::new();
    for chunk in &bundle.chunks {
        chunks.insert(stem(chunk), gzipped(chunk)?);
    }
    let mut over = Vec::new();
    eprintln!("main module: {main} B gzipped (shell and every page's common code)");
    for (key, needs) in &bundle.manifest {
        let first_load = main + needs.iter().map(|c| chunks.get(c).copied().unwrap_or(0)).sum::<u64>();
        eprintln!(
            "first load of {}: {first_load} B gzipped (main + {}) (limit {FIRST_LOAD_LIMIT} B)",
            split_name(key),
            needs.join(" + ")
        );
        if first_load > FIRST_LOAD_LIMIT {
            over.push(format!("the first load of {} is {first_load} B, over {FIRST_LOAD_LIMIT} B", split_name(key)));
        }
    }
    for (name, size) in &chunks {
        eprintln!("chunk {name}: {size} B gzipped (limit {CHUNK_LIMIT} B)");
        if *size > CHUNK_LIMIT {
            over.push(format!("chunk {name} is {size} B, over {CHUNK_LIMIT} B"));
        }
    }
    let total = main + chunks.values().sum::<u64>();
    eprintln!("all wasm: {total} B gzipped (limit {TOTAL_LIMIT} B)");
    if total > TOTAL_LIMIT {
        over.push(format!("all wasm together is {total} B, over {TOTAL_LIMIT} B"));
    }
    if over.is_empty() { Ok(()) } else { Err(format!("the browser bundle is over its limits: {}", over.join("; "))) }
}

#[cfg(test)]
mod tests {
    use super::split_name;

    #[test]
    fn a_split_name_loses_only_a_numeric_hash() {
        assert_eq!(split_name("tickets_view_1234567890"), "tickets_view");
        assert_eq!(split_name("tickets_view"), "tickets_view");
        assert_eq!(split_name("plain"), "plain");
    }
}
