//! What `knowledge serve` prints, and the commands that follow the address it serves on.

use crate::binary::{Process, admin};

/// Opens `link` without following its redirect; returns the status.
async fn open(link: &str) -> u16 {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    client.get(link).send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn sign_in_links_follow_the_address_actually_served_not_the_default_port() {
    let dir = tempfile::tempdir().unwrap();
    // An ephemeral port: never the default 3000.
    let process = Process::start(dir.path(), &[], &[]).await;
    assert!(!process.base.ends_with(":3000"), "{}", process.base);
    let printed = (process.printed.lines())
        .find(|l| l.contains("/api/auth/link?token="))
        .unwrap_or_else(|| panic!("{}", process.printed))
        .trim()
        .to_owned();
    assert!(
        printed.starts_with(&format!("{}/api/auth/link?", process.base)),
        "{printed}"
    );
    assert_eq!(open(&printed).await, 303);
    // The command the hint names, without --origin, prints a link to the same place.
    let args = [
        "signin-link",
        "--org",
        "org_default",
        "--user",
        "usr_default",
    ];
    let another = admin(dir.path(), &args).await;
    assert!(
        another.starts_with(&format!("{}/api/auth/link?", process.base)),
        "{another}"
    );
    assert_eq!(open(&another).await, 303);
    // --origin still wins.
    let mut given = args.to_vec();
    given.extend(["--origin", "https://knowledge.example"]);
    let elsewhere = admin(dir.path(), &given).await;
    assert!(
        elsewhere.starts_with("https://knowledge.example/api/auth/link?"),
        "{elsewhere}"
    );
    process.kill().await;
}
