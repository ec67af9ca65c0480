//! The price table: what a model's tokens cost, configured per deployment, and the pricing of
//! one provider call's usage in millionths of a US dollar (the unit spend is stored in).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::ports::TokenUsage;

/// A model's price in US dollars per million tokens. Since a million tokens at `p` dollars
/// each million cost `p` millionths of a dollar per token, the cost in micro-dollars is simply
/// `tokens × p`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    #[serde(rename = "inputUsdPerMTok")]
    pub input_usd_per_mtok: f64,
    #[serde(rename = "outputUsdPerMTok")]
    pub output_usd_per_mtok: f64,
}

impl Price {
    /// The cost of `usage`, rounded up to a whole micro-dollar so that spend is never
    /// under-counted.
    pub fn cost_micros(&self, usage: TokenUsage) -> u64 {
        let micros = usage.input as f64 * self.input_usd_per_mtok
            + usage.output as f64 * self.output_usd_per_mtok;
        micros.ceil() as u64
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PriceError {
    #[error("the price table is not a JSON object of model to price: {0}")]
    Syntax(String),
    #[error("the price of {0} must be finite and not negative")]
    Invalid(String),
    #[error(
        "the price table has no price for the model {0:?}; add {{\"{0}\": {{\"inputUsdPerMTok\": \
         …, \"outputUsdPerMTok\": …}}}} (0 for a free local model)"
    )]
    Missing(String),
}

/// Prices by model name. `*` is the price of any model not listed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable(BTreeMap<String, Price>);

impl PriceTable {
    /// Parses `{"<model>": {"inputUsdPerMTok": n, "outputUsdPerMTok": n}, ...}`.
    pub fn parse(json: &str) -> Result<Self, PriceError> {
        let table: BTreeMap<String, Price> =
            serde_json::from_str(json).map_err(|e| PriceError::Syntax(e.to_string()))?;
        for (model, p) in &table {
            let ok = |v: f64| v.is_finite() && v >= 0.0;
            if !ok(p.input_usd_per_mtok) || !ok(p.output_usd_per_mtok) {
                return Err(PriceError::Invalid(model.clone()));
            }
        }
        Ok(Self(table))
    }

    /// The price of `model`. Errors: `Missing`, so that a deployment never runs a model it
    /// cannot price (its cost cap would not hold).
    pub fn price(&self, model: &str) -> Result<Price, PriceError> {
        self.0
            .get(model)
            .or_else(|| self.0.get("*"))
            .copied()
            .ok_or_else(|| PriceError::Missing(model.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_priced_per_million_tokens_and_rounded_up() {
        let table =
            PriceTable::parse(r#"{"gpt-x": {"inputUsdPerMTok": 0.15, "outputUsdPerMTok": 0.6}}"#)
                .unwrap();
        let price = table.price("gpt-x").unwrap();
        // 1000 × 0.15 + 500 × 0.6 = 450 micro-dollars.
        let usage = TokenUsage {
            input: 1000,
            output: 500,
        };
        assert_eq!(price.cost_micros(usage), 450);
        assert_eq!(
            price.cost_micros(TokenUsage {
                input: 1,
                output: 0
            }),
            1
        );
    }

    #[test]
    fn an_unlisted_model_takes_the_wildcard_price_or_is_refused() {
        let table =
            PriceTable::parse(r#"{"a": {"inputUsdPerMTok": 1, "outputUsdPerMTok": 2}}"#).unwrap();
        assert!(matches!(table.price("b"), Err(PriceError::Missing(m)) if m == "b"));
        let table =
            PriceTable::parse(r#"{"*": {"inputUsdPerMTok": 0, "outputUsdPerMTok": 0}}"#).unwrap();
        assert_eq!(table.price("llama").unwrap(), Price::default());
    }

    #[test]
    fn negative_or_misspelt_prices_are_refused() {
        assert!(matches!(
            PriceTable::parse(r#"{"a": {"inputUsdPerMTok": -1, "outputUsdPerMTok": 2}}"#),
            Err(PriceError::Invalid(_))
        ));
        assert!(matches!(
            PriceTable::parse(r#"{"a": {"input": 1, "outputUsdPerMTok": 2}}"#),
            Err(PriceError::Syntax(_))
        ));
    }
}
