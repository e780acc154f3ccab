//! A request is served to its end even when its browser leaves before the answer.
//!
//! NB: hyper drops a request's future when its connection closes, wherever it is.
//! - A save stopped there could be half made: the change written and its audit row not, or a
//!   load balancer's credential Secret written and the load balancer not.
//! - A page streams as its suspense boundaries resolve. Dropped half-way (the browser went on to
//!   another page), Leptos 0.8 disposes of the page's reactive owner while the resources it
//!   started still load: the server functions they call find no request ("server state is
//!   missing"), and a boundary's effect reads its children again, whose signals and router are
//!   gone, which panics a worker (leptos-rs/leptos#4698). Read to its end by the server, a page
//!   is disposed of when it is done, as any page a browser read whole.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::StatusCode;

/// The longest a page left by its browser is rendered on: what has not ended by then is
/// dropped, as before.
const RENDER_LIMIT: Duration = Duration::from_secs(60);

/// Chunks of a page held for a slow browser before the render waits for it.
const BUFFERED: usize = 8;

/// Serves the request (anything but a file of the browser bundle, which changes nothing) in a
/// task of its own, which ends whether or not the browser stays; a page is read to its end by
/// that task and handed to the browser a chunk at a time while it stays.
pub async fn to_the_end(req: Request, next: Next) -> Response {
    if super::is_bundle(req.uri().path()) {
        return next.run(req).await;
    }
    let (answer, answered) = tokio::sync::oneshot::channel();
    let serve = async move {
        let response = next.run(req).await;
        if !super::is_page(&response) {
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
    tokio::spawn(serve);
    // NB: a task that panicked has said so in the log; the browser gets an error.
    answered.await.unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
