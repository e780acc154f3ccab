//! How a request to the embedded API finds its handler: the path parsed into what it names,
//! the caller authenticated, the body read, the method dispatched.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use http::{HeaderMap, Method, header};
use serde_json::Value;

use super::resources;
use super::status::ApiError;
use super::{Api, Call, MAX_BODY, Objects, apply, handlers, watch};

/// The routes of the embedded API.
pub fn router(api: Arc<Api>) -> Router {
    Router::new()
        .route("/k8s/clusters/{cluster}", any(dispatch_root))
        .route("/k8s/clusters/{cluster}/{*rest}", any(dispatch))
        .with_state(api)
}

/// What a request path names.
#[derive(Debug)]
enum Target {
    Version,
    OpenApi,
    OpenApiGroupVersion(String, String),
    CoreVersions,
    Groups,
    Group(String),
    Resources(String, String),
    Objects(Objects),
}

fn not_found(path: &str) -> ApiError {
    ApiError::NotFound { kind: "path".into(), name: path.into() }
}

fn parse_target(rest: &str, is_mgmt: bool) -> Result<Target, ApiError> {
    let segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let (group, version, tail) = match segs.as_slice() {
        ["version"] => return Ok(Target::Version),
        ["openapi", "v3"] => return Ok(Target::OpenApi),
        ["openapi", "v3", "api", v] => return Ok(Target::OpenApiGroupVersion(String::new(), v.to_string())),
        ["openapi", "v3", "apis", g, v] => return Ok(Target::OpenApiGroupVersion(g.to_string(), v.to_string())),
        ["api"] => return Ok(Target::CoreVersions),
        ["apis"] => return Ok(Target::Groups),
        ["apis", g] => return Ok(Target::Group(g.to_string())),
        ["api", v] => return Ok(Target::Resources(String::new(), v.to_string())),
        ["apis", g, v] => return Ok(Target::Resources(g.to_string(), v.to_string())),
        ["api", v, tail @ ..] => ("", *v, tail),
        ["apis", g, v, tail @ ..] => (*g, *v, tail),
        _ => return Err(not_found(rest)),
    };
    let find = |plural: &str| resources::find(group, version, plural, is_mgmt).ok_or_else(|| not_found(rest));
    let (kind, namespace, name, sub) = match tail {
        ["namespaces", ns, plural, more @ ..]
            if resources::find(group, version, plural, is_mgmt).is_some_and(|k| k.namespaced) =>
        {
            (find(plural)?, Some(ns.to_string()), more.first(), more.get(1))
        }
        [plural, more @ ..] => (find(plural)?, None, more.first(), more.get(1)),
        [] => return Err(not_found(rest)),
    };
    if tail.len() > if namespace.is_some() { 5 } else { 3 } {
        return Err(not_found(rest));
    }
    let status = match sub {
        None => false,
        Some(&"status") if kind.status => true,
        Some(_) => return Err(not_found(rest)),
    };
    Ok(Target::Objects(Objects { kind, namespace, name: name.map(|n| n.to_string()), status }))
}

async fn dispatch_root(State(api): State<Arc<Api>>, Path(cluster): Path<String>, req: Request) -> Response {
    serve(api, cluster, String::new(), req).await
}

async fn dispatch(
    State(api): State<Arc<Api>>,
    Path((cluster, rest)): Path<(String, String)>,
    req: Request,
) -> Response {
    serve(api, cluster, rest, req).await
}

async fn serve(api: Arc<Api>, cluster: String, rest: String, req: Request) -> Response {
    match handle(&api, &cluster, &rest, req).await {
        Ok(res) => res,
        Err(e) => e.into_response(),
    }
}

/// The caller, from the bearer token.
async fn authenticate(api: &Api, headers: &HeaderMap) -> Result<String, ApiError> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or(ApiError::Unauthorized)?;
    api.store.token_user(token).await?.ok_or(ApiError::Unauthorized)
}

async fn handle(api: &Api, cluster: &str, rest: &str, req: Request) -> Result<Response, ApiError> {
    let user = match authenticate(api, req.headers()).await {
        Ok(user) => user,
        Err(refused) => {
            crate::net::drain(req.into_body()).await;
            return Err(refused);
        }
    };
    // NB: read before any other refusal, for the same reason.
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| ApiError::TooLarge(format!("the request body is larger than {MAX_BODY} bytes")))?
        .to_vec();
    if !api.store.has_cluster(cluster).await? {
        return Err(ApiError::NotFound { kind: "cluster".into(), name: cluster.into() });
    }
    let is_mgmt = cluster == api.mgmt;
    let method = parts.method.clone();
    let target = parse_target(rest, is_mgmt)?;
    let json = |v: Value| -> Result<Response, ApiError> { Ok(axum::Json(v).into_response()) };
    let objects = match target {
        Target::Version => return json(resources::version()),
        Target::OpenApi => return json(resources::openapi_root(is_mgmt)),
        Target::OpenApiGroupVersion(g, v) => {
            return resources::openapi_group_version(&g, &v, is_mgmt)
                .map(|d| axum::Json(d).into_response())
                .ok_or_else(|| not_found(rest));
        }
        Target::CoreVersions => return json(resources::core_versions()),
        Target::Groups => return json(resources::group_list(is_mgmt)),
        Target::Group(g) => {
            return resources::group(&g, is_mgmt)
                .map(axum::Json)
                .map(IntoResponse::into_response)
                .ok_or_else(|| not_found(rest));
        }
        Target::Resources(g, v) => {
            return resources::resource_list(&g, &v, is_mgmt)
                .map(|l| axum::Json(l).into_response())
                .ok_or_else(|| not_found(rest));
        }
        Target::Objects(o) => o,
    };
    let accept = parts.headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let content_type = parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let query: HashMap<String, String> =
        Query::<HashMap<String, String>>::try_from_uri(&parts.uri).map(|q| q.0).unwrap_or_default();
    // NB: only lbdesk's own pages say for whom they write; anyone else's header is ignored.
    let said = parts
        .headers
        .get(app::ssr::audited::HEADER)
        .filter(|_| api.admission.is_own(&user))
        .and_then(app::ssr::audited::Said::of_header);
    let call = Call {
        cluster: cluster.to_string(),
        user,
        query,
        table: accept.contains("as=Table"),
        content_type,
        body,
        managed_fields: None,
        said,
    };
    let watching = matches!(call.param("watch"), Some("true" | "1"));
    match (method, objects.name.is_some()) {
        (Method::GET, false) if watching => watch::watch(api, &call, &objects).await,
        (Method::GET, false) => handlers::list(api, &call, &objects).await,
        (Method::GET, true) => handlers::get(api, &call, &objects).await,
        (Method::POST, false) if !objects.status => handlers::create(api, &call, &objects).await,
        (Method::PUT, true) => handlers::replace(api, &call, &objects).await,
        (Method::PATCH, true) if call.content_type.starts_with("application/apply-patch+yaml") => {
            apply::handle(api, &call, &objects).await
        }
        (Method::PATCH, true) => handlers::patch(api, &call, &objects).await,
        (Method::DELETE, true) if !objects.status => handlers::delete(api, &call, &objects).await,
        _ => Err(ApiError::MethodNotAllowed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_what_kubectl_and_kube_ask_for() {
        let objects = |rest: &str, mgmt: bool| match parse_target(rest, mgmt) {
            Ok(Target::Objects(o)) => Some((o.kind.plural, o.namespace, o.name, o.status)),
            _ => None,
        };
        assert_eq!(objects("apis/ebcpaas.io/v1/lbtickets", true), Some(("lbtickets", None, None, false)));
        assert_eq!(
            objects("apis/ebcpaas.io/v1/lbtickets/t/status", true),
            Some(("lbtickets", None, Some("t".into()), true))
        );
        assert_eq!(objects("apis/ebcpaas.io/v1/lbtickets", false), None, "member clusters have no lbdesk CRDs");
        assert_eq!(objects("api/v1/namespaces", true), Some(("namespaces", None, None, false)));
        assert_eq!(
            objects("api/v1/namespaces/default", true),
            Some(("namespaces", None, Some("default".into()), false))
        );
        assert_eq!(
            objects("api/v1/namespaces/default/configmaps/x", false),
            Some(("configmaps", Some("default".into()), Some("x".into()), false))
        );
        assert_eq!(objects("api/v1/configmaps", false), Some(("configmaps", None, None, false)));
        assert_eq!(objects("api/v1/namespaces/default/configmaps/x/status", false), None, "no status subresource");
        assert_eq!(objects("api/v1/namespaces/default/configmaps/x/y/z", false), None);
        assert!(matches!(parse_target("version", false), Ok(Target::Version)));
        assert!(matches!(parse_target("apis/ebcpaas.io/v1", true), Ok(Target::Resources(..))));
    }
}
