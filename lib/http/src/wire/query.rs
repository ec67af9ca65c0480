//! The queries of the session endpoints, read in place: `GET /transcript`'s session and cursor
//! (a tail poll's hot path: nothing copied when nothing is encoded), and the `sessionId` of
//! the others, each parsed into domain values at the edge.

use std::borrow::Cow;

use knowledge_core::CoreError;
use knowledge_core::ids::{EventId, SessionId};
use utoipa::IntoParams;

use super::session_id;
use crate::error::ApiError;
use crate::extract::QueryParams;

/// `GET /transcript`'s query: the session, and the cursor to read after.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TranscriptQuery {
    /// The session to read.
    #[param(rename = "sessionId", required, pattern = r"^ses_[0-9a-f]{32}$")]
    pub session_id: Option<String>,
    /// The last event the client has; the page starts after it. From the start when absent.
    #[param(rename = "sinceEventId", pattern = "^evt_[0-9]{12}$")]
    pub since_event_id: Option<String>,
}

impl TranscriptQuery {
    /// The parameters of a query string (`application/x-www-form-urlencoded`); the first
    /// occurrence of a name wins.
    pub fn parse(raw: Option<&str>) -> Self {
        let [session_id, since_event_id] =
            Self::params(raw.unwrap_or("")).map(|v| v.map(Cow::into_owned));
        Self {
            session_id,
            since_event_id,
        }
    }

    /// `sessionId` and `sinceEventId` of `raw`, the first occurrence of each, borrowed from it
    /// unless encoded. A client polls with this query about once a second, so when nothing is
    /// encoded (no `%`, no `+`) the query is read in place and nothing is copied: decoding took
    /// a tail poll's handler a fifth of its time, and the copies and `str` splitting (a
    /// `memchr` for each piece) about 1,500 instructions more. Encoded queries are decoded by
    /// `form_urlencoded`, to the same values.
    fn params(raw: &str) -> [Option<Cow<'_, str>>; 2] {
        let slot = |name: &str| match name {
            "sessionId" => Some(0),
            "sinceEventId" => Some(1),
            _ => None,
        };
        let mut fields = [None, None];
        // Two `memchr` scans (a scan of `str` with a set of characters decodes each one).
        let encoded = raw.as_bytes().contains(&b'%') || raw.as_bytes().contains(&b'+');
        if encoded {
            for (name, value) in form_urlencoded::parse(raw.as_bytes()) {
                if let Some(i) = slot(&name) {
                    fields[i].get_or_insert(value);
                }
            }
            return fields;
        }
        // The pairs, as `form_urlencoded` splits them: at `&`, the name before the first `=`,
        // the value after it (empty without one). Each byte is looked at once; cutting at ASCII
        // bytes keeps every piece on a character boundary.
        let mut rest = raw;
        while !rest.is_empty() {
            let cut = rest.bytes().position(|b| b == b'&' || b == b'=');
            let (name, value);
            (name, value, rest) = match cut.map(|at| (at, rest.as_bytes()[at])) {
                Some((at, b'=')) => {
                    let after = &rest[at + 1..];
                    let end = after.bytes().position(|b| b == b'&');
                    let value = &after[..end.unwrap_or(after.len())];
                    let next = end.map_or("", |end| &after[end + 1..]);
                    (&rest[..at], value, next)
                }
                Some((at, _)) => (&rest[..at], "", &rest[at + 1..]),
                None => (rest, "", ""),
            };
            // An empty pair's name is empty: no field's.
            if let Some(i) = slot(name) {
                fields[i].get_or_insert(Cow::Borrowed(value));
            }
        }
        fields
    }
}

/// A transcript page's request, parsed.
pub struct TranscriptPage {
    pub session: SessionId,
    pub since: Option<EventId>,
}

impl TranscriptPage {
    /// The page asked for by a `GET /transcript` query ([`TranscriptQuery`]), read in place.
    /// Errors: `sessionId` missing, empty or not a session id; `sinceEventId` not an event's.
    pub fn parse(raw: Option<&str>) -> Result<Self, ApiError> {
        let [session, since] = TranscriptQuery::params(raw.unwrap_or(""));
        Ok(Self {
            session: session_id(session.as_deref())?,
            since: since
                .as_deref()
                .map(EventId::parse_cursor)
                .transpose()
                .map_err(|e| CoreError::invalid("invalid_cursor", e.to_string()))?,
        })
    }
}

/// `DELETE /session`'s query: the session to delete.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SessionQuery {
    /// The session to delete.
    #[param(rename = "sessionId", required, pattern = r"^ses_[0-9a-f]{32}$")]
    pub session_id: Option<String>,
}

impl SessionQuery {
    pub fn parse(raw: Option<&str>) -> Self {
        Self {
            session_id: QueryParams::parse(raw).get("sessionId").map(str::to_owned),
        }
    }
}

impl TryFrom<SessionQuery> for SessionId {
    type Error = ApiError;

    fn try_from(q: SessionQuery) -> Result<Self, ApiError> {
        session_id(q.session_id.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::TranscriptQuery;

    #[test]
    fn a_transcript_query_read_in_place_says_what_form_urlencoded_says() {
        let decoded = |raw: &str| {
            let mut fields = [None, None];
            for (name, value) in form_urlencoded::parse(raw.as_bytes()) {
                let i = match &*name {
                    "sessionId" => 0,
                    "sinceEventId" => 1,
                    _ => continue,
                };
                fields[i].get_or_insert(value.into_owned());
            }
            fields
        };
        for raw in [
            "",
            "&",
            "&&sessionId=a&&",
            "sessionId",
            "sessionId&sessionId=b",
            "sessionId=a=b&sinceEventId==",
            "=x&sessionId=1&sessionId=2",
            "sinceEventId=evt_000000000010&sessionId=ses_0123",
            "x=1&sinceEventId=evt_1&sessionId=s&sinceEventId=evt_2",
            "sessionId=é&sinceEventId=ü=ö",
            "sessionid=a&SessionId=b&sessionId =c",
            "sessionId=a+b&sinceEventId=1",
            "sessionId=a&sinceEventId=%41",
        ] {
            let params = TranscriptQuery::params(raw);
            if !raw.contains(['%', '+']) {
                assert!(
                    params
                        .iter()
                        .flatten()
                        .all(|v| matches!(v, Cow::Borrowed(_))),
                    "{raw}: nothing to decode, nothing copied"
                );
            }
            assert_eq!(
                params.map(|v| v.map(Cow::into_owned)),
                decoded(raw),
                "{raw}"
            );
        }
    }

    #[test]
    fn a_transcript_query_takes_the_first_of_each_name_decoded_and_ignores_the_rest() {
        let q = TranscriptQuery::parse(Some(
            "x=1&sinceEventId=evt%5F000000000007&sessionId=a+b&sessionId=second&sinceEventId=",
        ));
        assert_eq!(q.session_id.as_deref(), Some("a b"));
        assert_eq!(q.since_event_id.as_deref(), Some("evt_000000000007"));
        let none = TranscriptQuery::parse(None);
        assert_eq!((none.session_id, none.since_event_id), (None, None));
        let empty = TranscriptQuery::parse(Some("sessionId=&sessionId=x"));
        assert_eq!(
            empty.session_id.as_deref(),
            Some(""),
            "an empty first one wins"
        );
    }
}
