//! The routes of each endpoint, as constants: a Lambda function's row
//! (`knowledge_assembly::functions`) names one of these, and its `main` evaluates that row at compile
//! time, so its binary names (and links) only its own handlers, not the other endpoints' (the
//! admin API's above all). The local service and the OpenAPI document take every row's.
//! Adding an endpoint: its handler, a constant here, a row there.

use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};
use utoipa_axum::routes;

use crate::{
    AuthGuard, SessionApi, admin, allowed, auth, connections, documents, memory, routes, sso,
    titles, usage,
};

type Route = fn() -> UtoipaMethodRouter<SessionApi>;

/// The routes of one endpoint, before their guards.
#[derive(Clone, Copy)]
pub struct Routes {
    /// The routes under `/api/managed-agents`, for the session endpoints.
    pub(crate) session: &'static [Route],
    /// The routes under [`admin::PREFIX`], for the admin endpoint.
    pub(crate) admin: Option<fn() -> OpenApiRouter<SessionApi>>,
    /// The routes at paths of their own (`/api/auth`, `/api/memory`, `/api/usage`,
    /// `/api/integrations`, `/api/oauth`), each with the guard it passes.
    pub(crate) guarded: &'static [(Route, AuthGuard)],
    /// Whether they sign people in, so that single sign-on must be assembled.
    pub(crate) sso: bool,
    /// Whether they connect accounts to OAuth integrations, so that the connections must be
    /// assembled.
    pub(crate) connects: bool,
    /// Whether they read or change the organisation's documents, so that the documents' use
    /// cases must be assembled.
    pub(crate) documents: bool,
}

impl Routes {
    const NONE: Self = Self {
        session: &[],
        admin: None,
        guarded: &[],
        sso: false,
        connects: false,
        documents: false,
    };

    const fn session(routes: &'static [Route]) -> Self {
        Self {
            session: routes,
            ..Self::NONE
        }
    }

    const fn guarded(routes: &'static [(Route, AuthGuard)]) -> Self {
        Self {
            guarded: routes,
            ..Self::NONE
        }
    }

    /// Whether single sign-on must be assembled for these routes.
    pub const fn signs_in(self) -> bool {
        self.sso
    }

    /// Whether the connections to OAuth integrations must be assembled for these routes.
    pub const fn connects(self) -> bool {
        self.connects
    }

    /// Whether the documents' use cases must be assembled for these routes.
    pub const fn reads_documents(self) -> bool {
        self.documents
    }

    /// Whether these are the admin routes, which need the admin use cases.
    pub const fn administers(self) -> bool {
        self.admin.is_some()
    }
}

pub const CREATE_SESSION: Routes = Routes::session(&[|| routes!(routes::create_session)]);
pub const DELETE_SESSION: Routes = Routes::session(&[|| routes!(routes::delete_session)]);
pub const MESSAGE: Routes = Routes::session(&[|| routes!(routes::post_message)]);
pub const TRANSCRIPT: Routes = Routes::session(&[|| routes!(routes::transcript)]);
pub const LIST_SESSIONS: Routes = Routes::session(&[|| routes!(routes::list_sessions)]);
pub const CANCEL: Routes = Routes::session(&[|| routes!(routes::cancel)]);
/// Beside the interface's own: the member's answer to a call that asks them.
pub const APPROVE: Routes = Routes::session(&[|| routes!(routes::approve)]);
/// Beside the interface's own: renaming a session and finding sessions by title.
pub const TITLES: Routes = Routes::session(&[
    || routes!(titles::rename_session),
    || routes!(titles::find_sessions),
]);
/// Who is signed in: a current member of the cookie's organisation.
pub const ME: Routes = Routes::guarded(&[(|| routes!(auth::me), AuthGuard::Member)]);
/// A valid cookie, of any organisation the user belongs to.
pub const SWITCH_ORG: Routes =
    Routes::guarded(&[(|| routes!(auth::switch_org), AuthGuard::SignedIn)]);
pub const LOGOUT: Routes = Routes::guarded(&[(|| routes!(auth::logout), AuthGuard::SignedIn)]);
/// Signing in: no guard.
pub const SIGN_IN_LINK: Routes =
    Routes::guarded(&[(|| routes!(auth::sign_in_with_link), AuthGuard::Public)]);
pub const SSO_LOGIN: Routes = Routes {
    sso: true,
    ..Routes::guarded(&[(|| routes!(sso::login), AuthGuard::Public)])
};
/// Each organisation's callback, and the retired shared one, which only says where to go.
pub const SSO_CALLBACK: Routes = Routes {
    sso: true,
    ..Routes::guarded(&[
        (|| routes!(sso::callback), AuthGuard::Public),
        (|| routes!(sso::retired_callback), AuthGuard::Public),
    ])
};
/// A member's connections to OAuth integrations: list, connect, disconnect.
pub const CONNECTIONS: Routes = Routes {
    connects: true,
    ..Routes::guarded(&[
        (|| routes!(connections::list), AuthGuard::Member),
        (|| routes!(connections::connect), AuthGuard::Member),
        (|| routes!(connections::disconnect), AuthGuard::Member),
        (|| routes!(allowed::list), AuthGuard::Member),
        (|| routes!(allowed::forget), AuthGuard::Member),
    ])
};
/// Where authorization servers send the browser back, and fetch the service's client
/// metadata: no guard (the connect in progress is bound to the browser by its own cookie).
pub const OAUTH_CALLBACK: Routes = Routes {
    connects: true,
    ..Routes::guarded(&[
        (|| routes!(connections::callback), AuthGuard::Public),
        (|| routes!(connections::client_document), AuthGuard::Public),
    ])
};
/// A member's own memory: read, switch, forget, export.
pub const MEMORY: Routes = Routes::guarded(&[
    (|| routes!(memory::get, memory::switch), AuthGuard::Member),
    (|| routes!(memory::forget), AuthGuard::Member),
    (|| routes!(memory::forget_all), AuthGuard::Member),
    (|| routes!(memory::export), AuthGuard::Member),
]);
/// A member's own usage this month or another.
pub const USAGE: Routes = Routes::guarded(&[(|| routes!(usage::get), AuthGuard::Member)]);
/// Searching the documents a member may open.
pub const SEARCH: Routes = Routes {
    documents: true,
    ..Routes::guarded(&[(|| routes!(documents::search), AuthGuard::Member)])
};
/// A document a member may open, and its original.
pub const DOCUMENTS: Routes = Routes {
    documents: true,
    ..Routes::guarded(&[
        (|| routes!(documents::get), AuthGuard::Member),
        (|| routes!(documents::original), AuthGuard::Member),
        (|| routes!(documents::passages), AuthGuard::Member),
    ])
};
/// Every route under [`admin::PREFIX`] but [`ADMIN_TEST_INTEGRATION`]'s, behind the member
/// guard and then the admin role; and where the local service takes a document's original,
/// the one route whose body is a file.
pub const ADMIN: Routes = Routes {
    admin: Some(admin_routes),
    connects: true,
    documents: true,
    ..Routes::guarded(&[(
        || routes!(admin::documents::send_original),
        AuthGuard::MemberFile,
    )])
};

/// An admin's test of an integration, under [`admin::PREFIX`] behind the same guards: it lists
/// the integration's tools through the MCP client, which no other admin route needs, so it is
/// an endpoint of its own and the admin function links no MCP client.
pub const ADMIN_TEST_INTEGRATION: Routes = Routes {
    admin: Some(|| OpenApiRouter::new().routes(routes!(admin::test_integration))),
    ..Routes::NONE
};

fn admin_routes() -> OpenApiRouter<SessionApi> {
    OpenApiRouter::new()
        .routes(routes!(admin::list_members, admin::invite_member))
        .routes(routes!(admin::set_role, admin::remove_member))
        .routes(routes!(admin::caps::set_caps, admin::caps::clear_caps))
        .routes(routes!(
            admin::groups::list_groups,
            admin::groups::create_group
        ))
        .routes(routes!(
            admin::groups::rename_group,
            admin::groups::delete_group
        ))
        .routes(routes!(admin::groups::group_members))
        .routes(routes!(
            admin::groups::add_group_member,
            admin::groups::remove_group_member
        ))
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
        .routes(routes!(
            admin::tools::set_tool_rule,
            admin::tools::clear_tool_rule
        ))
        .routes(routes!(admin::credential_holders))
        .routes(routes!(admin::store_credential))
        .routes(routes!(admin::connect_organisation))
        .routes(routes!(admin::disconnect_organisation))
        .routes(routes!(admin::get_usage))
        .routes(routes!(admin::set_limits))
        .routes(routes!(admin::export::usage))
        .routes(routes!(admin::export::audit))
        .routes(routes!(
            admin::memory::get_memory,
            admin::memory::set_memory
        ))
        .routes(routes!(admin::list_audit))
        .routes(routes!(
            admin::documents::list_collections,
            admin::documents::create_collection
        ))
        .routes(routes!(
            admin::documents::change_collection,
            admin::documents::delete_collection
        ))
        .routes(routes!(
            admin::documents::list_documents,
            admin::documents::upload_document
        ))
        .routes(routes!(
            admin::documents::replace_document,
            admin::documents::delete_document
        ))
}
