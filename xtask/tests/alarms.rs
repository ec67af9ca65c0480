//! The alarms and the dashboard in `template.yaml` read the metrics the code records: each
//! alarm on the service's namespace names a metric of `knowledge_core::telemetry`'s catalogue,
//! with exactly its labels as dimensions (CloudWatch matches a dimension set whole, so an alarm
//! that names fewer never fires) and values the code gives them; each alarm notifies the
//! topic parameter; the dashboard's searches name catalogue metrics with their labels.

use knowledge_core::telemetry::{CATALOGUE, Metric};
use serde_norway::Value;
use serde_norway::value::TaggedValue;

fn template() -> Value {
    let text = std::fs::read_to_string(xtask::root().join("template.yaml")).unwrap();
    serde_norway::from_str(&text).expect("template.yaml is YAML")
}

/// The service's namespace as the template writes it.
const NAMESPACE: &str = "Knowledge/${AWS::StackName}";

/// Whether `v` is `!Sub "Knowledge/${AWS::StackName}"`.
fn is_service_namespace(v: &Value) -> bool {
    matches!(v, Value::Tagged(t) if t.tag == "Sub" && t.value.as_str() == Some(NAMESPACE))
}

fn catalogued(name: &str) -> &'static Metric {
    (CATALOGUE.iter())
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("{name} is not a metric the code records"))
}

/// The metrics an alarm reads: its own, or each of its math's `MetricStat`s.
fn metrics_of(alarm: &Value) -> Vec<&Value> {
    let props = &alarm["Properties"];
    if props.get("MetricName").is_some() {
        return vec![props];
    }
    (props["Metrics"]
        .as_sequence()
        .expect("a metric or metric math"))
    .iter()
    .filter_map(|m| m.get("MetricStat").map(|s| &s["Metric"]))
    .collect()
}

fn alarms(t: &Value) -> Vec<(String, &Value)> {
    (t["Resources"].as_mapping().unwrap().iter())
        .filter(|(_, r)| r["Type"] == "AWS::CloudWatch::Alarm")
        .map(|(k, r)| (k.as_str().unwrap().to_owned(), r))
        .collect()
}

#[test]
fn every_alarm_on_the_services_metrics_names_a_catalogued_metric_with_its_labels_and_values() {
    let t = template();
    let mut read = 0;
    for (name, alarm) in alarms(&t) {
        for m in metrics_of(alarm) {
            if !is_service_namespace(&m["Namespace"]) {
                continue;
            }
            read += 1;
            let metric = catalogued(m["MetricName"].as_str().unwrap());
            let dims = (m["Dimensions"].as_sequence()).map_or(&[][..], |d| d.as_slice());
            let mut names: Vec<&str> = dims.iter().map(|d| d["Name"].as_str().unwrap()).collect();
            names.sort_unstable();
            let mut labels = metric.labels.to_vec();
            labels.sort_unstable();
            assert_eq!(names, labels, "{name}: {}'s dimensions", metric.name);
            for d in dims {
                let label = d["Name"].as_str().unwrap();
                let at = metric.labels.iter().position(|l| *l == label).unwrap();
                let values = metric.values[at];
                if let Some(value) = d["Value"].as_str() {
                    assert!(
                        values.contains(&value),
                        "{name}: {label}={value} is not a value the code records ({values:?})"
                    );
                } else {
                    assert!(
                        values.is_empty(),
                        "{name}: {label} is a closed set, named here by a parameter"
                    );
                }
            }
        }
    }
    assert!(read >= 6, "the alarms read {read} of the service's metrics");
}

#[test]
fn every_alarm_notifies_the_topic_when_one_is_given_and_treats_no_data_as_fine() {
    let t = template();
    let alarms = alarms(&t);
    assert!(alarms.len() >= 10, "{} alarms", alarms.len());
    for (name, alarm) in alarms {
        let props = &alarm["Properties"];
        for key in ["AlarmActions", "OKActions"] {
            let Value::Tagged(t) = &props[key] else {
                panic!("{name}: {key} is not conditional on the topic");
            };
            let TaggedValue { tag, value } = &**t;
            assert_eq!(tag.to_string(), "!If", "{name}");
            assert_eq!(value[0], "HasAlarmTopic", "{name}");
        }
        assert_eq!(props["TreatMissingData"], "notBreaching", "{name}");
        assert!(
            props["AlarmDescription"]
                .as_str()
                .is_some_and(|d| d.len() > 40),
            "{name}"
        );
    }
}

#[test]
fn the_dashboards_searches_name_catalogued_metrics_with_their_labels() {
    let t = template();
    let body = &t["Resources"]["Dashboard"]["Properties"]["DashboardBody"];
    let Value::Tagged(sub) = body else {
        panic!("the body is a !Sub")
    };
    let text = sub.value[0].as_str().unwrap();
    let mut searched = 0;
    for search in text.split("SEARCH('{${Ns},").skip(1) {
        let (dims, rest) = search.split_once('}').unwrap();
        let name = (rest.split("MetricName=\\\"").nth(1).unwrap())
            .split("\\\"")
            .next()
            .unwrap();
        let metric = catalogued(name);
        let mut dims: Vec<&str> = dims.split(',').collect();
        dims.sort_unstable();
        let mut labels = metric.labels.to_vec();
        labels.sort_unstable();
        assert_eq!(dims, labels, "the dashboard's search of {name}");
        searched += 1;
    }
    for plain in text.split("[\"${Ns}\", \"").skip(1) {
        let name = plain.split('"').next().unwrap();
        assert!(
            catalogued(name).labels.is_empty(),
            "{name} is read without its labels"
        );
    }
    assert!(searched >= 8, "{searched} searches");
}
