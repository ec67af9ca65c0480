//! The guard against real sockets: a listener on loopback counts every connection made to
//! it, and sees none from a client that refuses private destinations, whether the URL names
//! the address, a form of it, or a host name that resolves to it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use knowledge_core::ports::DestinationRefused;
use knowledge_egress::Egress;
use reqwest::{Method, Url};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A listener on 127.0.0.1 that counts connections and answers each with `answer`.
async fn listener(answer: &'static str) -> (u16, Arc<AtomicUsize>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = l.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                // The request's head, then the answer.
                let mut head = Vec::new();
                let mut buf = [0; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    (port, count)
}

const OK: &str = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";

async fn send(egress: Egress, url: &str) -> Result<reqwest::Response, Box<dyn std::error::Error>> {
    let client = egress.client_builder().build()?;
    let request = egress.request(&client, Method::GET, Url::parse(url)?)?;
    Ok(request.send().await?)
}

#[tokio::test]
async fn a_guarded_client_never_connects_to_loopback_however_it_is_named() {
    let (port, count) = listener(OK).await;
    for url in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://localhost:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        format!("http://0x7f.1:{port}/"),
        format!("http://2130706433:{port}/"),
    ] {
        let e = send(Egress::PUBLIC_ONLY, &url).await.unwrap_err();
        let refusal = DestinationRefused::find(e.as_ref()).unwrap_or_else(|| panic!("{url}: {e}"));
        assert_eq!(refusal.rule, "a loopback address", "{url}");
    }
    assert_eq!(count.load(Ordering::SeqCst), 0, "no connection was made");
}

#[tokio::test]
async fn where_private_destinations_are_allowed_the_same_requests_connect() {
    let (port, count) = listener(OK).await;
    let answer = send(Egress::ANYWHERE, &format!("http://localhost:{port}/")).await;
    assert_eq!(answer.unwrap().status().as_u16(), 200);
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn redirects_are_never_followed() {
    let (target, reached) = listener(OK).await;
    let redirect: &'static str = Box::leak(
        format!("HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{target}/\r\ncontent-length: 0\r\n\r\n")
            .into_boxed_str(),
    );
    let (port, _) = listener(redirect).await;
    let answer = send(Egress::ANYWHERE, &format!("http://127.0.0.1:{port}/")).await;
    assert_eq!(answer.unwrap().status().as_u16(), 302);
    assert_eq!(reached.load(Ordering::SeqCst), 0);
}

#[test]
fn the_setting_reads_true_or_false_only() {
    assert_eq!(Egress::parse("TRUE"), Some(Egress::ANYWHERE));
    assert_eq!(Egress::parse(" false "), Some(Egress::PUBLIC_ONLY));
    assert_eq!(Egress::parse("1"), None);
}
