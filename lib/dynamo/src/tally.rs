//! A member's month by day and by model, as attributes of their month's usage item
//! (`ORG#<org>` / `USAGE#<YYYY-MM>#MEMBER#<user>`): `d<DD><part>` for each day (`q` questions,
//! `i` and `o` tokens, `c` millionths of a dollar) and `m:<model>:<part>` for each model (`n`
//! calls). They are added to in the transactions that already update the item, so counting
//! them costs no request; the item grows by about 30 bytes a day of use.

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};
use knowledge_core::domain::{DayUsage, ModelUsage, MonthUsage};
use knowledge_core::ids::SessionKey;
use knowledge_core::ports::{Charge, StoreResult};

use crate::codec::*;
use crate::{DynamoStore, keys};

/// One of a day's numbers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum DayPart {
    Questions,
    Input,
    Output,
    Cost,
}

/// The attribute of `part` of `day` (1 to 31), such as `d05q`.
pub(crate) fn day_attribute(day: u8, part: DayPart) -> String {
    let part = match part {
        DayPart::Questions => 'q',
        DayPart::Input => 'i',
        DayPart::Output => 'o',
        DayPart::Cost => 'c',
    };
    format!("d{day:02}{part}")
}

impl DynamoStore {
    /// The updates that charge `charge` to the session's organisation (its spend, when there
    /// is any: the organisation's item is every question's, and is not written for nothing)
    /// and member (their spend, and the call's tokens and spend on its day and model).
    pub(crate) fn charge_updates(
        &self, k: &SessionKey, charge: &Charge,
    ) -> StoreResult<Vec<TransactWriteItem>> {
        let org = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::usage(&k.org, &charge.month))))
            .update_expression("ADD costMicros :m")
            .expression_attribute_values(":m", n(charge.micros));
        let day = |part| day_attribute(charge.day, part);
        let member = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::member_usage(
                &k.org,
                &k.user,
                &charge.month,
            ))))
            .update_expression(format!(
                "ADD costMicros :m, {} :i, {} :o, {} :m, #mn :one, #mi :i, #mo :o, #mc :m",
                day(DayPart::Input),
                day(DayPart::Output),
                day(DayPart::Cost),
            ))
            .expression_attribute_names("#mn", model_attribute(&charge.model, 'n'))
            .expression_attribute_names("#mi", model_attribute(&charge.model, 'i'))
            .expression_attribute_names("#mo", model_attribute(&charge.model, 'o'))
            .expression_attribute_names("#mc", model_attribute(&charge.model, 'c'))
            .expression_attribute_values(":m", n(charge.micros))
            .expression_attribute_values(":i", n(charge.tokens.input))
            .expression_attribute_values(":o", n(charge.tokens.output))
            .expression_attribute_values(":one", n(1));
        let mut updates = Vec::with_capacity(2);
        if charge.micros > 0 {
            updates.push(
                TransactWriteItem::builder()
                    .update(built(org.build())?)
                    .build(),
            );
        }
        updates.push(
            TransactWriteItem::builder()
                .update(built(member.build())?)
                .build(),
        );
        Ok(updates)
    }
}

/// The attribute of `part` of `model`'s usage, such as `m:gpt-4o:n` (the model's name as
/// given: a name holding `:` reads back by its last one).
fn model_attribute(model: &str, part: char) -> String {
    format!("m:{model}:{part}")
}

/// A member's month as their usage item holds it.
pub(crate) fn month_usage_from(item: &Item) -> StoreResult<MonthUsage> {
    let mut month = MonthUsage {
        usage: usage_from(item)?,
        ..MonthUsage::default()
    };
    for name in item.keys() {
        if let Some((day, part)) = day_of(name) {
            let v = get_n(item, name)?;
            let d: &mut DayUsage = month.days.entry(day).or_default();
            match part {
                'q' => d.questions = v,
                'i' => d.input_tokens = v,
                'o' => d.output_tokens = v,
                _ => d.cost_micros = v,
            }
        } else if let Some((model, part)) = name
            .strip_prefix("m:")
            .and_then(|rest| rest.rsplit_once(':'))
        {
            let v = get_n(item, name)?;
            let m: &mut ModelUsage = month.models.entry(model.to_owned()).or_default();
            match part {
                "n" => m.calls = v,
                "i" => m.input_tokens = v,
                "o" => m.output_tokens = v,
                "c" => m.cost_micros = v,
                _ => return Err(corrupt("model usage attribute")),
            }
        }
    }
    Ok(month)
}

/// `d05q` as (5, 'q'); `None` for any other name.
fn day_of(name: &str) -> Option<(u8, char)> {
    let b = name.as_bytes();
    let well_formed = b.len() == 4
        && b[0] == b'd'
        && b[1].is_ascii_digit()
        && b[2].is_ascii_digit()
        && matches!(b[3], b'q' | b'i' | b'o' | b'c');
    let day = well_formed.then(|| (b[1] - b'0') * 10 + (b[2] - b'0'))?;
    (1..=31).contains(&day).then_some((day, b[3] as char))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_attributes_read_back_as_their_day_and_part() {
        for day in [1, 9, 10, 31] {
            let name = day_attribute(day, DayPart::Cost);
            assert_eq!(day_of(&name), Some((day, 'c')), "{name}");
        }
        for other in ["d00q", "d32q", "d05x", "d5q", "costMicros", "queries"] {
            assert_eq!(day_of(other), None, "{other}");
        }
    }
}
