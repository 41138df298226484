//! The one table from an envelope to an HTTP status, and the problem types an error answers
//! with. The contract's status table (`docs/CONTRACT.md`) and every operation's documented
//! responses in the OpenAPI document are generated from these constants.

use envelope_core::Category;
use envelope_core::fields::code;

/// How the gateway answers an error of one category.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CategoryStatus {
    /// The envelope's `error.category`.
    pub category: Category,
    /// The HTTP status of the answer.
    pub status: u16,
    /// The problem's `title`: the same for every error of the category, as RFC 9457 asks.
    pub title: &'static str,
}

/// The status of a successful call (`ok: true`), truncated and empty results included.
pub const OK_STATUS: u16 = 200;

/// Every error category and its HTTP status, one row a category. A `503` carries
/// `Retry-After`: the envelope's `retry_after_ms` rounded up to whole seconds, else one second.
pub const CATEGORY_STATUS: [CategoryStatus; 7] = [
    CategoryStatus {
        category: Category::Transient,
        status: 503,
        title: "Transient failure",
    },
    CategoryStatus {
        category: Category::Validation,
        status: 422,
        title: "Invalid request",
    },
    CategoryStatus {
        category: Category::Permission,
        status: 403,
        title: "Permission denied",
    },
    CategoryStatus {
        category: Category::NotFound,
        status: 404,
        title: "Not found",
    },
    CategoryStatus {
        category: Category::Unavailable,
        status: 503,
        title: "Unavailable",
    },
    CategoryStatus {
        category: Category::Internal,
        status: 500,
        title: "Internal error",
    },
    CategoryStatus {
        category: Category::ModuleDisabled,
        status: 404,
        title: "Module disabled",
    },
];

/// What the gateway itself refuses before a tool runs, each answered as a problem whose
/// envelope carries the category and code given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatewayStatus {
    /// The HTTP status.
    pub status: u16,
    /// The envelope's `error.category`.
    pub category: Category,
    /// The envelope's `error.code`.
    pub code: &'static str,
    /// When it is answered.
    pub when: &'static str,
}

/// The body is not JSON.
pub const MALFORMED_JSON: GatewayStatus = GatewayStatus {
    status: 400,
    category: Category::Validation,
    code: code::MALFORMED_JSON,
    when: "The body is not JSON.",
};

/// A control given twice with different values, an unknown query parameter, or an invalid
/// `apply_budget`.
pub const INVALID_CONTROL: GatewayStatus = GatewayStatus {
    status: 400,
    category: Category::Validation,
    code: code::INVALID_CONTROL,
    when: "A per-call control given twice (body, query, header) with different values, a query \
           parameter that is no control, or an `apply_budget` that is not `true` or `false`.",
};

/// No tool has the name in the path (or none the caller is shown, under a filtered listing).
pub const UNKNOWN_TOOL: GatewayStatus = GatewayStatus {
    status: 404,
    category: Category::NotFound,
    code: code::UNKNOWN_TOOL,
    when: "No tool has the name in the path (or the path under `/tools/` is no tool's; with a \
           filtered listing, no tool the token's scopes cover has it); `error.data.available` \
           lists the tools there are (the caller may call, when filtered).",
};

/// The route exists, but not for this method.
pub const METHOD_NOT_ALLOWED: GatewayStatus = GatewayStatus {
    status: 405,
    category: Category::Validation,
    code: code::METHOD_NOT_ALLOWED,
    when: "The route exists, but not for this method; `Allow` names the methods it takes.",
};

/// The body is over the server's request size limit.
pub const REQUEST_TOO_LARGE: GatewayStatus = GatewayStatus {
    status: 413,
    category: Category::Validation,
    code: code::REQUEST_TOO_LARGE,
    when: "The body is over the server's request size limit; nothing of it was parsed.",
};

/// The `Host` or `Origin` is not one the server accepts.
pub const HOST_NOT_ALLOWED: GatewayStatus = GatewayStatus {
    status: 403,
    category: Category::Permission,
    code: code::HOST_NOT_ALLOWED,
    when: "The `Host` (or `Origin`) header names one the server does not accept.",
};

/// The `Host` is against RFC 9112.
pub const INVALID_HOST: GatewayStatus = GatewayStatus {
    status: 400,
    category: Category::Validation,
    code: code::INVALID_HOST,
    when: "No `Host` header on HTTP/1.1, more than one, or one that is no `host[:port]` \
           (userinfo such as `user@host` included), as RFC 9112 requires.",
};

/// The body did not arrive in time.
pub const REQUEST_TIMEOUT: GatewayStatus = GatewayStatus {
    status: 408,
    category: Category::Transient,
    code: code::REQUEST_TIMEOUT,
    when: "The body did not arrive whole within the body timeout (or what was left of the \
           request timeout); the connection is closed.",
};

/// The server is at its concurrency limit, or past its request timeout.
pub const OVERLOADED: GatewayStatus = GatewayStatus {
    status: 503,
    category: Category::Transient,
    code: code::OVERLOADED,
    when: "The server is at its concurrency limit or past its request timeout; retry after \
           `Retry-After`.",
};

/// A call whose body is not declared JSON.
pub const UNSUPPORTED_MEDIA_TYPE: GatewayStatus = GatewayStatus {
    status: 415,
    category: Category::Validation,
    code: code::UNSUPPORTED_MEDIA_TYPE,
    when: "A call without `Content-Type: application/json` (or another `+json` type). A page \
           can post a form or text to any origin without asking; it cannot post JSON without \
           a CORS preflight, so no other site can run a tool in a visitor's browser.",
};

/// No access token, or one the resource server does not accept (feature `auth`).
pub const UNAUTHENTICATED: GatewayStatus = GatewayStatus {
    status: 401,
    category: Category::Permission,
    code: code::UNAUTHENTICATED,
    when: "With authentication on: no bearer token, or one that is not accepted (expired, for \
           another resource or issuer, not signed by the issuer); `WWW-Authenticate` says why \
           and where the resource's metadata is.",
};

/// An `Authorization` header that is no bearer token RFC 6750 can read (feature `auth`).
pub const INVALID_AUTHORIZATION: GatewayStatus = GatewayStatus {
    status: 400,
    category: Category::Validation,
    code: code::INVALID_AUTHORIZATION,
    when: "With authentication on: two `Authorization` headers, or a `Bearer` one whose token \
           is empty or no token68.",
};

/// The access token could not be checked: the authorization server did not answer.
pub const TOKEN_UNVERIFIABLE: GatewayStatus = GatewayStatus {
    status: 503,
    category: Category::Unavailable,
    code: code::TOKEN_UNVERIFIABLE,
    when: "With authentication on: the token could not be checked (the authorization server's \
           keys or introspection did not answer); retry after `Retry-After`.",
};

/// The refusals of the resource server, in status order: answered only with authentication on.
pub const AUTH_STATUS: [GatewayStatus; 3] =
    [INVALID_AUTHORIZATION, UNAUTHENTICATED, TOKEN_UNVERIFIABLE];

/// Every refusal of the gateway's own, in status order.
pub const GATEWAY_STATUS: [GatewayStatus; 10] = [
    MALFORMED_JSON,
    INVALID_CONTROL,
    INVALID_HOST,
    HOST_NOT_ALLOWED,
    UNKNOWN_TOOL,
    METHOD_NOT_ALLOWED,
    REQUEST_TIMEOUT,
    REQUEST_TOO_LARGE,
    UNSUPPORTED_MEDIA_TYPE,
    OVERLOADED,
];

/// The prefix of every problem's `type`: a tag URI (RFC 4151) naming the error category, an
/// identifier rather than a page to fetch.
pub const PROBLEM_TYPE_PREFIX: &str = "tag:envelope.rs,2026:category/";

/// The row of `category`.
pub fn category_status(category: Category) -> CategoryStatus {
    CATEGORY_STATUS
        .iter()
        .copied()
        .find(|row| row.category == category)
        // Every category has a row (a test says so); a category added later answers 500
        // until it has one.
        .unwrap_or(CategoryStatus {
            category,
            status: 500,
            title: "Internal error",
        })
}

/// The problem `type` of an error of `category`.
pub fn problem_type(category: Category) -> String {
    format!("{PROBLEM_TYPE_PREFIX}{}", category.as_str())
}

/// Every error status an operation can answer, sorted: the categories' and the gateway's own
/// refusals of a call (`405` is not among them: it answers no operation).
pub(crate) fn error_statuses() -> Vec<u16> {
    let mut statuses: Vec<u16> = CATEGORY_STATUS
        .iter()
        .map(|row| row.status)
        .chain(
            GATEWAY_STATUS
                .iter()
                .filter(|gateway| gateway.status != METHOD_NOT_ALLOWED.status)
                .map(|gateway| gateway.status),
        )
        .collect();
    statuses.sort_unstable();
    statuses.dedup();
    statuses
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_category_has_exactly_one_row() {
        for category in Category::ALL {
            let rows = CATEGORY_STATUS
                .iter()
                .filter(|row| row.category == *category)
                .count();
            assert_eq!(rows, 1, "{category}");
        }
        assert_eq!(CATEGORY_STATUS.len(), Category::ALL.len());
    }

    #[test]
    fn error_statuses_are_the_documented_ones() {
        assert_eq!(
            error_statuses(),
            [400, 403, 404, 408, 413, 415, 422, 500, 503]
        );
    }
}
