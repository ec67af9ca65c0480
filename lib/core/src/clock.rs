//! Time: millisecond timestamps, their ISO 8601 rendering, and the clock port.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Milliseconds since the Unix epoch, UTC.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub fn millis(self) -> i64 {
        self.0
    }

    pub fn plus_millis(self, ms: i64) -> Self {
        Self(self.0.saturating_add(ms))
    }

    /// RFC 3339 / ISO 8601 in UTC with millisecond precision, e.g. `2026-11-21T10:00:00.123Z`.
    pub fn to_iso8601(self) -> String {
        let dt = self.datetime();
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            dt.year(),
            u8::from(dt.month()),
            dt.day(),
            dt.hour(),
            dt.minute(),
            dt.second(),
            dt.millisecond()
        )
    }

    /// The instant RFC 3339 text names (`2026-11-25T10:00:00.123Z`, or with an offset), to the
    /// millisecond; `None` for text that is not one.
    pub fn parse_iso8601(text: &str) -> Option<Timestamp> {
        use time::format_description::well_known::Rfc3339;
        let at = OffsetDateTime::parse(text, &Rfc3339).ok()?;
        i64::try_from(at.unix_timestamp_nanos() / 1_000_000)
            .ok()
            .map(Timestamp)
    }

    /// The calendar month (UTC) this instant falls in, as `YYYY-MM`; usage is counted per month.
    pub fn month(self) -> String {
        let dt = self.datetime();
        format!("{:04}-{:02}", dt.year(), u8::from(dt.month()))
    }

    /// The day of the month (UTC) this instant falls on, 1 to 31; usage is shown per day.
    pub fn day(self) -> u8 {
        self.datetime().day()
    }

    /// The first instant of the calendar day `YYYY-MM-DD` (UTC); `None` for text that is not
    /// one.
    pub fn parse_date(raw: &str) -> Option<Timestamp> {
        let b = raw.as_bytes();
        let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        let shaped = b.len() == 10 && b[4] == b'-' && b[7] == b'-';
        if !(shaped && digits(0..4) && digits(5..7) && digits(8..10)) {
            return None;
        }
        let month = time::Month::try_from(raw[5..7].parse::<u8>().ok()?).ok()?;
        let date =
            time::Date::from_calendar_date(raw[..4].parse().ok()?, month, raw[8..].parse().ok()?)
                .ok()?;
        let start = date.midnight().assume_utc();
        Some(Timestamp((start.unix_timestamp_nanos() / 1_000_000) as i64))
    }

    /// The first instant of the next calendar month (UTC), when monthly usage resets.
    pub fn next_month_start(self) -> Timestamp {
        let dt = self.datetime();
        let (y, m) = match dt.month() {
            time::Month::December => (dt.year() + 1, time::Month::January),
            m => (dt.year(), m.next()),
        };
        let start = time::Date::from_calendar_date(y, m, 1)
            .expect("first of a month is a valid date")
            .midnight()
            .assume_utc();
        Timestamp((start.unix_timestamp_nanos() / 1_000_000) as i64)
    }

    fn datetime(self) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0) * 1_000_000)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH)
    }
}

/// Whole seconds from `now` until `later`, rounded up and at least 1: the value of `Retry-After`.
pub fn whole_seconds_until(now: Timestamp, later: Timestamp) -> u64 {
    let ms = (later.0 - now.0).max(1);
    (ms as u64).div_ceil(1000)
}

/// Where use cases read the time from; tests substitute a clock they can move forward.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// The machine's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp(d.as_millis() as i64)
    }
}

/// The system clock moved by a fixed number of milliseconds: a server whose clock is off.
#[derive(Debug, Clone, Copy)]
pub struct OffsetClock(pub i64);

impl Clock for OffsetClock {
    fn now(&self) -> Timestamp {
        SystemClock.now().plus_millis(self.0)
    }
}

/// A [`Timestamp`] as RFC 3339 text in serde (`#[serde(with = "crate::clock::iso8601")]`), as
/// the interface and the workflow's JSON write times.
pub mod iso8601 {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    use super::Timestamp;

    pub fn serialize<S: Serializer>(at: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&at.to_iso8601())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(d)?;
        Timestamp::parse_iso8601(&text).ok_or_else(|| D::Error::custom("not an RFC 3339 time"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_iso8601_with_milliseconds() {
        assert_eq!(
            Timestamp(1_700_000_000_123).to_iso8601(),
            "2023-11-14T22:13:20.123Z"
        );
    }

    #[test]
    fn only_a_calendar_date_parses_to_its_first_instant() {
        let day = Timestamp::parse_date("2024-02-29").unwrap();
        assert_eq!(day.to_iso8601(), "2024-02-29T00:00:00.000Z");
        assert_eq!(day.day(), 29);
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-1-01",
            "2024/01/01",
            "",
            "２０２４-01-01",
        ] {
            assert_eq!(Timestamp::parse_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn next_month_start_rolls_over_the_year() {
        let dec = Timestamp(1_702_000_000_000); // 2023-12-08
        assert_eq!(dec.month(), "2023-12");
        assert_eq!(
            dec.next_month_start().to_iso8601(),
            "2024-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn retry_after_rounds_up_and_is_never_zero() {
        assert_eq!(whole_seconds_until(Timestamp(0), Timestamp(1)), 1);
        assert_eq!(whole_seconds_until(Timestamp(0), Timestamp(1000)), 1);
        assert_eq!(whole_seconds_until(Timestamp(0), Timestamp(1001)), 2);
        assert_eq!(whole_seconds_until(Timestamp(5), Timestamp(0)), 1);
    }
}
