//! A page is rendered to its end even when its browser leaves before it has all of it.
//!
//! NB: a page streams as its suspense boundaries resolve. Dropped half-way (the browser went on
//! to another page, the user closed the tab), Leptos 0.8 disposes of the page's reactive owner
//! while the resources it started are still loading: the server functions they call find no
//! request ("server state is missing"), and a boundary's effect reads its children again, whose
//! signals and router are gone, which panics a worker (leptos-rs/leptos#4698). Rendered apart
//! from the connection and read to its end by the server, a page is disposed of when it is done,
//! as any page a browser read whole.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::{Method, StatusCode, header};
use tracing::Instrument;

/// The longest a page left by its browser is rendered on: what has not ended by then is
/// dropped, as before.
const RENDER_LIMIT: Duration = Duration::from_secs(60);

/// Chunks of a page held for a slow browser before the render waits for it.
const BUFFERED: usize = 8;

/// Renders a page (a `GET` of anything but a server function or a bundle file) in a task of its
/// own, which reads the page to its end whether or not the browser stays; the browser is handed
/// each chunk while it does.
pub async fn pages(req: Request, next: Next) -> Response {
    let path = req.uri().path();
    if req.method() != Method::GET || path.starts_with("/api/") || super::is_bundle(path) {
        return next.run(req).await;
    }
    let (answer, answered) = tokio::sync::oneshot::channel();
    let render = async move {
        let response = next.run(req).await;
        let is_page =
            response.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/html"));
        if !is_page {
            let _ = answer.send(response);
            return;
        }
        let (parts, body) = response.into_parts();
        let (tx, rx) = tokio::sync::mpsc::channel(BUFFERED);
        let _ = answer
            .send(Response::from_parts(parts, Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx))));
        let mut chunks = body.into_data_stream();
        let deadline = tokio::time::Instant::now() + RENDER_LIMIT;
        while let Ok(Some(chunk)) = tokio::time::timeout_at(deadline, chunks.next()).await {
            // NB: once the browser has gone, each chunk is read and dropped.
            let _ = tx.send(chunk).await;
        }
    };
    // NB: in the request's span, so that what the render logs carries the request's id.
    tokio::spawn(render.instrument(tracing::Span::current()));
    // NB: a render that panicked has said so in the log; the browser gets an error page.
    answered.await.unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
