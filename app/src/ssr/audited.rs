//! A page's write to the management cluster, saying who makes it and why: a header on the
//! request (`x-lbdesk-audit`), which the embedded API takes from lbdesk's own user alone and
//! writes as the change's audit entry in the transaction that stores the object. A real API
//! server ignores it; there, the guarded path writes the entry once the API answered, keyed by
//! the version the write committed (`guard`), so the change is recorded once either way.

use std::marker::PhantomData;

use base64::Engine;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::Status;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The header a page's write carries.
pub const HEADER: &str = "x-lbdesk-audit";

/// Who makes a page's write, and why: the audit entry's own fields (the object's kind and name
/// are the request's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Said {
    pub user: String,
    /// create, update, enable, set quota, …
    pub action: String,
    pub project: Option<String>,
    /// What the page adds to the object as stored in the entry's `after` (fields of its own, such
    /// as which credentials a load balancer's save changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<serde_json::Value>,
}

impl Said {
    /// The header's value: the JSON, base64 (a header carries ASCII only).
    fn header(&self) -> http::HeaderValue {
        let json = serde_json::to_vec(self).unwrap_or_default();
        let text = base64::engine::general_purpose::STANDARD.encode(json);
        http::HeaderValue::from_str(&text).unwrap_or_else(|_| http::HeaderValue::from_static(""))
    }

    /// What a header says, if it is one.
    pub fn of_header(value: &http::HeaderValue) -> Option<Said> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(value.as_bytes()).ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

/// The writes of cluster-scoped objects of `K`, each carrying `said`.
pub struct Audited<K> {
    client: Client,
    request: kube::core::Request,
    said: Said,
    kind: PhantomData<K>,
}

impl<K> Audited<K>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + std::fmt::Debug,
{
    /// The objects of `K` (cluster-scoped) in the cluster of `client`, written for `said`.
    pub fn all(client: Client, said: Said) -> Audited<K> {
        let request = kube::core::Request::new(K::url_path(&(), None));
        Audited { client, request, said, kind: PhantomData }
    }

    /// The same, its entries noting `note` beside the object.
    pub fn noting(mut self, note: serde_json::Value) -> Audited<K> {
        self.said.note = Some(note);
        self
    }

    fn said(
        &self,
        built: Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    ) -> kube::Result<http::Request<Vec<u8>>> {
        let mut request = built.map_err(kube::Error::BuildRequest)?;
        request.headers_mut().insert(HEADER, self.said.header());
        Ok(request)
    }

    fn body(object: &K) -> kube::Result<Vec<u8>> {
        serde_json::to_vec(object).map_err(kube::Error::SerdeError)
    }

    pub async fn create(&self, object: &K) -> kube::Result<K> {
        let request = self.said(self.request.create(&PostParams::default(), Self::body(object)?))?;
        self.client.request(request).await
    }

    pub async fn replace(&self, name: &str, object: &K) -> kube::Result<K> {
        let request = self.said(self.request.replace(name, &PostParams::default(), Self::body(object)?))?;
        self.client.request(request).await
    }

    pub async fn patch<P: Serialize + std::fmt::Debug>(&self, name: &str, patch: &Patch<P>) -> kube::Result<K> {
        let request = self.said(self.request.patch(name, &PatchParams::default(), patch))?;
        self.client.request(request).await
    }

    pub async fn delete(&self, name: &str, params: &DeleteParams) -> kube::Result<either::Either<K, Status>> {
        let request = self.said(self.request.delete(name, params))?;
        self.client.request_status(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_page_says_travels_in_a_header_and_back() {
        let said =
            Said { user: "张三".into(), action: "set quota".into(), project: Some("project-a".into()), note: None };
        assert_eq!(Said::of_header(&said.header()), Some(said));
        assert_eq!(Said::of_header(&http::HeaderValue::from_static("not base64!")), None);
    }
}
