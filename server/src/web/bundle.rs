//! The browser bundle (`<site root>/pkg`), served two ways. Pages name it under
//! `/bundle/<version>/pkg/`, `<version>` a hash of every file's name and content: such a URL
//! changes whenever any file does, so a browser keeps what it fetched from it for a year without
//! asking again (`immutable`). The split loader asks for chunks relative to the module that
//! loads them, so they come from the same versioned path. `/pkg/` serves the same files,
//! revalidated on each use (`no-cache`), for whatever names them without a version. Either way
//! each file goes as the build compressed it (`.br`, else `.gz`) to a browser that accepts that.
//!
//! NB: one version for the whole bundle, not a name per file: the split loader asks for fixed
//! chunk names, and the chunks and the main module only work together anyway.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use axum::Router;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use sha2::{Digest, Sha256};
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;

/// The prefix of a versioned bundle URL.
pub const VERSIONED: &str = "/bundle/";

/// The bundle's version: the first 16 hex digits of a SHA-256 over each file's path and content,
/// in path order (none: there is no built bundle in `pkg`). Read once per directory and process.
pub fn version(pkg: &Path) -> Option<String> {
    static READ: OnceLock<Mutex<HashMap<PathBuf, Option<String>>>> = OnceLock::new();
    let mut read = READ.get_or_init(Default::default).lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    read.entry(pkg.to_path_buf()).or_insert_with(|| hash_of(pkg)).clone()
}

fn hash_of(pkg: &Path) -> Option<String> {
    let mut files = Vec::new();
    let mut dirs = vec![pkg.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            let path = entry.path();
            if path.is_dir() { dirs.push(path) } else { files.push(path) }
        }
    }
    if files.is_empty() {
        return None;
    }
    files.sort();
    let mut hash = Sha256::new();
    for file in &files {
        let name = file.strip_prefix(pkg).unwrap_or(file).to_string_lossy();
        let content = std::fs::read(file).ok()?;
        // NB: lengths first, so that no two different bundles feed the same bytes.
        hash.update((name.len() as u64).to_le_bytes());
        hash.update(name.as_bytes());
        hash.update((content.len() as u64).to_le_bytes());
        hash.update(&content);
    }
    Some(hash.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect())
}

/// Where the pages name the bundle from: `/bundle/<version>` (their `pkg/…` below it), or
/// nothing (plain `/pkg/…`) when no bundle is built.
pub fn root(options: &leptos::config::LeptosOptions) -> String {
    match version(&pkg_dir(options)) {
        Some(version) => format!("{VERSIONED}{version}"),
        None => String::new(),
    }
}

fn pkg_dir(options: &leptos::config::LeptosOptions) -> PathBuf {
    Path::new(options.site_root.as_ref()).join(options.site_pkg_dir.as_ref())
}

/// The routes of the bundle: `/bundle/<version>/pkg` (cached for good) and `/pkg` (revalidated).
pub fn router<S: Clone + Send + Sync + 'static>(options: &leptos::config::LeptosOptions) -> Router<S> {
    let dir = pkg_dir(options);
    let files = || ServeDir::new(&dir).precompressed_br().precompressed_gzip();
    let cached = |files: ServeDir, cache: &'static str| {
        Router::<()>::new()
            .fallback_service(files)
            .layer(SetResponseHeaderLayer::overriding(header::CACHE_CONTROL, HeaderValue::from_static(cache)))
            .layer(SetResponseHeaderLayer::appending(header::VARY, HeaderValue::from_static("accept-encoding")))
    };
    let mut router = Router::new().nest_service("/pkg", cached(files(), "no-cache"));
    if let Some(version) = version(&dir) {
        let forever = cached(files(), "public, max-age=31536000, immutable");
        router = router.nest_service(&format!("{VERSIONED}{version}/pkg"), forever);
    }
    router
}

/// The longest file name a file system takes (`NAME_MAX`).
const NAME_MAX: usize = 255;

/// A path with a longer name than any file's names no file, page or server function: 404.
/// NB: the file system refuses it (ENAMETOOLONG), which `ServeDir` (the bundle's, and the
/// fallback's) logs as an error and answers 500: an error line anyone could write at will.
pub async fn no_long_names(req: Request, next: Next) -> Response {
    if req.uri().path().split('/').any(|name| name.len() > NAME_MAX) {
        return StatusCode::NOT_FOUND.into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_changes_with_any_file_and_only_then() {
        let dir = tempfile::tempdir().expect("temporary directory");
        assert_eq!(hash_of(dir.path()), None, "no bundle, no version");
        std::fs::write(dir.path().join("lbdesk.js"), "a").expect("write");
        std::fs::write(dir.path().join("chunk_1.wasm"), "b").expect("write");
        let first = hash_of(dir.path()).expect("a version");
        assert_eq!(first.len(), 16);
        assert_eq!(hash_of(dir.path()), Some(first.clone()), "the same files, the same version");
        std::fs::write(dir.path().join("chunk_1.wasm"), "c").expect("write");
        let changed = hash_of(dir.path()).expect("a version");
        assert_ne!(changed, first, "a chunk changed");
        std::fs::rename(dir.path().join("chunk_1.wasm"), dir.path().join("chunk_2.wasm")).expect("rename");
        assert_ne!(hash_of(dir.path()), Some(changed), "a chunk renamed");
    }
}
