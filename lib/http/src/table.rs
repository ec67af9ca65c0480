//! Which routes each endpoint serves, as constructors: [`Endpoint::routes`] is a `const fn`,
//! so a Lambda function built for one endpoint evaluates it at compile time, and its binary
//! names (and links) only its own handlers, not the other endpoints' (the admin API's above
//! all). The local service and the OpenAPI document take every endpoint's.

use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};
use utoipa_axum::routes;

use crate::{AuthGuard, Endpoint, SessionApi, admin, auth, routes, sso};

type Route = fn() -> UtoipaMethodRouter<SessionApi>;

/// The routes of one endpoint, before their guards.
#[derive(Clone, Copy)]
pub struct Routes {
    /// The route under `/api/managed-agents`, for the session endpoints.
    pub(crate) session: Option<Route>,
    /// The routes under [`admin::PREFIX`], for the admin endpoint.
    pub(crate) admin: Option<fn() -> OpenApiRouter<SessionApi>>,
    /// The routes under `/api/auth`, each with the guard it passes.
    pub(crate) auth: &'static [(Route, AuthGuard)],
}

impl Routes {
    /// No session, admin or `/api/auth` route: SCIM, the document and the app's files are
    /// routed apart.
    pub const NONE: Self = Self {
        session: None,
        admin: None,
        auth: &[],
    };

    const fn session(route: Route) -> Self {
        Self {
            session: Some(route),
            ..Self::NONE
        }
    }

    const fn auth(routes: &'static [(Route, AuthGuard)]) -> Self {
        Self {
            auth: routes,
            ..Self::NONE
        }
    }
}

// The `/api/auth` routes of each endpoint.
const ME: &[(Route, AuthGuard)] = &[(|| routes!(auth::me), AuthGuard::Member)];
const SWITCH_ORG: &[(Route, AuthGuard)] = &[(|| routes!(auth::switch_org), AuthGuard::SignedIn)];
const LOGOUT: &[(Route, AuthGuard)] = &[(|| routes!(auth::logout), AuthGuard::SignedIn)];
const SIGN_IN_LINK: &[(Route, AuthGuard)] =
    &[(|| routes!(auth::sign_in_with_link), AuthGuard::Public)];
const SSO_LOGIN: &[(Route, AuthGuard)] = &[(|| routes!(sso::login), AuthGuard::Public)];
/// Each organisation's callback, and the retired shared one, which only says where to go.
const SSO_CALLBACK: &[(Route, AuthGuard)] = &[
    (|| routes!(sso::callback), AuthGuard::Public),
    (|| routes!(sso::retired_callback), AuthGuard::Public),
];

impl Endpoint {
    /// The endpoint's routes: the member guard for who is signed in, the signed-in guard (a
    /// valid cookie) for switching and signing out, none for signing in.
    pub const fn routes(self) -> Routes {
        match self {
            Self::CreateSession => Routes::session(|| routes!(routes::create_session)),
            Self::DeleteSession => Routes::session(|| routes!(routes::delete_session)),
            Self::Message => Routes::session(|| routes!(routes::post_message)),
            Self::Transcript => Routes::session(|| routes!(routes::transcript)),
            Self::ListSessions => Routes::session(|| routes!(routes::list_sessions)),
            Self::Cancel => Routes::session(|| routes!(routes::cancel)),
            Self::Me => Routes::auth(ME),
            Self::SwitchOrg => Routes::auth(SWITCH_ORG),
            Self::Logout => Routes::auth(LOGOUT),
            Self::SignInLink => Routes::auth(SIGN_IN_LINK),
            Self::SsoLogin => Routes::auth(SSO_LOGIN),
            Self::SsoCallback => Routes::auth(SSO_CALLBACK),
            Self::Admin => Routes {
                admin: Some(admin_routes),
                ..Routes::NONE
            },
            Self::Scim | Self::OpenApi | Self::Web => Routes::NONE,
        }
    }
}

fn admin_routes() -> OpenApiRouter<SessionApi> {
    OpenApiRouter::new()
        .routes(routes!(admin::list_members, admin::invite_member))
        .routes(routes!(admin::set_role, admin::remove_member))
        .routes(routes!(admin::get_sso, admin::set_sso))
        .routes(routes!(admin::enable_sso))
        .routes(routes!(admin::test_sso))
        .routes(routes!(admin::get_scim))
        .routes(routes!(admin::generate_scim_token))
        .routes(routes!(admin::list_integrations))
        .routes(routes!(
            admin::connect_integration,
            admin::disconnect_integration
        ))
        .routes(routes!(admin::test_integration))
        .routes(routes!(admin::credential_holders))
        .routes(routes!(admin::store_credential))
        .routes(routes!(admin::get_usage))
        .routes(routes!(admin::set_limits))
        .routes(routes!(admin::list_audit))
}
