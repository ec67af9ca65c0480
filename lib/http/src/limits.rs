//! The HTTP layer's limits on what a client sends, in one place: the head limits checked before
//! routing, and the body limits of each route family.

/// Longest request target (path and query) accepted, in bytes: 414 past it.
pub const URI_MAX_BYTES: usize = 8 * 1024;
/// Most header fields a request may carry: 431 past it.
pub const HEADER_MAX_COUNT: usize = 100;
/// Most bytes of header fields (names, values and their separators) a request may carry: 431
/// past it.
pub const HEADERS_MAX_BYTES: usize = 32 * 1024;
/// Session request bodies larger than this are refused with 413.
pub const BODY_LIMIT: usize = 256 * 1024;
/// SCIM request bodies larger than this are refused with 413; a user is a few KiB.
pub const SCIM_BODY_LIMIT: usize = 1024 * 1024;
