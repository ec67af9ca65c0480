//! The storage ports' contract on the transient store the use-case tests run on, so that what
//! those tests show holds for a store that keeps the contract.

use std::sync::Arc;

use knowledge_core::testing::TransientStore;
use knowledge_store_tests::Tested;
use knowledge_store_tests::documents::Documented;

async fn open() -> (Arc<dyn Tested>, ()) {
    (Arc::new(TransientStore::default()), ())
}

knowledge_store_tests::conformance!(open);

async fn open_documents() -> Option<(Arc<dyn Documented>, ())> {
    Some((Arc::new(TransientStore::default()), ()))
}

knowledge_store_tests::documents_conformance!(open_documents);
