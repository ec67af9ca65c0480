//! `returnTo`: where a sign-in sends the browser afterwards. Only a path of this application is
//! accepted, so a sign-in can never be used to redirect to another site (an open redirect).

use crate::error::ApiError;

/// Longest `returnTo` accepted, in bytes.
pub const RETURN_TO_MAX_BYTES: usize = 2048;

/// A path of this application, safe to put in a `Location` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReturnTo(String);

impl ReturnTo {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<&str> for ReturnTo {
    type Error = ApiError;

    /// Accepts `/` followed by a path, query and fragment of visible ASCII. Refuses, among
    /// others: absolute URLs (`https://evil.example`), scheme-relative ones (`//evil.example`),
    /// backslashes (`/\evil.example`, which browsers read as `//`), whitespace and control
    /// characters, and percent-encoded slashes, backslashes or percent signs (`/%2F%2Fevil`,
    /// `%5C`, double encoding), so that no decoding step can turn it into another origin.
    fn try_from(path: &str) -> Result<Self, ApiError> {
        let lower = path.to_ascii_lowercase();
        let safe = path.len() <= RETURN_TO_MAX_BYTES
            && path.starts_with('/')
            && !path.starts_with("//")
            && path.bytes().all(|b| b.is_ascii_graphic() && b != b'\\')
            && !["%2f", "%5c", "%25"].iter().any(|e| lower.contains(e));
        if safe {
            Ok(Self(path.to_owned()))
        } else {
            Err(ApiError::InvalidField(
                "returnTo must be a path of this application, such as /sessions".into(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_of_this_application_are_kept_as_they_are() {
        for path in [
            "/",
            "/sessions",
            "/s/ses_1?tab=sources#top",
            "/a%20b",
            "/a:b@c",
        ] {
            assert_eq!(ReturnTo::try_from(path).unwrap().as_str(), path);
        }
    }

    #[test]
    fn anything_that_could_lead_to_another_origin_is_refused() {
        let long = format!("/{}", "a".repeat(RETURN_TO_MAX_BYTES));
        for path in [
            "https://evil.example/",
            "http:evil.example",
            "javascript:alert(1)",
            "//evil.example",
            "///evil.example",
            "/\\evil.example",
            "\\\\evil.example",
            "/%2F%2Fevil.example",
            "/%2f/evil.example",
            "/%5Cevil.example",
            "/%252F%252Fevil.example",
            "/ evil",
            "/\tevil",
            "/\r\nLocation: https://evil.example",
            "/évil",
            "evil",
            "",
            long.as_str(),
        ] {
            assert!(ReturnTo::try_from(path).is_err(), "{path:?} was accepted");
        }
    }
}
