//! Usage in detail: a member's month split by day and by model, as the usage pages and exports
//! show it. Counted beside the month's counters ([`super::Usage`]), in the same transactions.

use std::collections::BTreeMap;

use super::Usage;

/// Characters of a model's name a tally keeps at most (a deployment's model is configured by
/// its operator; the bound keeps a stored item small whatever it is).
pub const MODEL_NAME_CHARS: usize = 100;

/// One day of a month.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DayUsage {
    /// Questions admitted that day.
    pub questions: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_micros: u64,
}

/// One model's part of a month.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelUsage {
    /// Calls to the model (a question may take several: one per agent step).
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_micros: u64,
}

/// A month's usage: the counters limits are checked against, and the same usage by day of the
/// month (1 to 31) and by model. Days and models with nothing counted are absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MonthUsage {
    pub usage: Usage,
    pub days: BTreeMap<u8, DayUsage>,
    pub models: BTreeMap<String, ModelUsage>,
}

impl DayUsage {
    fn add(&mut self, o: &Self) {
        self.questions += o.questions;
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cost_micros += o.cost_micros;
    }
}

impl ModelUsage {
    fn add(&mut self, o: &Self) {
        self.calls += o.calls;
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cost_micros += o.cost_micros;
    }
}

impl MonthUsage {
    /// One question admitted on `day`.
    pub fn add_question(&mut self, day: u8) {
        self.usage.queries += 1;
        self.days.entry(day).or_default().questions += 1;
    }

    /// One call to `model` on `day` that used these tokens and cost `cost_micros`.
    pub fn add_call(&mut self, day: u8, model: &str, input: u64, output: u64, cost_micros: u64) {
        self.usage.cost_micros += cost_micros;
        let d = self.days.entry(day).or_default();
        d.input_tokens += input;
        d.output_tokens += output;
        d.cost_micros += cost_micros;
        let m = self.models.entry(model.to_owned()).or_default();
        m.calls += 1;
        m.input_tokens += input;
        m.output_tokens += output;
        m.cost_micros += cost_micros;
    }

    /// Input and output tokens of the month, over every model.
    pub fn tokens(&self) -> (u64, u64) {
        self.models.values().fold((0, 0), |(i, o), m| {
            (i + m.input_tokens, o + m.output_tokens)
        })
    }

    /// Adds `other` to this month (an organisation's month is the sum of its members').
    pub fn add(&mut self, other: &Self) {
        self.usage.queries += other.usage.queries;
        self.usage.cost_micros += other.usage.cost_micros;
        for (day, d) in &other.days {
            self.days.entry(*day).or_default().add(d);
        }
        for (model, m) in &other.models {
            self.models.entry(model.clone()).or_default().add(m);
        }
    }

    /// The models, most spent on first (then most called, then by name).
    pub fn models_by_cost(&self) -> Vec<(&str, ModelUsage)> {
        let mut models: Vec<_> = self.models.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        models.sort_by(|(a, x), (b, y)| {
            (y.cost_micros, y.calls, a).cmp(&(x.cost_micros, x.calls, b))
        });
        models
    }
}

/// `model` cut to [`MODEL_NAME_CHARS`], as a tally stores it.
pub fn model_name(model: &str) -> String {
    model.chars().take(MODEL_NAME_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_months_sum_adds_days_and_models_and_orders_models_by_spend() {
        let mut one = MonthUsage::default();
        one.usage.queries = 2;
        one.days.insert(
            3,
            DayUsage {
                questions: 2,
                cost_micros: 5,
                ..Default::default()
            },
        );
        one.models.insert(
            "a".into(),
            ModelUsage {
                calls: 2,
                input_tokens: 10,
                output_tokens: 1,
                cost_micros: 5,
            },
        );
        let mut two = MonthUsage::default();
        two.usage.queries = 1;
        two.days.insert(
            3,
            DayUsage {
                questions: 1,
                cost_micros: 7,
                ..Default::default()
            },
        );
        two.days.insert(
            9,
            DayUsage {
                questions: 1,
                ..Default::default()
            },
        );
        two.models.insert(
            "b".into(),
            ModelUsage {
                calls: 1,
                input_tokens: 4,
                output_tokens: 2,
                cost_micros: 7,
            },
        );
        one.add(&two);
        assert_eq!(one.usage.queries, 3);
        assert_eq!(one.days[&3].questions, 3);
        assert_eq!(one.days[&3].cost_micros, 12);
        assert_eq!(one.days[&9].questions, 1);
        assert_eq!(one.tokens(), (14, 3));
        let order: Vec<_> = one.models_by_cost().into_iter().map(|(m, _)| m).collect();
        assert_eq!(order, ["b", "a"]);
    }
}
