//! The `sso` commands: configure, show and switch an organisation's single sign-on, and the
//! reading of secrets from standard input that they share with `integration credential`.

use knowledge_assembly::operator::Operator;
use knowledge_core::seal::Sealer;
use knowledge_core::sso::{SsoChange, SsoSettings};
use knowledge_local::admin::sso_json;
use knowledge_local::sealer;

use crate::cli::{Cli, SsoCommand, StoreKind};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Runs an `sso` command; prints the configuration as JSON (never its secret).
pub(crate) async fn run(cli: &Cli, admin: &Operator, command: SsoCommand) -> Result<()> {
    let (org, change, origin) = match command {
        SsoCommand::Set {
            org,
            issuer,
            client_id,
            user_name_claim,
            domains,
            just_in_time,
            disabled,
            origin,
        } => {
            let secret = secret_line()?;
            let settings = SsoSettings {
                issuer,
                client_id,
                client_secret: Some(secret).filter(|s| !s.is_empty()),
                user_name_claim,
                email_domains: domains,
                just_in_time,
                enabled: !disabled,
            };
            (org, Some(SsoChange::Set(settings)), origin)
        }
        SsoCommand::Enable { org, origin } => (org, Some(SsoChange::Enable(true)), origin),
        SsoCommand::Disable { org, origin } => (org, Some(SsoChange::Enable(false)), origin),
        SsoCommand::Show { org, origin } => (org, None, origin),
    };
    let config = match change {
        Some(change) => {
            let sealer = deployment_sealer(cli)?;
            admin.configure_sso(&org, &change, sealer.into()).await?
        }
        None => admin
            .org(&org)
            .await?
            .sso
            .ok_or_else(|| format!("{org} has no single sign-on configured"))?,
    };
    println!(
        "{}",
        sso_json(&org, &config, &origin.resolve(&cli.data_dir))
    );
    Ok(())
}

/// The sealing key secrets are stored under. Against a shared table it must be the
/// deployment's: a key file made up here would seal them so that the service cannot open them.
pub(crate) fn deployment_sealer(cli: &Cli) -> Result<Sealer> {
    if !matches!(cli.store, StoreKind::Sqlite)
        && std::env::var_os(knowledge_local::SEALING_KEY_ENV).is_none()
    {
        return Err(format!(
            "set {} to the deployment's sealing key (the secret SealingKeySecretArn holds) to \
             store a secret in DynamoDB",
            knowledge_local::SEALING_KEY_ENV
        )
        .into());
    }
    Ok(sealer(&cli.data_dir)?)
}

/// One line of standard input without its line ending: a secret kept out of the shell history.
pub(crate) fn secret_line() -> Result<String> {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(line.trim_end_matches(['\n', '\r']).to_owned())
}
