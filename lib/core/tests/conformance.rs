//! The storage ports' contract on the transient store the use-case tests run on, so that what
//! those tests show holds for a store that keeps the contract.

use std::sync::Arc;

use knowledge_core::testing::TransientStore;
use knowledge_store_tests::Tested;

async fn open() -> (Arc<dyn Tested>, ()) {
    (Arc::new(TransientStore::default()), ())
}

knowledge_store_tests::conformance!(open);
