//! The files derived from the rows are what the rows make them, and the template, read as
//! YAML, routes every documented operation to the function whose row declares it.

use std::collections::{BTreeMap, BTreeSet};

use knowledge_assembly::functions::{ALL, Serves};
use knowledge_core::steps::Handler;
use serde_norway::Value;

fn read(path: &str) -> String {
    std::fs::read_to_string(xtask::root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// template.yaml, with CloudFormation's tags kept (`!Ref Table` is a tagged value).
fn template() -> Value {
    serde_norway::from_str(&read("template.yaml")).expect("template.yaml is YAML")
}

/// The functions' resources, by the binary they build.
fn functions(template: &Value) -> BTreeMap<String, (String, Value)> {
    let resources = template["Resources"].as_mapping().expect("Resources");
    resources
        .iter()
        .filter(|(_, r)| r["Type"] == "AWS::Serverless::Function")
        .map(|(name, r)| {
            let binary = r["Metadata"]["BuildProperties"]["Binary"].as_str().unwrap();
            let name = name.as_str().unwrap().to_owned();
            (binary.to_owned(), (name, r["Properties"].clone()))
        })
        .collect()
}

#[test]
fn every_derived_file_is_what_the_rows_make_it() {
    let stale = xtask::stale(&xtask::root()).unwrap();
    let paths: Vec<String> = stale.iter().map(|f| f.path.display().to_string()).collect();
    assert!(
        paths.is_empty(),
        "stale: {}; run `cargo xtask derive` and commit what it writes",
        paths.join(", ")
    );
}

#[test]
fn a_stale_or_extra_derived_file_is_found() {
    let root = tempfile_root();
    let stale: BTreeSet<String> = xtask::stale(root.path())
        .unwrap()
        .into_iter()
        .map(|f| f.path.display().to_string())
        .collect();
    // The copy's template lost a function, and a binary without a row is left over.
    assert!(stale.contains("template.yaml"), "{stale:?}");
    assert!(stale.contains("functions/src/bin/retired.rs"), "{stale:?}");
    assert!(!stale.contains("functions/README.md"), "{stale:?}");
    // Writing fixes both.
    xtask::write(root.path()).unwrap();
    assert!(xtask::stale(root.path()).unwrap().is_empty());
    assert!(!root.path().join("functions/src/bin/retired.rs").exists());
}

/// A copy of the derived files, with one function's resource cut from the template and a
/// binary left over from a retired row.
fn tempfile_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let copy = |path: &str, text: &str| {
        let to = dir.path().join(path);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, text).unwrap();
    };
    let template = read("template.yaml");
    let start = template.find("\n  MessageFunction:\n").unwrap();
    let end = template.find("\n  TranscriptFunction:\n").unwrap();
    copy(
        "template.yaml",
        &format!("{}{}", &template[..start], &template[end..]),
    );
    for path in [
        "functions/Cargo.toml",
        "functions/README.md",
        "docs/openapi.json",
    ] {
        copy(path, &read(path));
    }
    for row in ALL {
        let path = format!("functions/src/bin/{}.rs", row.name);
        copy(&path, &read(&path));
    }
    copy(
        "functions/src/bin/retired.rs",
        "knowledge_aws::main!(RETIRED);\n",
    );
    dir
}

#[test]
fn every_row_has_its_resource_and_sample_event_and_the_template_builds_nothing_else() {
    let template = template();
    let built = functions(&template);
    for row in ALL {
        let (resource, _) = built
            .get(row.name)
            .unwrap_or_else(|| panic!("template.yaml builds no {}", row.name));
        assert_eq!(*resource, format!("{}Function", xtask::pascal(row.name)));
        read(&format!("events/{}.json", row.name));
    }
    let rows: BTreeSet<&str> = ALL.iter().map(|row| row.name).collect();
    for binary in built.keys() {
        assert!(rows.contains(binary.as_str()), "{binary} has no row");
    }
}

#[test]
fn every_task_of_the_workflow_gets_its_functions_arn() {
    let template = template();
    let machine = &template["Resources"]["AgentStateMachine"]["Properties"];
    let definition = read("infra/statemachine/agent.asl.json");
    for handler in Handler::ALL {
        assert!(
            definition.contains(&handler.resource()),
            "{}",
            handler.name()
        );
        let substitution =
            &machine["DefinitionSubstitutions"][format!("{}FunctionArn", handler.name())];
        let arn = serde_norway::to_string(substitution).unwrap();
        assert_eq!(
            arn.trim(),
            format!("!GetAtt {}Function.Arn", handler.name())
        );
    }
}

#[test]
fn every_function_refuses_private_destinations_unless_the_deployment_says_otherwise() {
    let template = template();
    let globals = &template["Globals"]["Function"]["Environment"]["Variables"];
    let allow = serde_norway::to_string(&globals["KNOWLEDGE_ALLOW_PRIVATE_DESTINATIONS"]).unwrap();
    assert_eq!(allow.trim(), "!Ref AllowPrivateDestinations");
    assert_eq!(
        template["Parameters"]["AllowPrivateDestinations"]["Default"],
        "false"
    );
    // Unset, a function's environment refuses them too.
    assert_eq!(
        knowledge_aws::config::Env::default().egress,
        knowledge_egress::Egress::PUBLIC_ONLY
    );
}

/// A route of the HTTP API: its method (or `ANY`), its path's segments, and its function.
struct ApiRoute {
    method: String,
    segments: Vec<String>,
    function: String,
}

impl ApiRoute {
    /// How exactly it matches `method path`, if it does: API Gateway picks the most exact.
    fn rank(&self, method: &str, path: &[&str]) -> Option<(usize, bool, usize)> {
        let greedy = self.segments.last().is_some_and(|s| s.ends_with("+}"));
        let fixed = if greedy {
            self.segments.len() - 1
        } else {
            self.segments.len()
        };
        let fits = if greedy {
            path.len() > fixed
        } else {
            path.len() == fixed
        };
        let same = self.segments[..fixed]
            .iter()
            .zip(path)
            .all(|(s, p)| s == p || s.starts_with('{'));
        let literal = self.segments[..fixed]
            .iter()
            .filter(|s| !s.starts_with('{'))
            .count();
        let method_fits = self.method == "ANY" || self.method == method;
        (fits && same && method_fits).then_some((
            usize::from(!greedy),
            self.method != "ANY",
            literal,
        ))
    }
}

#[test]
fn every_documented_operation_reaches_the_function_whose_row_serves_it() {
    let template = template();
    let mut routes = Vec::new();
    for (binary, (_, properties)) in functions(&template) {
        let events = properties["Events"]
            .as_mapping()
            .cloned()
            .unwrap_or_default();
        for (_, event) in events.iter().filter(|(_, e)| e["Type"] == "HttpApi") {
            let path = event["Properties"]["Path"].as_str().unwrap();
            routes.push(ApiRoute {
                method: event["Properties"]["Method"]
                    .as_str()
                    .unwrap()
                    .to_uppercase(),
                segments: path.split('/').skip(1).map(str::to_owned).collect(),
                function: binary.clone(),
            });
        }
    }
    // Who serves what, by the rows.
    let mut expected = BTreeMap::new();
    for row in ALL {
        if let Serves::Routes(r) = row.serves {
            for route in knowledge_http::declared_routes(&[r]) {
                expected.insert((route.method.to_owned(), route.path), row.name);
            }
        }
    }
    let document: serde_json::Value = serde_json::from_str(&read("docs/openapi.json")).unwrap();
    let mut checked = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            let method = method.to_uppercase();
            let owner = expected
                .get(&(method.clone(), path.clone()))
                .copied()
                .unwrap_or(if path.starts_with("/api/scim") {
                    "scim"
                } else {
                    "openapi"
                });
            // A path parameter stands for one segment of any value.
            let segments: Vec<&str> = path.split('/').skip(1).collect();
            let best = routes
                .iter()
                .filter_map(|r| r.rank(&method, &segments).map(|rank| (rank, r)))
                .max_by_key(|(rank, _)| *rank)
                .map(|(_, r)| r.function.as_str());
            assert_eq!(best, Some(owner), "{method} {path}");
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} operations documented");
    // And the app's pages reach the app.
    for page in knowledge_web::PAGES {
        let segments: Vec<&str> = page.split('/').skip(1).collect();
        let best = routes
            .iter()
            .filter_map(|r| r.rank("GET", &segments).map(|k| (k, r)))
            .max_by_key(|(k, _)| *k);
        assert_eq!(
            best.map(|(_, r)| r.function.as_str()),
            Some("web"),
            "{page}"
        );
    }
}

/// A value's text as the template writes it (`!GetAtt IndexerQueue.Arn`).
fn yaml(value: &Value) -> String {
    serde_norway::to_string(value).unwrap().trim().to_owned()
}

#[test]
fn the_indexer_takes_its_queue_one_message_at_a_time_reporting_each_failure() {
    use knowledge_assembly::functions::{INDEXER, INDEXER_CONCURRENCY};
    let template = template();
    let resources = &template["Resources"];
    let mappings: Vec<&Value> = (resources.as_mapping().unwrap().values())
        .filter(|r| r["Type"] == "AWS::Lambda::EventSourceMapping")
        .collect();
    assert_eq!(
        mappings.len(),
        1,
        "the indexer's queue is the one event source mapping"
    );
    let mapping = &mappings[0]["Properties"];
    assert_eq!(yaml(&mapping["FunctionName"]), "!Ref IndexerFunction");
    assert_eq!(yaml(&mapping["EventSourceArn"]), "!GetAtt IndexerQueue.Arn");
    assert_eq!(mapping["BatchSize"], 1);
    assert_eq!(
        mapping["FunctionResponseTypes"],
        serde_norway::from_str::<Value>("[ReportBatchItemFailures]").unwrap()
    );
    assert_eq!(
        mapping["ScalingConfig"]["MaximumConcurrency"],
        u64::from(INDEXER_CONCURRENCY)
    );
    // A message comes back after the indexer's timeout and its document's five-minute lease,
    // and goes to the dead-letter queue after as many receives as the core makes attempts.
    let queue = &resources["IndexerQueue"]["Properties"];
    let visible_again = queue["VisibilityTimeout"].as_u64().unwrap();
    assert!(visible_again >= u64::from(INDEX_TIMEOUT.max(INDEXER.lambda.timeout_secs)));
    let redrive = &queue["RedrivePolicy"];
    assert_eq!(
        redrive["maxReceiveCount"],
        u64::from(knowledge_core::domain::INDEX_ATTEMPTS)
    );
    assert_eq!(
        yaml(&redrive["deadLetterTargetArn"]),
        "!GetAtt IndexerDeadLetters.Arn"
    );
    // SAM's SQS event would add a managed policy that polls every queue: none here. Its one
    // event is its schedule, whose input is no queue's event (it has no records).
    let (_, indexer) = &functions(&template)["indexer"];
    let events = indexer["Events"].as_mapping().unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    let (_, schedule) = events.iter().next().unwrap();
    assert_eq!(schedule["Type"], "ScheduleV2");
    let input = schedule["Properties"]["Input"].as_str().unwrap();
    let input: serde_json::Value = serde_json::from_str(input).unwrap();
    assert!(
        input.is_object() && input.get("Records").is_none(),
        "{input}"
    );
    assert!(indexer["ManagedPolicyArns"].is_null());
}

/// A document's lease (`lib/core/src/documents/indexing.rs`), in seconds.
const INDEX_TIMEOUT: u16 = 300;

#[test]
fn every_function_may_do_with_the_documents_what_its_row_says_and_no_more() {
    use knowledge_assembly::functions::{DocumentsResource, DocumentsUse};
    let template = template();
    let built = functions(&template);
    for row in ALL {
        let (_, properties) = &built[row.name];
        let mut granted = BTreeSet::new();
        for policy in properties["Policies"].as_sequence().into_iter().flatten() {
            for statement in policy["Statement"].as_sequence().into_iter().flatten() {
                assert_eq!(statement["Effect"], "Allow");
                for action in statement["Action"].as_sequence().unwrap() {
                    let action = action.as_str().unwrap();
                    assert!(!action.contains('*'), "{}: {action}", row.name);
                    if !action.starts_with("s3:") && !action.starts_with("sqs:") {
                        continue;
                    }
                    for resource in statement["Resource"].as_sequence().unwrap() {
                        let on = match yaml(resource).as_str() {
                            "!Sub ${DocumentsBucket.Arn}/org/*" => DocumentsResource::Originals,
                            "!Sub ${DocumentsBucket.Arn}/index/*" => DocumentsResource::Indexes,
                            "!GetAtt DocumentsBucket.Arn" if statement["Condition"].is_null() => {
                                DocumentsResource::Bucket
                            }
                            "!GetAtt DocumentsBucket.Arn" => {
                                let prefix = &statement["Condition"]["StringLike"]["s3:prefix"];
                                assert_eq!(yaml(prefix), "- org/*");
                                DocumentsResource::Originals
                            }
                            "!GetAtt IndexerQueue.Arn" => DocumentsResource::Queue,
                            other => panic!("{}: {action} on {other}", row.name),
                        };
                        granted.insert((action.to_owned(), on));
                    }
                }
            }
        }
        let declared: BTreeSet<(String, DocumentsResource)> = (row.parts.documents.permissions())
            .iter()
            .map(|p| (p.action.to_owned(), p.on))
            .collect();
        assert_eq!(granted, declared, "{}", row.name);
        let variables = &properties["Environment"]["Variables"];
        // The bucket's name goes to those that use it, and to the app's page, whose policy
        // lets the browser upload to it; no permission comes with it there.
        let bucket = !variables["DOCUMENTS_BUCKET"].is_null();
        let names_bucket = matches!(row.serves, knowledge_assembly::functions::Serves::AppFiles);
        assert_eq!(
            bucket,
            row.parts.documents != DocumentsUse::None || names_bucket,
            "{}",
            row.name
        );
        let queue = !variables["INDEXER_QUEUE_URL"].is_null();
        assert_eq!(
            queue,
            row.parts.documents == DocumentsUse::Manage,
            "{}",
            row.name
        );
    }
}

#[test]
fn the_documents_bucket_is_private_encrypted_https_only_and_takes_uploads_from_the_app_alone() {
    let template = template();
    let resources = &template["Resources"];
    let bucket = &resources["DocumentsBucket"]["Properties"];
    let block = &bucket["PublicAccessBlockConfiguration"];
    for setting in [
        "BlockPublicAcls",
        "BlockPublicPolicy",
        "IgnorePublicAcls",
        "RestrictPublicBuckets",
    ] {
        assert_eq!(block[setting], true, "{setting}");
    }
    let encryption = &bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0];
    let algorithm = &encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"];
    assert!(
        algorithm == "AES256" || algorithm == "aws:kms",
        "{algorithm:?}"
    );
    let cors = bucket["CorsConfiguration"]["CorsRules"]
        .as_sequence()
        .unwrap();
    assert_eq!(cors.len(), 1);
    assert_eq!(yaml(&cors[0]["AllowedMethods"]), "- PUT");
    assert_eq!(yaml(&cors[0]["AllowedOrigins"]), "- !Ref AppOrigin");
    let rules = bucket["LifecycleConfiguration"]["Rules"]
        .as_sequence()
        .unwrap();
    assert!(
        rules
            .iter()
            .any(|r| r["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"].is_u64())
    );
    let notify = &bucket["NotificationConfiguration"]["QueueConfigurations"][0];
    assert_eq!(notify["Event"], "s3:ObjectCreated:*");
    assert_eq!(yaml(&notify["Queue"]), "!GetAtt IndexerQueue.Arn");
    let rule = &notify["Filter"]["S3Key"]["Rules"][0];
    assert_eq!(
        (rule["Name"].as_str(), rule["Value"].as_str()),
        (Some("prefix"), Some("org/"))
    );
    let policy = &resources["DocumentsBucketPolicy"]["Properties"]["PolicyDocument"];
    let deny = &policy["Statement"][0];
    assert_eq!(deny["Effect"], "Deny");
    assert_eq!(deny["Condition"]["Bool"]["aws:SecureTransport"], "false");
    // Only the bucket may send to the queue.
    let queue_policy = &resources["IndexerQueuePolicy"]["Properties"]["PolicyDocument"];
    let send = &queue_policy["Statement"][0];
    assert_eq!(send["Principal"]["Service"], "s3.amazonaws.com");
    assert!(!send["Condition"]["ArnEquals"]["aws:SourceArn"].is_null());
}
