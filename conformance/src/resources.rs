//! The suite's fixture resources: two static ones, a template, and the error for every other
//! URI. Plain functions over rmcp's types; the handler answers `resources/*` with them.

use serde_json::json;

use crate::fixtures::{PNG_BASE64, STATIC_TEXT};
use crate::rmcp;
use rmcp::ErrorData;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate,
};

/// The static text resource.
pub(crate) const STATIC_TEXT_URI: &str = "test://static-text";
/// The static binary resource.
pub(crate) const STATIC_BINARY_URI: &str = "test://static-binary";
/// The resource the suite subscribes to (any URI may be subscribed to; this one is listed).
pub(crate) const WATCHED_URI: &str = "test://watched-resource";
/// The template's URIs: `test://template/{id}/data`, split where `{id}` goes.
const TEMPLATE_PREFIX: &str = "test://template/";
const TEMPLATE_SUFFIX: &str = "/data";

/// `resources/list`: the text resource first (the suite reads the first one listed), then the
/// binary one and the watched one.
pub(crate) fn list() -> ListResourcesResult {
    ListResourcesResult::with_all_items(vec![
        Resource::new(STATIC_TEXT_URI, "Static Text Resource")
            .with_description("A static text resource for testing")
            .with_mime_type("text/plain"),
        Resource::new(STATIC_BINARY_URI, "Static Binary Resource")
            .with_description("A static binary resource (a PNG image) for testing")
            .with_mime_type("image/png"),
        Resource::new(WATCHED_URI, "Watched Resource")
            .with_description("A resource to subscribe to")
            .with_mime_type("text/plain"),
    ])
}

/// `resources/templates/list`: the one template.
pub(crate) fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new(
            format!("{TEMPLATE_PREFIX}{{id}}{TEMPLATE_SUFFIX}"),
            "Dynamic Resource",
        )
        .with_description("A resource whose contents name the id in its URI")
        .with_mime_type("application/json"),
    ])
}

/// `resources/read` of `uri`: its contents, or a resource-not-found error naming it (never
/// empty contents: the suite tells a missing resource by the error).
pub(crate) fn read(uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let text = |mime: &str, text: String| ResourceContents::TextResourceContents {
        uri: uri.to_owned(),
        mime_type: Some(mime.to_owned()),
        text,
        meta: None,
    };
    let contents = match uri {
        STATIC_TEXT_URI => text("text/plain", STATIC_TEXT.to_owned()),
        WATCHED_URI => text("text/plain", "This resource is watched.".to_owned()),
        STATIC_BINARY_URI => ResourceContents::BlobResourceContents {
            uri: uri.to_owned(),
            mime_type: Some("image/png".to_owned()),
            blob: PNG_BASE64.to_owned(),
            meta: None,
        },
        _ => match template_id(uri) {
            Some(id) => {
                // wire: the suite's template fixture
                let data =
                    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                text("application/json", data.to_string())
            }
            None => {
                return Err(ErrorData::resource_not_found(
                    format!("Resource not found: {uri}"),
                    Some(json!({ "uri": uri })),
                ));
            }
        },
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

/// The `{id}` of a URI of the template, if it is one (a non-empty id without `/`).
fn template_id(uri: &str) -> Option<&str> {
    uri.strip_prefix(TEMPLATE_PREFIX)?
        .strip_suffix(TEMPLATE_SUFFIX)
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_uri_names_its_id() {
        assert_eq!(template_id("test://template/123/data"), Some("123"));
        assert_eq!(template_id("test://template//data"), None);
        assert_eq!(template_id("test://template/1/2/data"), None);
    }

    #[test]
    fn an_unknown_uri_is_an_error_naming_it() {
        let error = read("test://nowhere").err();
        let data = error.and_then(|error| error.data);
        assert_eq!(data, Some(json!({ "uri": "test://nowhere" })));
    }
}
