//! The resource this server is, as OAuth clients find it: its identifier (the audience of its
//! tokens), its authorization servers, and its RFC 9728 metadata.

use std::sync::Arc;

use serde_json::{Value, json};
use url::Url;

use super::fetch::checked_url;
use super::verifier::{AuthConfigError, TokenVerifier};

/// Where RFC 9728 puts a resource's metadata: this, then the resource's path (the root serves
/// it too, for clients that look there first).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// An HTTP server as an OAuth 2.1 resource server: which resource it is, who checks its tokens,
/// and whether a caller's listing holds only the tools it may call.
#[derive(Clone)]
pub struct ResourceServer {
    /// The identifier as given: what clients ask tokens for, compared as a string.
    identifier: String,
    resource: Url,
    metadata_url: String,
    verifier: Arc<dyn TokenVerifier>,
    filter_listing: bool,
    resource_name: Option<String>,
}

impl ResourceServer {
    /// The resource `resource` (its canonical URL, the MCP endpoint's: clients ask tokens for
    /// it by RFC 8707's `resource`, and the verifier's audience is it), whose tokens `verifier`
    /// checks. Fails on a resource that is no `https` URL (`http` on loopback aside).
    pub fn new(
        resource: &str,
        verifier: impl TokenVerifier,
    ) -> Result<ResourceServer, AuthConfigError> {
        let identifier = resource.to_owned();
        if let Some(audience) = verifier.audience()
            && audience != identifier
        {
            return Err(AuthConfigError::Audience {
                audience: audience.to_owned(),
                resource: identifier,
            });
        }
        let resource = checked_url("resource", resource)?;
        if resource.query().is_some() {
            return Err(AuthConfigError::Url {
                what: "resource",
                url: resource.to_string(),
                why: "it has a query".to_owned(),
            });
        }
        let metadata_url = metadata_url(&resource);
        Ok(ResourceServer {
            identifier,
            resource,
            metadata_url,
            verifier: Arc::new(verifier),
            filter_listing: false,
            resource_name: None,
        })
    }

    /// Whether each caller is shown only the tools its token's scopes cover (a tool that
    /// declares no scopes is everyone's). Off unless set: a caller then sees every tool, with
    /// the scopes each needs, and learns what to ask for; a call lacking one is refused as
    /// `insufficient_scope` (`403` on the REST gateway).
    ///
    /// On, filtered means hidden, everywhere a tool is named: `tools/list`, the REST gateway's
    /// `GET /tools` and `GET /openapi.json` (whose components hold only the shown tools'
    /// schemas), the `available` list of the unknown-tool error (over MCP and REST), and the
    /// next actions of every answer (an action calling a hidden tool is dropped). A hidden tool
    /// called by name answers as a name no tool has: over MCP the unknown-tool error
    /// (`invalid params`), over REST `404` `unknown_tool`, never the `insufficient_scope`
    /// refusal, which would say the tool is there. A caller then cannot tell a hidden tool
    /// from a missing one; the metadata's `scopes_supported` still lists every scope. The
    /// tools of a composed rmcp handler declare no scopes: they are listed to everyone.
    #[must_use]
    pub fn with_filtered_listing(mut self, filtered: bool) -> Self {
        self.filter_listing = filtered;
        self
    }

    /// A name for people, listed in the metadata as `resource_name`.
    #[must_use]
    pub fn with_resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// The resource's identifier, as given.
    pub fn resource(&self) -> &str {
        &self.identifier
    }

    /// Where its metadata is: the well-known path, then the resource's path (RFC 9728 §3.1).
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// Whether listings are filtered to what the caller may call.
    pub fn filters_listing(&self) -> bool {
        self.filter_listing
    }

    pub(crate) fn verifier(&self) -> &dyn TokenVerifier {
        &*self.verifier
    }

    /// The path under which the metadata is served besides the root: the well-known path and
    /// the resource's path, `None` when the resource has none.
    pub(crate) fn metadata_path(&self) -> Option<String> {
        let path = self.resource.path().trim_end_matches('/');
        (!path.is_empty()).then(|| format!("{METADATA_PATH}{path}"))
    }

    /// The RFC 9728 document: the resource, its authorization servers, `scopes` (every scope a
    /// tool declares), how a token is sent.
    pub(crate) fn metadata(&self, scopes: &[&str]) -> Value {
        let mut document = json!({
            "resource": self.identifier,
            "authorization_servers": self.verifier.authorization_servers(),
            "bearer_methods_supported": ["header"],
            "scopes_supported": scopes,
        });
        if let Some(name) = &self.resource_name {
            document["resource_name"] = Value::from(name.as_str());
        }
        document
    }
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("resource", &self.identifier)
            .field(
                "authorization_servers",
                &self.verifier.authorization_servers(),
            )
            .field("filter_listing", &self.filter_listing)
            .finish_non_exhaustive()
    }
}

/// `resource`'s metadata URL: the well-known path between its host and its path.
fn metadata_url(resource: &Url) -> String {
    let mut url = resource.clone();
    let path = resource.path().trim_end_matches('/');
    url.set_path(&format!("{METADATA_PATH}{path}"));
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use envelope_core::{BoxFuture, Caller};

    struct Nobody;

    impl TokenVerifier for Nobody {
        fn verify<'a>(
            &'a self,
            _: &'a str,
        ) -> BoxFuture<'a, Result<Caller, super::super::TokenError>> {
            Box::pin(async { Err(super::super::TokenError::invalid("no one is let in")) })
        }

        fn authorization_servers(&self) -> Vec<String> {
            vec!["https://auth.example.com".to_owned()]
        }
    }

    #[test]
    fn the_metadata_is_where_rfc_9728_puts_it() {
        let server = ResourceServer::new("https://mcp.example.com/mcp", Nobody).expect("valid");
        assert_eq!(
            server.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            server.metadata_path().as_deref(),
            Some("/.well-known/oauth-protected-resource/mcp")
        );
        let root = ResourceServer::new("https://mcp.example.com", Nobody).expect("valid");
        assert_eq!(
            root.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
        assert_eq!(root.metadata_path(), None);
    }

    #[test]
    fn the_document_names_the_resource_its_issuers_and_scopes() {
        let server = ResourceServer::new("http://127.0.0.1:8080/mcp", Nobody)
            .expect("valid")
            .with_resource_name("workspace");
        assert_eq!(
            server.metadata(&["workspace:read"]),
            json!({
                "resource": "http://127.0.0.1:8080/mcp",
                "authorization_servers": ["https://auth.example.com"],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["workspace:read"],
                "resource_name": "workspace",
            })
        );
    }

    #[test]
    fn a_resource_is_an_https_url_without_query() {
        for resource in [
            "http://mcp.example.com/mcp",
            "https://mcp.example.com/mcp?x=1",
            "mcp",
        ] {
            assert!(ResourceServer::new(resource, Nobody).is_err(), "{resource}");
        }
    }
}
