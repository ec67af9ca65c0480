//! The resolver of guarded clients: each host resolved once, its refused addresses dropped,
//! and the connection made to what is left, so what was judged is what is connected to.

use std::net::SocketAddr;

use knowledge_core::ports::DestinationRefused;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::{ranges::refused_range, refused};

/// Resolves through the system's resolver (as reqwest's default does) and keeps the public
/// addresses only; a host with none left is refused, naming the first address's range.
pub(crate) struct Guarded;

impl Resolve for Guarded {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str();
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
            Ok(Box::new(public(host, all)?.into_iter()) as Addrs)
        })
    }
}

/// The public addresses among `all` that `host` resolved to. Errors: there are none, and
/// some were refused (the first one's range named).
fn public(host: &str, all: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, DestinationRefused> {
    let (public, private): (Vec<SocketAddr>, Vec<SocketAddr>) = all
        .into_iter()
        .partition(|a| refused_range(a.ip()).is_none());
    match private.first() {
        Some(first) if public.is_empty() => {
            let rule = refused_range(first.ip()).unwrap_or("refused");
            Err(refused(host, &first.ip().to_string(), rule))
        }
        _ => Ok(public),
    }
}

/// Resolves `host` and judges its addresses as a connection would. A name that does not
/// resolve passes. Errors: the refusal.
pub(crate) async fn judge(host: &str) -> Result<(), DestinationRefused> {
    match tokio::net::lookup_host((host, 0)).await {
        Ok(all) => public(host, all.collect()).map(|_| ()),
        Err(_) => Ok(()),
    }
}
