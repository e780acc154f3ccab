//! lbdesk's clients of a Kubernetes API let go of a connection left unused for their
//! `keep_idle`, before the server closes it: a request sent on a connection as the server
//! closes it fails (a save answered "something went wrong", a cluster shown unreachable).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::serve::ListenerExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use serde_json::json;

/// An API server over plain HTTP that answers every request with an empty list of ConfigMaps,
/// and the count of the connections it accepted.
async fn counting_api() -> (String, Arc<AtomicUsize>) {
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let listener = listener.tap_io(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
    });
    let list = json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {}, "items": []});
    let app = axum::Router::new().fallback(move || std::future::ready(axum::Json(list.clone())));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, accepted)
}

/// A kubeconfig of one context, `c`, of the API server at `url` (through `proxy`, if any).
fn kubeconfig(url: &str, proxy: Option<&str>) -> kube::config::Kubeconfig {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": url, "proxy-url": proxy}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))
    .expect("a kubeconfig")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_unused_for_keep_idle_is_let_go_and_one_used_sooner_is_kept() {
    let (url, accepted) = counting_api().await;
    let kubeconfig = kubeconfig(&url, None);
    let keep_idle = Duration::from_millis(400);
    let client = app::ssr::clusters::client_of(&kubeconfig, None, keep_idle).await.expect("a client");
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let list = || async { api.list(&Default::default()).await.expect("listed").items.len() };
    assert_eq!(list().await, 0);
    tokio::time::sleep(keep_idle / 4).await;
    assert_eq!(list().await, 0);
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "a connection used again within keep_idle is kept");
    tokio::time::sleep(keep_idle * 3).await;
    assert_eq!(list().await, 0);
    assert_eq!(accepted.load(Ordering::SeqCst), 2, "one unused for longer is let go: the next request opens another");
}

/// Through a proxy the client is kube's own, which speaks the proxy's protocol: a proxy this
/// build cannot speak is refused, and never silently gone around.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_behind_a_proxy_gets_kubes_own_client() {
    let (url, accepted) = counting_api().await;
    let proxied = kubeconfig(&url, Some("socks5://127.0.0.1:1"));
    let keep_idle = app::ssr::clusters::KEEP_IDLE;
    let refused = app::ssr::clusters::client_of(&proxied, None, keep_idle).await.map(drop).expect_err("refused");
    assert!(format!("{refused:#}").contains("configured proxy"), "{refused:#}");
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
}
