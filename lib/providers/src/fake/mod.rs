//! A scripted fake provider for tests (feature `fake`): a real HTTP server on 127.0.0.1 that
//! follows a script of replies and records what it was sent, and a [`Wire`] description of
//! each provider's format ([`OpenAi`], [`Anthropic`]) so that one generic test can run against
//! both adapters.
//!
//! The provider crate's own tests and the local service's end-to-end tests share it. Nothing
//! here is meant for production: it panics on anything unexpected, as a test should.
//!
//! Its parts: the script of replies and the requests it saw (`script`), the server that
//! follows it (`server`) and streams answers as a provider does (`stream`), and the wire
//! formats (`wire`, `openai`, `anthropic`).

mod anthropic;
mod openai;
mod script;
mod server;
mod stream;
mod wire;

use std::future::Future;
use std::time::Duration;

use knowledge_core::policy::pricing::Price;
use knowledge_core::ports::TokenUsage;
use tokio::time::timeout;

pub use anthropic::Anthropic;
pub use openai::OpenAi;
pub use script::{Reply, Seen};
pub use server::{Fake, nowhere};
pub use wire::{AgentSetup, Exchange, Wire};

/// The bound on every wait for something a test expects to happen.
pub const PATIENCE: Duration = Duration::from_secs(10);
/// The API key the adapters are built with (unless told otherwise) and error bodies echo.
pub const KEY: &str = "sk-test-secret-key";
/// $2 and $10 per million tokens: [`USAGE`] costs 2000 + 2000 micro-dollars, [`COST`].
pub const PRICE: Price = Price {
    input_usd_per_mtok: 2.0,
    output_usd_per_mtok: 10.0,
};
/// The usage every [`Wire::answer`] reports.
pub const USAGE: TokenUsage = TokenUsage {
    input: 1000,
    output: 200,
};
/// [`USAGE`] at [`PRICE`], in micro-dollars.
pub const COST: u64 = 4000;
/// The model the adapters are configured with.
pub const MODEL: &str = "test-model";

/// Waits for `future`, panicking if it takes longer than [`PATIENCE`].
pub async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    timeout(PATIENCE, future)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// Declares the generic tests `$test::<W: Wire>()` of the calling module once per wire format,
/// as `openai::$test` and `anthropic::$test`, so that each behaviour is written once.
#[macro_export]
macro_rules! for_each_provider {
    ($($test:ident),* $(,)?) => {
        mod openai {
            $(#[tokio::test]
            async fn $test() {
                super::$test::<$crate::fake::OpenAi>().await
            })*
        }
        mod anthropic {
            $(#[tokio::test]
            async fn $test() {
                super::$test::<$crate::fake::Anthropic>().await
            })*
        }
    };
}
