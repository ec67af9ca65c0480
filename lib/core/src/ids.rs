//! Identifiers as validated newtypes: a value of one of these types is always well formed.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a string was refused as an identifier. The message names the identifier and the rule,
/// never the offending value, so it is safe to return to a client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} is malformed: {rule}")]
pub struct InvalidId {
    pub what: &'static str,
    pub rule: &'static str,
}

fn random_hex() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// True for 32 lowercase hexadecimal digits, the random part of generated identifiers.
fn is_hex32(s: &str) -> bool {
    s.len() == 32
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// True for 1 to `max` characters of `A-Z a-z 0-9 _ -`.
fn is_token(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The conversions every identifier has: from and into `String` (validated), `FromStr`, and
/// `Display`.
macro_rules! id_traits {
    ($name:ident) => {
        impl TryFrom<String> for $name {
            type Error = InvalidId;
            fn try_from(s: String) -> Result<Self, InvalidId> {
                Self::parse(&s)
            }
        }

        impl std::str::FromStr for $name {
            type Err = InvalidId;
            fn from_str(s: &str) -> Result<Self, InvalidId> {
                Self::parse(s)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

macro_rules! token_id {
    ($(#[$doc:meta])* $name:ident, $what:literal, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// A fresh random identifier.
            pub fn generate() -> Self {
                Self(format!(concat!($prefix, "{}"), random_hex()))
            }

            /// Accepts 1 to 64 characters of `A-Z a-z 0-9 _ -`.
            pub fn parse(s: &str) -> Result<Self, InvalidId> {
                if is_token(s, 64) {
                    Ok(Self(s.to_owned()))
                } else {
                    Err(InvalidId { what: $what, rule: "1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'" })
                }
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        id_traits!($name);
    };
}

token_id!(
    /// An organisation (tenant). Generated as `org_` and 32 hex digits; admins may choose others.
    OrgId,
    "orgId",
    "org_"
);
token_id!(
    /// A user. Generated as `usr_` and 32 hex digits; identity providers may bring their own.
    UserId,
    "userId",
    "usr_"
);

macro_rules! random_id {
    ($(#[$doc:meta])* $name:ident, $what:literal, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            pub fn generate() -> Self {
                Self(format!(concat!($prefix, "{}"), random_hex()))
            }

            /// Accepts exactly the generated form: the prefix and 32 lowercase hex digits.
            pub fn parse(s: &str) -> Result<Self, InvalidId> {
                match s.strip_prefix($prefix) {
                    Some(rest) if is_hex32(rest) => Ok(Self(s.to_owned())),
                    _ => Err(InvalidId {
                        what: $what,
                        rule: concat!("'", $prefix, "' followed by 32 lowercase hex digits"),
                    }),
                }
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        id_traits!($name);
    };
}

random_id!(
    /// A session (conversation): `ses_` and 32 hex digits.
    SessionId,
    "sessionId",
    "ses_"
);
random_id!(
    /// A workflow run: `run_` and 32 hex digits.
    RunId,
    "runId",
    "run_"
);
random_id!(
    /// A group of members (pushed by SCIM or made by an admin): `grp_` and 32 hex digits, so
    /// never a role's name.
    GroupId,
    "groupId",
    "grp_"
);
random_id!(
    /// A collection of documents: `col_` and 32 hex digits.
    CollectionId,
    "collectionId",
    "col_"
);
random_id!(
    /// A document of a collection: `doc_` and 32 hex digits.
    DocumentId,
    "documentId",
    "doc_"
);

/// An event's position in its session's log, rendered as `evt_` and 12 zero-padded digits so that
/// string order is log order and `sinceEventId` is a key range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(u64);

impl EventId {
    const PREFIX: &'static str = "evt_";
    /// Largest sequence number the rendering can hold (12 digits).
    pub const MAX_SEQ: u64 = 999_999_999_999;

    pub fn from_seq(seq: u64) -> Self {
        Self(seq)
    }

    pub fn seq(self) -> u64 {
        self.0
    }

    /// Parses an event's id (`evt_` and 12 digits), as a request names one.
    pub fn parse_event(s: &str) -> Result<Self, InvalidId> {
        (s.strip_prefix(Self::PREFIX))
            .filter(|d| d.len() == 12 && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse().ok())
            .filter(|&seq| seq > 0)
            .map(Self)
            .ok_or(InvalidId {
                what: "toolUseId",
                rule: "'evt_' and 12 digits",
            })
    }

    /// Parses a `sinceEventId` cursor. Errors say whether the interface's format rule was broken
    /// (at most 128 characters of `A-Z a-z 0-9 _ -`) or the value is simply not one of our ids.
    pub fn parse_cursor(s: &str) -> Result<Self, InvalidId> {
        if !is_token(s, 128) {
            return Err(InvalidId {
                what: "sinceEventId",
                rule: "1 to 128 characters of A-Z, a-z, 0-9, '_' and '-'",
            });
        }
        s.strip_prefix(Self::PREFIX)
            .filter(|d| d.len() == 12 && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse().ok())
            .map(Self)
            .ok_or(InvalidId {
                what: "sinceEventId",
                rule: "it must be the id of an event of this session ('evt_' and 12 digits)",
            })
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{:012}", Self::PREFIX, self.0)
    }
}

/// The only way to address a session: user, organisation and session together, so that a
/// lookup can never reach another tenant's data.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKey {
    pub user: UserId,
    pub org: OrgId,
    pub session: SessionId,
}

impl SessionKey {
    /// The key of `user`'s `session` in `org`.
    pub fn new(user: &UserId, org: &OrgId, session: &SessionId) -> Self {
        Self {
            user: user.clone(),
            org: org.clone(),
            session: session.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_parse_back() {
        let s = SessionId::generate();
        assert_eq!(SessionId::parse(s.as_str()).unwrap(), s);
        let r = RunId::generate();
        assert_eq!(RunId::parse(r.as_str()).unwrap(), r);
        let o = OrgId::generate();
        assert_eq!(OrgId::parse(o.as_str()).unwrap(), o);
    }

    #[test]
    fn session_ids_of_another_shape_are_refused() {
        for bad in [
            "",
            "ses_",
            "ses_123",
            "run_0123456789abcdef0123456789abcdef",
            "ses_0123456789ABCDEF0123456789ABCDEF",
            "ses_0123456789abcdef0123456789abcdef0",
            "ses_0123456789abcdef0123456789abcde\n",
        ] {
            assert!(SessionId::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn event_ids_sort_as_strings_in_log_order() {
        let a = EventId::from_seq(9).to_string();
        let b = EventId::from_seq(10).to_string();
        assert!(a < b);
        assert_eq!(EventId::parse_cursor(&b).unwrap().seq(), 10);
    }

    #[test]
    fn cursors_breaking_the_format_rule_are_refused() {
        assert!(EventId::parse_cursor(&"a".repeat(129)).is_err());
        assert!(EventId::parse_cursor("evt_0000 0000001").is_err());
        assert!(EventId::parse_cursor("evt_00000000001é").is_err());
        assert!(EventId::parse_cursor("evt_1").is_err());
    }

    #[test]
    fn token_ids_accept_idp_style_values_and_refuse_others() {
        assert!(UserId::parse("2819c223-7f76-453a-919d-413861904646").is_ok());
        assert!(UserId::parse("a/b").is_err());
        assert!(UserId::parse(&"x".repeat(65)).is_err());
    }
}
